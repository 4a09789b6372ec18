/**
 * The one interface every model step calls (DESIGN section 4). A provider turns a request into text,
 * files or vectors; executors store the files and report the model used. Capabilities a provider
 * lacks are left out, and a step asking for one fails with a clear message.
 */
import type { RunMode } from '../../../schemas/run-words.ts';

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

/**
 * A provider call that failed (HTTP error, bad answer, missing configuration). Never carries a key.
 * `retryable`: the provider may answer later (a 429, a 5xx, a 408, a timeout or a network error),
 * so the step is tried again after a backoff (at least `retryAfterSeconds`, from `Retry-After`);
 * any other failure (a 4xx, an answer we cannot read) fails the step at once.
 */
export class ProviderError extends Error {
  override readonly name = 'ProviderError';
  readonly status: number | undefined;
  readonly retryable: boolean;
  readonly retryAfterSeconds: number | undefined;
  constructor(message: string, status?: number, options: { retryable?: boolean; retryAfterSeconds?: number } = {}) {
    super(message);
    this.status = status;
    this.retryable = options.retryable ?? isRetryableStatus(status);
    this.retryAfterSeconds = options.retryAfterSeconds;
  }
}

/** 408, 429 and every 5xx: the provider may succeed when asked again. */
export const isRetryableStatus = (status: number | undefined): boolean =>
  status === 408 || status === 429 || (status !== undefined && status >= 500 && status <= 599);

/**
 * Seconds from a `Retry-After` header (delta-seconds or an HTTP date), capped at `maxSeconds`;
 * undefined when absent or unreadable.
 */
export const parseRetryAfter = (value: string | null | undefined, now: Date, maxSeconds = 900): number | undefined => {
  if (!value) return undefined;
  const trimmed = value.trim();
  const seconds = /^\d+$/.test(trimmed) ? Number(trimmed) : (Date.parse(trimmed) - now.getTime()) / 1000;
  if (!Number.isFinite(seconds)) return undefined;
  return Math.min(Math.max(0, Math.ceil(seconds)), maxSeconds);
};

/** A job at an asynchronous provider, as its last answer or webhook describes it. */
/** The work a provider reports a finished job did (Replicate's prediction `metrics`), where it reports it. */
export interface JobUsage {
  /** Tokens the model read (an embedding's input). */
  inputTokens?: number;
  /** Tokens the model wrote (a text answer). */
  outputTokens?: number;
  /** Seconds the model ran (Replicate's `predict_time`): logged, not a driver of our prices. */
  predictSeconds?: number;
}

export type JobState =
  | { status: 'running' }
  | { status: 'succeeded'; output: unknown; usage?: JobUsage; logs?: string }
  | { status: 'failed'; message: string; logs?: string }
  | { status: 'canceled' };

/** Where a job lives at its provider: its id, and the model it runs (fal addresses requests by app id). */
export interface JobRef {
  id: string;
  model: string;
}

export interface JobSubmission {
  /** In the provider's own naming: Replicate `owner/name` or `owner/name:version`, fal's app id. */
  model: string;
  /** The model's input fields, as the model takes them (files as short-lived URLs or data URIs). */
  input: Record<string, unknown>;
  /** Our public route the provider announces the job's end to (it carries the step's token). */
  webhookUrl?: string;
  signal: AbortSignal;
}

/** Which jobs to look for (`JobProvider.findByWebhook`): submitted in a time window, with a webhook URL that matches. */
export interface JobSearch {
  /** The model the job was submitted to, in the provider's naming (as in `JobSubmission`). */
  model: string;
  /** Created at or after this time. */
  from: Date;
  /** Created before this time. */
  before: Date;
  /** Whether a job's webhook URL is the one looked for (it carries the step's token). */
  webhookMatches: (url: string) => boolean;
}

/** A webhook delivery as our route received it: lower-case header names, the raw body. */
export interface ProviderWebhookDelivery {
  headers: Readonly<Record<string, string | undefined>>;
  body: string;
  now: Date;
}

/** A webhook whose signature, timestamp or body does not hold: answered 401, nothing changes. */
export class WebhookRefusedError extends Error {
  override readonly name = 'WebhookRefusedError';
}

/**
 * A provider that runs long jobs asynchronously (Replicate, fal): the step submits a job and ends
 * its invocation; the job's end arrives by a signed webhook or by polling (`get`). Every method
 * throws `ProviderError` (classified as above) and never puts a key in a message.
 */
export interface JobProvider {
  readonly key: string;
  /** Submits one job. Not retried inside: a submit that may have reached the provider is never repeated blindly. */
  submit(job: JobSubmission): Promise<JobRef>;
  get(ref: JobRef, signal: AbortSignal): Promise<JobState>;
  /** Asks the provider to stop the job; a job already ended is not an error. */
  cancel(ref: JobRef, signal: AbortSignal): Promise<void>;
  /**
   * The jobs `search` describes: how a job submitted by a worker that died before recording its id
   * is found. Absent where the provider documents no way to list jobs by what we sent (fal).
   */
  findByWebhook?(search: JobSearch, signal: AbortSignal): Promise<JobRef[]>;
  /**
   * Verifies a webhook (signature with the provider's published secret or keys, timestamp within
   * 5 minutes of `now`) and returns the job it announces; throws `WebhookRefusedError` otherwise.
   */
  verifyWebhook(delivery: ProviderWebhookDelivery): Promise<{ id: string; state: JobState }>;
}

/** A team's own key for a provider or service (spec: Team, Connections), resolved by the caller. */
export interface TeamConnection {
  /** Provider key or integration name (`replicate`, `fal`, `chat`, `codehost-a`, …). */
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
