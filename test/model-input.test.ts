/**
 * `config.modelInput` never buys unpriced work (functions/nodes/providers/model-input.ts). Through the real
 * graph validation, the real pricing (`estimateRun`) and the real provider-request builder
 * (`jobRequest`): for any model step, config, `modelInput` and mode that the validation lets run,
 * the request a provider receives asks for no more work than the estimate prices: its cost fields,
 * read back as priced settings (each model's `costFields`), are within the priced ones, and
 * `modelInput` changes none of them. Pure: no I/O.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { askedWork, modelFormulas, modelStepPrice } from '../functions/domain/model-pricing.ts';
import { estimateRun } from '../functions/domain/pricing.ts';
import { validateCanvas } from '../functions/domain/workflow-graph.ts';
import type { Canvas } from '../functions/nodes/catalogue/canvas.ts';
import { catalogue } from '../functions/nodes/catalogue/index.ts';
import { imageSize } from '../functions/nodes/catalogue/run-modes.ts';
import { jobRequest } from '../functions/nodes/executors/jobs.ts';
import type { ModelWork } from '../functions/nodes/executors/model-work.ts';
import { type StepContext, StepFailedError, type StoredFile } from '../functions/nodes/executors/types.ts';
import {
  hostedModelFields,
  knownHostedModels,
  type PricedSetting,
  requestedSettings,
} from '../functions/nodes/providers/hosted-models.ts';
import { modelInputRefusals, safeModelInputFields } from '../functions/nodes/providers/model-input.ts';
import type { RunMode } from '../schemas/run-words.ts';
import type { NodeType } from '../schemas/workflow-words.ts';
import { canvasNode } from './support/canvas.ts';

const teamId = 'team-model-input';
const file = (kind: string): StoredFile => ({
  kind: 'file',
  key: `teams/${teamId}/runs/r/${kind}.bin`,
  contentType: kind === 'mesh' ? 'model/gltf-binary' : 'image/png',
  bytes: 10,
  availability: 'ready',
});

/** A canvas of the step `s` with each of its inputs fed: text by a TextEntry, an image by an ImageLoader. */
const canvasOf = (type: NodeType, config: Record<string, unknown>): Canvas => {
  const spec = catalogue[type];
  const nodes = [canvasNode('s', type, config)];
  const edges: Canvas['edges'] = [];
  for (const input of spec.inputs) {
    const [sourceType, sourceHandle] =
      input.kind === 'image' ? (['ImageLoader', 'image'] as const) : (['TextEntry', 'text'] as const);
    if (input.kind !== 'image' && input.kind !== 'text' && input.kind !== 'any') continue;
    nodes.push(canvasNode(`in-${input.name}`, sourceType, sourceType === 'TextEntry' ? { text: 'hi' } : {}));
    edges.push({
      id: `e-${input.name}`,
      source: `in-${input.name}`,
      target: 's',
      sourceHandle,
      targetHandle: input.name,
    });
  }
  return { nodes, edges };
};

/** The step's context as the step executor gives it: its inputs arrived, its files as URLs. */
const contextOf = (canvas: Canvas, mode: RunMode): StepContext => {
  const node = canvas.nodes[0]!;
  const spec = catalogue[node.type];
  return {
    jobId: 'job-1',
    teamId,
    node,
    spec,
    mode,
    inputs: Object.fromEntries(spec.inputs.map((i) => [i.name, [i.kind === 'text' ? 'a lighthouse' : file(i.kind)]])),
    runInput: undefined,
    storeFile: () => Promise.reject(new Error('not here')),
    signal: new AbortController().signal,
    fileUrl: async (f) => `https://files.example/${f.key}`,
  };
};

const modelTypes = Object.keys(modelFormulas) as NodeType[];
const unknownModels = { replicate: 'someone/any-model:0123abcd', fal: 'someone/any-app' } as const;
/** Every model a step may name on Replicate or fal: each the registry knows, and one it does not per provider. */
const models: { provider: 'replicate' | 'fal'; model: string }[] = [
  ...knownHostedModels.map((key) => {
    const [provider, ...rest] = key.split(':');
    return { provider: provider as 'replicate' | 'fal', model: rest.join(':') };
  }),
  { provider: 'replicate', model: unknownModels.replicate },
  { provider: 'fal', model: unknownModels.fal },
];
/** Every cost field any model declares, the safe list, and a few names nobody declares. */
const fieldNames = [
  ...new Set([
    ...models.flatMap(({ provider, model }) => Object.keys(hostedModelFields(provider, model).costFields)),
    ...safeModelInputFields,
    'lora_weights',
    'disable_safety_checker',
    '__proto__',
  ]),
];
const fieldValue = fc.oneof(
  fc.integer({ min: 0, max: 40_000 }),
  fc.constantFrom('0.25', '1', '4', 'Large', '16:9'),
  fc.record({ width: fc.integer({ min: 1, max: 4096 }), height: fc.integer({ min: 1, max: 4096 }) }),
);
const setting = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined });
/** Settings as a caller may write them, in and out of each node type's bounds, checked or not. */
const configArb = fc.record(
  {
    width: setting(fc.integer({ min: 64, max: 2048 })),
    height: setting(fc.integer({ min: 64, max: 2048 })),
    steps: setting(fc.integer({ min: 1, max: 150 })),
    variations: setting(fc.integer({ min: 1, max: 4 })),
    maxTokens: setting(fc.integer({ min: 1, max: 32_000 })),
    durationSeconds: setting(fc.integer({ min: 1, max: 300 })),
    scale: setting(fc.constantFrom(2, 4, 8)),
    seed: setting(fc.integer({ min: 0, max: 1000 })),
    strength: setting(fc.double({ min: 0, max: 1, noNaN: true })),
  },
  { requiredKeys: [] },
);
const caseArb = fc.record({
  type: fc.constantFrom(...modelTypes),
  model: fc.constantFrom(...models),
  config: configArb,
  modelInput: fc.option(fc.dictionary(fc.constantFrom(...fieldNames), fieldValue, { maxKeys: 5 }), { nil: undefined }),
  mode: fc.constantFrom<RunMode>('production', 'draft', 'preview'),
});
type Case = typeof caseArb extends fc.Arbitrary<infer T> ? T : never;

/** Drops `undefined` settings, as JSON would. */
const defined = (record: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(record).filter(([, value]) => value !== undefined));

/** The work the request asks for: the priced work with each setting the request carries in its place. */
const requestedWork = (
  canvas: Canvas,
  priced: ModelWork,
  asked: Partial<Record<PricedSetting, number>>,
  provider: string,
): ModelWork => {
  const node = canvas.nodes[0]!;
  switch (priced.kind) {
    case 'sampling': {
      const size = imageSize(node.config, provider);
      return {
        kind: 'sampling',
        images: asked.variations ?? priced.images,
        pixels: (asked.width ?? size.width) * (asked.height ?? size.height),
        steps: asked.steps ?? priced.steps,
      };
    }
    case 'tokens':
      return { kind: 'tokens', tokens: node.type === 'Embedder' ? priced.tokens : (asked.maxTokens ?? priced.tokens) };
    case 'seconds':
      return { kind: 'seconds', seconds: asked.durationSeconds ?? priced.seconds };
    case 'pixels': {
      // The Upscaler's output follows its scale: the priced canvas with the request's scale in its place.
      const scaled = { ...node, config: { ...node.config, ...(asked.scale !== undefined && { scale: asked.scale }) } };
      return askedWork({ ...canvas, nodes: [scaled, ...canvas.nodes.slice(1)] }, scaled, 'production');
    }
    case 'run':
      return priced;
  }
};

/** One case through validation, pricing and the request builder: null when refused, else the ratio. */
const runCase = async (c: Case) => {
  const config = defined({
    ...c.config,
    provider: c.model.provider,
    model: c.model.model,
    ...(c.modelInput !== undefined && { modelInput: c.modelInput }),
  });
  const canvas = canvasOf(c.type, config);
  const refused = validateCanvas(canvas).filter((issue) => issue.key === 's' && issue.path?.startsWith('config'));
  if (refused.length > 0) return null;
  const spec = catalogue[c.type];
  const estimate = estimateRun(canvas, c.mode).steps.find((s) => s.nodeId === 's')!.hundredths;
  const request = await jobRequest(contextOf(canvas, c.mode), c.model.provider, c.model.model, 'stage');
  const own = await jobRequest(
    contextOf({ ...canvas, nodes: [{ ...canvas.nodes[0]!, config: { ...config, modelInput: undefined } }] }, c.mode),
    c.model.provider,
    c.model.model,
    'stage',
  );
  const priced = askedWork(canvas, canvas.nodes[0]!, c.mode);
  const asked = requestedSettings(c.model.provider, c.model.model, request.input);
  const work = requestedWork(canvas, priced, asked, c.model.provider);
  const { costFields } = hostedModelFields(c.model.provider, c.model.model);
  return {
    estimate,
    requestPrice: modelStepPrice(spec, work, c.mode),
    priced,
    work,
    // Each cost field as the step's own settings make it, whatever modelInput says.
    ownCostFields: Object.keys(costFields).map((f) => [f, own.input[f]]),
    requestCostFields: Object.keys(costFields).map((f) => [f, request.input[f]]),
  };
};

/** The numbers a work's price grows with: images, pixels, steps, tokens, seconds. */
const drivers = (work: ModelWork): number[] =>
  work.kind === 'sampling'
    ? [work.images, work.pixels, work.steps]
    : work.kind === 'tokens'
      ? [work.tokens]
      : work.kind === 'seconds'
        ? [work.seconds]
        : work.kind === 'pixels'
          ? [work.pixels]
          : [];

describe('modelInput never buys unpriced work', () => {
  it('for any model step, config, modelInput and mode the validation lets run, the provider request asks for no more work than the estimate prices', async () => {
    let worst = Number.POSITIVE_INFINITY;
    let checked = 0;
    await fc.assert(
      fc.asyncProperty(caseArb, async (c) => {
        const result = await runCase(c);
        if (!result) return;
        checked++;
        expect(result.requestCostFields).toEqual(result.ownCostFields);
        const priced = drivers(result.priced);
        drivers(result.work).forEach((driver, i) => {
          expect(driver).toBeLessThanOrEqual(priced[i] as number);
        });
        expect(result.requestPrice).toBeLessThanOrEqual(result.estimate);
        worst = Math.min(worst, result.estimate / result.requestPrice);
      }),
      { numRuns: 600 },
    );
    // The worst charged (the estimate: a job step is charged it) over priced (the request's work) seen.
    console.log(`modelInput property: worst charged/priced ${worst} over ${checked} requests`);
    expect(worst).toBeGreaterThanOrEqual(1);
    expect(checked).toBeGreaterThan(100);
  });

  it('the issue’s ImageGen: 64², 1 step, 1 image with modelInput asking 2048², 150 steps, 4 images is refused, naming each field', () => {
    const canvas = canvasOf('ImageGen', {
      provider: 'replicate',
      model: unknownModels.replicate,
      width: 64,
      height: 64,
      steps: 1,
      variations: 1,
      modelInput: { width: 2048, height: 2048, num_inference_steps: 150, num_outputs: 4, guidance_scale: 3 },
    });
    expect(validateCanvas(canvas).map(({ path, message }) => ({ path, message }))).toEqual([
      { path: 'config.modelInput.width', message: 'modelInput.width drives cost: set config.width instead' },
      { path: 'config.modelInput.height', message: 'modelInput.height drives cost: set config.height instead' },
      {
        path: 'config.modelInput.num_inference_steps',
        message: 'modelInput.num_inference_steps drives cost: set config.steps instead',
      },
      {
        path: 'config.modelInput.num_outputs',
        message: 'modelInput.num_outputs drives cost: set config.variations instead',
      },
    ]);
  });

  it('a model the registry does not know takes only the safe list; a known one refuses its own cost fields, naming the setting or the service', () => {
    const none = new Set<string>();
    expect(modelInputRefusals('fal', 'someone/app', { seed: 1, guidance_scale: 2, lora_weights: 'x' }, none)).toEqual([
      {
        field: 'lora_weights',
        message: expect.stringMatching(/^modelInput\.lora_weights is not a field modelInput may set; .*: prompt, /),
      },
    ]);
    expect(modelInputRefusals('fal', 'fal-ai/trellis', { seed: 3, guidance_scale: 2 }, none)).toEqual([]);
    expect(modelInputRefusals('replicate', 'black-forest-labs/flux-schnell', { megapixels: '1' }, none)).toEqual([
      { field: 'megapixels', message: 'modelInput.megapixels drives cost and is set by the service' },
    ]);
    // A known model's fixed choice (the licensed weights' size) is not modelInput's either.
    expect(
      modelInputRefusals('replicate', 'chenxwh/depth-anything-v2:abc', { model_size: 'Large' }, none).map(
        (r) => r.field,
      ),
    ).toEqual(['model_size']);
  });

  it('the executor refuses a modelInput cost field before submitting (a stage model changed since the start)', async () => {
    const canvas = canvasOf('LlmWorker', {
      provider: 'replicate',
      model: unknownModels.replicate,
      maxTokens: 10,
      modelInput: { max_tokens: 32_000 },
    });
    await expect(
      jobRequest(contextOf(canvas, 'production'), 'replicate', unknownModels.replicate, 'stage'),
    ).rejects.toThrow(
      new StepFailedError('LlmWorker: modelInput.max_tokens drives cost: set config.maxTokens instead'),
    );
    const allowed = canvasOf('LlmWorker', { provider: 'replicate', model: unknownModels.replicate, maxTokens: 10 });
    // The bound the estimate holds for is always sent: the answer cannot run past it.
    expect(
      (await jobRequest(contextOf(allowed, 'production'), 'replicate', unknownModels.replicate, 'stage')).input,
    ).toMatchObject({ prompt: 'a lighthouse', max_tokens: 10 });
  });
});
