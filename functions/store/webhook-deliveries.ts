import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import * as v from 'valibot';
import type { WebhookEvent } from '../../schemas/runs.ts';
import type { Deps } from '../deps.ts';
import { runItemExpiry } from '../domain/retention.ts';
import type { DeliveryState, WebhookAttempt } from '../domain/webhook.ts';
import { parseItem, RunCallbackSchema, unexpired } from './items.ts';
import { runKey, webhookDeliveryKey } from './keys.ts';
import { conditionalWrite } from './write.ts';

/**
 * The delivery item of one webhook event of a run (`RUN#<job>`, `WEBHOOK#<event>`): its state, the
 * attempts counted so far (the only count of attempts: SQS's receive count is never used), and the
 * delivery log, one entry per attempt (five at most). Written once per attempt, on the condition
 * that the attempt before it is the last one recorded, so a redelivered message never counts twice.
 * It is kept as long as its run (`ttl`: the run's start plus the retention).
 */
const DeliveryItemSchema = v.object({
  state: v.picklist(['pending', 'delivered', 'failed']),
  attempts: v.number(),
  /** The SQS message that recorded the last attempt (its id is the same on every redelivery). */
  lastMessageId: v.optional(v.string()),
  nextAttemptAt: v.optional(v.string()),
});

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
  event: WebhookEvent,
): Promise<DeliveryTarget | undefined> => {
  const [{ Item: runItem }, { Item: deliveryItem }] = await Promise.all([
    deps.ddb.send(new GetCommand({ TableName: deps.tableName, Key: runKey(jobId), ConsistentRead: true })),
    deps.ddb.send(
      new GetCommand({ TableName: deps.tableName, Key: webhookDeliveryKey(jobId, event), ConsistentRead: true }),
    ),
  ]);
  const now = deps.now();
  const stored = unexpired(runItem, now);
  const run = stored && parseItem(RunCallbackSchema, stored);
  if (!run?.callbackUrl) return undefined;
  const delivery = unexpired(deliveryItem, now);
  return {
    callbackUrl: run.callbackUrl,
    callbackSecret: run.callbackSecret,
    progress: delivery ? parseItem(DeliveryItemSchema, delivery) : { state: 'pending', attempts: 0 },
    expiresAt: runItemExpiry(run.createdAt, now, deps.retentionDays),
  };
};

/**
 * Records attempt `entry.attempt` and the state it leaves the delivery in, only if the attempt
 * before it is the last one recorded and the delivery is still pending. False when it is not: a
 * copy of the same message recorded it first.
 */
export const recordWebhookAttempt = async (
  deps: Deps,
  jobId: string,
  event: WebhookEvent,
  record: { messageId: string; entry: WebhookAttempt; state: DeliveryState; expiresAt: number },
): Promise<boolean> => {
  const { entry, state } = record;
  const first = entry.attempt === 1;
  const ended = state === 'pending' ? '' : `, ${state === 'delivered' ? 'deliveredAt' : 'failedAt'} = :at`;
  const recorded = await conditionalWrite(
    deps,
    new UpdateCommand({
      TableName: deps.tableName,
      Key: webhookDeliveryKey(jobId, event),
      UpdateExpression:
        'SET jobId = :job, #event = :event, #state = :state, attempts = :attempt, lastMessageId = :message, #ttl = :ttl, ' +
        `attemptLog = list_append(if_not_exists(attemptLog, :none), :entry)${ended}` +
        (entry.nextAttemptAt ? ', nextAttemptAt = :next' : ' REMOVE nextAttemptAt'),
      ConditionExpression: first ? 'attribute_not_exists(PK)' : 'attempts = :previous AND #state = :pending',
      ExpressionAttributeNames: { '#event': 'event', '#state': 'state', '#ttl': 'ttl' },
      ExpressionAttributeValues: {
        ':job': jobId,
        ':ttl': record.expiresAt,
        ':event': event,
        ':state': state,
        ':attempt': entry.attempt,
        ':message': record.messageId,
        ':none': [],
        ':entry': [entry],
        ...(state === 'pending' ? {} : { ':at': entry.at }),
        ...(entry.nextAttemptAt ? { ':next': entry.nextAttemptAt } : {}),
        ...(first ? {} : { ':previous': entry.attempt - 1, ':pending': 'pending' }),
      },
    }),
  );
  return recorded.written;
};
