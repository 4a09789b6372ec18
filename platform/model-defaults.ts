/**
 * A stage's own default models (`-c modelDefaults`, env `MODEL_DEFAULTS`): per model node type, the
 * provider and model a step runs on when it names neither, in place of the shipped catalogue's
 * (functions/nodes/catalogue/models.ts). Read by the stack (validated at synth: lib/stages.ts) and by
 * the runtime (functions/nodes/providers/stage.ts), so both take one syntax, parsed here.
 */
import { bedrockDefaultModels } from './providers.ts';

/**
 * The node types that are model steps, listed once: the catalogue's entries (functions/nodes/catalogue/models.ts),
 * their prices (functions/domain/model-pricing.ts) and these defaults are records keyed by it, so the
 * compiler finds a type missing from any of them (test/stage-model-defaults.test.ts holds the catalogue's
 * `model` steps equal to it).
 */
export const modelNodeTypes = [
  'ImageGen',
  'AudioGen',
  '3DTransform',
  'LlmWorker',
  'DiffusionWorker',
  'ControlNetFilter',
  'VisionInterrogator',
  'DepthEstimator',
  'PbrSynthesizer',
  'TwoDToThreeD',
  'AutoRigger',
  'Upscaler',
  'BackgroundRemover',
  'Embedder',
] as const;
export type ModelNodeType = (typeof modelNodeTypes)[number];

/**
 * The shipped catalogue's default provider and model per model node type
 * (functions/nodes/catalogue/models.ts reads them here), so the stack can check what a stage
 * enables against platform/model-facts.ts without reading the catalogue.
 */
export const catalogueDefaults: Readonly<Record<ModelNodeType, ModelChoice>> = {
  ImageGen: { provider: 'bedrock', model: bedrockDefaultModels.image },
  AudioGen: { provider: 'fal', model: 'fal-ai/stable-audio' },
  '3DTransform': { provider: 'fal', model: 'fal-ai/trellis' },
  LlmWorker: { provider: 'bedrock', model: bedrockDefaultModels.text },
  DiffusionWorker: { provider: 'bedrock', model: bedrockDefaultModels.diffusion },
  ControlNetFilter: { provider: 'bedrock', model: bedrockDefaultModels.control },
  VisionInterrogator: { provider: 'bedrock', model: bedrockDefaultModels.vision },
  DepthEstimator: { provider: 'fal', model: 'fal-ai/image-preprocessors/depth-anything/v2' },
  PbrSynthesizer: { provider: 'fal', model: 'fal-ai/patina/material/extract' },
  TwoDToThreeD: { provider: 'fal', model: 'fal-ai/trellis' },
  AutoRigger: { provider: 'fal', model: 'fal-ai/meshy/rigging' },
  Upscaler: { provider: 'bedrock', model: bedrockDefaultModels.upscale },
  BackgroundRemover: { provider: 'bedrock', model: bedrockDefaultModels.removeBackground },
  Embedder: { provider: 'bedrock', model: bedrockDefaultModels.embedding },
};

export const isModelNodeType = (type: string): type is ModelNodeType =>
  (modelNodeTypes as readonly string[]).includes(type);

/**
 * A node type's model step as the catalogue gives it (its `type`, and its shipped default `model`),
 * from this table alone: for a read, a start's check or a licence, which need no node's settings
 * schemas (importing the catalogue evaluates them all). Undefined for a type that is not a model step.
 */
export const shippedModelStep = (type: string): { type: ModelNodeType; model: ModelChoice } | undefined =>
  isModelNodeType(type) ? { type, model: catalogueDefaults[type] } : undefined;

/** A provider and a model in its own naming (a Replicate `owner/name:version`, a Bedrock id with its `:0`). */
export interface ModelChoice {
  provider: string;
  model: string;
}

/** Node type → the model its steps run when they name none; a type not in it keeps the catalogue's. */
export type ModelDefaults = Readonly<Partial<Record<ModelNodeType, ModelChoice>>>;

const providerPattern = /^[a-z0-9][a-z0-9-]*$/;
/** Model ids as providers spell them: no spaces and no commas (the list's separator). */
const modelPattern = /^[A-Za-z0-9][\w.:/@+-]*$/;

/** `provider:model`: split at the first colon, since models carry their own (`…-v1:0`, `owner/name:version`). */
const modelChoice = (name: string, type: string, value: unknown): ModelChoice => {
  const text = typeof value === 'string' ? value.trim() : '';
  const at = text.indexOf(':');
  const provider = at < 0 ? '' : text.slice(0, at);
  const model = at < 0 ? '' : text.slice(at + 1);
  if (!providerPattern.test(provider) || !modelPattern.test(model)) {
    throw new Error(`${name}: ${type} must be given as provider:model, got ${JSON.stringify(value)}`);
  }
  return { provider, model };
};

/**
 * `NodeType=provider:model,…` (`Upscaler=replicate:nightmareai/real-esrgan:<version>`), or an object
 * `{ "Upscaler": "replicate:…" }` (cdk.json's stage block), or that object as JSON text (the env
 * var). `name` starts each error message (`context modelDefaults`, `MODEL_DEFAULTS`). Throws on
 * anything malformed, a node type that is not a model step, or a type given twice; empty: none.
 */
export const parseModelDefaults = (value: unknown, name: string): ModelDefaults => {
  if (value === undefined || value === '') return {};
  if (typeof value === 'string' && value.trim().startsWith('{')) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(value);
    } catch {
      throw new Error(`${name} is not valid JSON: ${JSON.stringify(value)}`);
    }
    return parseModelDefaults(parsed, name);
  }
  let pairs: [string, unknown][];
  if (typeof value === 'string') {
    pairs = value
      .split(',')
      .map((part) => part.trim())
      .filter(Boolean)
      .map((part) => {
        const at = part.indexOf('=');
        if (at < 0)
          throw new Error(
            `${name} must be NodeType=provider:model pairs, comma-separated, got ${JSON.stringify(part)}`,
          );
        return [part.slice(0, at).trim(), part.slice(at + 1)];
      });
  } else if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    pairs = Object.entries(value);
  } else {
    throw new Error(`${name} must be NodeType=provider:model pairs, comma-separated, got ${JSON.stringify(value)}`);
  }
  if (pairs.length === 0) throw new Error(`${name} is empty: ${JSON.stringify(value)}`);
  const defaults: Partial<Record<ModelNodeType, ModelChoice>> = {};
  for (const [type, choice] of pairs) {
    if (!isModelNodeType(type)) {
      throw new Error(
        `${name}: ${JSON.stringify(type)} is not a model node type (they are ${modelNodeTypes.join(', ')})`,
      );
    }
    if (Object.hasOwn(defaults, type)) throw new Error(`${name}: ${type} is given twice`);
    defaults[type] = modelChoice(name, type, choice);
  }
  return defaults;
};

/** The defaults as the env var carries them: JSON of node type to `provider:model`. */
export const modelDefaultsText = (defaults: ModelDefaults): string =>
  JSON.stringify(
    Object.fromEntries(Object.entries(defaults).map(([type, choice]) => [type, `${choice.provider}:${choice.model}`])),
  );
