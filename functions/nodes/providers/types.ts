/**
 * The one interface every model step calls (DESIGN section 4). A provider turns a request into text,
 * files or vectors; executors store the files and report the model used. Capabilities a provider
 * lacks are left out, and a step asking for one fails with a clear message.
 */
import type { RunMode } from '../../../schemas/runs.ts';

/** Bytes a provider produced or was given, with their type. */
export interface MediaFile {
  body: Uint8Array;
  contentType: string;
}

export interface ModelCall {
  model: string;
  mode: RunMode;
  signal: AbortSignal;
  seed?: number;
}

export interface TextRequest extends ModelCall {
  prompt: string;
  system?: string;
  /** Further context (documents, earlier answers), as text. */
  context?: string[];
  /** Images to look at (VisionInterrogator). */
  images?: MediaFile[];
  /** Already cut for `draft` by the executor. */
  maxTokens?: number;
  temperature?: number;
}

export interface ImageRequest extends ModelCall {
  prompt: string;
  negativePrompt?: string;
  width: number;
  height: number;
  /** Sampling steps (fewer in `draft`). */
  steps: number;
  /** How many images (1 in `draft`). */
  variations: number;
  /** Image to start from (img2img) or follow. */
  reference?: MediaFile;
  strength?: number;
  guidance?: number;
}

export const imageOperations = [
  'upscale',
  'remove_background',
  'depth',
  'control',
  'albedo',
  'normal',
  'roughness',
] as const;
export type ImageOperation = (typeof imageOperations)[number];

export interface ImageEditRequest extends ModelCall {
  operation: ImageOperation;
  image: MediaFile;
  prompt?: string;
  /** `upscale`: 2 or 4. */
  scale?: number;
  /** `control`: canny, depth, pose, scribble. */
  controlMode?: string;
  strength?: number;
}

export interface AudioRequest extends ModelCall {
  prompt: string;
  durationSeconds: number;
}

export interface MeshRequest extends ModelCall {
  /** `generate`: a mesh from a prompt and/or an image; `rig`: a skeleton for `mesh`. */
  operation: 'generate' | 'rig';
  prompt?: string;
  image?: MediaFile;
  mesh?: MediaFile;
  skeleton?: string;
}

export interface EmbedRequest extends ModelCall {
  text: string;
  dimensions?: number;
}

export interface Provider {
  /** The registry key (`sandbox`, `openai-compatible`, …). */
  readonly key: string;
  generateText?(request: TextRequest): Promise<string>;
  generateImage?(request: ImageRequest): Promise<MediaFile[]>;
  editImage?(request: ImageEditRequest): Promise<MediaFile>;
  generateAudio?(request: AudioRequest): Promise<MediaFile>;
  generateMesh?(request: MeshRequest): Promise<MediaFile>;
  embed?(request: EmbedRequest): Promise<number[]>;
}

export type ProviderCapability = Exclude<keyof Provider, 'key'>;

/** A provider call that failed (HTTP error, bad answer, missing configuration). Never carries a key. */
export class ProviderError extends Error {
  override readonly name = 'ProviderError';
  readonly status: number | undefined;
  constructor(message: string, status?: number) {
    super(message);
    this.status = status;
  }
}

/** A team's own key for a provider or service (spec: Team, Connections), resolved by the caller. */
export interface TeamConnection {
  /** Provider key or integration name (`byok-y`, `chat`, `codehost-a`, …). */
  key: string;
  /** The secret (API key or token). */
  secret: string;
  /** Base URL the connection points at, when it has one (an endpoint, webhook URL, API base). */
  endpoint?: string;
}

/** Credentials as a secret store holds them: JSON `{"apiKey": "…", "baseUrl": "https://…"}`. */
export interface ProviderCredentials {
  apiKey: string;
  /** Optional where the registry (or the team connection) has the base URL. */
  baseUrl?: string;
}

/**
 * The credentials in a secret's text, or undefined when it is not that JSON. Never throws: a
 * parse error would quote the text, and the text is a secret.
 */
export const parseProviderCredentials = (text: string): ProviderCredentials | undefined => {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const { apiKey, baseUrl } = value as { apiKey?: unknown; baseUrl?: unknown };
  if (typeof apiKey !== 'string' || apiKey === '') return undefined;
  if (baseUrl !== undefined && (typeof baseUrl !== 'string' || !/^https?:\/\//.test(baseUrl))) return undefined;
  return { apiKey, ...(baseUrl ? { baseUrl } : {}) };
};
