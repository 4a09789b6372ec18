/**
 * The HTTP the job adapters (Replicate, fal) speak through. Every call goes through guardedFetch (a
 * base URL resolving to a private or loopback address is refused unless `allowLoopback`), has a
 * deadline and reads a capped body; redirects are never followed. A call that got no answer becomes a
 * ProviderError: retryable for a timeout or a network error, not for a refused address. An answer
 * that is not 2xx becomes one through `failure`, classified by its status, with `Retry-After` and the
 * provider's own error text. The key is cut out of every message, even where the provider quotes it.
 */

import { GuardedFetchError } from '../../http-client/address-vet.ts';
import { guardedFetch } from '../../http-client/guarded-fetch.ts';
import { ProviderError, parseRetryAfter } from './types.ts';

/** What both job providers' adapters take (Replicate's, fal's). */
export interface JobProviderOptions {
  apiKey: string | undefined;
  /** Another base URL than the provider's own (a stand-in). */
  baseUrl?: string;
  /** Allows a loopback base URL over plain http (local development, the stand-in). */
  allowLoopback?: boolean;
  /** Deadline of one call; default 30 s. */
  timeoutMs?: number;
  /** Replaces the transport (tests); see JobHttpOptions.fetch. */
  fetch?: typeof fetch;
}

/** A job provider's options from env: `PROVIDER_<KEY>_API_KEY`, `PROVIDER_<KEY>_BASE_URL`, `ALLOW_PRIVATE_CALLBACKS=1`. */
export const jobProviderOptionsFromEnv = (key: 'REPLICATE' | 'FAL', env: NodeJS.ProcessEnv): JobProviderOptions => ({
  apiKey: env[`PROVIDER_${key}_API_KEY`],
  baseUrl: env[`PROVIDER_${key}_BASE_URL`] || undefined,
  allowLoopback: env.ALLOW_PRIVATE_CALLBACKS === '1',
});

export interface JobHttpOptions {
  /** Registry key: the start of every message. */
  key: string;
  /** Never put in a message: the API key (and, for an `id:secret` key, each part). */
  secret: string | undefined;
  allowLoopback: boolean;
  /** Deadline of one call, connection to last byte. */
  timeoutMs: number;
  /** Largest body read. */
  maxBytes: number;
  /**
   * Replaces the transport (tests, a runtime with its own). The deadline, the body cap and the error
   * classes stay; the address guard does not (it lives in guardedFetch), so production passes none.
   */
  fetch?: typeof fetch;
}

export interface JobHttpRequest {
  method: 'GET' | 'POST' | 'PUT';
  url: string;
  headers?: Record<string, string>;
  /** Sent as JSON. */
  body?: unknown;
  signal: AbortSignal;
}

export interface JobHttpAnswer {
  status: number;
  /** Lower-case names. */
  headers: Record<string, string>;
  /** The body parsed as JSON; undefined when it is not JSON. */
  json: unknown;
}

export interface JobHttp {
  /** One exchange; throws ProviderError only when no answer came. */
  send(request: JobHttpRequest): Promise<JobHttpAnswer>;
  /** The ProviderError for an answer that is not 2xx, with the text `describe` finds in its body. */
  failure(answer: JobHttpAnswer, what: string, describe: (json: unknown) => string | undefined): ProviderError;
  /** `text` without the key, at most 300 characters: safe for a message. */
  clean(text: string): string;
  /** `text` without the key, whole (a provider's log: the step cuts it to its own cap). */
  redact(text: string): string;
}

const maxTextLength = 300;

/** The parts of a key that must never be quoted: the whole key and, for `id:secret`, each part. */
const secretParts = (secret: string | undefined): string[] =>
  secret ? [secret, ...secret.split(':').filter((part) => part.length >= 8)] : [];

const parseJson = (bytes: Uint8Array): unknown => {
  if (bytes.byteLength === 0) return undefined;
  try {
    return JSON.parse(Buffer.from(bytes).toString('utf8'));
  } catch {
    return undefined;
  }
};

/** A fetch Response's body, or undefined once it outgrows `maxBytes` (its read is then cancelled). */
export const readLimited = async (response: Response, maxBytes: number): Promise<Uint8Array | undefined> => {
  if (!response.body) return new Uint8Array();
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = response.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel();
      return undefined;
    }
    chunks.push(value);
  }
  return new Uint8Array(Buffer.concat(chunks));
};

export const createJobHttp = (options: JobHttpOptions): JobHttp => {
  const { key, timeoutMs, maxBytes } = options;
  const secrets = secretParts(options.secret);
  const redact = (text: string): string => {
    let safe = text;
    for (const part of secrets) safe = safe.split(part).join('[key]');
    return safe;
  };
  const clean = (text: string): string => {
    const safe = redact(text);
    return safe.length > maxTextLength ? `${safe.slice(0, maxTextLength)}…` : safe;
  };
  const unanswered = (reason: string, retryable: boolean) =>
    new ProviderError(`${key} ${clean(reason)}`, undefined, { retryable });
  const tooLarge = () => unanswered(`answered with more than ${maxBytes} bytes`, false);

  const viaGuard = async (request: JobHttpRequest, headers: Record<string, string>, body: string | undefined) => {
    try {
      const response = await guardedFetch(
        request.url,
        { method: request.method, headers, body, signal: request.signal },
        { allowLoopback: options.allowLoopback, timeoutMs, maxBytes },
      );
      return { status: response.status, headers: response.headers, json: parseJson(response.body) };
    } catch (error) {
      if (!(error instanceof GuardedFetchError)) throw unanswered(`failed: ${(error as Error).message}`, false);
      switch (error.code) {
        case 'timeout':
          throw unanswered(`did not answer within ${timeoutMs} ms`, true);
        case 'network':
          throw unanswered(`could not be reached: ${error.message}`, true);
        case 'aborted':
          throw unanswered('call was aborted', false);
        case 'too_large':
          throw tooLarge();
        case 'tls':
          throw unanswered(`refused the TLS connection: ${error.message}`, false);
        default:
          // A refused address, scheme or URL is configuration: asking again will not help.
          throw unanswered(`is not reachable at its configured address: ${error.message}`, false);
      }
    }
  };

  const viaFetch = async (
    doFetch: typeof fetch,
    request: JobHttpRequest,
    headers: Record<string, string>,
    body: string | undefined,
  ) => {
    const deadline = AbortSignal.timeout(timeoutMs);
    try {
      const response = await doFetch(request.url, {
        method: request.method,
        headers,
        body,
        redirect: 'error',
        signal: AbortSignal.any([request.signal, deadline]),
      });
      if (Number(response.headers.get('content-length') ?? 0) > maxBytes) throw tooLarge();
      const bytes = await readLimited(response, maxBytes);
      if (!bytes) throw tooLarge();
      return { status: response.status, headers: Object.fromEntries(response.headers), json: parseJson(bytes) };
    } catch (error) {
      if (error instanceof ProviderError) throw error;
      if (deadline.aborted) throw unanswered(`did not answer within ${timeoutMs} ms`, true);
      if (request.signal.aborted) throw unanswered('call was aborted', false);
      throw unanswered(`could not be reached: ${(error as Error).message}`, true);
    }
  };

  return {
    clean,
    redact,

    async send(request) {
      const headers: Record<string, string> = { accept: 'application/json', ...request.headers };
      const body = request.body === undefined ? undefined : JSON.stringify(request.body);
      if (body !== undefined) headers['content-type'] = 'application/json';
      return options.fetch ? viaFetch(options.fetch, request, headers, body) : viaGuard(request, headers, body);
    },

    failure(answer, what, describe) {
      const text = describe(answer.json);
      const detail = text ? `: ${clean(text)}` : '';
      return new ProviderError(`${key} answered ${answer.status} to ${what}${detail}`, answer.status, {
        retryAfterSeconds: parseRetryAfter(answer.headers['retry-after'], new Date()),
      });
    },
  };
};

/** A job provider's HTTP (`createJobHttp` with its options' defaults), and its calls that carry its key. */
export interface JobProviderHttp extends JobHttp {
  /** One exchange with `authorization: <scheme> <key>`; a ProviderError when no key is configured. */
  keyed(method: JobHttpRequest['method'], url: string, signal: AbortSignal, body?: unknown): Promise<JobHttpAnswer>;
}

/** The HTTP of the job provider `key`: a 30 s deadline and bodies up to 16 MiB unless its options say otherwise. */
export const createJobProviderHttp = (
  key: string,
  options: JobProviderOptions,
  scheme: 'Bearer' | 'Key',
): JobProviderHttp => {
  const http = createJobHttp({
    key,
    secret: options.apiKey,
    allowLoopback: options.allowLoopback ?? false,
    timeoutMs: options.timeoutMs ?? 30_000,
    maxBytes: 16 * 1024 * 1024,
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
  return {
    ...http,
    keyed(method, url, signal, body) {
      if (!options.apiKey) throw new ProviderError(`${key} is not configured: no API key`);
      return http.send({ method, url, headers: { authorization: `${scheme} ${options.apiKey}` }, body, signal });
    },
  };
};
