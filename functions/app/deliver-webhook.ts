import * as v from 'valibot';
import type { Deps } from '../deps.ts';
import { type DeliveryRef, deliveryName } from '../domain/lifecycle-webhooks.ts';
import {
  appendToAttemptLog,
  delaySecondsUntil,
  maxReplyBytes,
  stateAfterAttempt,
  stateAfterRedelivery,
  type WebhookAttempt,
  type WebhookErrorKind,
  webhookHeaders,
  webhookRetryDelaySeconds,
  webhookTimeoutMs,
} from '../domain/webhook.ts';
import { GuardedFetchError } from '../http-client/address-vet.ts';
import { type GuardedFetchOptions, guardedFetch } from '../http-client/guarded-fetch.ts';
import { logger } from '../observability/logger.ts';
import { countWebhookAttempt } from '../observability/metrics.ts';
import { sendWebhookMessage, type WebhookMessage, WebhookMessageSchema } from '../store/queues.ts';
import {
  type DeliveryProgress,
  markAttemptSending,
  readDeliveryTarget,
  recordWebhookAttempt,
} from '../store/webhook-deliveries.ts';
import { webhookBodyOf } from './lifecycle-webhook-body.ts';

/**
 * Delivers the run-finished webhook (spec 6): the Run plus `event`, signed, POSTed to the run's
 * callbackUrl through the address guard (no private, loopback, link-local, CGNAT, multicast or
 * metadata address; no redirects; 8 s; the reply read at most 4 KB). A 2xx is success; anything else
 * is retried after 2, 4, 8 and 16 minutes, five attempts in all, then the delivery is `failed`. A
 * redelivery the caller asked for (`run-deliveries.ts`) is one more attempt, numbered after the last.
 *
 * A receiver's failure is an outcome, not an error: the attempt is recorded on the delivery item
 * and the next one is a new message, delayed until it is due, so the message at hand is done and
 * nothing fails in Lambda or reaches the DLQ (which keeps only what this code could not process).
 * The attempt is recorded before its successor is sent: a crash between the two has SQS hand the
 * same message back, which sends the successor then; no crash can lose the delivery. Each POST is
 * marked as started first (`sending`): a crash mid-send leaves the mark, and the message handed back
 * logs that POST as an `interrupted` attempt before sending the next at once, so every POST a
 * receiver may have seen is in the log (receivers deduplicate on `webhook-id`).
 */

export interface WebhookOptions {
  fetchOptions: Pick<GuardedFetchOptions, 'allowLoopback' | 'ca' | 'resolve'>;
}

/** One received webhook message, with the SQS message id (the same on every redelivery of it). */
export interface WebhookDelivery extends WebhookMessage {
  messageId: string;
}

/** The delivery log's name for why an attempt got no answer. */
export const errorKindOf = (error: unknown): WebhookErrorKind => {
  if (!(error instanceof GuardedFetchError)) return 'connection';
  switch (error.code) {
    case 'timeout':
      return 'timeout';
    case 'invalid_url':
    case 'forbidden_scheme':
    case 'address_refused':
      return 'refused';
    case 'tls':
      return 'tls';
    default:
      return 'connection';
  }
};

/** POSTs the signed Run once; the delivery log's entry for it (without the next attempt). */
const post = async (
  deps: Deps,
  target: { url: string; secret: string | undefined },
  delivery: { jobId: string; ref: DeliveryRef; attempt: number },
  fetchOptions: WebhookOptions['fetchOptions'],
) => {
  const { jobId, ref } = delivery;
  const { event } = ref;
  const rawBody = JSON.stringify(await webhookBodyOf(deps, jobId, ref));
  const at = deps.now();
  const headers = webhookHeaders({
    jobId,
    event,
    name: deliveryName(ref),
    rawBody,
    secret: target.secret,
    nowSeconds: Math.floor(at.getTime() / 1000),
  });
  const started = performance.now();
  const entry: WebhookAttempt = {
    attempt: delivery.attempt,
    at: at.toISOString(),
    host: new URL(target.url).host,
    durationMs: 0,
  };
  try {
    const response = await guardedFetch(
      target.url,
      { method: 'POST', headers, body: rawBody },
      { ...fetchOptions, timeoutMs: webhookTimeoutMs, maxBytes: maxReplyBytes, truncate: true },
    );
    entry.statusCode = response.status;
  } catch (error) {
    entry.error = errorKindOf(error);
    const detail = error instanceof GuardedFetchError ? error.detail : undefined;
    logger.info('webhook attempt got no answer', { jobId, event, reason: (error as Error).message, detail });
  }
  // A refused attempt sent nothing: its duration would only say how long the name took to resolve.
  entry.durationMs = entry.error === 'refused' ? 0 : Math.round(performance.now() - started);
  return entry;
};

/** Sends the message of attempt `attempt` of the delivery, due at `dueAt`. */
const scheduleAttempt = (deps: Deps, message: WebhookMessage & { dueAt: string }) =>
  sendWebhookMessage(deps, message, delaySecondsUntil(Date.parse(message.dueAt), deps.now().getTime()));

/**
 * The message recorded its attempt, then its handler died before sending the next one: SQS handed
 * the same message back (same id). Only that message sends the next, so a copy of it never does.
 */
const lostItsSuccessor = (progress: DeliveryProgress, delivery: WebhookDelivery, attempt: number) =>
  progress.state === 'pending' &&
  // A message whose attempt was interrupted records the next one too (`attempt + 1`).
  (progress.attempts === attempt || progress.attempts === attempt + 1) &&
  progress.lastMessageId === delivery.messageId &&
  progress.nextAttemptAt !== undefined;

/** The delivery an SQS message of the webhooks queue asks for (an unreadable body throws: the DLQ keeps it). */
export const webhookDeliveryOf = (body: string, messageId: string): WebhookDelivery => ({
  ...v.parse(WebhookMessageSchema, JSON.parse(body)),
  messageId,
});

/** Handles one webhook message: an attempt, a wait sent on, or a copy of a message already handled. */
export const deliverWebhook = async (deps: Deps, delivery: WebhookDelivery, options: WebhookOptions) => {
  const { jobId, event, dueAt, nodeId } = delivery;
  // A step event's message names its step; a run event's, as before, does not.
  const ref: DeliveryRef = nodeId === undefined ? { event } : { event, nodeId };
  let attempt = delivery.attempt ?? 1;
  if (dueAt && delaySecondsUntil(Date.parse(dueAt), deps.now().getTime()) > 0) {
    // A wait longer than SQS's longest delay: send the same attempt on, with the rest of it.
    return scheduleAttempt(deps, { ...ref, jobId, attempt, dueAt });
  }
  const target = await readDeliveryTarget(deps, jobId, ref);
  if (!target) return; // no callbackUrl, or the run is gone (expired): nothing to deliver
  const { progress } = target;
  if (progress.state !== 'pending' || progress.attempts >= attempt) {
    if (lostItsSuccessor(progress, delivery, attempt)) {
      const next = progress.attempts + 1;
      await scheduleAttempt(deps, { ...ref, jobId, attempt: next, dueAt: progress.nextAttemptAt as string });
    }
    return; // delivered, failed, or this attempt was made already: a redelivered or duplicated message
  }
  if (progress.attempts < attempt - 1) {
    logger.warn('webhook message ahead of its delivery; dropped', {
      jobId,
      event,
      attempt,
      recorded: progress.attempts,
    });
    return;
  }
  const callback = { url: target.callbackUrl, secret: target.callbackSecret };
  // A redelivery the caller asked for is one attempt: no retry schedule follows it.
  const redelivery = progress.redeliveryRequestedAt !== undefined;
  let log = progress.attemptLog;
  if (progress.sending?.attempt === attempt) {
    // This attempt's POST started and its outcome was never recorded (a crash mid-send): it is logged
    // as an attempt of its own, and the same message makes the next one now.
    const cut: WebhookAttempt = {
      attempt,
      at: progress.sending.at,
      host: new URL(callback.url).host,
      durationMs: 0,
      error: 'interrupted',
    };
    const record = { messageId: delivery.messageId, entry: cut, log, state: 'pending' as const };
    const kept = { ...record, expiresAt: target.expiresAt, keepRedelivery: redelivery };
    if (!(await recordWebhookAttempt(deps, jobId, ref, kept))) return;
    logger.warn('webhook attempt interrupted; sent again', { jobId, event, attempt });
    log = appendToAttemptLog(log, cut);
    attempt += 1;
  }
  const at = deps.now().toISOString();
  if (!(await markAttemptSending(deps, jobId, ref, { attempt, at, expiresAt: target.expiresAt }))) return;
  const entry = await post(deps, callback, { jobId, ref, attempt }, options.fetchOptions);
  const delivered = entry.statusCode !== undefined && entry.statusCode >= 200 && entry.statusCode < 300;
  const state = redelivery ? stateAfterRedelivery(delivered) : stateAfterAttempt(delivered, attempt);
  if (state === 'pending') {
    entry.nextAttemptAt = new Date(deps.now().getTime() + webhookRetryDelaySeconds(attempt) * 1000).toISOString();
  }
  countWebhookAttempt(delivered);
  logger.info('webhook attempt', { jobId, event, ...entry, state, redelivery });
  const record = {
    messageId: delivery.messageId,
    entry,
    log,
    state,
    expiresAt: target.expiresAt,
  };
  if (!(await recordWebhookAttempt(deps, jobId, ref, record))) return;
  if (state === 'failed' && !redelivery)
    logger.warn('webhook failed after every attempt', { jobId, event, host: entry.host });
  if (entry.nextAttemptAt)
    await scheduleAttempt(deps, { ...ref, jobId, attempt: attempt + 1, dueAt: entry.nextAttemptAt });
};
