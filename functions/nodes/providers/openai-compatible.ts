/**
 * An adapter for any server speaking the OpenAI-compatible HTTP protocol: chat completions
 * (`POST {baseUrl}/chat/completions`, images as `image_url` content parts with data URLs), image
 * generation (`POST {baseUrl}/images/generations`, `b64_json`), embeddings (`POST {baseUrl}/embeddings`)
 * and speech (`POST {baseUrl}/audio/speech`, WAV bytes back). Base URL and key come from the
 * caller (env `OPENAI_COMPATIBLE_BASE_URL`, `OPENAI_COMPATIBLE_API_KEY`, or a team connection).
 * Errors never carry the key; redirects are refused; every call has a deadline. A 408, a 429, a 5xx
 * (after `Retry-After`), a timeout or a network error is a retryable ProviderError, any other failure not.
 * Sources, read 2026-11-26: https://platform.openai.com/docs/api-reference/chat/create (content parts),
 * https://platform.openai.com/docs/api-reference/audio/createSpeech (`model`, `input`, `voice`,
 * `response_format` mp3|opus|aac|flac|wav|pcm; the answer is the audio file's bytes), as in the
 * official client's src/resources/audio/speech.ts (openai/openai-node, generated from OpenAI's spec).
 */
import { guardedFetch } from '../../http-client/guarded-fetch.ts';
import { isRecord } from '../../is-record.ts';
import { sniffContentType } from '../media/marks.ts';
import { readLimited } from './job-http.ts';
import {
  type AudioRequest,
  type EmbedRequest,
  type ImageRequest,
  type MediaFile,
  type Provider,
  ProviderError,
  parseRetryAfter,
  type TextRequest,
} from './types.ts';

export interface OpenAiCompatibleOptions {
  /** Registry key this adapter serves (`openai-compatible`, or a provider using the same protocol). */
  key?: string;
  /** e.g. `https://api.example.com/v1` (no trailing slash needed). */
  baseUrl: string | undefined;
  apiKey: string | undefined;
  /** Deadline of one call. */
  timeoutMs?: number;
  /** Largest answer read, in bytes (images come base64 in JSON). */
  maxResponseBytes?: number;
  /** Allows image URLs on loopback (local development), see guardedFetch. */
  allowLoopback?: boolean;
  fetch?: typeof fetch;
}

/** Options from env: `OPENAI_COMPATIBLE_BASE_URL`, `OPENAI_COMPATIBLE_API_KEY`, `OPENAI_COMPATIBLE_TIMEOUT_MS`. */
export const openAiCompatibleOptionsFromEnv = (env: NodeJS.ProcessEnv = process.env): OpenAiCompatibleOptions => ({
  baseUrl: env.OPENAI_COMPATIBLE_BASE_URL,
  apiKey: env.OPENAI_COMPATIBLE_API_KEY,
  timeoutMs: env.OPENAI_COMPATIBLE_TIMEOUT_MS ? Number(env.OPENAI_COMPATIBLE_TIMEOUT_MS) : undefined,
  allowLoopback: env.ALLOW_PRIVATE_CALLBACKS === '1',
});

/** Default model names per capability when a step names none (env overrides). */
export const openAiCompatibleDefaultModels = (env: NodeJS.ProcessEnv) => ({
  text: env.OPENAI_COMPATIBLE_TEXT_MODEL ?? 'default-chat',
  image: env.OPENAI_COMPATIBLE_IMAGE_MODEL ?? 'default-image',
  embedding: env.OPENAI_COMPATIBLE_EMBEDDING_MODEL ?? 'default-embedding',
});

const base64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64');

/** What an HTTP header value may hold (RFC 9110 field-value: visible Latin-1, spaces and tabs). */
const headerSafe = /^[\t\x20-\x7e\x80-\xff]*$/;

export const createOpenAiCompatibleProvider = (options: OpenAiCompatibleOptions): Provider => {
  const key = options.key ?? 'openai-compatible';
  const timeoutMs = options.timeoutMs ?? 120_000;
  const maxBytes = options.maxResponseBytes ?? 64 * 1024 * 1024;
  const doFetch = options.fetch ?? fetch;
  /**
   * `text` without the key: a provider may quote the key it was sent (as "Incorrect API key
   * provided: …"), and the transport quotes a header it refuses (a key with a line break inside).
   */
  const withoutKey = (text: string): string => {
    const secret = options.apiKey;
    if (!secret) return text;
    // Headers are sent trimmed: a refused one is quoted so.
    return [secret, secret.trim()].filter(Boolean).reduce((safe, part) => safe.split(part).join('[key]'), text);
  };

  /**
   * A call that got no (whole) answer: the caller's abort is passed on; a deadline or a refused or
   * reset connection is retryable, since the server may answer when asked again.
   */
  const unanswered = (error: unknown, signal: AbortSignal, deadline: AbortSignal): unknown => {
    if (signal.aborted) return error;
    if (deadline.aborted)
      return new ProviderError(`${key} did not answer within ${timeoutMs} ms`, undefined, { retryable: true });
    return new ProviderError(`${key} could not be reached: ${withoutKey((error as Error).message)}`, undefined, {
      retryable: true,
    });
  };

  /** One POST; the answer's bytes when it is a 2xx, a classified ProviderError otherwise. */
  const send = async (path: string, body: unknown, signal: AbortSignal, accept: string): Promise<Buffer> => {
    if (!options.baseUrl) throw new ProviderError(`${key} is not configured: no base URL`);
    let url: URL;
    try {
      url = new URL(`${options.baseUrl.replace(/\/+$/, '')}${path}`);
    } catch {
      throw new ProviderError(`${key} is not configured: the base URL is not a URL`);
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:')
      throw new ProviderError(`${key}: base URL must be http(s)`);
    // A key no header can carry (a line break pasted inside it) fails no better when asked again.
    if (options.apiKey && !headerSafe.test(options.apiKey.trim()))
      throw new ProviderError(`${key} is not configured: its API key cannot be sent in an HTTP header`);
    const headers: Record<string, string> = { 'content-type': 'application/json', accept };
    if (options.apiKey) headers.authorization = `Bearer ${options.apiKey}`;
    const deadline = AbortSignal.timeout(timeoutMs);
    let response: Response;
    try {
      response = await doFetch(url, {
        method: 'POST',
        headers,
        body: JSON.stringify(body),
        redirect: 'error',
        signal: AbortSignal.any([signal, deadline]),
      });
    } catch (error) {
      throw unanswered(error, signal, deadline);
    }
    const declared = Number(response.headers.get('content-length') ?? 0);
    if (declared > maxBytes) throw new ProviderError(`${key} answered with more than ${maxBytes} bytes`);
    let read: Uint8Array | undefined;
    try {
      read = await readLimited(response, maxBytes);
    } catch (error) {
      // The answer broke off.
      throw unanswered(error, signal, deadline);
    }
    // Outgrew the cap: final, never retried.
    if (!read) throw new ProviderError(`${key} answered with more than ${maxBytes} bytes`);
    const bytes = Buffer.from(read);
    if (!response.ok) {
      let json: unknown;
      try {
        json = JSON.parse(bytes.toString('utf8'));
      } catch {
        json = undefined;
      }
      const error = isRecord(json) && isRecord(json.error) ? json.error.message : undefined;
      const detail = typeof error === 'string' ? `: ${withoutKey(error).slice(0, 300)}` : '';
      // 408, 429 and 5xx are retryable (the status decides), after Retry-After when the server sends one.
      throw new ProviderError(`${key} answered ${response.status}${detail}`, response.status, {
        retryAfterSeconds: parseRetryAfter(response.headers.get('retry-after'), new Date()),
      });
    }
    return bytes;
  };

  const post = async (path: string, body: unknown, signal: AbortSignal): Promise<Record<string, unknown>> => {
    const bytes = await send(path, body, signal, 'application/json');
    let json: unknown;
    try {
      json = JSON.parse(bytes.toString('utf8'));
    } catch {
      json = undefined;
    }
    if (!isRecord(json)) throw new ProviderError(`${key} answered with something that is not a JSON object`);
    return json;
  };

  const fetchImageUrl = async (url: string, signal: AbortSignal): Promise<Uint8Array> => {
    // Some servers answer with a link instead of b64_json: download it (through the address
    // guard, since the link comes from outside) so that only our own copy is ever shown.
    const response = await guardedFetch(
      url,
      { signal },
      { allowLoopback: options.allowLoopback ?? false, timeoutMs, maxBytes },
    );
    if (response.status !== 200) throw new ProviderError(`${key}: image download answered ${response.status}`);
    return response.body;
  };

  return {
    key,

    async generateText(request: TextRequest): Promise<string> {
      const messages: unknown[] = [];
      if (request.system) messages.push({ role: 'system', content: request.system });
      const text = [request.prompt, ...(request.context ?? [])].join('\n\n');
      const images = (request.images ?? []).map((image) => ({
        type: 'image_url',
        image_url: { url: `data:${image.contentType};base64,${base64(image.body)}` },
      }));
      messages.push({ role: 'user', content: images.length ? [{ type: 'text', text }, ...images] : text });
      const body: Record<string, unknown> = { model: request.model, messages, n: 1 };
      if (request.maxTokens !== undefined) body.max_tokens = request.maxTokens;
      if (request.temperature !== undefined) body.temperature = request.temperature;
      if (request.seed !== undefined) body.seed = request.seed;
      const json = await post('/chat/completions', body, request.signal);
      const choice = Array.isArray(json.choices) ? json.choices[0] : undefined;
      const content = isRecord(choice) && isRecord(choice.message) ? choice.message.content : undefined;
      if (typeof content !== 'string') throw new ProviderError(`${key} answered without a message`);
      return content;
    },

    async generateImage(request: ImageRequest): Promise<MediaFile[]> {
      const body: Record<string, unknown> = {
        model: request.model,
        prompt: request.negativePrompt ? `${request.prompt}\n\nAvoid: ${request.negativePrompt}` : request.prompt,
        n: request.variations,
        size: `${request.width}x${request.height}`,
        response_format: 'b64_json',
      };
      if (request.mode === 'draft') body.quality = 'low';
      const json = await post('/images/generations', body, request.signal);
      const data = Array.isArray(json.data) ? json.data : [];
      if (data.length === 0) throw new ProviderError(`${key} answered without images`);
      return Promise.all(
        data.map(async (item): Promise<MediaFile> => {
          if (!isRecord(item)) throw new ProviderError(`${key} answered with a malformed image`);
          let bytes: Uint8Array;
          if (typeof item.b64_json === 'string') bytes = new Uint8Array(Buffer.from(item.b64_json, 'base64'));
          else if (typeof item.url === 'string') bytes = await fetchImageUrl(item.url, request.signal);
          else throw new ProviderError(`${key} answered with a malformed image`);
          const contentType = sniffContentType(bytes);
          if (!contentType?.startsWith('image/'))
            throw new ProviderError(`${key} answered with bytes that are no image`);
          return { body: bytes, contentType };
        }),
      );
    },

    async embed(request: EmbedRequest): Promise<number[]> {
      const body: Record<string, unknown> = { model: request.model, input: request.text };
      if (request.dimensions !== undefined) body.dimensions = request.dimensions;
      const json = await post('/embeddings', body, request.signal);
      const first = Array.isArray(json.data) ? json.data[0] : undefined;
      const vector = isRecord(first) ? first.embedding : undefined;
      if (!Array.isArray(vector) || !vector.every((x) => typeof x === 'number')) {
        throw new ProviderError(`${key} answered without an embedding`);
      }
      return vector as number[];
    },

    async generateAudio(request: AudioRequest): Promise<MediaFile> {
      // Speech: the prompt is read aloud (its length, not `durationSeconds`, sets the duration).
      const body = { model: request.model, input: request.prompt, voice: 'alloy', response_format: 'wav' };
      const bytes = new Uint8Array(await send('/audio/speech', body, request.signal, 'audio/wav'));
      if (sniffContentType(bytes) !== 'audio/wav')
        throw new ProviderError(`${key} answered with bytes that are no WAV`);
      return { body: bytes, contentType: 'audio/wav' };
    },
  };
};
