/**
 * What a model step costs follows the work it asks for. Each model node type has a cost
 * driver and one pure formula (`modelFormulas`): its catalogue rate (`spec.price.production`, the
 * price of its reference work) scaled by its work over that reference, rounded up to whole
 * hundredths of a credit. Steps that are not model steps keep their flat catalogue price.
 *
 * - At the start, `askedWork` gives the most a step can do, from its config in the run's mode (the
 *   draft rules of functions/nodes/catalogue/run-modes.ts) and, for a step working on images, from what its
 *   input can carry (`imageInputBound`). That work's price is the step's estimate.
 * - When it completes, the executor reports the work it actually did (`StepOutcome.work`); the step
 *   is charged that work's price, never more than its estimate (`chargeOfWork`).
 *
 * Every driver is bounded by its config schema (functions/nodes/catalogue/models.ts) or by a limit
 * below, so a price is always a safe integer.
 */
import { isModelNodeType, type ModelNodeType } from '../../platform/model-defaults.ts';
import type { RunMode } from '../../schemas/run-words.ts';
import type { Canvas, CanvasNode } from '../nodes/catalogue/canvas.ts';
import { getNodeSpec } from '../nodes/catalogue/index.ts';
import type { NodeSpec } from '../nodes/catalogue/node-spec.ts';
import { draftPrice, imageSize, modeSettings, priceInMode } from '../nodes/catalogue/run-modes.ts';
import {
  type ModelWork,
  maxEmbedTokens,
  maxImagePixels,
  maxImagesPerStep,
  referenceAudioSeconds,
  referenceImagePixels,
  referenceSamplingSteps,
  referenceTextTokens,
} from '../nodes/executors/model-work.ts';
import { stepProvider } from '../nodes/providers/registry.ts';

/** `a / b` rounded up, exactly, for non-negative safe integers. */
const ceilDiv = (a: number, b: number): number => {
  if (!Number.isSafeInteger(a) || !Number.isSafeInteger(b) || a < 0 || b <= 0) {
    throw new RangeError(`Price out of range: ${a} / ${b}`);
  }
  return Math.floor(a / b) + (a % b === 0 ? 0 : 1);
};

type Formula<K extends ModelWork['kind']> = (rate: number, work: Extract<ModelWork, { kind: K }>) => number;

/** images × (rate × pixels × steps ÷ (1024² × 30)), each image rounded up: every variation costs. */
const perSampledPixel: Formula<'sampling'> = (rate, w) =>
  w.images * ceilDiv(rate * w.pixels * w.steps, referenceImagePixels * referenceSamplingSteps);
/** rate × output pixels ÷ 1024². */
const perOutputPixel: Formula<'pixels'> = (rate, w) => ceilDiv(rate * w.pixels, referenceImagePixels);
/** rate × answer tokens ÷ 1,000. */
const perAnswerToken: Formula<'tokens'> = (rate, w) => ceilDiv(rate * w.tokens, referenceTextTokens);
/** rate × input tokens ÷ 8,192. */
const perInputToken: Formula<'tokens'> = (rate, w) => ceilDiv(rate * w.tokens, maxEmbedTokens);
/** rate × whole seconds ÷ 4. */
const perSecond: Formula<'seconds'> = (rate, w) => ceilDiv(rate * Math.ceil(w.seconds), referenceAudioSeconds);
/** rate. */
const perRun: Formula<'run'> = (rate) => rate;

/** Each model node type's cost driver and formula (docs/api.md has the same table). */
export const modelFormulas = {
  ImageGen: { kind: 'sampling', price: perSampledPixel },
  DiffusionWorker: { kind: 'sampling', price: perSampledPixel },
  LlmWorker: { kind: 'tokens', price: perAnswerToken },
  VisionInterrogator: { kind: 'tokens', price: perAnswerToken },
  Embedder: { kind: 'tokens', price: perInputToken },
  AudioGen: { kind: 'seconds', price: perSecond },
  Upscaler: { kind: 'pixels', price: perOutputPixel },
  BackgroundRemover: { kind: 'pixels', price: perOutputPixel },
  DepthEstimator: { kind: 'pixels', price: perOutputPixel },
  ControlNetFilter: { kind: 'pixels', price: perOutputPixel },
  PbrSynthesizer: { kind: 'pixels', price: perOutputPixel },
  '3DTransform': { kind: 'run', price: perRun },
  TwoDToThreeD: { kind: 'run', price: perRun },
  AutoRigger: { kind: 'run', price: perRun },
} as const satisfies Record<
  ModelNodeType,
  { [K in ModelWork['kind']]: { kind: K; price: Formula<K> } }[ModelWork['kind']]
>;

/** Each cost driver's formula in words (the node-type reference states each model step's); `rate` is its catalogue price. */
export const formulaWords: Readonly<Record<ModelWork['kind'], string>> = {
  sampling:
    'per image: rate × width × height × steps ÷ (1024 × 1024 × 30), rounded up; times the images made (variations)',
  pixels: 'rate × output pixels ÷ (1024 × 1024), rounded up, summed over the images processed',
  tokens: 'rate × answer tokens ÷ 1,000, rounded up (a token is about four characters)',
  seconds: 'rate × whole seconds of audio ÷ 4, rounded up',
  run: 'rate per run, whatever the settings',
};
/** The words of a model node type's formula (Embedder: tokens of its input, not of an answer). */
export const modelFormulaWords = (type: ModelNodeType): string =>
  type === 'Embedder' ? 'rate × input tokens ÷ 8,192, rounded up' : formulaWords[modelFormulas[type].kind];

/** A model step's price in hundredths for `work` in `mode` (draft: half, unless priced per run). */
export const modelStepPrice = (spec: NodeSpec, work: ModelWork, mode: RunMode): number => {
  if (!spec.model || !isModelNodeType(spec.type)) throw new Error(`${spec.type} is not a model step`);
  const formula = modelFormulas[spec.type];
  if (formula.kind !== work.kind) throw new Error(`${spec.type} is priced by ${formula.kind}, not ${work.kind}`);
  const price = (formula.price as Formula<typeof work.kind>)(spec.price.production, work as never);
  return priceInMode({ production: price, draft: draftPrice(price, spec.model.pricedPerRun) }, mode);
};

/** Images a step's image input can carry: how many, and the most pixels of each. */
export interface ImageBound {
  count: number;
  pixels: number;
}

const unknownImages: ImageBound = { count: maxImagesPerStep, pixels: maxImagePixels };

const numberOr = (value: unknown, fallback: number) => (typeof value === 'number' ? value : fallback);

/** What the image output of `node` can carry, known for the image steps, else the bound. */
const imageOutputBound = (canvas: Canvas, node: CanvasNode, mode: RunMode): ImageBound => {
  const spec = getNodeSpec(node.type);
  switch (node.type) {
    case 'ImageGen':
    case 'DiffusionWorker': {
      const { width, height } = imageSize(node.config, stepProvider(node, spec)?.provider ?? 'sandbox');
      return { count: modeSettings(mode, node.config, node.type === 'ImageGen').variations, pixels: width * height };
    }
    case 'Upscaler': {
      const input = imageInputBound(canvas, node.id, mode);
      const scale = numberOr(node.config.scale, 2);
      return { count: input.count, pixels: Math.min(input.pixels * scale * scale, maxImagePixels) };
    }
    // Same size as their input, image by image (a crop is never larger).
    case 'BackgroundRemover':
    case 'DepthEstimator':
    case 'ControlNetFilter':
    case 'ImageCropper':
      return imageInputBound(canvas, node.id, mode);
    case 'PbrSynthesizer':
      return { count: 1, pixels: imageInputBound(canvas, node.id, mode).pixels };
    case 'ImageLoader':
      return { count: 1, pixels: maxImagePixels };
    default:
      return unknownImages;
  }
};

/**
 * The images arriving on `nodeId`'s `image` input (each image step has one, taking one connection):
 * known when they come from image steps, else up to `maxImagesPerStep` of the largest size.
 */
export const imageInputBound = (canvas: Canvas, nodeId: string, mode: RunMode): ImageBound => {
  const edge = canvas.edges.find((e) => e.target === nodeId && e.targetHandle === 'image');
  const source = edge && canvas.nodes.find((n) => n.id === edge.source);
  if (!source) return { count: 0, pixels: 0 };
  const bound = imageOutputBound(canvas, source, mode);
  return { count: Math.min(bound.count, maxImagesPerStep), pixels: Math.min(bound.pixels, maxImagePixels) };
};

/** The most work `node` (a model step) can do in a run of `canvas` in `mode`: what its estimate prices. */
export const askedWork = (canvas: Canvas, node: CanvasNode, mode: RunMode): ModelWork => {
  const { type, config } = node;
  if (!isModelNodeType(type)) throw new Error(`${type} is not a model step`);
  const spec = getNodeSpec(type);
  // One case for each model node type, no default: a new one is a compile error here until its work is named.
  switch (type) {
    case 'ImageGen':
    case 'DiffusionWorker': {
      const settings = modeSettings(mode, config, type === 'ImageGen');
      const { width, height } = imageSize(config, stepProvider(node, spec)?.provider ?? 'sandbox');
      return { kind: 'sampling', images: settings.variations, pixels: width * height, steps: settings.steps };
    }
    case 'LlmWorker':
    case 'VisionInterrogator':
      return { kind: 'tokens', tokens: modeSettings(mode, config).maxTokens };
    case 'Embedder':
      return { kind: 'tokens', tokens: maxEmbedTokens };
    case 'AudioGen':
      return { kind: 'seconds', seconds: numberOr(config.durationSeconds, referenceAudioSeconds) };
    case 'Upscaler':
    case 'BackgroundRemover':
    case 'DepthEstimator':
    case 'ControlNetFilter':
    case 'PbrSynthesizer': {
      const out = imageOutputBound(canvas, node, mode);
      return { kind: 'pixels', pixels: out.count * out.pixels };
    }
    case '3DTransform':
    case 'TwoDToThreeD':
    case 'AutoRigger':
      return { kind: 'run' };
  }
};

/** What a completed model step is charged: the price of the work it did, never above its estimate. */
export const chargeOfWork = (estimate: number, workPrice: number): number => Math.min(estimate, workPrice);
