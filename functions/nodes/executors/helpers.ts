/** What the node executors share: reading inputs, turning values into text or JSON, files, HTTP. */

import { envNames } from '../../../platform/definitions.ts';
import type { AiMark } from '../../../schemas/runs.ts';
import { type PythonInvoke, pythonInvoker } from '../../clients/lambda.ts';
import { allowLoopbackFromEnv, GuardedFetchError, localStackFromEnv } from '../../http-client/address-vet.ts';
import { type GuardedRequestInit, type GuardedResponse, guardedFetch } from '../../http-client/guarded-fetch.ts';
import { isRecord } from '../../is-record.ts';
import { logger } from '../../observability/logger.ts';
import { type StoredFileKind, storedTypeOf } from '../media/file-sniff.ts';
import { markMedia, readMediaMark, sniffContentType } from '../media/marks.ts';
import {
  createProviderResolver,
  type ProviderResolver,
  parseProviderCredentials,
  type StageProviders,
  stageProvidersFromEnv,
} from '../providers/index.ts';
import { type JobProviderResolver, jobProvidersFromEnv } from '../providers/job-providers.ts';
import { SecretUnavailableError } from '../providers/secret-refs.ts';
import type { MediaFile, TeamConnection } from '../providers/types.ts';
import { isStoredFile, type StepContext, StepFailedError, type StoredFile } from './types.ts';

/** What executors need from outside, injected so tests control it (DESIGN section 2). */
export interface ExecutorDeps {
  /** Builds the provider a model step runs on. */
  providers: ProviderResolver;
  /** The stage's providers: which it turned on, and whether the sandbox stands in for the others. */
  stage: StageProviders;
  /** HTTP on a user's behalf, through the address guard. */
  fetch: typeof guardedFetch;
  /** Loopback allowed for node HTTP calls (`ALLOW_PRIVATE_CALLBACKS=1`, local development only). */
  allowLoopback: boolean;
  /** The local stack (`LOCAL_STACK=1`): a refused loopback address says how to allow it. */
  localStack?: boolean;
  /** Default deadline of a node HTTP call (CustomApiCall's `timeoutMs` may lower or raise it up to 30 s). */
  httpTimeoutMs: number;
  /** Largest JSON or text answer read from a node HTTP call. */
  maxResponseBytes: number;
  /** Largest file a loader downloads. */
  maxFileBytes: number;
  /** For provider defaults (model names). */
  env: NodeJS.ProcessEnv;
  /** Runs a PythonSandbox step's code on the PythonRunner function; absent where none is configured. */
  python?: PythonInvoke;
  /** The asynchronous providers' adapters (Replicate, fal); absent: none. */
  jobProviders?: JobProviderResolver;
  /** Our public base URL, which providers' webhooks reach (`PUBLIC_BASE_URL`); absent: jobs are polled alone. */
  publicBaseUrl?: string;
}

/** What the step executor hands its node executors: its environment and the reader of stage secrets. */
export interface ExecutorSettings {
  env: NodeJS.ProcessEnv;
  /**
   * Reads a `PROVIDER_SECRETS` value (`SecretResolver.providerSecret`); throws `SecretUnavailableError`
   * when it cannot. Absent: the stage's providers cannot be read (the local default needs none).
   */
  providerSecret?: (source: string) => Promise<string>;
  /** Called with each AWS client the executors create (the local AWS command log instruments them). */
  onClient?: (clients: { lambda: object }) => void;
}

/** Executor deps configured from the settings, copied once so that no step reads the live environment. */
export const executorDeps = ({ env, providerSecret, onClient }: ExecutorSettings): ExecutorDeps => {
  const settings = { ...env };
  const pythonRunner = settings[envNames.pythonRunner];
  const stage = stageProvidersFromEnv(settings);
  const sources = stage.secrets;
  const stageCredentials =
    sources &&
    (async (key: string) => {
      const source = Object.hasOwn(sources, key) ? sources[key] : undefined;
      if (source === undefined) return undefined;
      const unavailable = (why: string) => new SecretUnavailableError(`the stage's credentials for ${key} ${why}`);
      if (!providerSecret) throw unavailable('cannot be read in this function');
      let text: string;
      try {
        text = await providerSecret(source);
      } catch (error) {
        if (error instanceof SecretUnavailableError) throw unavailable(`could not be read: ${error.message}`);
        throw error;
      }
      const credentials = parseProviderCredentials(text);
      if (!credentials) throw unavailable('are not JSON with an apiKey');
      return credentials;
    });
  return {
    providers: createProviderResolver({ env: settings, stageCredentials }),
    jobProviders: jobProvidersFromEnv({ env: settings, providerSecret }),
    ...(settings[envNames.publicBaseUrl] ? { publicBaseUrl: settings[envNames.publicBaseUrl] } : {}),
    stage,
    fetch: guardedFetch,
    allowLoopback: allowLoopbackFromEnv(settings),
    localStack: localStackFromEnv(settings),
    httpTimeoutMs: 10_000,
    maxResponseBytes: 5 * 1024 * 1024,
    maxFileBytes: 50 * 1024 * 1024,
    env: settings,
    // AWS_ENDPOINT_URL_LAMBDA is read from these settings, not the live environment (tests, the local default).
    python: pythonRunner
      ? pythonInvoker({ functionName: pythonRunner, endpoint: settings.AWS_ENDPOINT_URL_LAMBDA, onClient, settings })
      : undefined,
  };
};

/** Executor deps from `env` alone: the local default and tests (provider credentials from env). */
export const executorDepsFromEnv = (env: NodeJS.ProcessEnv = process.env): ExecutorDeps => executorDeps({ env });

/** Fails the step with `<NodeType>: <message>`. */
export const fail = (context: StepContext, message: string, cause?: unknown): never => {
  // The cause (a provider's refusal) is what the failure is counted by (functions/domain/failure-reasons.ts).
  throw new StepFailedError(`${context.node.type}: ${message}`, cause === undefined ? undefined : { cause });
};

/** The first value on an input handle, or undefined. */
export const firstInput = (context: StepContext, handle: string): unknown => context.inputs[handle]?.[0];

/** Every value on an input handle, in edge order. */
export const allInputs = (context: StepContext, handle: string): unknown[] => context.inputs[handle] ?? [];

/** Every value on every input handle, in the spec's handle order. */
export const everyInput = (context: StepContext): unknown[] =>
  context.spec.inputs.flatMap((h) => allInputs(context, h.name));

/** A value written out as text: strings as they are, everything else as JSON. */
export const toText = (value: unknown): string => {
  if (typeof value === 'string') return value;
  if (value === undefined || value === null) return '';
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value);
};

/**
 * A value arriving on a json input: text is parsed (kinds.ts: text → json is checked when the step
 * runs), after removing a Markdown code fence an LLM may have put around it.
 */
export const toJson = (context: StepContext, value: unknown): unknown => {
  if (typeof value !== 'string') return value ?? null;
  const fenced = /^\s*```(?:json)?\s*\n([\s\S]*?)\n\s*```\s*$/i.exec(value);
  try {
    return JSON.parse(fenced ? (fenced[1] as string) : value) as unknown;
  } catch {
    return fail(context, 'the input text is not valid JSON');
  }
};

/** A value as a finite number (numeric text accepted). */
export const toNumber = (value: unknown): number | undefined => {
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (typeof value === 'string' && value.trim() !== '') {
    const n = Number(value);
    return Number.isFinite(n) ? n : undefined;
  }
  return undefined;
};

/** Files in a value: a StoredFile, or a list (nested lists flattened). */
export const filesIn = (value: unknown): StoredFile[] => {
  if (isStoredFile(value)) return [value];
  if (Array.isArray(value)) return value.flatMap(filesIn);
  return [];
};

/**
 * Whether a file value belongs to the step's team (library layout `teams/<team>/…`, DESIGN
 * section 5). A file value can be forged in user JSON (`{ "kind": "file", "key": … }`), so no
 * step reads or hands out a file outside its team's prefix.
 */
const isTeamFile = (context: StepContext, file: StoredFile): boolean =>
  file.key.startsWith(`teams/${context.teamId}/`) && !file.key.split('/').includes('..');

/** The bytes of a stored file, with its type (judged by its bytes when they tell). */
export const readMedia = async (context: StepContext, file: StoredFile): Promise<MediaFile> => {
  if (!isTeamFile(context, file)) fail(context, "the input file is not in this team's library");
  if (file.availability === 'unavailable') fail(context, `the input file ${file.name ?? file.key} is unavailable`);
  if (!context.readFile) return fail(context, 'input files cannot be read here');
  const body = await context.readFile(file);
  return { body, contentType: sniffContentType(body) ?? file.contentType };
};

/**
 * Applies `each` to the file on `value`, or to every file when the value is a list (the variations
 * of an ImageGen), giving one result or a list alike.
 */
export const perFile = async <T>(
  context: StepContext,
  value: unknown,
  each: (file: StoredFile, index: number) => Promise<T>,
): Promise<T | T[]> => {
  const files = filesIn(value);
  if (files.length === 0) return fail(context, 'no file arrived on its input');
  if (!Array.isArray(value)) return each(files[0] as StoredFile, 0);
  return Promise.all(files.map(each));
};

const extensions: Record<string, string> = {
  'image/png': 'png',
  'image/jpeg': 'jpg',
  'image/gif': 'gif',
  'image/webp': 'webp',
  'audio/wav': 'wav',
  'audio/x-wav': 'wav',
  'audio/mpeg': 'mp3',
  'audio/flac': 'flac',
  'audio/ogg': 'ogg',
  'model/gltf-binary': 'glb',
  'model/gltf+json': 'gltf',
  'model/fbx': 'fbx',
  'model/obj': 'obj',
  'application/json': 'json',
  'text/plain': 'txt',
};
const extensionFor = (contentType: string): string => extensions[contentType] ?? 'bin';

/**
 * Stores bytes through the orchestrator, typed by their bytes among the allowed types of `kind`
 * (functions/nodes/media/file-sniff.ts `storedTypeOf`), or fails the step. AI-generated media are marked inside the file first
 * (PNG, JPEG, WAV, GLB; idempotent), unless the bytes carry a C2PA manifest: those are stored
 * exactly as the provider gave them, marked `provider_c2pa` (functions/nodes/media/marks.ts).
 */
export const store = async (
  context: StepContext,
  baseName: string,
  file: MediaFile,
  aiGenerated: boolean,
  kind: StoredFileKind = 'any',
): Promise<StoredFile> => {
  // The stored type comes from the bytes, whole, among the kind's allowed types; never the claim.
  const verdict = await storedTypeOf(kind, file.body, file.contentType);
  if (!verdict.ok) return fail(context, `the ${baseName} file cannot be stored: ${verdict.reason}`);
  const contentType = verdict.contentType;
  let body = file.body;
  let aiMark: AiMark | undefined;
  if (aiGenerated) {
    aiMark = 'service';
    try {
      ({ body, aiMark } = markMedia(body));
    } catch {
      // A file the marker cannot parse is stored as it is; the object metadata still marks it.
    }
  }
  const name = `${baseName}.${extensionFor(contentType)}`;
  return context.storeFile({
    name,
    contentType,
    body,
    aiGenerated,
    ...(aiMark && { aiMark }),
  });
};

/**
 * Whether a file made from `file` is AI-generated too: the stored file is marked (by us or by its
 * provider's C2PA manifest), or its bytes carry our mark.
 */
export const carriesMark = (file: StoredFile, body: Uint8Array): boolean => {
  if (file.aiMark) return true;
  try {
    return readMediaMark(body) !== null;
  } catch {
    return false;
  }
};

/** A guarded HTTP call whose refusals and failures become the step's error. */
export const httpCall = async (
  context: StepContext,
  deps: ExecutorDeps,
  url: string,
  init: GuardedRequestInit,
  limits: { timeoutMs?: number; maxBytes?: number } = {},
): Promise<GuardedResponse> => {
  try {
    return await deps.fetch(
      url,
      { ...init, signal: context.signal },
      {
        allowLoopback: deps.allowLoopback,
        localStack: deps.localStack ?? false,
        timeoutMs: limits.timeoutMs ?? deps.httpTimeoutMs,
        maxBytes: limits.maxBytes ?? deps.maxResponseBytes,
      },
    );
  } catch (error) {
    if (error instanceof GuardedFetchError) {
      // Why an address was refused is for the logs: the step's error reads the same for every reason.
      if (error.detail) logger.info('guarded request refused', { nodeId: context.node.id, detail: error.detail });
      return fail(context, `request refused or failed (${error.code}): ${error.message}`);
    }
    throw error;
  }
};

/** A response body as JSON when it says so (or parses), else as text. */
export const responseValue = (response: GuardedResponse): unknown => {
  const text = response.text();
  if (text === '') return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
};

/** Downloads a file through the guard; fails the step unless the answer is 200. */
export const download = async (
  context: StepContext,
  deps: ExecutorDeps,
  url: string,
  headers?: Record<string, string>,
) => {
  const response = await httpCall(context, deps, url, { method: 'GET', headers }, { maxBytes: deps.maxFileBytes });
  if (response.status !== 200) fail(context, `downloading the file answered ${response.status}`);
  const contentType = sniffContentType(response.body) ?? response.headers['content-type']?.split(';')[0]?.trim();
  return { body: response.body, contentType: contentType ?? 'application/octet-stream' };
};

/** The team's connection `key`, or the step fails with the remedy. */
export const requireConnection = async (context: StepContext, key: string): Promise<TeamConnection> => {
  const connection = await context.connection?.(key);
  if (!connection) {
    return fail(context, `needs the team connection "${key}": add one under Team, Connections`);
  }
  return connection;
};

/** A value with its files replaced by `{ name, contentType, bytes, url }` for sending elsewhere. */
export const withFileUrls = async (context: StepContext, value: unknown): Promise<unknown> => {
  if (isStoredFile(value)) {
    const url = context.fileUrl && isTeamFile(context, value) ? await context.fileUrl(value) : null;
    return { name: value.name ?? value.key.split('/').at(-1), contentType: value.contentType, bytes: value.bytes, url };
  }
  if (Array.isArray(value)) return Promise.all(value.map((v) => withFileUrls(context, v)));
  if (isRecord(value)) {
    const entries = await Promise.all(Object.entries(value).map(async ([k, v]) => [k, await withFileUrls(context, v)]));
    return Object.fromEntries(entries);
  }
  return value;
};

/** One value, or the list of values when several arrived (stages, multi-input deliveries). */
export const oneOrList = (values: unknown[]): unknown => (values.length === 1 ? values[0] : values);
