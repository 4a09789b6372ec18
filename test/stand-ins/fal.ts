/**
 * A stand-in for fal's queue API on loopback: the protocol as fal documents it (sources in
 * functions/nodes/providers/fal.ts), not a mock of our adapter.
 * - `Authorization: Key <apiKey>` on every queue call, 401 otherwise (`{detail}`).
 * - `POST /{app id}[?fal_webhook=<url>]` queues a request (body: the input JSON); status, result and
 *   cancel live under `/{owner}/{alias}/requests/{id}` only (a path with the endpoint's sub-path is
 *   404, as fal says not to use it there).
 * - Status: `IN_QUEUE` on the first read, then `IN_PROGRESS`, `COMPLETED` once ended (after
 *   `pollsUntilDone` reads, or `complete(id, output)` / `fail(id, message)`); with `?logs=1`, the
 *   request's `logs` (`{message, level, source, timestamp}`, `log(id, message)` adds one), else none.
 * - Result: the output JSON (200), or for a failure the app's error (`{detail: [{loc, msg, type}]}`
 *   with its status, default 422), with `x-fal-request-id`; a cancelled request answers 499
 *   `client_cancelled`.
 * - Cancel (PUT): `OK` (queued), 202 `CANCELLATION_REQUESTED` (in progress), 400 `ALREADY_COMPLETED`,
 *   404 `NOT_FOUND`.
 * - Webhooks on the end (none on a cancel): `{request_id, gateway_request_id, status: OK|ERROR, payload,
 *   error}`, signed ED25519 over `request_id \n user_id \n timestamp \n hex sha256(body)`, hex, with a
 *   key whose public half is at `GET /.well-known/jwks.json` (no auth) on the same server.
 */
import { createHash, generateKeyPairSync, type KeyObject, randomUUID, sign } from 'node:crypto';
import {
  type DeliveryOptions,
  postWebhook,
  type RecordedRequest,
  resender,
  type SentWebhook,
  type SignedDelivery,
  startJsonServer,
} from './http.ts';

export interface FalStandInOptions {
  /** The one key accepted (fal keys look like `<id>:<secret>`). */
  apiKey: string;
  /** The `x-fal-webhook-user-id` of deliveries. */
  userId?: string;
  /** Status reads after which a request completes by itself with `output`; absent: only complete()/fail() end it. */
  pollsUntilDone?: number;
  /** Output of a request that completes by itself. */
  output?: unknown;
  /** Output of a request that completes by itself, by the app it was submitted to (wins over `output`). */
  answer?: (appId: string) => unknown;
  /** The clock of webhook timestamps. */
  now?: () => Date;
}

export type FalOutcome =
  | { kind: 'ok'; payload: unknown; payloadError?: string }
  | { kind: 'error'; message: string; status: number; inStatus: boolean }
  | { kind: 'canceled' };

/** A queued request as the stand-in holds it. */
export interface StandInRequest {
  requestId: string;
  /** The app id submitted to, sub-path included. */
  appId: string;
  /** `owner/alias` (or `namespace/owner/alias`): where its status, result and cancel live. */
  requestsBase: string;
  input: unknown;
  webhook: string | undefined;
  reads: number;
  outcome: FalOutcome | undefined;
  /** What the app logged (a status read with `?logs=1` answers them). */
  logs: { message: string; level: 'STDOUT' | 'STDERR' | 'INFO'; source: 'USER'; timestamp: string }[];
}

interface SigningKey {
  kid: string;
  privateKey: KeyObject;
  x: string;
}

const newKey = (): SigningKey => {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const jwk = publicKey.export({ format: 'jwk' });
  return { kid: randomUUID(), privateKey, x: String(jwk.x) };
};

export const startFalStandIn = async (options: FalStandInOptions) => {
  const now = options.now ?? (() => new Date());
  const userId = options.userId ?? 'stand-in-user';
  let keys: SigningKey[] = [newKey()];
  const jobs = new Map<string, StandInRequest>();
  const cancels: string[] = [];
  const webhooks: SentWebhook[] = [];
  const sending = new Set<Promise<unknown>>();

  const webhookBody = (job: StandInRequest): string => {
    const outcome = job.outcome;
    const common = { request_id: job.requestId, gateway_request_id: job.requestId };
    if (outcome?.kind === 'ok' && outcome.payloadError !== undefined)
      return JSON.stringify({ ...common, status: 'OK', payload: null, payload_error: outcome.payloadError });
    if (outcome?.kind === 'ok') return JSON.stringify({ ...common, status: 'OK', payload: outcome.payload });
    if (outcome?.kind === 'error')
      return JSON.stringify({
        ...common,
        status: 'ERROR',
        error: `Invalid status code: ${outcome.status}`,
        payload: { detail: [{ loc: ['body'], msg: outcome.message, type: 'value_error' }] },
      });
    throw new Error(`request ${job.requestId} has not ended with a result`);
  };

  /** The signed delivery of an ended request, not sent (see DeliveryOptions for forgeries). */
  const delivery = (id: string, deliveryOptions: DeliveryOptions = {}): SignedDelivery => {
    const job = jobs.get(id);
    if (!job) throw new Error(`no request ${id}`);
    const body = webhookBody(job);
    const timestamp = String(deliveryOptions.timestampSeconds ?? Math.floor(now().getTime() / 1000));
    const message = `${id}\n${userId}\n${timestamp}\n${createHash('sha256').update(body).digest('hex')}`;
    const key = deliveryOptions.forge ? newKey() : (keys[0] as SigningKey);
    return {
      headers: {
        'content-type': 'application/json',
        'x-fal-webhook-request-id': id,
        'x-fal-webhook-user-id': userId,
        'x-fal-webhook-timestamp': timestamp,
        'x-fal-webhook-signature': sign(null, Buffer.from(message), key.privateKey).toString('hex'),
      },
      body: deliveryOptions.tamper ? deliveryOptions.tamper(body) : body,
    };
  };

  const deliver = async (id: string, deliveryOptions: DeliveryOptions = {}): Promise<SentWebhook | undefined> => {
    const webhook = jobs.get(id)?.webhook;
    if (!webhook) return undefined;
    const sent = await postWebhook(webhook, delivery(id, deliveryOptions));
    webhooks.push(sent);
    return sent;
  };

  const end = (job: StandInRequest, outcome: FalOutcome): Promise<SentWebhook | undefined> => {
    job.outcome = outcome;
    if (outcome.kind === 'canceled') return Promise.resolve(undefined);
    const sent = deliver(job.requestId);
    sending.add(sent);
    return sent.finally(() => sending.delete(sent));
  };

  const urls = (job: StandInRequest) => {
    const requestUrl = `${server.url}/${job.requestsBase}/requests/${job.requestId}`;
    return { response_url: requestUrl, status_url: `${requestUrl}/status`, cancel_url: `${requestUrl}/cancel` };
  };

  const submit = (request: RecordedRequest, url: URL) => {
    const appId = url.pathname.slice(1);
    const parts = appId.split('/');
    const kept = parts[0] === 'workflows' || parts[0] === 'comfy' ? 3 : 2;
    if (parts.length < kept || parts.some((part) => !part))
      return { status: 404, body: { detail: 'Application not found' } };
    let input: unknown;
    try {
      input = JSON.parse(request.body);
    } catch {
      input = undefined;
    }
    if (typeof input !== 'object' || input === null || Array.isArray(input))
      return {
        status: 422,
        body: { detail: [{ loc: ['body'], msg: 'Input should be a valid dictionary', type: 'dict_type' }] },
      };
    const job: StandInRequest = {
      requestId: randomUUID(),
      appId,
      requestsBase: parts.slice(0, kept).join('/'),
      input,
      webhook: url.searchParams.get('fal_webhook') ?? undefined,
      reads: 0,
      logs: [],
      outcome: undefined,
    };
    jobs.set(job.requestId, job);
    return {
      status: 200,
      body: {
        status: 'IN_QUEUE',
        request_id: job.requestId,
        gateway_request_id: job.requestId,
        ...urls(job),
        queue_position: 0,
      },
    };
  };

  const status = (job: StandInRequest, withLogs: boolean) => {
    job.reads += 1;
    if (!job.outcome && options.pollsUntilDone !== undefined && job.reads >= options.pollsUntilDone)
      void end(job, { kind: 'ok', payload: options.answer ? options.answer(job.appId) : (options.output ?? {}) });
    const common = { request_id: job.requestId, ...urls(job) };
    if (!job.outcome && job.reads <= 1)
      return { status: 200, body: { ...common, status: 'IN_QUEUE', queue_position: 0 } };
    const logs = withLogs ? job.logs : null;
    if (!job.outcome) return { status: 200, body: { ...common, status: 'IN_PROGRESS', logs } };
    const error =
      job.outcome.kind === 'error' && job.outcome.inStatus
        ? { error: job.outcome.message, error_type: 'runner_server_error' }
        : {};
    return {
      status: 200,
      body: { ...common, status: 'COMPLETED', logs, metrics: { inference_time: 1.2 }, ...error },
    };
  };

  const result = (job: StandInRequest) => {
    const headers = { 'x-fal-request-id': job.requestId };
    const outcome = job.outcome;
    if (!outcome) return { status: 400, body: { detail: 'Request is still in progress' }, headers };
    if (outcome.kind === 'ok') return { status: 200, body: outcome.payload, headers };
    if (outcome.kind === 'canceled')
      return {
        status: 499,
        body: { detail: 'Request was cancelled', error_type: 'client_cancelled' },
        headers: { ...headers, 'x-fal-error-type': 'client_cancelled' },
      };
    return {
      status: outcome.status,
      body: { detail: [{ loc: ['body'], msg: outcome.message, type: 'value_error' }] },
      headers,
    };
  };

  const cancel = (job: StandInRequest) => {
    cancels.push(job.requestId);
    if (job.outcome) return { status: 400, body: { status: 'ALREADY_COMPLETED' } };
    const queued = job.reads <= 1;
    void end(job, { kind: 'canceled' });
    return queued
      ? { status: 200, body: { status: 'OK' } }
      : { status: 202, body: { status: 'CANCELLATION_REQUESTED' } };
  };

  const server = await startJsonServer((request, url) => {
    if (url.pathname === '/.well-known/jwks.json' && request.method === 'GET')
      return {
        status: 200,
        body: { keys: keys.map(({ kid, x }) => ({ kty: 'OKP', crv: 'Ed25519', x, kid, alg: 'EdDSA', use: 'sig' })) },
      };
    if (request.headers.authorization !== `Key ${options.apiKey}`)
      return { status: 401, body: { detail: 'Unauthorized' } };
    const match = /^\/(.+)\/requests\/([^/]+)(\/status|\/cancel)?$/.exec(url.pathname);
    if (!match)
      return request.method === 'POST' ? submit(request, url) : { status: 405, body: { detail: 'Method Not Allowed' } };
    const [, base, id = '', action] = match;
    const job = jobs.get(decodeURIComponent(id));
    if (!job || job.requestsBase !== base)
      return action === '/cancel'
        ? { status: 404, body: { status: 'NOT_FOUND' } }
        : { status: 404, body: { detail: 'Request not found' } };
    if (action === '/status' && request.method === 'GET') return status(job, url.searchParams.get('logs') === '1');
    if (action === '/cancel' && request.method === 'PUT') return cancel(job);
    if (!action && request.method === 'GET') return result(job);
    return { status: 405, body: { detail: 'Method Not Allowed' } };
  });

  const running = (id: string) => {
    const job = jobs.get(id);
    if (!job) throw new Error(`no request ${id}`);
    if (job.outcome) throw new Error(`request ${id} has already ended`);
    return job;
  };

  return {
    /** The queue base URL (`PROVIDER_FAL_BASE_URL`). */
    url: server.url,
    /** Where the public keys are (`PROVIDER_FAL_JWKS_URL`). */
    jwksUrl: `${server.url}/.well-known/jwks.json`,
    userId,
    jobs,
    /** Every request received, in order (the key must appear only in `authorization`). */
    requests: server.requests,
    /** Ids of the requests a cancel reached. */
    cancels,
    /** Every webhook sent, with the receiver's answer. */
    webhooks,
    /**
     * Completes a running request with `output`; resolves once its webhook (if any) was answered.
     * With `payloadError`, the webhook carries `payload: null` and that text (an output fal could not
     * put in it); the result still answers `output`.
     */
    /** The app of a running request prints `message` (to stdout). */
    log: (id: string, message: string) => {
      running(id).logs.push({ message, level: 'STDOUT', source: 'USER', timestamp: now().toISOString() });
    },
    complete: (id: string, output: unknown, completeOptions: { payloadError?: string } = {}) =>
      end(running(id), { kind: 'ok', payload: output, ...completeOptions }),
    /**
     * Fails a running request: its result answers `status` (default 422) with `message` in `detail`;
     * with `inStatus`, its COMPLETED status carries `error` too.
     */
    fail: (id: string, message: string, failOptions: { status?: number; inStatus?: boolean } = {}) =>
      end(running(id), {
        kind: 'error',
        message,
        status: failOptions.status ?? 422,
        inStatus: failOptions.inStatus ?? false,
      }),
    /**
     * The next request (whose path `on` matches, when given) answers `status` with fal's `{detail}`
     * body, and `Retry-After` when given.
     */
    failNextWith(statusCode: number, retryAfter?: number, detail = 'Too many requests', on?: RegExp) {
      server.failNextWith(statusCode, { detail }, retryAfter, on);
    },
    /** The next request (whose path `on` matches, when given) is never answered (a timeout). */
    stallNext: server.stallNext,
    delivery,
    deliver,
    /** Sends an earlier webhook again, byte for byte (a duplicate or a replay). */
    resend: resender(webhooks),
    /** Signs with a new key from now on; the JWKS lists it first, and the old one too when `keepOld`. */
    rotateKeys(rotateOptions: { keepOld?: boolean } = {}) {
      keys = rotateOptions.keepOld ? [newKey(), ...keys] : [newKey()];
    },
    /** Resolves when every webhook under way was answered. */
    idle: () => Promise.all([...sending]).then(() => undefined),
    close: server.close,
  };
};

export type FalStandIn = Awaited<ReturnType<typeof startFalStandIn>>;
