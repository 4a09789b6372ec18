import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { type EndStatus, endStatuses } from '../../platform/run-statuses.ts';
import type { deliveryStates, webhookErrorKinds } from '../../schemas/deliveries.ts';
import type { WebhookEvent } from '../../schemas/run-words.ts';
import { generatedSecretBytes, isStandardSecret, standardSecretPrefix } from '../../schemas/webhook-secret.ts';

/**
 * The run-finished webhook (spec 6): signatures, ids and the retry schedule. Pure.
 *
 * Two signatures are sent when a `callbackSecret` was given:
 * - `X-Service-Signature: sha256=<hex HMAC-SHA256(secret, raw body)>` (the spec's);
 * - Standard Webhooks: `webhook-id`, `webhook-timestamp` (Unix seconds) and
 *   `webhook-signature: v1,<base64 HMAC-SHA256(key, "<id>.<timestamp>.<raw body>")>`, so receivers
 *   can also reject replays by timestamp and id. The key is a `whsec_` secret's decoded bytes (as the
 *   Standard Webhooks libraries read it), any other secret's UTF-8 bytes (which those libraries take
 *   as `whsec_` + their base64).
 */

export const webhookTimeoutMs = 8_000;
/** Attempts a delivery makes before it is `failed`. */
export const webhookAttempts = 5;
/** Seconds before a webhook's next attempt: 2 minutes after the first failure, each wait twice the one before, at most an hour. */
export const webhookRetryDelaySeconds = (failedAttempt: number): number =>
  Math.min(3600, 120 * 2 ** (failedAttempt - 1));
/** Bytes of the receiver's reply read at most (only for the log). */
export const maxReplyBytes = 4096;

/**
 * SQS's longest message delay. Each retry is a new message delayed until it is due; a wait longer
 * than this (the fourth, 16 minutes) is carried in the message as its due time and sent on again
 * when it arrives early.
 */
export const maxMessageDelaySeconds = 900;

/** The DelaySeconds of a message due at `dueAtMs` and sent at `nowMs`: 0 once it is due. */
export const delaySecondsUntil = (dueAtMs: number, nowMs: number): number =>
  Math.min(maxMessageDelaySeconds, Math.max(0, Math.ceil((dueAtMs - nowMs) / 1000)));

/** The event a run's end sends: `run.<status>`. */
export const webhookEventOfEnd = (status: EndStatus): WebhookEvent => `run.${status}`;

/** The event a run's end sends; undefined while the run has not ended. */
export const webhookEventOfStatus = (status: string): WebhookEvent | undefined =>
  endStatuses.includes(status as EndStatus) ? webhookEventOfEnd(status as EndStatus) : undefined;

/** A delivery is `pending` until an attempt is answered 2xx, or its last attempt failed. */
export type DeliveryState = (typeof deliveryStates)[number];

/** The delivery's state once attempt `attempt` was answered (or not). */
export const stateAfterAttempt = (delivered: boolean, attempt: number): DeliveryState =>
  delivered ? 'delivered' : attempt >= webhookAttempts ? 'failed' : 'pending';

/**
 * A redelivery (POST /runs/{jobId}/deliveries/redeliver) is one attempt, with no retry schedule of
 * its own: its caller asked for it and reads the log, as a dashboard's "resend" works. Its answer
 * alone sets the state.
 */
export const stateAfterRedelivery = (delivered: boolean): DeliveryState => (delivered ? 'delivered' : 'failed');

/** The delivery log keeps the latest attempts only, so the item stays small whatever the redeliveries. */
export const attemptLogLimit = 5;

/** The log once `entry` is recorded: the last `attemptLogLimit` attempts, oldest first. */
export const appendToAttemptLog = (log: readonly WebhookAttempt[], entry: WebhookAttempt): WebhookAttempt[] =>
  [...log, entry].slice(-attemptLogLimit);

/**
 * A redelivery marked pending whose attempt was never recorded after this long (its message lost:
 * the API died between marking it and sending it) may be asked for again. Far above the attempt's
 * own 8 s, so a redelivery in flight is never doubled but by a crash.
 */
export const staleRedeliveryMs = 15 * 60_000;

/**
 * Why an attempt got no answer: `timeout` (none within 8 s), `refused` (the address guard refused
 * the URL or the address it resolves to), `dns` (the host did not resolve), `tls` (the handshake
 * failed: certificate not trusted, expired or for another name), `connection` (anything else on the
 * way: refused, reset, closed early).
 */
export type WebhookErrorKind = (typeof webhookErrorKinds)[number];

/** One attempt as the delivery log keeps it: the receiver's status, or why there was none. */
export interface WebhookAttempt {
  attempt: number;
  /** When the POST started (ISO 8601). */
  at: string;
  /** The callback URL's host (and port): never its path or query, which may carry a token. */
  host: string;
  statusCode?: number;
  error?: WebhookErrorKind;
  durationMs: number;
  /** When the next attempt is due, if there is one. */
  nextAttemptAt?: string;
}

export const signatureHeader = (rawBody: string, secret: string): string =>
  `sha256=${createHmac('sha256', secret).update(rawBody).digest('hex')}`;

/**
 * Stable per run and event, so a redelivery carries the same id (`jobId` + `event` is the key); a
 * step event passes its delivery's name (`<event>#<nodeId>`), one id per step.
 */
export const webhookId = (jobId: string, event: string): string =>
  `msg_${createHash('sha256').update(`${jobId}:${event}`).digest('hex').slice(0, 32)}`;

/** The HMAC key of `webhook-signature`: a `whsec_` secret's decoded bytes, any other secret's UTF-8 bytes. */
export const standardWebhookKey = (secret: string): Buffer =>
  isStandardSecret(secret)
    ? Buffer.from(secret.slice(standardSecretPrefix.length), 'base64')
    : Buffer.from(secret, 'utf8');

/** A secret the service issues when a run start asks for one: shown once, in the start's answer. */
export const newStandardWebhookSecret = (): string =>
  `${standardSecretPrefix}${randomBytes(generatedSecretBytes).toString('base64')}`;

export const standardWebhookSignature = (
  id: string,
  timestampSeconds: number,
  rawBody: string,
  secret: string,
): string =>
  `v1,${createHmac('sha256', standardWebhookKey(secret)).update(`${id}.${timestampSeconds}.${rawBody}`).digest('base64')}`;

/** Verifies `X-Service-Signature` in constant time (what receivers should do). */
export const verifySignature = (rawBody: string, header: string | undefined, secret: string): boolean => {
  if (!header?.startsWith('sha256=')) return false;
  const expected = Buffer.from(signatureHeader(rawBody, secret));
  const given = Buffer.from(header);
  return expected.length === given.length && timingSafeEqual(expected, given);
};

/** The headers of one delivery. */
export const webhookHeaders = (input: {
  jobId: string;
  event: string;
  /** The delivery's name (functions/domain/lifecycle-webhooks.ts `deliveryName`); `event` when absent. */
  name?: string;
  rawBody: string;
  secret: string | undefined;
  nowSeconds: number;
}): Record<string, string> => {
  const id = webhookId(input.jobId, input.name ?? input.event);
  return {
    'content-type': 'application/json',
    'user-agent': 'workflow-run-api-webhooks/1.0',
    'x-service-event': input.event,
    'webhook-id': id,
    'webhook-timestamp': String(input.nowSeconds),
    ...(input.secret
      ? {
          'x-service-signature': signatureHeader(input.rawBody, input.secret),
          'webhook-signature': standardWebhookSignature(id, input.nowSeconds, input.rawBody, input.secret),
        }
      : {}),
  };
};
