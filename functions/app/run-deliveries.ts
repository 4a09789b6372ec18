import type {
  LifecycleDelivery,
  RedeliverRequest,
  RedeliveryQueued,
  WebhookAttemptView,
  WebhookDeliveries,
} from '../../schemas/deliveries.ts';
import type { Deps } from '../deps.ts';
import { keyMayUseWorkflow } from '../domain/key-workflows.ts';
import { type DeliveryRef, deliveryName, sendsEvent } from '../domain/lifecycle-webhooks.ts';
import { defaultRequestsPerMinute } from '../domain/rate-limit.ts';
import {
  redeliveriesPerRunPerMinute,
  redeliveryWaitSeconds,
  runRedeliveryCounterId,
} from '../domain/redelivery-limits.ts';
import { runItemExpiry } from '../domain/retention.ts';
import { staleRedeliveryMs, webhookId } from '../domain/webhook.ts';
import {
  DeliveryPendingError,
  InvalidBodyError,
  RateLimitedError,
  RunNotFoundError,
  TooManyRedeliveriesError,
} from '../errors/table.ts';
import type { ApiKeyItem } from '../store/items/api-keys.ts';
import { sendWebhookMessage } from '../store/queues.ts';
import { admitRequest } from '../store/rate-counter.ts';
import {
  type DeliveryProgress,
  markRedeliveryPending,
  type RunDeliveries,
  readRunDeliveries,
  unmarkRedelivery,
} from '../store/webhook-deliveries.ts';

/** Who asks: the key's team, and the workflows it is limited to (none: all of the team's). */
interface Caller {
  teamId: string;
  keyId?: string;
  key: Pick<ApiKeyItem, 'workflowIds' | 'rateLimitPerMinute'>;
}

/**
 * The limits on a redelivery (functions/domain/redelivery-limits.ts), checked before it is marked:
 * the delivery's spacing (its first redelivery always passes), the run's redeliveries in the
 * minute, then the key's requests per minute, where the POST it causes counts once more.
 */
const admitRedelivery = async (
  deps: Deps,
  caller: Caller,
  jobId: string,
  delivery: { state: string; lastRedeliveryAt?: string } | undefined,
) => {
  // A pending delivery is refused by its mark (409), counting nothing.
  if (delivery?.state === 'pending') return;
  const lastRedeliveryAt = delivery?.lastRedeliveryAt;
  const now = deps.now();
  const wait = redeliveryWaitSeconds(lastRedeliveryAt, now);
  if (wait > 0) throw new TooManyRedeliveriesError(wait);
  const run = await admitRequest(deps, runRedeliveryCounterId(jobId), now.getTime(), redeliveriesPerRunPerMinute);
  if (!run.allowed) throw new TooManyRedeliveriesError(run.retryAfterSeconds);
  if (caller.keyId === undefined) return;
  const limit = caller.key.rateLimitPerMinute ?? defaultRequestsPerMinute;
  const key = await admitRequest(deps, caller.keyId, now.getTime(), limit);
  if (!key.allowed) throw new RateLimitedError(key.retryAfterSeconds);
};

/**
 * The run's deliveries as this caller may see them: another team's run, a run of a workflow the key
 * is not limited to, and a run without a callbackUrl all read as a missing run (404).
 */
const visibleDeliveries = async (deps: Deps, caller: Caller, jobId: string) => {
  const found = await readRunDeliveries(deps, jobId);
  const { workflowIds } = caller.key;
  if (
    !found?.run.callbackUrl ||
    found.run.teamId !== caller.teamId ||
    !keyMayUseWorkflow(workflowIds, found.run.workflowId)
  )
    throw new RunNotFoundError(jobId);
  return found;
};

/** When the next attempt is due: a scheduled retry, or a queued redelivery (due when asked). */
const nextAttemptOf = ({ delivery }: Pick<RunDeliveries, 'delivery'>): string | null =>
  delivery?.state === 'pending' ? (delivery.nextAttemptAt ?? delivery.redeliveryRequestedAt ?? null) : null;

/** The log's attempts, newest first, each showing the callback's host only. */
const attemptsOf = (delivery: DeliveryProgress | undefined): WebhookAttemptView[] =>
  [...(delivery?.attemptLog ?? [])].reverse().map(({ host, ...entry }) => ({ ...entry, url: `https://${host}` }));

/** The run's end event, when it sends it: a run that chose its events may not have chosen it. */
const sentEndEvent = (found: RunDeliveries) =>
  found.event && sendsEvent(found.run.webhookEvents, found.event) ? found.event : undefined;

/** Every delivery of a run that chose `webhookEvents`, run events first, then step events by step. */
const lifecycleDeliveries = (jobId: string, found: RunDeliveries): LifecycleDelivery[] =>
  found.all
    .map(({ ref, delivery }) => ({
      event: ref.event,
      ...(ref.nodeId !== undefined && { nodeId: ref.nodeId }),
      webhookId: webhookId(jobId, deliveryName(ref)),
      state: delivery.state,
      nextAttemptAt: nextAttemptOf({ delivery }),
      attempts: delivery.attempts,
      deliveries: attemptsOf(delivery),
    }))
    .sort((a, b) => Number(a.nodeId !== undefined) - Number(b.nodeId !== undefined));

/**
 * GET /runs/{jobId}/deliveries (our design): every attempt of the run-finished webhook the log
 * keeps, newest first, and the delivery's state. Before the run ends, or before its first attempt,
 * the delivery is `pending` with no attempt.
 */
export const listDeliveries = async (deps: Deps, caller: Caller, jobId: string): Promise<WebhookDeliveries> => {
  const found = await visibleDeliveries(deps, caller, jobId);
  const event = sentEndEvent(found);
  const delivery = event ? found.delivery : undefined;
  return {
    jobId,
    event: event ?? null,
    webhookId: event ? webhookId(jobId, event) : null,
    state: delivery?.state ?? 'pending',
    nextAttemptAt: nextAttemptOf({ delivery }),
    attempts: delivery?.attempts ?? 0,
    deliveries: attemptsOf(delivery),
    // A run that chose its events lists each delivery; one that did not reads as before.
    ...(found.run.webhookEvents !== undefined && { events: lifecycleDeliveries(jobId, found) }),
  };
};

/**
 * The run's first webhook message was lost (no attempt recorded `staleRedeliveryMs` after the run
 * ended): nothing will come, so a redelivery may make its first attempt.
 */
const firstMessageLost = ({ run, delivery }: RunDeliveries, now: Date) =>
  delivery === undefined && run.endedAt !== undefined && now.getTime() - Date.parse(run.endedAt) >= staleRedeliveryMs;

/**
 * POST /runs/{jobId}/deliveries/redeliver (our design): queues one new attempt of the same event,
 * with the same `webhook-id`, numbered after the last. Refused (409) while the delivery is pending:
 * the run has not ended, an attempt is due, or a redelivery is queued. The delivery item is marked
 * pending conditionally, so of concurrent requests exactly one queues an attempt; the others answer
 * 409. The mark comes before the send; a send that fails takes the mark back, so the delivery is
 * not left pending with nothing on its way (a mark left by a crash lapses: `staleRedeliveryMs`).
 */
export const redeliverWebhook = async (
  deps: Deps,
  caller: Caller,
  jobId: string,
  asked: RedeliverRequest = {},
): Promise<RedeliveryQueued> => {
  const found = await visibleDeliveries(deps, caller, jobId);
  const named = namedDelivery(found, asked);
  if (named) return redeliverNamed(deps, caller, jobId, found, named);
  const { event, delivery, run } = found;
  const now = deps.now();
  if (!event || (!delivery && !firstMessageLost(found, now)))
    throw new DeliveryPendingError(jobId, nextAttemptOf(found));
  const seen = {
    attempts: delivery?.attempts ?? 0,
    exists: delivery !== undefined,
    expiresAt: runItemExpiry(run.createdAt, now, deps.retentionDays),
  };
  await admitRedelivery(deps, caller, jobId, delivery);
  const mark = await markRedeliveryPending(deps, jobId, event, seen);
  if (!mark.written) throw new DeliveryPendingError(jobId, nextAttemptOf(found));
  const attempt = seen.attempts + 1;
  try {
    await sendWebhookMessage(deps, { jobId, event, attempt }, 0);
  } catch (error) {
    // An item this request created stays marked; its mark lapses like a crash's.
    if (delivery) {
      await unmarkRedelivery(deps, jobId, event, { requestedAt: mark.requestedAt, previousState: delivery.state });
    }
    throw error;
  }
  return { jobId, event, webhookId: webhookId(jobId, event), state: 'pending', attempt };
};

/**
 * The delivery a redelivery's body names, when it names one other than the run's end:
 * one the run opened (its lifecycle events'), else a 400. Undefined for the end's (no body, or its event).
 */
const namedDelivery = (found: RunDeliveries, asked: RedeliverRequest) => {
  if (asked.event === undefined) {
    if (asked.nodeId !== undefined) throw new InvalidBodyError('nodeId: needs the event of its step');
    return undefined;
  }
  if (asked.nodeId === undefined && asked.event === found.event && found.run.webhookEvents === undefined)
    return undefined;
  const wanted = deliveryName({ event: asked.event, nodeId: asked.nodeId });
  const opened = found.all.find(({ ref }) => deliveryName(ref) === wanted);
  if (!opened) throw new InvalidBodyError('event: this run opened no such delivery');
  return opened;
};

/**
 * One new attempt of a delivery the body named: as the end's redelivery, refused (409) while it is
 * pending, marked pending conditionally (of concurrent requests, one queues an attempt).
 */
const redeliverNamed = async (
  deps: Deps,
  caller: Caller,
  jobId: string,
  found: RunDeliveries,
  named: { ref: DeliveryRef; delivery: DeliveryProgress },
): Promise<RedeliveryQueued> => {
  const { ref, delivery } = named;
  if (delivery.state === 'pending') throw new DeliveryPendingError(jobId, nextAttemptOf({ delivery }));
  const seen = {
    attempts: delivery.attempts,
    exists: true,
    expiresAt: runItemExpiry(found.run.createdAt, deps.now(), deps.retentionDays),
  };
  await admitRedelivery(deps, caller, jobId, delivery);
  const mark = await markRedeliveryPending(deps, jobId, ref, seen);
  if (!mark.written) throw new DeliveryPendingError(jobId, nextAttemptOf({ delivery }));
  const attempt = seen.attempts + 1;
  try {
    await sendWebhookMessage(deps, { jobId, ...ref, attempt }, 0);
  } catch (error) {
    await unmarkRedelivery(deps, jobId, ref, { requestedAt: mark.requestedAt, previousState: delivery.state });
    throw error;
  }
  return {
    jobId,
    event: ref.event,
    ...(ref.nodeId !== undefined && { nodeId: ref.nodeId }),
    webhookId: webhookId(jobId, deliveryName(ref)),
    state: 'pending',
    attempt,
  };
};
