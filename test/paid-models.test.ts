/**
 * The models a stage pays for (platform/paid-models.ts), without I/O: the list's one syntax (the
 * stack's context and the functions' env var), which models are on it, the routing rule that
 * refuses the others on the stage's key, and the prices the estimate and the charge read from it.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { estimateRun, listedModelPrice, type StagePricing, stepCharge } from '../functions/domain/pricing.ts';
import type { Canvas } from '../functions/nodes/catalogue/canvas.ts';
import { catalogue } from '../functions/nodes/catalogue/index.ts';
import type { ModelWork } from '../functions/nodes/executors/model-work.ts';
import { checkApiIntegration, routeProvider } from '../functions/nodes/providers/registry.ts';
import { stageProvidersFromEnv } from '../functions/nodes/providers/stage.ts';
import { catalogueDefaults } from '../platform/model-defaults.ts';
import {
  listedPrice,
  openPaidModels,
  type PaidModels,
  paidModelsText,
  parsePaidModels,
} from '../platform/paid-models.ts';
import { messages } from '../schemas/error-messages.ts';
import { canvasNode as node } from './support/canvas.ts';

const closed: PaidModels = { open: false, prices: {} };
const parse = (value: unknown) => parsePaidModels(value, 'PAID_MODELS', openPaidModels);

describe('the list of paid models', () => {
  it('reads entries with a price in hundredths, a multiplier or none, and opens only with `open`', () => {
    expect(parse('replicate:acme/a=250, fal:fal-ai/b=x1.25,replicate:acme/c:0123abcd')).toEqual({
      open: false,
      prices: {
        'replicate:acme/a': { hundredths: 250 },
        'fal:fal-ai/b': { multiplier: 1.25 },
        'replicate:acme/c:0123abcd': { multiplier: 1 },
      },
    });
    expect(parse('open,replicate:acme/a=0')).toEqual({ open: true, prices: { 'replicate:acme/a': { hundredths: 0 } } });
    expect(parse({ 'replicate:acme/a': 250, 'fal:fal-ai/b': 'x2', open: false })).toEqual({
      open: false,
      prices: { 'replicate:acme/a': { hundredths: 250 }, 'fal:fal-ai/b': { multiplier: 2 } },
    });
    // Unset: what the caller says (the runtime's and dev's open); `{}` is a closed, empty list.
    expect(parse(undefined)).toBe(openPaidModels);
    expect(parse('{}')).toEqual(closed);
    for (const bad of [
      'acme/a=1',
      'replicate:acme/a=-1',
      'replicate:acme/a=1.5',
      'replicate:acme/a=x1.00001',
      'open=3',
    ]) {
      expect(() => parse(bad), bad).toThrow(/^PAID_MODELS/);
    }
    expect(() => parse('{"replicate:a/b":')).toThrow(/not valid JSON/);
  });

  it('carries the same list through the env var (the stack writes it, the functions read it)', () => {
    fc.assert(
      fc.property(
        fc.boolean(),
        fc.dictionary(
          fc.stringMatching(/^[a-z][a-z0-9/-]{0,12}$/).map((model) => `replicate:${model}`),
          fc.oneof(
            fc.integer({ min: 0, max: 1_000_000 }).map((hundredths) => ({ hundredths })),
            fc.integer({ min: 1, max: 10_000_000 }).map((n) => ({ multiplier: n / 10_000 })),
          ),
        ),
        (open, prices) => {
          const list = { open, prices };
          expect(parse(paidModelsText(list))).toEqual(list);
          expect(stageProvidersFromEnv({ PAID_MODELS: paidModelsText(list) }).paidModels).toEqual(list);
        },
      ),
    );
  });

  it("puts the catalogue's and the stage's defaults on it at the node type's price, and every version of a listed name", () => {
    const list = parse('replicate:acme/a=250,replicate:acme/b:v2=x3');
    expect(listedPrice(list, undefined, 'replicate', 'acme/a:v9')).toEqual({ hundredths: 250 });
    expect(listedPrice(list, undefined, 'replicate', 'acme/b:v2')).toEqual({ multiplier: 3 });
    expect(listedPrice(list, undefined, 'replicate', 'acme/b:v3')).toBeUndefined();
    expect(listedPrice(list, undefined, 'fal', 'acme/a')).toBeUndefined();
    const { provider, model } = catalogueDefaults.TwoDToThreeD;
    expect(listedPrice(closed, undefined, provider, model)).toEqual({ multiplier: 1 });
    const pinned = { ImageGen: { provider: 'replicate', model: 'acme/pinned' } };
    expect(listedPrice(closed, pinned, 'replicate', 'acme/pinned')).toEqual({ multiplier: 1 });
    expect(listedPrice(closed, undefined, 'replicate', 'acme/pinned')).toBeUndefined();
  });
});

describe("which models run on the stage's key", () => {
  const stage = { configured: ['replicate', 'fal', 'bedrock'], sandbox: false, paidModels: parse('replicate:acme/a') };

  it("refuses a model off a closed list on the stage's key, as byok_only naming it; the team's key runs it", () => {
    expect(routeProvider('replicate', stage, false, 'tenant/own')).toEqual({
      refused: true,
      level: 'byok_only',
      unpaid: 'replicate:tenant/own',
    });
    expect(routeProvider('replicate', stage, true, 'tenant/own')).toMatchObject({
      refused: false,
      credentials: 'team',
    });
    expect(routeProvider('replicate', stage, false, 'acme/a')).toMatchObject({ refused: false, credentials: 'stage' });
    // An open list (dev, local) runs it, as before lists; no model named is the registry's own choice.
    expect(routeProvider('replicate', { ...stage, paidModels: openPaidModels }, false, 'tenant/own')).toMatchObject({
      credentials: 'stage',
    });
    expect(routeProvider('replicate', stage, false, null)).toMatchObject({ credentials: 'stage' });
    // Bedrock's models are the operator's grants already.
    expect(routeProvider('bedrock', stage, false, 'amazon.nova-pro-v1:0')).toMatchObject({ credentials: 'stage' });
  });

  it('answers the run start with the provider 422 that names the model', () => {
    const canvas: Canvas = {
      nodes: [node('img', 'ImageGen', { provider: 'fal', model: 'tenant/own' })],
      edges: [],
    };
    expect(checkApiIntegration(canvas, new Set(), stage)).toEqual({
      nodeId: 'img',
      nodeType: 'ImageGen',
      providers: ['fal'],
      level: 'byok_only',
      model: 'fal:tenant/own',
      message: messages.modelNotPaid('ImageGen', 'fal:tenant/own'),
    });
    expect(checkApiIntegration(canvas, new Set(['fal']), stage)).toBeNull();
  });
});

describe("a listed model's price", () => {
  const step = (model: string) => node('s', 'ImageGen', { provider: 'replicate', model, width: 512, height: 512 });
  const stage: StagePricing = { paidModels: parse('replicate:acme/flat=250,replicate:acme/twice=x2') };
  const estimate = (model: string, mode: 'production' | 'draft', s?: StagePricing) =>
    estimateRun({ nodes: [step(model)], edges: [] }, mode, 1, s).totalHundredths;

  it('estimates a flat price whatever the work and mode, a multiplier over the node type price', () => {
    for (const mode of ['production', 'draft'] as const) {
      const nodeTypePrice = estimate('acme/other', mode, stage);
      expect(nodeTypePrice).toBe(estimate('acme/other', mode));
      expect(estimate('acme/flat', mode, stage)).toBe(250);
      expect(estimate('acme/twice', mode, stage)).toBe(2 * nodeTypePrice);
    }
  });

  it('charges the same path: the flat price, or the work at the multiplier, never above the estimate', () => {
    const work: ModelWork = { kind: 'sampling', images: 1, pixels: 256 * 256, steps: 30 };
    const chargeOf = (model: string, s?: StagePricing) => {
      const run = {
        stepEstimates: { s: estimate(model, 'production', s) },
        mode: 'production' as const,
        priceMultiplier: 1,
      };
      const listed = listedModelPrice(step(model), catalogue.ImageGen, s);
      return stepCharge(run, { nodeId: 's', spec: catalogue.ImageGen, work, listed }, 'completed');
    };
    expect(chargeOf('acme/flat', stage)).toBe(250);
    const nodeTypeCharge = chargeOf('acme/other', stage);
    expect(nodeTypeCharge).toBeLessThan(estimate('acme/other', 'production'));
    expect(chargeOf('acme/twice', stage)).toBe(2 * nodeTypeCharge);
  });
});
