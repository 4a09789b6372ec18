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
 * - https://replicate.com/docs/reference/http#predictions.list (read 2026-12-07: `GET /v1/predictions`,
 *   newest first, 100 a page, `{previous, next, results}`), with the `created_after` (inclusive) and
 *   `created_before` (exclusive) filters of Replicate's OpenAPI schema as its generated client
 *   `replicate/replicate-python-beta` spells them (`types/prediction_list_params.py`); the list's
 *   example shows no `webhook`, the prediction read does (`index.d.ts`, `Prediction.webhook`)
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
import { createJobProviderHttp, type JobProviderOptions, jobProviderOptionsFromEnv } from './job-http.ts';
import { checkWebhookTimestamp, webhookJson, webhookVerifier } from './job-webhook.ts';
import {
  type JobProvider,
  type JobRef,
  type JobSearch,
  type JobState,
  type JobSubmission,
  type JobUsage,
  ProviderError,
  type ProviderWebhookDelivery,
  WebhookRefusedError,
} from './types.ts';

/** Base URL default `https://api.replicate.com` (the paths add `/v1`). */
export type ReplicateOptions = JobProviderOptions;

/** Options from env: `PROVIDER_REPLICATE_API_KEY`, `PROVIDER_REPLICATE_BASE_URL`, `ALLOW_PRIVATE_CALLBACKS=1`. */
export const replicateOptionsFromEnv = (env: NodeJS.ProcessEnv = process.env): ReplicateOptions =>
  jobProviderOptionsFromEnv('REPLICATE', env);

/** The secret is kept; once an hour at most, a delivery it does not verify fetches it again (it may have been rotated). */
const secretTimes = { maxAgeMs: Number.POSITIVE_INFINITY, refreshMs: 60 * 60 * 1000 };

/** Pages of the predictions list, and prediction reads, one search makes at most. */
const searchPages = 5;
const searchReads = 20;

/** `owner/name` (an official model) or `owner/name:version` (a version id), as Replicate spells them. */
const modelPattern = /^([a-z0-9][a-z0-9._-]*)\/([a-z0-9][a-z0-9._-]*)(?::([a-z0-9]+))?$/i;

/** Replicate's error body: `{"title": "...", "detail": "...", "status": 404}`. */
const errorText = (json: unknown): string | undefined => {
  if (!isRecord(json)) return undefined;
  if (typeof json.detail === 'string' && json.detail) return json.detail;
  return typeof json.title === 'string' ? json.title : undefined;
};

/** A count in a prediction's `metrics`: a finite number, not negative. */
const count = (value: unknown): number | undefined =>
  typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : undefined;

/**
 * What a prediction's `metrics` report of its work: `predict_time` (seconds) on every model, and
 * `input_token_count` / `output_token_count` on language models (https://replicate.com/docs/topics/predictions,
 * read 2026-12-07).
 */
const usageOf = (metrics: unknown): JobUsage | undefined => {
  if (!isRecord(metrics)) return undefined;
  const usage: JobUsage = {};
  const input = count(metrics.input_token_count);
  const output = count(metrics.output_token_count);
  const seconds = count(metrics.predict_time);
  if (input !== undefined) usage.inputTokens = Math.ceil(input);
  if (output !== undefined) usage.outputTokens = Math.ceil(output);
  if (seconds !== undefined) usage.predictSeconds = seconds;
  return Object.keys(usage).length > 0 ? usage : undefined;
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

/**
 * A prediction's `logs`: the model's own output as it ran, a string
 * (https://replicate.com/docs/topics/predictions, the prediction object, read 2026-12-07); kept
 * with the step (cut to its cap there), cleaned of the key like any text of the provider's.
 */
const logsOf = (prediction: Record<string, unknown>, clean: (text: string) => string) =>
  typeof prediction.logs === 'string' && prediction.logs !== '' ? { logs: clean(prediction.logs) } : {};

export const createReplicateProvider = (options: ReplicateOptions): JobProvider => {
  const key = 'replicate';
  const base = (options.baseUrl ?? 'https://api.replicate.com').replace(/\/+$/, '');
  const http = createJobProviderHttp(key, options, 'Bearer');

  const call = async (
    method: 'GET' | 'POST',
    path: string,
    what: string,
    signal: AbortSignal,
    body?: unknown,
  ): Promise<Record<string, unknown>> => {
    const answer = await http.keyed(method, `${base}${path}`, signal, body);
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
      case 'succeeded': {
        const usage = usageOf(prediction.metrics);
        return {
          status: 'succeeded',
          output: prediction.output ?? null,
          ...(usage && { usage }),
          ...logsOf(prediction, http.redact),
        };
      }
      case 'failed': {
        const error = typeof prediction.error === 'string' && prediction.error ? prediction.error : 'no error given';
        return { status: 'failed', message: http.clean(error), ...logsOf(prediction, http.redact) };
      }
      case 'canceled':
      case 'aborted':
        return { status: 'canceled' };
      default:
        throw new ProviderError(`${key} answered ${what} with an unknown status`);
    }
  };

  /** The path of a `next` page's URL, only on the API's own origin (the key goes with it). */
  const sameOrigin = (next: string): string | undefined => {
    const url = URL.canParse(next) ? new URL(next) : undefined;
    return url && url.origin === new URL(base).origin ? `${url.pathname}${url.search}` : undefined;
  };

  const predictionPath = (id: string) => `/v1/predictions/${encodeURIComponent(id)}`;

  /** The account's signing secret: one per user or organisation, so one per provider object. */
  const signingSecret = webhookVerifier(async (): Promise<string> => {
    const json = await call('GET', '/v1/webhooks/default/secret', 'the webhook secret', new AbortController().signal);
    if (typeof json.key !== 'string' || !json.key) throw new ProviderError(`${key} answered without a webhook secret`);
    return json.key;
  }, secretTimes);

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

    async findByWebhook(search: JobSearch, signal: AbortSignal): Promise<JobRef[]> {
      const [, owner = '', name = ''] = modelPattern.exec(search.model) ?? [];
      const query = new URLSearchParams({
        created_after: search.from.toISOString(),
        created_before: search.before.toISOString(),
      });
      const found: JobRef[] = [];
      let path: string | undefined = `/v1/predictions?${query}`;
      let reads = 0;
      for (let page = 0; path !== undefined && page < searchPages; page++) {
        const listed = await call('GET', path, 'the predictions list', signal);
        const results = Array.isArray(listed.results) ? listed.results.filter(isRecord) : [];
        for (const prediction of results) {
          if (typeof prediction.id !== 'string' || prediction.model !== `${owner}/${name}`) continue;
          // The list may leave a prediction's webhook out: its read has it.
          let { webhook } = prediction;
          if (webhook === undefined && reads < searchReads) {
            reads += 1;
            ({ webhook } = await call('GET', predictionPath(prediction.id), 'a prediction read', signal));
          }
          if (typeof webhook === 'string' && search.webhookMatches(webhook))
            found.push({ id: prediction.id, model: search.model });
        }
        path = typeof listed.next === 'string' ? sameOrigin(listed.next) : undefined;
      }
      return found;
    },

    async verifyWebhook(delivery: ProviderWebhookDelivery): Promise<{ id: string; state: JobState }> {
      const id = delivery.headers['webhook-id'];
      const timestamp = delivery.headers['webhook-timestamp'];
      const signature = delivery.headers['webhook-signature'];
      if (!id || !timestamp || !signature) throw new WebhookRefusedError('Standard Webhooks headers missing');
      checkWebhookTimestamp('webhook-timestamp', timestamp, delivery.now);
      const content = `${id}.${timestamp}.${delivery.body}`;
      if (!(await signingSecret.verifies((secret) => signedBy(signature, content, secret))))
        throw new WebhookRefusedError('webhook-signature does not match');
      const prediction = webhookJson(delivery.body);
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
