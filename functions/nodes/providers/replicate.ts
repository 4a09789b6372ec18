/**
 * Replicate, as a JobProvider: a prediction is created with a webhook for its end, read, cancelled,
 * and its webhook verified the Standard Webhooks way. Written from Replicate's own documentation and
 * its official client, read 2026-11-26:
 * - https://replicate.com/docs/reference/http (predictions.create, models.predictions.create,
 *   predictions.get, predictions.cancel, webhooks.default.secret.get; the prediction object)
 * - https://replicate.com/changelog/2023-02-10-improved-webhook-events-and-event-filtering
 *   (`webhook_events_filter`; `completed` is sent for succeeded, failed and canceled)
 * - https://replicate.com/docs/topics/webhooks/verify-webhook (headers, signed content, the secret)
 * - https://replicate.com/docs/topics/predictions/rate-limits (429 with a `detail` text)
 * - https://github.com/replicate/replicate-javascript @2fd6f394 (npm `replicate` 1.4.0):
 *   `lib/predictions.js` (`/models/{model}/predictions` for a model, `/predictions` with `version`),
 *   `lib/webhooks.js` (`GET /webhooks/default/secret` → `{key}`), `lib/util.js` `validateWebhook`
 *   (HMAC-SHA256 keyed with the base64 after `whsec_`, over `${id}.${timestamp}.${body}`), `index.d.ts`
 *   (statuses, `aborted` included)
 * - https://www.standardwebhooks.com (the `v1,<base64>` list; a 5-minute tolerance)
 * The client neither checks the timestamp nor compares in constant time: we do both.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { isRecord } from '../../is-record.ts';
import { createJobHttp, type JobHttpAnswer, type JobProviderOptions, jobProviderOptionsFromEnv } from './job-http.ts';
import {
  type JobProvider,
  type JobRef,
  type JobState,
  type JobSubmission,
  ProviderError,
  type ProviderWebhookDelivery,
  WebhookRefusedError,
} from './types.ts';

/** Base URL default `https://api.replicate.com` (the paths add `/v1`). */
export type ReplicateOptions = JobProviderOptions;

/** Options from env: `PROVIDER_REPLICATE_API_KEY`, `PROVIDER_REPLICATE_BASE_URL`, `ALLOW_PRIVATE_CALLBACKS=1`. */
export const replicateOptionsFromEnv = (env: NodeJS.ProcessEnv = process.env): ReplicateOptions =>
  jobProviderOptionsFromEnv('REPLICATE', env);

/** Standard Webhooks' tolerance, both ways: older is a replay, newer a clock that cannot be trusted. */
const toleranceSeconds = 5 * 60;
/** A secret this old is fetched again when a delivery does not verify with it (it may have been rotated). */
const secretRefreshMs = 60 * 60 * 1000;

/** `owner/name` (an official model) or `owner/name:version` (a version id), as Replicate spells them. */
const modelPattern = /^([a-z0-9][a-z0-9._-]*)\/([a-z0-9][a-z0-9._-]*)(?::([a-z0-9]+))?$/i;

/** Replicate's error body: `{"title": "...", "detail": "...", "status": 404}`. */
const errorText = (json: unknown): string | undefined => {
  if (!isRecord(json)) return undefined;
  if (typeof json.detail === 'string' && json.detail) return json.detail;
  return typeof json.title === 'string' ? json.title : undefined;
};

/** The HMAC key of a `whsec_<base64>` secret (a bare base64 secret is taken as it is). */
const signingKey = (secret: string): Buffer => Buffer.from(secret.replace(/^whsec_/, ''), 'base64');

/** Whether one of the `v1,<base64>` entries of `header` is the signature of `content`, compared in constant time. */
const signedBy = (header: string, content: string, secret: string): boolean => {
  const expected = createHmac('sha256', signingKey(secret)).update(content).digest();
  let found = false;
  for (const entry of header.split(' ')) {
    const [version, signature] = entry.split(',', 2);
    if (version !== 'v1' || !signature) continue;
    const given = Buffer.from(signature, 'base64');
    // Every entry is compared (no early exit): the time taken does not tell which one matched.
    if (given.length === expected.length && timingSafeEqual(given, expected)) found = true;
  }
  return found;
};

export const createReplicateProvider = (options: ReplicateOptions): JobProvider => {
  const key = 'replicate';
  const base = (options.baseUrl ?? 'https://api.replicate.com').replace(/\/+$/, '');
  const http = createJobHttp({
    key,
    secret: options.apiKey,
    allowLoopback: options.allowLoopback ?? false,
    timeoutMs: options.timeoutMs ?? 30_000,
    maxBytes: 16 * 1024 * 1024,
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
  /** The account's signing secret, once fetched: one per user or organisation, so one per provider object. */
  let signingSecret: { value: string; fetchedAt: number } | undefined;

  const call = async (
    method: 'GET' | 'POST',
    path: string,
    what: string,
    signal: AbortSignal,
    body?: unknown,
  ): Promise<Record<string, unknown>> => {
    if (!options.apiKey) throw new ProviderError(`${key} is not configured: no API key`);
    const answer: JobHttpAnswer = await http.send({
      method,
      url: `${base}${path}`,
      headers: { authorization: `Bearer ${options.apiKey}` },
      body,
      signal,
    });
    if (answer.status < 200 || answer.status > 299) throw http.failure(answer, what, errorText);
    if (!isRecord(answer.json))
      throw new ProviderError(`${key} answered ${what} with something that is not a JSON object`);
    return answer.json;
  };

  /** The job a prediction object describes. */
  const stateOf = (prediction: Record<string, unknown>, what: string): JobState => {
    switch (prediction.status) {
      case 'starting':
      case 'processing':
        return { status: 'running' };
      case 'succeeded':
        return { status: 'succeeded', output: prediction.output ?? null };
      case 'failed': {
        const error = typeof prediction.error === 'string' && prediction.error ? prediction.error : 'no error given';
        return { status: 'failed', message: http.clean(error) };
      }
      case 'canceled':
      case 'aborted':
        return { status: 'canceled' };
      default:
        throw new ProviderError(`${key} answered ${what} with an unknown status`);
    }
  };

  const predictionPath = (id: string) => `/v1/predictions/${encodeURIComponent(id)}`;

  /** Concurrent deliveries share one fetch. */
  let secretFetch: Promise<string> | undefined;
  const fetchSecret = (): Promise<string> => {
    secretFetch ??= (async () => {
      const json = await call('GET', '/v1/webhooks/default/secret', 'the webhook secret', new AbortController().signal);
      if (typeof json.key !== 'string' || !json.key)
        throw new ProviderError(`${key} answered without a webhook secret`);
      signingSecret = { value: json.key, fetchedAt: Date.now() };
      return json.key;
    })().finally(() => {
      secretFetch = undefined;
    });
    return secretFetch;
  };

  return {
    key,

    async submit(job: JobSubmission): Promise<JobRef> {
      const match = modelPattern.exec(job.model);
      if (!match) throw new ProviderError(`${key}: "${job.model}" is not a model (owner/name or owner/name:version)`);
      const [, owner = '', name = '', version] = match;
      const body: Record<string, unknown> = { input: job.input };
      if (job.webhookUrl) {
        body.webhook = job.webhookUrl;
        body.webhook_events_filter = ['completed'];
      }
      if (version) body.version = version;
      const path = version
        ? '/v1/predictions'
        : `/v1/models/${encodeURIComponent(owner)}/${encodeURIComponent(name)}/predictions`;
      const prediction = await call('POST', path, 'the prediction', job.signal, body);
      if (typeof prediction.id !== 'string' || !prediction.id)
        throw new ProviderError(`${key} answered the prediction without an id`);
      return { id: prediction.id, model: job.model };
    },

    async get(ref: JobRef, signal: AbortSignal): Promise<JobState> {
      return stateOf(await call('GET', predictionPath(ref.id), 'a prediction read', signal), 'a prediction read');
    },

    async cancel(ref: JobRef, signal: AbortSignal): Promise<void> {
      // An ended prediction answers 200 with itself, unchanged: nothing to tell apart.
      await call('POST', `${predictionPath(ref.id)}/cancel`, 'the cancel', signal);
    },

    async verifyWebhook(delivery: ProviderWebhookDelivery): Promise<{ id: string; state: JobState }> {
      const id = delivery.headers['webhook-id'];
      const timestamp = delivery.headers['webhook-timestamp'];
      const signature = delivery.headers['webhook-signature'];
      if (!id || !timestamp || !signature) throw new WebhookRefusedError('Standard Webhooks headers missing');
      if (!/^\d{1,12}$/.test(timestamp)) throw new WebhookRefusedError('webhook-timestamp is not a Unix time');
      if (Math.abs(delivery.now.getTime() / 1000 - Number(timestamp)) > toleranceSeconds)
        throw new WebhookRefusedError('webhook-timestamp is more than 5 minutes away');
      const content = `${id}.${timestamp}.${delivery.body}`;
      // A secret fetch that fails throws ProviderError (retryable): the route answers 5xx and Replicate retries.
      let verified = signedBy(signature, content, signingSecret?.value ?? (await fetchSecret()));
      if (!verified && signingSecret && Date.now() - signingSecret.fetchedAt > secretRefreshMs) {
        // Once an hour at most, whatever forged deliveries arrive: a rotated secret is picked up.
        verified = signedBy(signature, content, await fetchSecret());
      }
      if (!verified) throw new WebhookRefusedError('webhook-signature does not match');
      let prediction: unknown;
      try {
        prediction = JSON.parse(delivery.body);
      } catch {
        throw new WebhookRefusedError('the body is not JSON');
      }
      if (!isRecord(prediction) || typeof prediction.id !== 'string' || !prediction.id)
        throw new WebhookRefusedError('the body is not a prediction');
      try {
        return { id: prediction.id, state: stateOf(prediction, 'a webhook') };
      } catch {
        throw new WebhookRefusedError('the prediction has an unknown status');
      }
    },
  };
};
