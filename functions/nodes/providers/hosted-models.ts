/**
 * How a model step's inputs and settings become a hosted model's input fields at an asynchronous
 * provider (Replicate, fal), and how the model's answer is read back. Models the registry knows
 * have their own mapping (their fields as their pages document them); any other model gets its node
 * type's generic mapping (prompt to `prompt`, an image to `image` on Replicate and `image_url` on
 * fal, a mesh to `mesh` / `model_url`), and `config.modelInput` is passed on as it is, last.
 * Pure: the executor resolves files to URLs first.
 */

/** A step's parts, already resolved: text as text, files as short-lived URLs. */
export interface JobParts {
  prompt?: string;
  negativePrompt?: string;
  image?: string;
  mesh?: string;
  text?: string;
  seed?: number;
  width?: number;
  height?: number;
  steps?: number;
  variations?: number;
  durationSeconds?: number;
  scale?: number;
  strength?: number;
  maxTokens?: number;
  skeleton?: string;
}

type JobProviderKey = 'replicate' | 'fal';

/** The step settings a step is priced by (functions/domain/model-pricing.ts `askedWork`). */
export type PricedSetting = 'width' | 'height' | 'steps' | 'variations' | 'maxTokens' | 'durationSeconds' | 'scale';

/**
 * A model input field that drives cost: the step settings it is made from (none: the service sets
 * it to a fixed value, or leaves the model's own), and how its value reads back as those settings.
 */
export interface CostField {
  settings: readonly PricedSetting[];
  read(value: unknown): Partial<Record<PricedSetting, number>>;
}

interface HostedModel {
  input(parts: JobParts): Record<string, unknown>;
  /** Its input fields that drive its cost, as its page documents them (beyond the generic names). */
  costFields: Readonly<Record<string, CostField>>;
}

/** A number as a provider reads one (a JSON number, or a numeric string), else undefined. */
const numeric = (value: unknown): number | undefined => {
  const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  return typeof n === 'number' && Number.isFinite(n) ? n : undefined;
};

/** A field that is one setting's number. */
const setting = (name: PricedSetting): CostField => ({
  settings: [name],
  read: (value) => {
    const n = numeric(value);
    return n === undefined ? {} : { [name]: n };
  },
});

/** fal's `image_size` object, `{ width, height }` (its named sizes are at most 1024 × 1024 as fal documents them). */
const imageSizeField: CostField = {
  settings: ['width', 'height'],
  read: (value) => {
    if (typeof value === 'string') return { width: 1024, height: 1024 };
    if (typeof value !== 'object' || value === null) return {};
    const { width, height } = value as { width?: unknown; height?: unknown };
    return {
      ...(numeric(width) !== undefined && { width: numeric(width) }),
      ...(numeric(height) !== undefined && { height: numeric(height) }),
    };
  },
};

/** A field the service sets itself (or leaves the model's own): no step setting makes it. */
const fixed: CostField = { settings: [], read: () => ({}) };

const defined = (entries: Record<string, unknown>): Record<string, unknown> =>
  Object.fromEntries(Object.entries(entries).filter(([, value]) => value !== undefined));

/** The nearest aspect ratio Replicate's FLUX takes, from a width and height. */
const aspectRatio = (width = 1024, height = 1024): string => {
  const ratios = ['1:1', '16:9', '21:9', '3:2', '2:3', '4:5', '5:4', '3:4', '4:3', '9:16', '9:21'];
  const wanted = width / height;
  let best = '1:1';
  for (const ratio of ratios) {
    const [w, h] = ratio.split(':').map(Number) as [number, number];
    const [bw, bh] = best.split(':').map(Number) as [number, number];
    if (Math.abs(Math.log(w / h / wanted)) < Math.abs(Math.log(bw / bh / wanted))) best = ratio;
  }
  return best;
};

/**
 * Models with their own mapping, by `provider:model` (the model without a `:version`). Fields as
 * each model's page documents them (sources in docs/models.md, read 2026-11-26).
 */
const known: Readonly<Record<string, HostedModel>> = {
  'fal:fal-ai/flux/schnell': {
    input: (p) =>
      defined({
        prompt: p.prompt,
        image_size: p.width && p.height ? { width: p.width, height: p.height } : undefined,
        num_inference_steps: p.steps === undefined ? undefined : Math.min(p.steps, 12),
        num_images: p.variations,
        seed: p.seed,
        output_format: 'png',
        enable_safety_checker: true,
      }),
    costFields: {
      image_size: imageSizeField,
      num_inference_steps: setting('steps'),
      num_images: setting('variations'),
    },
  },
  'replicate:black-forest-labs/flux-schnell': {
    input: (p) =>
      defined({
        prompt: p.prompt,
        aspect_ratio: aspectRatio(p.width, p.height),
        num_outputs: p.variations,
        num_inference_steps: p.steps === undefined ? undefined : Math.min(p.steps, 4),
        seed: p.seed,
        output_format: 'png',
      }),
    // Its size follows `aspect_ratio` at `megapixels` (1 by default), not a width and height.
    costFields: {
      num_outputs: setting('variations'),
      num_inference_steps: setting('steps'),
      aspect_ratio: { settings: ['width', 'height'], read: () => ({}) },
      megapixels: fixed,
    },
  },
  'replicate:nightmareai/real-esrgan': {
    input: (p) => defined({ image: p.image, scale: p.scale ?? 2, face_enhance: false }),
    costFields: { scale: setting('scale'), face_enhance: fixed },
  },
  // Small only: the larger sizes' weights are CC-BY-NC-4.0 (docs/models.md).
  'replicate:chenxwh/depth-anything-v2': {
    input: (p) => defined({ image: p.image, model_size: 'Small' }),
    costFields: { model_size: fixed },
  },
  'fal:fal-ai/birefnet/v2': {
    input: (p) => defined({ image_url: p.image, output_format: 'png' }),
    costFields: {},
  },
  // Extracts a material from a photo; `prompt` (required) names what to extract, and PbrSynthesizer
  // has no prompt of its own. `maps` as fal-ai/patina documents it, the three maps the node makes.
  'fal:fal-ai/patina/material/extract': {
    input: (p) =>
      defined({
        prompt: p.prompt ?? 'the main surface material',
        image_url: p.image,
        maps: ['basecolor', 'normal', 'roughness'],
        seed: p.seed,
        output_format: 'png',
      }),
    costFields: { maps: fixed },
  },
  'fal:fal-ai/trellis': {
    input: (p) => defined({ image_url: p.image, seed: p.seed }),
    // Priced per run; its other fields are refused as any field off the safe list is.
    costFields: {},
  },
  // AudioGen has no sampling steps of its own: the model's default.
  'fal:fal-ai/stable-audio': {
    input: (p) => defined({ prompt: p.prompt, seconds_total: p.durationSeconds }),
    costFields: { seconds_total: setting('durationSeconds'), steps: fixed },
  },
  'fal:fal-ai/meshy/rigging': { input: (p) => defined({ model_url: p.mesh }), costFields: {} },
};

/**
 * The fields the generic mapping fills from the step's settings, and other common names of the same
 * work (so a refusal can say which setting to use): they drive the cost of any model.
 */
const genericCostFields: Readonly<Record<string, CostField>> = {
  width: setting('width'),
  height: setting('height'),
  image_size: imageSizeField,
  num_inference_steps: setting('steps'),
  steps: setting('steps'),
  num_outputs: setting('variations'),
  num_images: setting('variations'),
  duration: setting('durationSeconds'),
  seconds_total: setting('durationSeconds'),
  scale: setting('scale'),
  upscale_factor: setting('scale'),
  max_tokens: setting('maxTokens'),
  max_new_tokens: setting('maxTokens'),
};

/** The node type's generic mapping on a provider, for a model the registry does not know. */
const generic = (provider: JobProviderKey, p: JobParts): Record<string, unknown> =>
  defined({
    prompt: p.prompt,
    negative_prompt: p.negativePrompt,
    [provider === 'fal' ? 'image_url' : 'image']: p.image,
    [provider === 'fal' ? 'model_url' : 'mesh']: p.mesh,
    text: p.text,
    seed: p.seed,
    width: p.width,
    height: p.height,
    num_inference_steps: p.steps,
    [provider === 'fal' ? 'num_images' : 'num_outputs']: p.variations,
    duration: p.durationSeconds,
    scale: p.scale,
    strength: p.strength,
    max_tokens: p.maxTokens,
  });

/** The models with a mapping of their own, as `provider:model`. */
export const knownHostedModels: readonly string[] = Object.keys(known);

/** A model id without Replicate's `:version`. */
export const modelName = (model: string): string => model.split(':')[0] ?? model;

/** Whether the registry has a mapping of its own for this model. */
export const isKnownHostedModel = (provider: string, model: string): boolean =>
  Object.hasOwn(known, `${provider}:${modelName(model)}`);

/**
 * The input fields that drive a model's cost: the generic names of that work, and a model the
 * registry knows its own too.
 */
export const hostedModelFields = (
  provider: string,
  model: string,
): { costFields: Readonly<Record<string, CostField>> } => {
  const key = `${provider}:${modelName(model)}`;
  const own = Object.hasOwn(known, key) ? (known[key] as HostedModel) : undefined;
  return { costFields: { ...genericCostFields, ...own?.costFields } };
};

/**
 * The priced settings a model input asks for, read back from its cost fields (the property the
 * tests check: never more than the step's estimate prices).
 */
export const requestedSettings = (
  provider: string,
  model: string,
  input: Readonly<Record<string, unknown>>,
): Partial<Record<PricedSetting, number>> => {
  const { costFields } = hostedModelFields(provider, model);
  const asked: Partial<Record<PricedSetting, number>> = {};
  for (const [name, field] of Object.entries(costFields)) {
    if (Object.hasOwn(input, name)) Object.assign(asked, field.read(input[name]));
  }
  return asked;
};

/**
 * The model's input: its own mapping or the generic one, then `modelInput`'s fields as they are
 * (a null-prototype object: a `__proto__` field is a field, never a prototype).
 */
export const hostedModelInput = (
  provider: JobProviderKey,
  model: string,
  parts: JobParts,
  modelInput: Record<string, unknown> | undefined,
): Record<string, unknown> => {
  const key = `${provider}:${modelName(model)}`;
  const base = Object.hasOwn(known, key) ? (known[key] as HostedModel).input(parts) : generic(provider, parts);
  const input: Record<string, unknown> = Object.create(null);
  for (const source of [base, modelInput ?? {}]) {
    for (const [name, value] of Object.entries(source)) input[name] = value;
  }
  return input;
};

/** What a hosted model answered, read by the shapes models commonly answer. */
export interface JobAnswer {
  /** File URLs, in the order the model gave them. */
  urls: string[];
  /**
   * Files under a name: a field's (fal's `{ normal: { url } }`, Replicate's `{ grey_depth: "https://…" }`)
   * or an `images` entry's `map_type` (fal's PATINA: `{ images: [{ url, map_type: "normal" }] }`).
   */
  named: Record<string, string>;
  /** Text: a string that is not a URL, or a list of text tokens joined. */
  text?: string;
  /** A vector of numbers (an embedding). */
  vector?: number[];
}

const isUrl = (value: unknown): value is string => typeof value === 'string' && /^(https?:|data:)/.test(value);

/** The URL of `{ url }` (fal's File objects) or of a URL string. */
const urlOf = (value: unknown): string | undefined => {
  if (isUrl(value)) return value;
  if (typeof value === 'object' && value !== null && isUrl((value as { url?: unknown }).url)) {
    return (value as { url: string }).url;
  }
  return undefined;
};

/** fal's and Replicate's common output fields that hold files, in the order they are read. */
const fileFields = [
  'images',
  'image',
  'audio_file',
  'audio',
  'audio_url',
  'model_mesh',
  'model_glb',
  'mesh',
  'glb',
  'rigged_character_glb',
  'output',
  'video',
];

/** Reads an answer: a URL or a list of URLs, a list of text tokens, text, a vector, fal's file objects. */
export const readJobAnswer = (output: unknown): JobAnswer => {
  const answer: JobAnswer = { urls: [], named: Object.create(null) };
  const addUrl = (value: unknown) => {
    if (Array.isArray(value)) {
      for (const item of value) addUrl(item);
      return;
    }
    const url = urlOf(value);
    if (url && !answer.urls.includes(url)) answer.urls.push(url);
  };
  if (typeof output === 'string') {
    if (isUrl(output)) answer.urls.push(output);
    else answer.text = output;
    return answer;
  }
  if (Array.isArray(output)) {
    if (output.length > 0 && output.every((item) => typeof item === 'number')) answer.vector = output as number[];
    else if (output.every((item) => isUrl(item) || urlOf(item))) addUrl(output);
    else if (output.every((item) => typeof item === 'string')) answer.text = output.join('');
    return answer;
  }
  if (typeof output !== 'object' || output === null) return answer;
  const record = output as Record<string, unknown>;
  for (const field of fileFields) if (Object.hasOwn(record, field)) addUrl(record[field]);
  if (Array.isArray(record.images)) {
    for (const item of record.images as unknown[]) {
      const type = typeof item === 'object' && item !== null ? (item as { map_type?: unknown }).map_type : undefined;
      const url = urlOf(item);
      if (typeof type === 'string' && url) answer.named[type] ??= url;
    }
  }
  for (const [name, value] of Object.entries(record)) {
    const url = urlOf(value);
    if (url) {
      answer.named[name] = url;
      addUrl(url);
    }
  }
  for (const field of ['text', 'output', 'caption', 'answer']) {
    const value = record[field];
    if (typeof value === 'string') {
      if (!isUrl(value)) answer.text ??= value;
    } else if (Array.isArray(value)) {
      const items: unknown[] = value;
      if (items.every((item) => typeof item === 'string') && !items.every((item) => isUrl(item))) {
        answer.text ??= items.join('');
      }
    }
  }
  for (const field of ['embedding', 'embeddings', 'vector']) {
    const value = record[field];
    if (Array.isArray(value) && value.length > 0 && value.every((item) => typeof item === 'number')) {
      answer.vector ??= value as number[];
    }
  }
  return answer;
};
