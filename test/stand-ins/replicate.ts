/**
 * A stand-in for Replicate's HTTP API on loopback: the protocol as Replicate documents it (sources in
 * functions/nodes/providers/replicate.ts), not a mock of our adapter.
 * - `Authorization: Bearer <apiKey>` on every call, 401 otherwise (Replicate's `{title, detail, status}` body).
 * - `POST /v1/models/{owner}/{name}/predictions` and `POST /v1/predictions` (`version`) create a
 *   prediction (201); `GET /v1/predictions/{id}` reads it (`starting`, then `processing`); it succeeds by
 *   itself after `pollsUntilDone` reads, or on `complete(id, output)` / `fail(id, message)`;
 *   `POST /v1/predictions/{id}/cancel` cancels it (an ended one is answered unchanged, 200).
 * - `GET /v1/predictions` lists the account's predictions, newest first, `pageSize` (100) a page:
 *   `{previous, next, results}`, `next` the next page's URL (a `cursor`) or null; `created_after`
 *   (inclusive) and `created_before` (exclusive), ISO 8601, narrow it. A listed prediction carries
 *   no `webhook` (the documented list example shows none): a reader gets it by reading the prediction.
 * - `GET /v1/webhooks/default/secret` answers `{key: "whsec_…"}`.
 * - At the end (succeeded, failed, canceled) it posts the prediction to its `webhook` when
 *   `webhook_events_filter` holds `completed` (or is absent), signed the Standard Webhooks way.
 *   Only `completed` events are sent.
 * - An ended prediction's `metrics` hold `predict_time` and `total_time`; a text answer's also its
 *   `input_token_count` and `output_token_count`, as Replicate's language models report them.
 * - `endByPolling(id, reads, output)`: that one prediction succeeds at its `reads`-th read and its
 *   webhook is lost (never sent), so only polling finds its end.
 */
import { createHmac, randomBytes } from 'node:crypto';
import {
  type DeliveryOptions,
  postWebhook,
  type RecordedRequest,
  type SentWebhook,
  type SignedDelivery,
  startJsonServer,
} from './http.ts';

export interface ReplicateStandInOptions {
  /** The one token accepted. */
  apiKey: string;
  /** The account's signing secret, `whsec_<base64>`; a random one when absent. */
  secret?: string;
  /** Reads after which a running prediction succeeds by itself with `output`; absent: only complete()/fail() end it. */
  pollsUntilDone?: number;
  /** Output of a prediction that succeeds by itself. */
  output?: unknown;
  /** The clock of timestamps (webhooks, prediction times). */
  now?: () => Date;
  /** Predictions a page of `GET /v1/predictions` (Replicate's is 100). */
  pageSize?: number;
}

/** A prediction as the stand-in holds it: the object it answers, and how often it was read. */
export interface StandInPrediction {
  prediction: Record<string, unknown> & { id: string; status: string };
  reads: number;
  /** Whether it was created through `/v1/models/…` (by model) or `/v1/predictions` (by version). */
  createdBy: 'model' | 'version';
}

const newSecret = () => `whsec_${randomBytes(24).toString('base64')}`;
/** Replicate's ids look like `gm3qorzdhgbfurvjtvhg6dckhu`: 26 lower-case letters and digits. */
const newId = () => Array.from(randomBytes(26), (byte) => 'abcdefghijklmnopqrstuvwxyz234567'[byte % 32]).join('');
const problem = (status: number, title: string, detail: string) => ({ status, body: { title, detail, status } });
/**
 * A language model's token counts, as Replicate's official language models report them in `metrics`
 * (`input_token_count`, `output_token_count`): here four characters a token, for a text answer only.
 */
const tokenCounts = (prediction: Record<string, unknown>) => {
  const { output, input } = prediction;
  const text = typeof output === 'string' ? output : Array.isArray(output) ? output : undefined;
  if (text === undefined || (Array.isArray(text) && !text.every((t) => typeof t === 'string'))) return {};
  const words = Array.isArray(text) ? text.join('') : text;
  if (/^(https?:|data:)/.test(words)) return {};
  const prompt =
    typeof input === 'object' && input !== null ? String((input as { prompt?: unknown }).prompt ?? '') : '';
  return {
    input_token_count: Math.max(1, Math.ceil(prompt.length / 4)),
    output_token_count: Math.max(1, Math.ceil(words.length / 4)),
  };
};
const ended = (status: string) => status === 'succeeded' || status === 'failed' || status === 'canceled';

export const startReplicateStandIn = async (options: ReplicateStandInOptions) => {
  const now = options.now ?? (() => new Date());
  let secret = options.secret ?? newSecret();
  const jobs = new Map<string, StandInPrediction>();
  const cancels: string[] = [];
  const webhooks: SentWebhook[] = [];
  /** Predictions that end at a given read, whose webhook is lost (`endByPolling`). */
  const polledOnly = new Map<string, { reads: number; output: unknown }>();
  const sending = new Set<Promise<unknown>>();

  const sign = (id: string, timestamp: number, body: string, key = secret) =>
    `v1,${createHmac('sha256', Buffer.from(key.replace(/^whsec_/, ''), 'base64'))
      .update(`${id}.${timestamp}.${body}`)
      .digest('base64')}`;

  /** The signed delivery of a prediction as it stands (the same webhook-id for the same prediction and status). */
  const delivery = (id: string, deliveryOptions: DeliveryOptions = {}): SignedDelivery => {
    const job = jobs.get(id);
    if (!job) throw new Error(`no prediction ${id}`);
    const timestamp = deliveryOptions.timestampSeconds ?? Math.floor(now().getTime() / 1000);
    const body = JSON.stringify(job.prediction);
    const webhookId = `msg_${createHmac('sha256', 'ids').update(`${id}:${job.prediction.status}`).digest('hex').slice(0, 27)}`;
    const signature = sign(webhookId, timestamp, body, deliveryOptions.forge ? newSecret() : secret);
    return {
      headers: {
        'content-type': 'application/json',
        'webhook-id': webhookId,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': signature,
      },
      body: deliveryOptions.tamper ? deliveryOptions.tamper(body) : body,
    };
  };

  const deliver = async (id: string, deliveryOptions: DeliveryOptions = {}): Promise<SentWebhook | undefined> => {
    const webhook = jobs.get(id)?.prediction.webhook;
    if (typeof webhook !== 'string') return undefined;
    const sent = await postWebhook(webhook, delivery(id, deliveryOptions));
    webhooks.push(sent);
    return sent;
  };

  /** Ends a prediction and announces it when its filter asks for `completed`. */
  const end = (job: StandInPrediction, fields: Record<string, unknown>): Promise<SentWebhook | undefined> => {
    Object.assign(job.prediction, fields, { completed_at: now().toISOString() });
    job.prediction.metrics = { predict_time: 1.5, total_time: 2, ...tokenCounts(job.prediction) };
    if (polledOnly.has(job.prediction.id)) return Promise.resolve(undefined);
    const filter = job.prediction.webhook_events_filter;
    if (Array.isArray(filter) && !filter.includes('completed')) return Promise.resolve(undefined);
    const sent = deliver(job.prediction.id);
    sending.add(sent);
    return sent.finally(() => sending.delete(sent));
  };

  const create = (request: RecordedRequest, model: string | undefined, createdBy: 'model' | 'version') => {
    let body: unknown;
    try {
      body = JSON.parse(request.body);
    } catch {
      return problem(400, 'Invalid request body', 'The request body is not valid JSON');
    }
    const fields = typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : {};
    const { input, webhook, webhook_events_filter: filter, version } = fields;
    if (typeof input !== 'object' || input === null || Array.isArray(input))
      return {
        status: 422,
        body: {
          title: 'Input validation failed',
          detail: '- input: input is required',
          status: 422,
          invalid_fields: ['input'],
        },
      };
    if (createdBy === 'version' && (typeof version !== 'string' || !version))
      return problem(422, 'Invalid version', 'version is required');
    if (webhook !== undefined && (typeof webhook !== 'string' || !URL.canParse(webhook)))
      return problem(422, 'Invalid webhook', 'webhook must be a URL');
    const events = ['start', 'output', 'logs', 'completed'];
    if (filter !== undefined && (!Array.isArray(filter) || !filter.every((event) => events.includes(event))))
      return problem(422, 'Invalid webhook_events_filter', 'webhook_events_filter holds an unknown event');
    const id = newId();
    const prediction: StandInPrediction['prediction'] = {
      id,
      model: model ?? String(version).split(':')[0],
      version: createdBy === 'model' ? 'hidden' : String(version).split(':').pop(),
      input,
      logs: '',
      output: null,
      data_removed: false,
      error: null,
      source: 'api',
      status: 'starting',
      created_at: now().toISOString(),
      started_at: null,
      completed_at: null,
      metrics: {},
      urls: {
        get: `${server.url}/v1/predictions/${id}`,
        cancel: `${server.url}/v1/predictions/${id}/cancel`,
        web: `https://replicate.com/p/${id}`,
      },
      ...(webhook === undefined ? {} : { webhook }),
      ...(filter === undefined ? {} : { webhook_events_filter: filter }),
    };
    jobs.set(id, { prediction, reads: 0, createdBy });
    return { status: 201, body: prediction };
  };

  /** `GET /v1/predictions`: newest first, a page at a time, narrowed by creation time. */
  const list = (url: URL) => {
    const bound = (name: string) => {
      const value = url.searchParams.get(name);
      return value === null ? undefined : Date.parse(value);
    };
    const after = bound('created_after');
    const before = bound('created_before');
    if (Number.isNaN(after) || Number.isNaN(before))
      return problem(400, 'Invalid date', 'created_after and created_before take ISO 8601 date-times');
    const pageSize = options.pageSize ?? 100;
    const cursor = Number(url.searchParams.get('cursor') ?? '0');
    if (!Number.isInteger(cursor) || cursor < 0) return problem(400, 'Invalid cursor', 'Invalid cursor.');
    const matching = [...jobs.values()]
      .map((job) => job.prediction)
      .filter((p) => {
        const created = Date.parse(String(p.created_at));
        return (after === undefined || created >= after) && (before === undefined || created < before);
      })
      .reverse();
    const page = matching.slice(cursor, cursor + pageSize);
    const at = (offset: number) => {
      const next = new URL(`${server.url}/v1/predictions`);
      for (const [name, value] of url.searchParams) if (name !== 'cursor') next.searchParams.set(name, value);
      next.searchParams.set('cursor', String(offset));
      return next.toString();
    };
    return {
      status: 200,
      body: {
        previous: cursor > 0 ? at(Math.max(0, cursor - pageSize)) : null,
        next: cursor + pageSize < matching.length ? at(cursor + pageSize) : null,
        results: page.map(({ webhook: _webhook, webhook_events_filter: _filter, ...listed }) => listed),
      },
    };
  };

  const server = await startJsonServer((request, url) => {
    if (request.headers.authorization !== `Bearer ${options.apiKey}`)
      return problem(401, 'Unauthenticated', 'You did not pass a valid authentication token');
    const path = url.pathname;
    let match = /^\/v1\/models\/([^/]+)\/([^/]+)\/predictions$/.exec(path);
    if (match && request.method === 'POST') return create(request, `${match[1]}/${match[2]}`, 'model');
    if (path === '/v1/predictions' && request.method === 'POST') return create(request, undefined, 'version');
    if (path === '/v1/predictions' && request.method === 'GET') return list(url);
    if (path === '/v1/webhooks/default/secret' && request.method === 'GET')
      return { status: 200, body: { key: secret } };
    match = /^\/v1\/predictions\/([^/]+)(\/cancel)?$/.exec(path);
    const job = match ? jobs.get(decodeURIComponent(match[1] ?? '')) : undefined;
    if (!match || !job) return problem(404, 'Not found', 'Not found.');
    if (match[2] && request.method === 'POST') {
      cancels.push(job.prediction.id);
      if (!ended(job.prediction.status)) void end(job, { status: 'canceled' });
      return { status: 200, body: job.prediction };
    }
    if (match[2] || request.method !== 'GET') return problem(405, 'Method not allowed', 'Method not allowed.');
    job.reads += 1;
    const polled = polledOnly.get(job.prediction.id);
    if (!ended(job.prediction.status)) {
      if (polled && job.reads >= polled.reads) {
        void end(job, { status: 'succeeded', output: polled.output });
      } else if (options.pollsUntilDone !== undefined && job.reads >= options.pollsUntilDone) {
        void end(job, { status: 'succeeded', output: options.output ?? null });
      } else if (job.reads > 1) {
        Object.assign(job.prediction, {
          status: 'processing',
          started_at: job.prediction.started_at ?? now().toISOString(),
        });
      }
    }
    return { status: 200, body: job.prediction };
  });

  const running = (id: string) => {
    const job = jobs.get(id);
    if (!job) throw new Error(`no prediction ${id}`);
    if (ended(job.prediction.status)) throw new Error(`prediction ${id} has already ended`);
    return job;
  };

  return {
    /** The API base URL (`PROVIDER_REPLICATE_BASE_URL`); the paths start with `/v1`. */
    url: server.url,
    /** The current signing secret. */
    get secret() {
      return secret;
    },
    jobs,
    /** Every request received, in order (the key must appear only in `authorization`). */
    requests: server.requests,
    /** Ids of the predictions a cancel reached. */
    cancels,
    /** Every webhook sent, with the receiver's answer. */
    webhooks,
    /**
     * Succeeds a running prediction with `output` (and `logs`, the model's own output, when given);
     * resolves once its webhook (if any) was answered.
     */
    complete: (id: string, output: unknown, logs?: string) =>
      end(running(id), { status: 'succeeded', output, ...(logs !== undefined && { logs }) }),
    /**
     * The running prediction `id` succeeds with `output` when it is read the `reads`-th time, and its
     * webhook is lost (never sent): a job whose end only polling can find.
     */
    endByPolling: (id: string, reads: number, output: unknown) => {
      running(id);
      polledOnly.set(id, { reads, output });
    },
    /** Fails a running prediction with `message` as its `error`. */
    fail: (id: string, message: string) => end(running(id), { status: 'failed', error: message }),
    /**
     * The next request (whose path `on` matches, when given) answers `status` with Replicate's error
     * body (`detail`), and `Retry-After` when given.
     */
    failNextWith(
      status: number,
      retryAfter?: number,
      detail = 'Request was throttled. Your rate limit resets in ~30s.',
      on?: RegExp,
    ) {
      const title = status === 429 ? 'Too Many Requests' : 'Error';
      server.failNextWith(status, { title, detail, status }, retryAfter, on);
    },
    /** The next request (whose path `on` matches, when given) is never answered (a timeout). */
    stallNext: server.stallNext,
    /** The signed delivery of a prediction as it stands, not sent (see DeliveryOptions for forgeries). */
    delivery,
    /** Sends `delivery(id, options)` to the prediction's webhook URL. */
    deliver,
    /** Sends an earlier webhook again, byte for byte (a duplicate or a replay). */
    resend: async (sent: SentWebhook) => {
      const again = await postWebhook(sent.url, { headers: sent.headers, body: sent.body });
      webhooks.push(again);
      return again;
    },
    /** A new signing secret (a rotation); returns it. */
    rotateSecret() {
      secret = newSecret();
      return secret;
    },
    /** Resolves when every webhook under way was answered. */
    idle: () => Promise.all([...sending]).then(() => undefined),
    close: server.close,
  };
};

export type ReplicateStandIn = Awaited<ReturnType<typeof startReplicateStandIn>>;
