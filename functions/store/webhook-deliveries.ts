import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import type * as v from 'valibot';
import type { WebhookEvent } from '../../schemas/run-words.ts';
import type { Deps } from '../deps.ts';
import {
  type DeliveryOf,
  type DeliveryRef,
  deliveryName,
  deliveryOfName,
  refOf,
} from '../domain/lifecycle-webhooks.ts';
import { redeliverySpacingMs } from '../domain/redelivery-limits.ts';
import { runItemExpiry } from '../domain/retention.ts';
import {
  appendToAttemptLog,
  type DeliveryState,
  staleRedeliveryMs,
  type WebhookAttempt,
  webhookEventOfStatus,
} from '../domain/webhook.ts';
import { ifNotExists } from './item-update.ts';
import { DeliveryItemSchema, storedDelivery } from './items/deliveries.ts';
import { parseItem, unexpired } from './items/item.ts';
import { RunCallbackSchema, RunDeliverySubjectSchema } from './items/runs.ts';
import { runKey, runPartition, webhookDeliveryKey, webhookSkPrefix } from './keys.ts';
import { conditionalUpdate } from './write.ts';

/** What a delivery has done so far; before its first attempt, `pending` with none. */
export type DeliveryProgress = v.InferOutput<typeof DeliveryItemSchema>;

/** Where a run's webhook goes, how far the delivery of this event of it got, and until when it is kept. */
export interface DeliveryTarget {
  callbackUrl: string;
  callbackSecret: string | undefined;
  progress: DeliveryProgress;
  /** The delivery item's `ttl`: its run's, the run's start plus the retention (epoch seconds). */
  expiresAt: number;
}

/**
 * Reads the run's callback and the event's delivery item (two strongly consistent Gets, at once).
 * Undefined when there is nothing to deliver: the run has no callbackUrl, or it is gone (never
 * written, deleted, or past its `ttl`).
 */
export const readDeliveryTarget = async (
  deps: Deps,
  jobId: string,
  delivery: DeliveryOf,
): Promise<DeliveryTarget | undefined> => {
  const [{ Item: runItem }, { Item: deliveryItem }] = await Promise.all([
    deps.ddb.send(new GetCommand({ TableName: deps.tableName, Key: runKey(jobId), ConsistentRead: true })),
    deps.ddb.send(
      new GetCommand({
        TableName: deps.tableName,
        Key: webhookDeliveryKey(jobId, deliveryName(delivery)),
        ConsistentRead: true,
      }),
    ),
  ]);
  const now = deps.now();
  const stored = unexpired(runItem, now);
  const run = stored && parseItem(RunCallbackSchema, stored);
  if (!run?.callbackUrl) return undefined;
  const item = unexpired(deliveryItem, now);
  return {
    callbackUrl: run.callbackUrl,
    callbackSecret: run.callbackSecret,
    progress: item ? parseItem(DeliveryItemSchema, item) : { state: 'pending', attempts: 0, attemptLog: [] },
    expiresAt: runItemExpiry(run.createdAt, now, deps.retentionDays),
  };
};

/** The delivery item as written (its input type). */
type DeliveryItemInput = v.InferInput<typeof DeliveryItemSchema>;

/**
 * What an attempt sets on the delivery item, beside its key, `jobId`, `event`, `ttl` and the time
 * of its end: a whole item as the reader parses it, since a first attempt may create it.
 */
export const attemptAttributes = (record: {
  messageId: string;
  entry: WebhookAttempt;
  log: readonly WebhookAttempt[];
  state: DeliveryState;
}) =>
  ({
    state: record.state,
    attempts: record.entry.attempt,
    lastMessageId: record.messageId,
    attemptLog: appendToAttemptLog(record.log, record.entry),
    nextAttemptAt: record.entry.nextAttemptAt,
  }) satisfies Pick<DeliveryItemInput, 'state' | 'attempts' | 'lastMessageId' | 'attemptLog' | 'nextAttemptAt'>;

/** The delivery item a redelivery writes when there is none yet (the run's first message was lost). */
export const pendingDeliveryAttributes = (requestedAt: string) =>
  ({
    state: 'pending',
    attempts: 0,
    attemptLog: [],
    redeliveryRequestedAt: requestedAt,
  }) satisfies Required<Pick<DeliveryItemInput, 'state' | 'attempts' | 'attemptLog' | 'redeliveryRequestedAt'>>;

/**
 * Records attempt `entry.attempt` and the state it leaves the delivery in, only if the attempt
 * before it is the last one recorded and the delivery is still pending. False when it is not: a
 * copy of the same message recorded it first. The log is written whole (`log` is the one read with
 * the item; the condition guarantees it is still the stored one), keeping the latest attempts only.
 * A pending redelivery is done once its attempt is recorded.
 */
export const recordWebhookAttempt = async (
  deps: Deps,
  jobId: string,
  delivery: DeliveryOf,
  record: {
    messageId: string;
    entry: WebhookAttempt;
    log: readonly WebhookAttempt[];
    state: DeliveryState;
    expiresAt: number;
    /** An interrupted attempt of a redelivery: the redelivery stays pending, its POST is made again. */
    keepRedelivery?: boolean;
  },
): Promise<boolean> => {
  const { entry, state } = record;
  const first = entry.attempt === 1;
  const recorded = await conditionalUpdate(
    deps,
    storedDelivery,
    webhookDeliveryKey(jobId, deliveryName(delivery)),
    {
      set: {
        jobId,
        ...refOf(delivery),
        ...attemptAttributes(record),
        ttl: record.expiresAt,
        ...(state === 'pending' ? {} : state === 'delivered' ? { deliveredAt: entry.at } : { failedAt: entry.at }),
      },
      remove: [
        ...(entry.nextAttemptAt ? [] : (['nextAttemptAt'] as const)),
        ...(record.keepRedelivery ? [] : (['redeliveryRequestedAt'] as const)),
        'sending',
      ],
    },
    {
      // A first attempt finds no item, or the one a redelivery of a lost first message wrote (no attempt yet).
      ConditionExpression: `${first ? 'attribute_not_exists(PK) OR ' : ''}(attempts = :previous AND #state = :pending)`,
      ExpressionAttributeNames: { '#state': 'state' },
      ExpressionAttributeValues: { ':previous': entry.attempt - 1, ':pending': 'pending' },
    },
  );
  return recorded.written;
};

/**
 * Before attempt `attempt`'s POST: marks it as started, on the same condition as its record (the
 * attempt before it is the last recorded, the delivery pending); a first attempt may create the item.
 * False when a copy of the message got there first.
 */
export const markAttemptSending = async (
  deps: Deps,
  jobId: string,
  delivery: DeliveryOf,
  sending: { attempt: number; at: string; expiresAt: number },
): Promise<boolean> => {
  const first = sending.attempt === 1;
  const marked = await conditionalUpdate(
    deps,
    storedDelivery,
    webhookDeliveryKey(jobId, deliveryName(delivery)),
    {
      set: {
        jobId,
        ...refOf(delivery),
        state: ifNotExists('pending' as const),
        attempts: ifNotExists(0),
        attemptLog: ifNotExists([]),
        sending: { attempt: sending.attempt, at: sending.at },
        ttl: sending.expiresAt,
      },
    },
    {
      ConditionExpression: `${first ? 'attribute_not_exists(PK) OR ' : ''}(attempts = :previous AND #state = :pending)`,
      ExpressionAttributeNames: { '#state': 'state' },
      ExpressionAttributeValues: { ':previous': sending.attempt - 1, ':pending': 'pending' },
    },
  );
  return marked.written;
};

/** A run as its delivery log sees it: whose it is, and how far its webhook got. */
export interface RunDeliveries {
  run: v.InferOutput<typeof RunDeliverySubjectSchema>;
  /** The event its end sends; undefined while the run has not ended. */
  event: WebhookEvent | undefined;
  /** The event's delivery item; undefined before its first attempt (or while the run runs). */
  delivery: DeliveryProgress | undefined;
  /** Every delivery item of the run (its lifecycle events', and its end's), in key order. */
  all: { ref: DeliveryRef; delivery: DeliveryProgress }[];
}

/**
 * The run item and its webhook's delivery item (a run ends once, so it has one at most), read at
 * once: a GetItem and a Query of the run's `WEBHOOK#` items, both strongly consistent. Undefined
 * when the run is missing or past its `ttl`.
 */
export const readRunDeliveries = async (deps: Deps, jobId: string): Promise<RunDeliveries | undefined> => {
  const [{ Item: runItem }, { Items: deliveryItems = [] }] = await Promise.all([
    deps.ddb.send(new GetCommand({ TableName: deps.tableName, Key: runKey(jobId), ConsistentRead: true })),
    deps.ddb.send(
      new QueryCommand({
        TableName: deps.tableName,
        KeyConditionExpression: 'PK = :pk AND begins_with(SK, :prefix)',
        ExpressionAttributeValues: { ':pk': runPartition(jobId), ':prefix': webhookSkPrefix },
        ConsistentRead: true,
      }),
    ),
  ]);
  const now = deps.now();
  const stored = unexpired(runItem, now);
  if (!stored) return undefined;
  const run = parseItem(RunDeliverySubjectSchema, stored);
  const event = webhookEventOfStatus(run.status);
  const key = event && webhookDeliveryKey(jobId, event);
  const item = unexpired(key && deliveryItems.find((i) => i.SK === key.SK), now);
  const all = deliveryItems.flatMap((stored) => {
    const ref = deliveryOfName(String(stored.SK).slice(webhookSkPrefix.length));
    return ref && unexpired(stored, now) ? [{ ref, delivery: parseItem(DeliveryItemSchema, stored) }] : [];
  });
  return { run, event, delivery: item && parseItem(DeliveryItemSchema, item), all };
};

/**
 * Marks the delivery pending for one redelivery, on the condition that nothing moved since it was
 * read (`attempts`) and it is not pending, or is a redelivery whose attempt was never recorded
 * `staleRedeliveryMs` after it was asked for. With no item yet (the run's first message was lost),
 * it writes one, pending with no attempt, on the condition that there is still none. False when the
 * condition failed: another request (or an attempt) got there first. Of concurrent requests,
 * exactly one marks it.
 */
export const markRedeliveryPending = async (
  deps: Deps,
  jobId: string,
  delivery: DeliveryOf,
  seen: { attempts: number; exists: boolean; expiresAt: number },
): Promise<{ written: boolean; requestedAt: string }> => {
  const now = deps.now();
  const requestedAt = now.toISOString();
  const key = webhookDeliveryKey(jobId, deliveryName(delivery));
  const { event, nodeId } = refOf(delivery);
  const marked = seen.exists
    ? await conditionalUpdate(
        deps,
        storedDelivery,
        key,
        { set: { state: 'pending', redeliveryRequestedAt: requestedAt, lastRedeliveryAt: requestedAt } },
        {
          // Of two redeliveries a minute apart at most, only the first writes (redelivery-limits.ts).
          ConditionExpression:
            'attempts = :seen AND (#state <> :pending OR redeliveryRequestedAt < :stale) AND ' +
            '(attribute_not_exists(lastRedeliveryAt) OR lastRedeliveryAt <= :spaced)',
          ExpressionAttributeNames: { '#state': 'state' },
          ExpressionAttributeValues: {
            ':pending': 'pending',
            ':seen': seen.attempts,
            ':stale': new Date(now.getTime() - staleRedeliveryMs).toISOString(),
            ':spaced': new Date(now.getTime() - redeliverySpacingMs).toISOString(),
          },
        },
      )
    : await conditionalUpdate(
        deps,
        storedDelivery,
        key,
        {
          set: {
            jobId,
            event,
            nodeId,
            ...pendingDeliveryAttributes(requestedAt),
            lastRedeliveryAt: requestedAt,
            ttl: seen.expiresAt,
          },
        },
        { ConditionExpression: 'attribute_not_exists(PK)' },
      );
  return { written: marked.written, requestedAt };
};

/**
 * Undoes `markRedeliveryPending` when its message could not be sent, so the delivery is not left
 * pending with nothing in flight; only the mark this request wrote (`requestedAt`), untouched since.
 */
export const unmarkRedelivery = async (
  deps: Deps,
  jobId: string,
  delivery: DeliveryOf,
  mark: { requestedAt: string; previousState: DeliveryState },
): Promise<void> => {
  await conditionalUpdate(
    deps,
    storedDelivery,
    webhookDeliveryKey(jobId, deliveryName(delivery)),
    // Nothing was sent: the spacing does not count this redelivery either.
    { set: { state: mark.previousState }, remove: ['redeliveryRequestedAt', 'lastRedeliveryAt'] },
    {
      ConditionExpression: '#state = :pending AND redeliveryRequestedAt = :mark',
      ExpressionAttributeNames: { '#state': 'state' },
      ExpressionAttributeValues: { ':pending': 'pending', ':mark': mark.requestedAt },
    },
  );
};
