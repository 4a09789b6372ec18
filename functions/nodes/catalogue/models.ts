/**
 * AI model steps. Each names a real default model on a real provider (Bedrock's where Bedrock has
 * one, else fal's), which a stage turns on; on a sandbox stage where that provider is off, the
 * built-in `sandbox` provider (offline, deterministic, real files) stands in and the step says so.
 * A stage may pin another default per node type (`-c modelDefaults`, read at run time from
 * `MODEL_DEFAULTS`: functions/nodes/providers/registry.ts `stepProvider`); `config.provider` and
 * `config.model` choose another for one step. Prices are for the default model, in
 * hundredths of a credit.
 */
import * as v from 'valibot';
import { catalogueDefaults, type ModelNodeType } from '../../../platform/model-defaults.ts';
import type { NodeType } from '../../../schemas/workflow-words.ts';
import {
  intBetween,
  type ModelSpec,
  modelConfigEntries,
  modelPrice,
  type NodeSpec,
  numberBetween,
} from './node-spec.ts';

/**
 * A node type's default model on a real provider (platform/model-defaults.ts `catalogueDefaults`;
 * docs/models.md: licence, lifecycle, latency, sources), and the offline sandbox model that stands in for it on a sandbox stage where that provider is off.
 */
const hosted = (type: ModelNodeType, sandboxModel: string, pricedPerRun = false): ModelSpec => ({
  provider: catalogueDefaults[type].provider,
  model: catalogueDefaults[type].model,
  sandboxModel,
  pricedPerRun,
});

const modelStep = { category: 'model', acceptsApiInputKey: false, minimalConfig: {} } as const;
const SeedSchema = v.optional(intBetween(0, 2 ** 32 - 1));
const SideSchema = v.optional(intBetween(64, 2048));
/** Settings of the image samplers (ImageGen, DiffusionWorker); `draft` lowers `steps`. */
const samplingEntries = {
  width: SideSchema,
  height: SideSchema,
  steps: v.optional(intBetween(1, 150)),
  seed: SeedSchema,
};
const MeshFormatSchema = v.optional(v.picklist(['glb', 'obj']));

/** Each model node type a stage may pin a default for (platform/model-defaults.ts) has its entry here. */
export const modelNodes = {
  ImageGen: {
    ...modelStep,
    type: 'ImageGen',
    displayName: 'Image generation',
    inputs: [
      { name: 'prompt', kind: 'text', required: true },
      { name: 'reference', kind: 'image' },
    ],
    outputs: [{ name: 'image', kind: 'image' }],
    configSchema: v.object({
      ...modelConfigEntries,
      ...samplingEntries,
      variations: v.optional(intBetween(1, 4)),
      negativePrompt: v.optional(v.string()),
    }),
    model: hosted('ImageGen', 'sandbox-image-1'),
    price: modelPrice(400, false),
  },
  AudioGen: {
    ...modelStep,
    type: 'AudioGen',
    displayName: 'Audio generation',
    inputs: [{ name: 'prompt', kind: 'text', required: true }],
    outputs: [{ name: 'audio', kind: 'audio' }],
    configSchema: v.object({
      ...modelConfigEntries,
      durationSeconds: v.optional(numberBetween(1, 300)),
      seed: SeedSchema,
    }),
    model: hosted('AudioGen', 'sandbox-audio-1'),
    price: modelPrice(300, false),
  },
  '3DTransform': {
    ...modelStep,
    type: '3DTransform',
    displayName: '3D transform',
    inputs: [
      { name: 'image', kind: 'image', required: true },
      { name: 'prompt', kind: 'text' },
    ],
    outputs: [{ name: 'mesh', kind: 'mesh' }],
    configSchema: v.object({ ...modelConfigEntries, format: MeshFormatSchema, seed: SeedSchema }),
    model: hosted('3DTransform', 'sandbox-mesh-1', true),
    price: modelPrice(1500, true),
  },
  LlmWorker: {
    ...modelStep,
    type: 'LlmWorker',
    displayName: 'LLM worker',
    inputs: [
      { name: 'prompt', kind: 'text', required: true },
      { name: 'context', kind: 'any', multiple: true },
    ],
    outputs: [{ name: 'text', kind: 'text' }],
    configSchema: v.object({
      ...modelConfigEntries,
      system: v.optional(v.string()),
      maxTokens: v.optional(intBetween(1, 32_000)),
      temperature: v.optional(numberBetween(0, 2)),
    }),
    model: hosted('LlmWorker', 'sandbox-text-1'),
    price: modelPrice(200, false),
  },
  DiffusionWorker: {
    ...modelStep,
    type: 'DiffusionWorker',
    displayName: 'Diffusion worker',
    inputs: [
      { name: 'prompt', kind: 'text', required: true },
      { name: 'image', kind: 'image' },
    ],
    outputs: [{ name: 'image', kind: 'image' }],
    configSchema: v.object({
      ...modelConfigEntries,
      ...samplingEntries,
      guidance: v.optional(numberBetween(0, 30)),
      strength: v.optional(numberBetween(0, 1)),
    }),
    model: hosted('DiffusionWorker', 'sandbox-diffusion-1'),
    price: modelPrice(400, false),
  },
  ControlNetFilter: {
    ...modelStep,
    type: 'ControlNetFilter',
    displayName: 'ControlNet filter',
    inputs: [
      { name: 'image', kind: 'image', required: true },
      { name: 'prompt', kind: 'text' },
    ],
    outputs: [{ name: 'image', kind: 'image' }],
    configSchema: v.object({
      ...modelConfigEntries,
      mode: v.optional(v.picklist(['canny', 'depth', 'pose', 'scribble'])),
      strength: v.optional(numberBetween(0, 2)),
    }),
    model: hosted('ControlNetFilter', 'sandbox-control-1'),
    price: modelPrice(300, false),
  },
  VisionInterrogator: {
    ...modelStep,
    type: 'VisionInterrogator',
    displayName: 'Vision interrogator',
    inputs: [
      { name: 'image', kind: 'image', required: true },
      { name: 'question', kind: 'text' },
    ],
    outputs: [{ name: 'text', kind: 'text' }],
    configSchema: v.object({
      ...modelConfigEntries,
      detail: v.optional(v.picklist(['low', 'high'])),
      maxTokens: v.optional(intBetween(1, 8_000)),
    }),
    model: hosted('VisionInterrogator', 'sandbox-vision-1'),
    price: modelPrice(150, false),
  },
  DepthEstimator: {
    ...modelStep,
    type: 'DepthEstimator',
    displayName: 'Depth estimator',
    inputs: [{ name: 'image', kind: 'image', required: true }],
    outputs: [{ name: 'depth', kind: 'image' }],
    configSchema: v.object({ ...modelConfigEntries }),
    model: hosted('DepthEstimator', 'sandbox-depth-1'),
    price: modelPrice(100, false),
  },
  PbrSynthesizer: {
    ...modelStep,
    type: 'PbrSynthesizer',
    displayName: 'PBR synthesizer',
    inputs: [{ name: 'image', kind: 'image', required: true }],
    outputs: [
      { name: 'albedo', kind: 'image' },
      { name: 'normal', kind: 'image' },
      { name: 'roughness', kind: 'image' },
    ],
    configSchema: v.object({ ...modelConfigEntries, resolution: v.optional(v.picklist([512, 1024, 2048])) }),
    model: hosted('PbrSynthesizer', 'sandbox-pbr-1'),
    price: modelPrice(500, false),
  },
  TwoDToThreeD: {
    ...modelStep,
    type: 'TwoDToThreeD',
    displayName: '2D to 3D',
    inputs: [{ name: 'image', kind: 'image', required: true }],
    outputs: [{ name: 'mesh', kind: 'mesh' }],
    configSchema: v.object({ ...modelConfigEntries, format: MeshFormatSchema, seed: SeedSchema }),
    model: hosted('TwoDToThreeD', 'sandbox-image-to-mesh-1', true),
    price: modelPrice(1500, true),
  },
  AutoRigger: {
    ...modelStep,
    type: 'AutoRigger',
    displayName: 'Auto rigger',
    inputs: [{ name: 'mesh', kind: 'mesh', required: true }],
    outputs: [{ name: 'rig', kind: 'mesh' }],
    configSchema: v.object({ ...modelConfigEntries, skeleton: v.optional(v.picklist(['humanoid', 'quadruped'])) }),
    model: hosted('AutoRigger', 'sandbox-rigger-1', true),
    price: modelPrice(1000, true),
  },
  Upscaler: {
    ...modelStep,
    type: 'Upscaler',
    displayName: 'Upscaler',
    inputs: [{ name: 'image', kind: 'image', required: true }],
    outputs: [{ name: 'image', kind: 'image' }],
    configSchema: v.object({ ...modelConfigEntries, scale: v.optional(v.picklist([2, 4])) }),
    model: hosted('Upscaler', 'sandbox-upscaler-1'),
    price: modelPrice(100, false),
  },
  BackgroundRemover: {
    ...modelStep,
    type: 'BackgroundRemover',
    displayName: 'Background remover',
    inputs: [{ name: 'image', kind: 'image', required: true }],
    outputs: [{ name: 'image', kind: 'image' }],
    configSchema: v.object({ ...modelConfigEntries }),
    model: hosted('BackgroundRemover', 'sandbox-matting-1'),
    price: modelPrice(50, false),
  },
  Embedder: {
    ...modelStep,
    type: 'Embedder',
    displayName: 'Embedder',
    inputs: [{ name: 'text', kind: 'text', required: true }],
    outputs: [{ name: 'embedding', kind: 'embedding' }],
    configSchema: v.object({ ...modelConfigEntries, dimensions: v.optional(intBetween(1, 4096)) }),
    model: hosted('Embedder', 'sandbox-embedding-1'),
    price: modelPrice(10, false),
  },
} satisfies Partial<Record<NodeType, NodeSpec>> & Record<ModelNodeType, NodeSpec>;
