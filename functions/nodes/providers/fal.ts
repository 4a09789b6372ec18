/**
 * fal, as a JobProvider: its queue API (submit with a webhook, status, result, cancel) and its
 * ED25519-signed webhooks. Written from fal's own documentation and official clients, read 2026-11-26:
 * - https://docs.fal.ai/model-endpoints/queue (endpoints; "the subpath … should be used when making
 *   the request, but not when getting request status or results"; `request_id`, `*_url` fields)
 * - https://fal.ai/docs/inference-api/queue/cancel (PUT …/cancel; `OK`, `CANCELLATION_REQUESTED`,
 *   `ALREADY_COMPLETED`, `NOT_FOUND`)
 * - https://docs.fal.ai/model-endpoints/webhooks and https://docs.fal.ai/model-apis/model-endpoints/webhooks
 *   (`fal_webhook`; the `{request_id, gateway_request_id, status: OK|ERROR, payload, error,
 *   payload_error}` body; "Verifying Your Webhook" with a set of public keys)
 * - https://fal.ai/docs/documentation/model-apis/request-errors (`{detail, error_type}`,
 *   `X-Fal-Error-Type`; `client_cancelled` is 499) and https://fal.ai/docs/documentation/model-apis/errors
 *   (`{detail: [{loc, msg, type}]}`)
 * - https://github.com/fal-ai/fal-js @381105e1 (`@fal-ai/client` 1.10.1): `libs/client/src/queue.ts`
 *   (submit `?fal_webhook=`, status `?logs=0`, result, cancel with PUT, all but submit on
 *   `{owner}/{alias}` only), `utils.ts` `parseEndpointId` (`workflows/` and `comfy/` keep three
 *   segments), `request.ts` (`Authorization: Key …`), `types/common.ts` (IN_QUEUE, IN_PROGRESS, COMPLETED)
 * - https://github.com/fal-ai/fal-js @038eb113 `libs/client/src/types/common.ts` (read 2026-12-07): a
 *   status read with `?logs=1` carries `logs: RequestLog[]` (`{message, level, source, timestamp}`)
 *   on IN_PROGRESS and COMPLETED; the webhook's body carries none
 * - https://github.com/fal-ai/fal @c6f0afaa `projects/fal_client/src/fal_client/client.py` (COMPLETED
 *   may carry `error` and `error_type`; a 502/503/504 without `x-fal-request-id` is the ingress's, not
 *   the app's)
 * The verification steps (message `request_id \n user_id \n timestamp \n hex sha256(body)`, hex
 * signature, keys `keys[].x` from https://rest.alpha.fal.ai/.well-known/jwks.json, ±5 minutes) are
 * those of fal's webhooks page as every implementation we found quotes them; its full text could not be
 * read here (docs/decisions/providers.md, "Replicate and fal adapters").
 */
import { createHash, createPublicKey, type KeyObject, verify } from 'node:crypto';
import { isRecord } from '../../is-record.ts';
import {
  createJobProviderHttp,
  type JobHttpAnswer,
  type JobProviderOptions,
  jobProviderOptionsFromEnv,
} from './job-http.ts';
import { checkWebhookTimestamp, webhookJson, webhookVerifier } from './job-webhook.ts';
import {
  type JobProvider,
  type JobRef,
  type JobState,
  type JobSubmission,
  ProviderError,
  type ProviderWebhookDelivery,
  WebhookRefusedError,
} from './types.ts';

/** Base URL default `https://queue.fal.run`. */
export interface FalOptions extends JobProviderOptions {
  /** Where fal publishes its webhook keys; default `https://rest.alpha.fal.ai/.well-known/jwks.json`. */
  jwksUrl?: string;
}

/** Options from env: `PROVIDER_FAL_API_KEY`, `PROVIDER_FAL_BASE_URL`, `PROVIDER_FAL_JWKS_URL`, `ALLOW_PRIVATE_CALLBACKS=1`. */
export const falOptionsFromEnv = (env: NodeJS.ProcessEnv = process.env): FalOptions => ({
  ...jobProviderOptionsFromEnv('FAL', env),
  jwksUrl: env.PROVIDER_FAL_JWKS_URL || undefined,
});

/** Keys are fetched again after a day, or when none verifies a delivery, at most once a minute. */
const keyTimes = { maxAgeMs: 24 * 60 * 60 * 1000, refreshMs: 60 * 1000 };

/** Namespaces whose app ids keep three segments before the endpoint path (fal-js `parseEndpointId`). */
const namespaces = new Set(['workflows', 'comfy']);
const segmentPattern = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/** An app id's submit path (all of it) and its requests' path (owner/alias only, as fal documents). */
const appPaths = (appId: string): { submit: string; requests: string } | undefined => {
  const parts = appId.split('/');
  if (!parts.every((part) => segmentPattern.test(part))) return undefined;
  const kept = namespaces.has(parts[0] ?? '') ? 3 : 2;
  if (parts.length < kept) return undefined;
  return { submit: parts.join('/'), requests: parts.slice(0, kept).join('/') };
};

/** fal's error text: `detail` as a string (request errors) or a list of `{loc, msg}` (model errors). */
const errorText = (json: unknown): string | undefined => {
  if (!isRecord(json)) return undefined;
  const { detail } = json;
  if (typeof detail === 'string' && detail) return detail;
  if (Array.isArray(detail)) {
    const items = detail.flatMap((item) => {
      if (!isRecord(item) || typeof item.msg !== 'string') return [];
      return [Array.isArray(item.loc) ? `${item.loc.join('.')}: ${item.msg}` : item.msg];
    });
    if (items.length) return items.join('; ');
  }
  if (typeof json.error === 'string' && json.error) return json.error;
  return typeof json.message === 'string' && json.message ? json.message : undefined;
};

export const createFalProvider = (options: FalOptions): JobProvider => {
  const key = 'fal';
  const base = (options.baseUrl ?? 'https://queue.fal.run').replace(/\/+$/, '');
  const jwksUrl = options.jwksUrl ?? 'https://rest.alpha.fal.ai/.well-known/jwks.json';
  const http = createJobProviderHttp(key, options, 'Key');
  const send = http.keyed;
  const ok = (answer: JobHttpAnswer) => answer.status >= 200 && answer.status <= 299;

  const requestsUrl = (ref: JobRef): string => {
    const paths = appPaths(ref.model);
    if (!paths) throw new ProviderError(`${key}: "${ref.model}" is not an app id (owner/alias[/path])`);
    return `${base}/${paths.requests}/requests/${encodeURIComponent(ref.id)}`;
  };

  /**
   * A status read's `logs` (each `{timestamp, level, message}`) as the step's provider log: one line
   * each, the key redacted. Only a polled request has them: fal's webhook body carries none.
   */
  const logsOf = (status: Record<string, unknown>): { logs?: string } => {
    if (!Array.isArray(status.logs) || status.logs.length === 0) return {};
    const lines = status.logs
      .filter(isRecord)
      .map((log) => `${String(log.timestamp ?? '')} ${String(log.level ?? '')} ${String(log.message ?? '')}`.trim());
    return lines.length > 0 ? { logs: http.redact(lines.join('\n')) } : {};
  };

  /** The job a COMPLETED request ended as: its result, or the error its result answers with. */
  const completed = async (ref: JobRef, status: Record<string, unknown>, signal: AbortSignal): Promise<JobState> => {
    if (typeof status.error === 'string' && status.error)
      return { status: 'failed', message: http.clean(status.error), ...logsOf(status) };
    const answer = await send('GET', requestsUrl(ref), signal);
    if (ok(answer)) {
      if (answer.json === undefined)
        throw new ProviderError(`${key} answered the result with something that is not JSON`);
      return { status: 'succeeded', output: answer.json, ...logsOf(status) };
    }
    const errorType =
      answer.headers['x-fal-error-type'] ?? (isRecord(answer.json) ? answer.json.error_type : undefined);
    if (answer.status === 499 || errorType === 'client_cancelled') return { status: 'canceled' };
    // Our call's own failure (the key, a rate limit, a busy gateway) says nothing of the job: thrown,
    // classified. A 5xx the app answered carries `x-fal-request-id`; the ingress's does not.
    const ours =
      [401, 403, 404, 408, 409, 429].includes(answer.status) ||
      (answer.status >= 500 && answer.headers['x-fal-request-id'] === undefined);
    if (ours) throw http.failure(answer, 'the result read', errorText);
    return {
      status: 'failed',
      message: http.clean(errorText(answer.json) ?? `the result answered ${answer.status}`),
      ...logsOf(status),
    };
  };

  const webhookKeys = webhookVerifier(async (): Promise<KeyObject[]> => {
    // Public keys at a public URL: the API key is not sent there.
    const answer = await http.send({ method: 'GET', url: jwksUrl, signal: new AbortController().signal });
    if (!ok(answer)) throw http.failure(answer, 'the JWKS read', errorText);
    const listed = isRecord(answer.json) && Array.isArray(answer.json.keys) ? answer.json.keys : [];
    const keys = listed.flatMap((jwk): KeyObject[] => {
      if (!isRecord(jwk) || jwk.kty !== 'OKP' || jwk.crv !== 'Ed25519' || typeof jwk.x !== 'string') return [];
      try {
        return [createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: jwk.x }, format: 'jwk' })];
      } catch {
        return [];
      }
    });
    if (keys.length === 0) throw new ProviderError(`${key}: the JWKS holds no Ed25519 key`);
    return keys;
  }, keyTimes);

  return {
    key,

    async submit(job: JobSubmission): Promise<JobRef> {
      const paths = appPaths(job.model);
      if (!paths) throw new ProviderError(`${key}: "${job.model}" is not an app id (owner/alias[/path])`);
      const query = job.webhookUrl ? `?fal_webhook=${encodeURIComponent(job.webhookUrl)}` : '';
      const answer = await send('POST', `${base}/${paths.submit}${query}`, job.signal, job.input);
      if (!ok(answer)) throw http.failure(answer, 'the submit', errorText);
      const requestId = isRecord(answer.json) ? answer.json.request_id : undefined;
      if (typeof requestId !== 'string' || !requestId)
        throw new ProviderError(`${key} answered the submit without a request_id`);
      return { id: requestId, model: job.model };
    },

    async get(ref: JobRef, signal: AbortSignal): Promise<JobState> {
      const answer = await send('GET', `${requestsUrl(ref)}/status?logs=1`, signal);
      if (!ok(answer)) throw http.failure(answer, 'a status read', errorText);
      const status = isRecord(answer.json) ? answer.json : {};
      switch (status.status) {
        case 'IN_QUEUE':
        case 'IN_PROGRESS':
          return { status: 'running' };
        case 'COMPLETED':
          return completed(ref, status, signal);
        default:
          throw new ProviderError(`${key} answered a status read with an unknown status`);
      }
    },

    async cancel(ref: JobRef, signal: AbortSignal): Promise<void> {
      const answer = await send('PUT', `${requestsUrl(ref)}/cancel`, signal);
      if (ok(answer)) return;
      if (isRecord(answer.json) && answer.json.status === 'ALREADY_COMPLETED') return;
      throw http.failure(answer, 'the cancel', errorText);
    },

    async verifyWebhook(delivery: ProviderWebhookDelivery): Promise<{ id: string; state: JobState }> {
      const requestId = delivery.headers['x-fal-webhook-request-id'];
      const userId = delivery.headers['x-fal-webhook-user-id'];
      const timestamp = delivery.headers['x-fal-webhook-timestamp'];
      const signature = delivery.headers['x-fal-webhook-signature'];
      if (!requestId || !userId || !timestamp || !signature)
        throw new WebhookRefusedError('fal webhook headers missing');
      checkWebhookTimestamp('x-fal-webhook-timestamp', timestamp, delivery.now);
      if (!/^[0-9a-f]{128}$/i.test(signature))
        throw new WebhookRefusedError('x-fal-webhook-signature is not hex ED25519');
      const bodyHash = createHash('sha256').update(delivery.body).digest('hex');
      const message = Buffer.from(`${requestId}\n${userId}\n${timestamp}\n${bodyHash}`);
      const signatureBytes = Buffer.from(signature, 'hex');
      const verified = await webhookKeys.verifies((keys) => keys.some((k) => verify(null, message, k, signatureBytes)));
      if (!verified) throw new WebhookRefusedError('x-fal-webhook-signature does not verify with fal’s keys');
      const body = webhookJson(delivery.body);
      if (!isRecord(body) || typeof body.request_id !== 'string' || !body.request_id)
        throw new WebhookRefusedError('the body has no request_id');
      if (requestId !== body.request_id && requestId !== body.gateway_request_id)
        throw new WebhookRefusedError('the signed request id is not the body’s');
      const id = body.request_id;
      if (body.status === 'OK') {
        // A payload fal could not serialize arrives as null with `payload_error`: the result is
        // read by polling instead, so the job is still reported running.
        if (body.payload === null && body.payload_error !== undefined) return { id, state: { status: 'running' } };
        return { id, state: { status: 'succeeded', output: body.payload ?? null } };
      }
      if (body.status === 'ERROR') {
        const error = typeof body.error === 'string' && body.error ? body.error : 'no error given';
        const detail = errorText(body.payload);
        return { id, state: { status: 'failed', message: http.clean(detail ? `${error}: ${detail}` : error) } };
      }
      throw new WebhookRefusedError('the body has an unknown status');
    },
  };
};
