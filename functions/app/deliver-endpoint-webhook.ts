import * as v from 'valibot';
import type { Deps } from '../deps.ts';
import { delaySecondsUntil, maxReplyBytes, type WebhookAttempt, webhookTimeoutMs } from '../domain/webhook.ts';
import {
  endpointAttempts,
  endpointHeaders,
  endpointRetryDelaySeconds,
  endpointWebhookId,
  pingEvent,
  signingSecrets,
  streakAfterAttempt,
} from '../domain/webhook-endpoints.ts';
import { RunNotFoundError } from '../errors/table.ts';
import { GuardedFetchError } from '../http-client/address-vet.ts';
import { guardedFetch } from '../http-client/guarded-fetch.ts';
import { logger, withRecordKeys } from '../observability/logger.ts';
import { countWebhookAttempt } from '../observability/metrics.ts';
import type { EndpointDeliveryItem, WebhookEndpointItem } from '../store/items/webhook-endpoints.ts';
import {
  type EndpointMessage,
  EndpointMessageSchema,
  isEndpointMessage,
  sendEndpointMessage,
} from '../store/queues.ts';
import {
  abandonEndpointDelivery,
  markEndpointAttemptSending,
  readEndpoint,
  readEndpointDelivery,
  recordEndpointAttempt,
  recordEndpointStreak,
} from '../store/webhook-endpoints.ts';
import { errorKindOf, type WebhookOptions } from './deliver-webhook.ts';
import { readRunForWebhook } from './read-run.ts';

/**
 * Delivers one attempt of a webhook endpoint's delivery: the run's event (the Run plus `event`, read
 * now, as a run's own webhook is) or a `ping`, signed with every secret in force, POSTed through the
 * address guard as a run's webhook is (no private address, no redirects, 8 s, 4 KB of reply). A 2xx
 * is delivered; else the next attempt is due after the endpoint schedule's wait
 * (functions/domain/webhook-endpoints.ts), a new message sent on with SQS's longest delay until due,
 * eight attempts over 27 hours, then `failed`. A redelivery or a test is a single attempt. Each
 * outcome moves the endpoint's failure streak; one failing for five days is disabled (its change
 * gives the operator event). A disabled or deleted endpoint's pending delivery ends `failed`, unsent.
 */

/** One received endpoint message, with the SQS message id. */
export interface ReceivedEndpointMessage extends EndpointMessage {
  messageId: string;
}

const endpointMessageOf = (body: unknown, messageId: string): ReceivedEndpointMessage => ({
  ...v.parse(EndpointMessageSchema, body),
  messageId,
});

/** The body of the delivery: the Run plus `event`, or the ping's; undefined when the run is gone. */
const bodyOf = async (deps: Deps, delivery: EndpointDeliveryItem): Promise<unknown> => {
  if (delivery.event === pingEvent || delivery.jobId === undefined) {
    return { event: pingEvent, endpointId: delivery.endpointId, sentAt: deps.now().toISOString() };
  }
  try {
    return { ...(await readRunForWebhook(deps, delivery.jobId)), event: delivery.event };
  } catch (error) {
    if (error instanceof RunNotFoundError) return undefined;
    throw error;
  }
};

const post = async (
  deps: Deps,
  endpoint: WebhookEndpointItem,
  delivery: EndpointDeliveryItem,
  rawBody: string,
  attempt: number,
  options: WebhookOptions,
): Promise<WebhookAttempt> => {
  const at = deps.now();
  const headers = endpointHeaders({
    webhookId: endpointWebhookId(delivery.deliveryId),
    event: delivery.event,
    rawBody,
    secrets: signingSecrets(endpoint, at),
    nowSeconds: Math.floor(at.getTime() / 1000),
  });
  const entry: WebhookAttempt = { attempt, at: at.toISOString(), host: new URL(endpoint.url).host, durationMs: 0 };
  const started = performance.now();
  try {
    const response = await guardedFetch(
      endpoint.url,
      { method: 'POST', headers, body: rawBody },
      { ...options.fetchOptions, timeoutMs: webhookTimeoutMs, maxBytes: maxReplyBytes, truncate: true },
    );
    entry.statusCode = response.status;
  } catch (error) {
    entry.error = errorKindOf(error);
    const detail = error instanceof GuardedFetchError ? error.detail : undefined;
    logger.info('endpoint attempt got no answer', {
      endpointId: endpoint.endpointId,
      reason: (error as Error).message,
      detail,
    });
  }
  entry.durationMs = entry.error === 'refused' ? 0 : Math.round(performance.now() - started);
  return entry;
};

/** Handles one endpoint message: an attempt, a wait sent on, or a copy of one already handled. */
export const deliverEndpointWebhook = async (deps: Deps, message: ReceivedEndpointMessage, options: WebhookOptions) => {
  const { teamId, endpointId, deliveryId, attempt, dueAt } = message;
  const forward = { teamId, endpointId, deliveryId, attempt };
  if (dueAt && delaySecondsUntil(Date.parse(dueAt), deps.now().getTime()) > 0) {
    // A wait longer than SQS's longest delay: sent on with the rest of it.
    await sendEndpointMessage(deps, { ...forward, dueAt }, delaySecondsUntil(Date.parse(dueAt), deps.now().getTime()));
    return;
  }
  const [endpoint, delivery] = await Promise.all([
    readEndpoint(deps, teamId, endpointId),
    readEndpointDelivery(deps, endpointId, deliveryId),
  ]);
  if (
    delivery?.state === 'pending' &&
    delivery.attempts === attempt &&
    delivery.lastMessageId === message.messageId &&
    delivery.nextAttemptAt !== undefined
  ) {
    // This message recorded its attempt, then its handler died before sending the next: SQS handed
    // it back (same id), and only it sends the next, so a copy of it never does.
    const next = { ...forward, attempt: attempt + 1, dueAt: delivery.nextAttemptAt };
    await sendEndpointMessage(deps, next, delaySecondsUntil(Date.parse(next.dueAt), deps.now().getTime()));
    return;
  }
  // Gone (expired with its run), done, or this attempt made already: a copy of a message handled.
  if (delivery?.state !== 'pending' || delivery.attempts !== attempt - 1) return;
  if (!endpoint || endpoint.disabled) {
    await abandonEndpointDelivery(deps, delivery);
    return;
  }
  const body = await bodyOf(deps, delivery);
  if (body === undefined) {
    await abandonEndpointDelivery(deps, delivery);
    return;
  }
  const at = deps.now().toISOString();
  if (!(await markEndpointAttemptSending(deps, delivery, { attempt, at }))) return;
  const entry = await post(deps, endpoint, delivery, JSON.stringify(body), attempt, options);
  const delivered = entry.statusCode !== undefined && entry.statusCode >= 200 && entry.statusCode < 300;
  const single = delivery.redeliveryRequestedAt !== undefined;
  const wait = single ? undefined : endpointRetryDelaySeconds(attempt);
  const state = delivered ? 'delivered' : wait === undefined || attempt >= endpointAttempts ? 'failed' : 'pending';
  if (state === 'pending' && wait !== undefined) {
    entry.nextAttemptAt = new Date(deps.now().getTime() + wait * 1000).toISOString();
  }
  countWebhookAttempt(delivered);
  logger.info('endpoint attempt', { endpointId, deliveryId, event: delivery.event, ...entry, state });
  if (!(await recordEndpointAttempt(deps, delivery, { messageId: message.messageId, entry, state }))) return;
  const streak = streakAfterAttempt(delivered, endpoint.failingSince, deps.now());
  if (streak.kind !== 'none' && (await recordEndpointStreak(deps, endpoint, streak.kind, entry.at))) {
    logger.warn('webhook endpoint disabled: every attempt failed for 5 days', { endpointId, teamId });
  }
  if (entry.nextAttemptAt) {
    const next = { ...forward, attempt: attempt + 1, dueAt: entry.nextAttemptAt };
    await sendEndpointMessage(deps, next, delaySecondsUntil(Date.parse(next.dueAt), deps.now().getTime()));
  }
};

/**
 * One message of the webhooks queue, whichever delivery it is for: a team endpoint's (it names an
 * endpoint) here, a run's own webhook by `deliverRun`. An unreadable body throws: the DLQ keeps it.
 */
export const deliverQueuedWebhook = async (
  deps: Deps,
  body: string,
  messageId: string,
  options: WebhookOptions,
  deliverRun: () => Promise<void>,
): Promise<void> => {
  const parsed: unknown = JSON.parse(body);
  if (!isEndpointMessage(parsed)) return deliverRun();
  const message = endpointMessageOf(parsed, messageId);
  const { endpointId, deliveryId, attempt } = message;
  await withRecordKeys({ endpointId, deliveryId, attempt, messageId }, () =>
    deliverEndpointWebhook(deps, message, options),
  );
};
