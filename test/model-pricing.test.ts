/**
 * Prices that follow the work (functions/domain/model-pricing.ts): each model node
 * type's formula, the work a step asks for from its config and its inputs, and the properties that
 * hold for every config a schema accepts: the charge never exceeds the estimate, and the estimate
 * grows with each driver. Pure: no I/O.
 */
import fc from 'fast-check';
import * as v from 'valibot';
import { describe, expect, it } from 'vitest';
import { askedWork, imageInputBound, modelFormulas, modelStepPrice } from '../functions/domain/model-pricing.ts';
import { estimateRun, stepCharge } from '../functions/domain/pricing.ts';
import type { Canvas, CanvasNode } from '../functions/nodes/catalogue/canvas.ts';
import { catalogue } from '../functions/nodes/catalogue/index.ts';
import {
  type ModelWork,
  maxEmbedTokens,
  maxImagePixels,
  maxImagesPerStep,
  tokensOf,
} from '../functions/nodes/executors/model-work.ts';
import type { RunMode } from '../schemas/run-words.ts';
import type { NodeType } from '../schemas/workflow-words.ts';
import { canvasNode as node } from './support/canvas.ts';

const edge = (source: string, target: string, targetHandle = 'image') => ({
  id: `${source}->${target}`,
  source,
  target,
  sourceHandle: 'image',
  targetHandle,
});
/** The estimate of one step of `type` with `config`, alone on a canvas (inputs unknown). */
const estimateOf = (type: NodeType, config: Record<string, unknown>, mode: RunMode = 'production') =>
  estimateRun({ nodes: [node('s', type, config)], edges: [] }, mode).totalHundredths;
const price = (type: NodeType, work: ModelWork, mode: RunMode = 'production') =>
  modelStepPrice(catalogue[type], work, mode);

describe('the formula of each model node type', () => {
  it('covers exactly the catalogue model node types', () => {
    const models = Object.values(catalogue)
      .filter((spec) => spec.model !== null)
      .map((spec) => spec.type);
    expect(Object.keys(modelFormulas).sort()).toEqual([...models].sort());
  });

  it('ImageGen: the issue’s 4 variations × 150 steps at 2048² is 80 reference images, not the price of one 64² step', () => {
    const big = { variations: 4, steps: 150, width: 2048, height: 2048 };
    const tiny = { variations: 1, steps: 1, width: 64, height: 64 };
    // 400 × (2048² / 1024²) × (150 / 30) = 8,000 per image, × 4.
    expect(estimateOf('ImageGen', big)).toBe(32_000);
    // 400 × 4,096 / 1024² / 30 = 0.05, rounded up to one hundredth.
    expect(estimateOf('ImageGen', tiny)).toBe(1);
    expect(estimateOf('ImageGen', { width: 1024, height: 1024 })).toBe(400);
    // No size: the provider's default side, 256 on the sandbox, 1024 elsewhere (the catalogue's default is Bedrock).
    expect(estimateOf('ImageGen', {})).toBe(400);
    expect(estimateOf('ImageGen', { provider: 'sandbox' })).toBe(25);
    expect(estimateOf('ImageGen', { provider: 'openai-compatible' })).toBe(400);
    // Draft: one variation, a third of the steps (50), at half price: 8,000 × 50 / 150 / 2.
    expect(estimateOf('ImageGen', big, 'draft')).toBe(1_334);
    expect(estimateOf('ImageGen', big, 'preview')).toBe(32_000);
  });

  it('DiffusionWorker: as ImageGen, one image; a `variations` key its schema does not check changes nothing', () => {
    expect(estimateOf('DiffusionWorker', { steps: 150, width: 2048, height: 2048 })).toBe(8_000);
    expect(estimateOf('DiffusionWorker', { steps: 150, width: 2048, height: 2048, variations: 1_000 })).toBe(8_000);
  });

  it('LlmWorker and VisionInterrogator: answer tokens (maxTokens, 1,000 by default), at the rate per 1,000', () => {
    expect(estimateOf('LlmWorker', {})).toBe(200);
    expect(estimateOf('LlmWorker', { maxTokens: 32_000 })).toBe(6_400);
    expect(estimateOf('LlmWorker', { maxTokens: 1 })).toBe(1);
    // Draft: at most 64 tokens, ceil(200 × 64 / 1000) = 13, halved = 7.
    expect(estimateOf('LlmWorker', { maxTokens: 32_000 }, 'draft')).toBe(7);
    expect(estimateOf('VisionInterrogator', {})).toBe(150);
    expect(estimateOf('VisionInterrogator', { maxTokens: 8_000 })).toBe(1_200);
  });

  it('AudioGen: each started second, the rate per 4 seconds (its default length)', () => {
    expect(estimateOf('AudioGen', {})).toBe(300);
    expect(estimateOf('AudioGen', { durationSeconds: 300 })).toBe(22_500);
    expect(estimateOf('AudioGen', { durationSeconds: 1 })).toBe(75);
    expect(estimateOf('AudioGen', { durationSeconds: 1.5 })).toBe(150);
    expect(estimateOf('AudioGen', { durationSeconds: 300 }, 'draft')).toBe(11_250);
  });

  it('Embedder: input tokens, estimated at its limit of 8,192 and charged for the text it got', () => {
    expect(estimateOf('Embedder', { dimensions: 4096 })).toBe(10);
    expect(price('Embedder', { kind: 'tokens', tokens: tokensOf('a short text') })).toBe(1);
    expect(price('Embedder', { kind: 'tokens', tokens: maxEmbedTokens })).toBe(10);
  });

  it('image to image: output pixels at the rate per 1024²; Upscaler output = input × scale², PbrSynthesizer its first image', () => {
    const from = (type: NodeType, config: Record<string, unknown> = {}, gen: Record<string, unknown> = {}) =>
      estimateRun(
        {
          nodes: [node('gen', 'ImageGen', { width: 1024, height: 512, ...gen }), node('s', type, config)],
          edges: [edge('gen', 's')],
        },
        'production',
      ).steps[1]?.hundredths;
    expect(from('Upscaler')).toBe(200); // 1024 × 512 × 2² = 2 × 1024²
    expect(from('Upscaler', { scale: 4 })).toBe(800);
    expect(from('Upscaler', { scale: 4 }, { variations: 4 })).toBe(3_200);
    expect(from('BackgroundRemover', {}, { variations: 3 })).toBe(75); // 3 × 50 / 2
    expect(from('DepthEstimator')).toBe(50);
    expect(from('ControlNetFilter')).toBe(150);
    expect(from('PbrSynthesizer', {}, { variations: 4 })).toBe(250);
    // An input whose size is not known before the run: up to 4 images of 4096², each output capped at 4096².
    const extracted: Canvas = {
      nodes: [node('json', 'JsonExtractor', { path: '$.images' }), node('s', 'Upscaler', { scale: 4 })],
      edges: [edge('json', 's')],
    };
    expect(estimateRun(extracted, 'production').steps[1]?.hundredths).toBe(6_400);
    const loaded: Canvas = { nodes: [node('load', 'ImageLoader'), node('s', 'Upscaler')], edges: [edge('load', 's')] };
    expect(imageInputBound(loaded, 's', 'production')).toEqual({ count: 1, pixels: maxImagePixels });
    expect(estimateRun(loaded, 'production').steps[1]?.hundredths).toBe(1_600);
    // Draft halves the price of the same work (draft changes nothing an image edit does).
    expect(estimateRun(loaded, 'draft').steps[1]?.hundredths).toBe(800);
  });

  it('meshes and rigs: one price per run, whatever the settings (their providers charge per run)', () => {
    for (const type of ['3DTransform', 'TwoDToThreeD', 'AutoRigger'] as const) {
      const rate = catalogue[type].price.production;
      expect(estimateOf(type, {})).toBe(rate);
      expect(estimateOf(type, { format: 'obj', seed: 7, skeleton: 'quadruped' }, 'draft')).toBe(rate);
    }
  });

  it('propagates image bounds through a chain: ImageGen → Upscaler ×4 → BackgroundRemover', () => {
    const canvas: Canvas = {
      nodes: [
        node('gen', 'ImageGen', { width: 512, height: 512, variations: 2 }),
        node('up', 'Upscaler', { scale: 4 }),
        node('bg', 'BackgroundRemover'),
      ],
      edges: [edge('gen', 'up'), edge('up', 'bg')],
    };
    expect(imageInputBound(canvas, 'bg', 'production')).toEqual({ count: 2, pixels: 2048 * 2048 });
    expect(askedWork(canvas, canvas.nodes[2] as CanvasNode, 'production')).toEqual({
      kind: 'pixels',
      pixels: 2 * 2048 * 2048,
    });
    // Draft makes one variation upstream, so one image downstream.
    expect(imageInputBound(canvas, 'bg', 'draft')).toEqual({ count: 1, pixels: 2048 * 2048 });
    expect(maxImagesPerStep).toBe(4);
  });
});

/** Each driver's values as its config schema accepts them, straight from the catalogue's schemas. */
const accepted = (type: NodeType, config: Record<string, unknown>) =>
  v.safeParse(catalogue[type].configSchema, config).success;

const modes = fc.constantFrom<RunMode>('production', 'preview', 'draft');
const imageConfig = fc.record({
  width: fc.integer({ min: 64, max: 2048 }),
  height: fc.integer({ min: 64, max: 2048 }),
  steps: fc.integer({ min: 1, max: 150 }),
  variations: fc.integer({ min: 1, max: 4 }),
});
const multiplier = fc.integer({ min: 1, max: 100_000 }).map((n) => n / 10_000);

describe('properties over every config the schemas accept', () => {
  it('the charge of a completed step never exceeds its estimate, whatever work it reports', () => {
    const run = (estimate: number, mode: RunMode, priceMultiplier: number) => ({
      stepEstimates: { s: estimate },
      mode,
      priceMultiplier,
    });
    fc.assert(
      fc.property(imageConfig, modes, multiplier, fc.nat({ max: 8 }), fc.nat(), (config, mode, m, images, pixels) => {
        expect(accepted('ImageGen', config)).toBe(true);
        const estimate = estimateRun({ nodes: [node('s', 'ImageGen', config)], edges: [] }, mode, m).totalHundredths;
        const work: ModelWork = {
          kind: 'sampling',
          images,
          pixels: pixels % (maxImagePixels + 1),
          steps: config.steps,
        };
        const charge = stepCharge(run(estimate, mode, m), { nodeId: 's', spec: catalogue.ImageGen, work }, 'completed');
        expect(charge).toBeLessThanOrEqual(estimate);
        expect(Number.isSafeInteger(charge) && charge >= 0).toBe(true);
      }),
    );
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 32_000 }),
        fc.integer({ min: 0, max: 200_000 }),
        modes,
        multiplier,
        (maxTokens, answerLength, mode, m) => {
          const estimate = estimateRun(
            { nodes: [node('s', 'LlmWorker', { maxTokens })], edges: [] },
            mode,
            m,
          ).totalHundredths;
          // Even an answer longer than it asked for (a provider ignoring the bound) is charged at most the estimate.
          const work: ModelWork = { kind: 'tokens', tokens: tokensOf('x'.repeat(answerLength)) };
          const charge = stepCharge(
            run(estimate, mode, m),
            { nodeId: 's', spec: catalogue.LlmWorker, work },
            'completed',
          );
          expect(charge).toBeLessThanOrEqual(estimate);
        },
      ),
    );
  });

  it('the work an executor can report is never priced above the estimate of the work asked (same mode)', () => {
    fc.assert(
      fc.property(imageConfig, modes, fc.integer({ min: 0, max: 4 }), (config, mode, fewer) => {
        const canvas: Canvas = { nodes: [node('s', 'ImageGen', config)], edges: [] };
        const asked = askedWork(canvas, canvas.nodes[0] as CanvasNode, mode);
        if (asked.kind !== 'sampling') throw new Error('ImageGen is priced by sampling');
        const done = { ...asked, images: Math.max(0, asked.images - fewer) };
        expect(price('ImageGen', done, mode)).toBeLessThanOrEqual(price('ImageGen', asked, mode));
      }),
    );
  });

  it('the estimate never decreases as any driver grows, in every mode', () => {
    const grows = (type: NodeType, arb: fc.Arbitrary<[Record<string, unknown>, Record<string, unknown>]>) =>
      fc.assert(
        fc.property(arb, modes, ([small, large], mode) => {
          expect(accepted(type, small) && accepted(type, large)).toBe(true);
          expect(estimateOf(type, large, mode)).toBeGreaterThanOrEqual(estimateOf(type, small, mode));
        }),
      );
    // One driver at a time grows (a ≤ b), the others fixed.
    const pair = (min: number, max: number) =>
      fc.tuple(fc.integer({ min, max }), fc.integer({ min, max })).map(([a, b]) => [Math.min(a, b), Math.max(a, b)]);
    for (const driver of ['width', 'height', 'steps', 'variations'] as const) {
      const [min, max] = { width: [64, 2048], height: [64, 2048], steps: [1, 150], variations: [1, 4] }[driver];
      grows(
        'ImageGen',
        fc.tuple(imageConfig, pair(min as number, max as number)).map(([base, [a, b]]) => [
          { ...base, [driver]: a },
          { ...base, [driver]: b },
        ]),
      );
    }
    grows(
      'LlmWorker',
      pair(1, 32_000).map(([a, b]) => [{ maxTokens: a }, { maxTokens: b }]),
    );
    grows(
      'VisionInterrogator',
      pair(1, 8_000).map(([a, b]) => [{ maxTokens: a }, { maxTokens: b }]),
    );
    grows(
      'AudioGen',
      fc
        .tuple(fc.double({ min: 1, max: 300, noNaN: true }), fc.double({ min: 1, max: 300, noNaN: true }))
        .map(([a, b]) => [{ durationSeconds: Math.min(a, b) }, { durationSeconds: Math.max(a, b) }]),
    );
    grows('Upscaler', fc.constant([{ scale: 2 }, { scale: 4 }]));
  });

  it('the price grows strictly with the main driver once the added work is worth a hundredth', () => {
    // rate × added ÷ reference ≥ 1 ⇒ at least one hundredth more: the rounding never swallows it.
    const strictly = (
      type: NodeType,
      kind: ModelWork['kind'],
      unit: number,
      max: number,
      make: (n: number) => ModelWork,
    ) =>
      fc.assert(
        fc.property(fc.integer({ min: 1, max }), fc.integer({ min: 1, max: 8 }), modes, (n, k, mode) => {
          if (modelFormulas[type as keyof typeof modelFormulas].kind !== kind)
            throw new Error(`${type} is not ${kind}`);
          // Draft halves (rounded up), so twice the work it takes to gain a hundredth there.
          const step = unit * k * (mode === 'draft' ? 2 : 1);
          expect(price(type, make(n + step), mode)).toBeGreaterThan(price(type, make(n), mode));
        }),
      );
    const rate = (type: NodeType) => catalogue[type].price.production;
    // Sampling: each variation costs at least one hundredth; pixel-steps by 1024² × 30 ÷ rate.
    strictly('ImageGen', 'sampling', 1, 3, (n) => ({ kind: 'sampling', images: n, pixels: 64 * 64, steps: 1 }));
    strictly('ImageGen', 'sampling', Math.ceil((1024 * 1024 * 30) / rate('ImageGen')), 2048 * 2048 * 150, (n) => ({
      kind: 'sampling',
      images: 1,
      pixels: n,
      steps: 1,
    }));
    strictly('LlmWorker', 'tokens', Math.ceil(1000 / rate('LlmWorker')), 32_000, (n) => ({
      kind: 'tokens',
      tokens: n,
    }));
    strictly('VisionInterrogator', 'tokens', Math.ceil(1000 / rate('VisionInterrogator')), 8_000, (n) => ({
      kind: 'tokens',
      tokens: n,
    }));
    strictly('Embedder', 'tokens', Math.ceil(maxEmbedTokens / rate('Embedder')), maxEmbedTokens, (n) => ({
      kind: 'tokens',
      tokens: n,
    }));
    strictly('AudioGen', 'seconds', 1, 300, (n) => ({ kind: 'seconds', seconds: n }));
    for (const type of [
      'Upscaler',
      'BackgroundRemover',
      'DepthEstimator',
      'ControlNetFilter',
      'PbrSynthesizer',
    ] as const) {
      strictly(type, 'pixels', Math.ceil((1024 * 1024) / rate(type)), maxImagesPerStep * maxImagePixels, (n) => ({
        kind: 'pixels',
        pixels: n,
      }));
    }
  });

  it('no config a schema accepts gives a price that is not a safe integer, even at a multiplier of 10', () => {
    const worst = estimateRun(
      {
        nodes: [
          node('a', 'ImageGen', { variations: 4, steps: 150, width: 2048, height: 2048 }),
          node('b', 'LlmWorker', { maxTokens: 32_000 }),
          node('c', 'AudioGen', { durationSeconds: 300 }),
          node('d', 'Upscaler', { scale: 4 }),
          node('e', 'VisionInterrogator', { maxTokens: 8_000 }),
        ],
        edges: [edge('a', 'd')],
      },
      'production',
      10,
    );
    expect(worst.steps.map((s) => s.hundredths)).toEqual([320_000, 64_000, 225_000, 64_000, 12_000]);
    expect(Number.isSafeInteger(worst.totalHundredths)).toBe(true);
  });
});
