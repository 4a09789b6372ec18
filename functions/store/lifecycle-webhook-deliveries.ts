import { DeleteCommand } from '@aws-sdk/lib-dynamodb';
import * as v from 'valibot';
import { RunStatus } from '../../platform/run-statuses.ts';
import { stepEventCap } from '../../schemas/webhook-events.ts';
import type { Deps } from '../deps.ts';
import { type DeliveryRef, deliveryName, stepEventOfStatus } from '../domain/lifecycle-webhooks.ts';
import { runItemExpiry } from '../domain/retention.ts';
import { tableUpdate } from './item-update.ts';
import { DeliveryItemSchema, storedDelivery, storedStepEventCount } from './items/deliveries.ts';
import { parseItem } from './items/item.ts';
import { RunItemSchema, StepItemSchema } from './items/runs.ts';
import { runKey, runPartition, stepEventCountKey, stepSkPrefix, webhookDeliveryKey } from './keys.ts';
import { namedTransactWrite } from './named-transaction.ts';
import { stringAttribute } from './refusals.ts';
import type { ItemChange } from './stream-images.ts';
import { conditionalUpdate, conditionalWrite, transactWrite } from './write.ts';

/**
 * What opening a lifecycle event's delivery did: opened; opened before but never attempted (its
 * message may have been lost: the consumer died between the write and the send); opened and
 * attempted before (a record handed over again); or past the cap.
 */
export type Opened = 'opened' | 'unsent' | 'duplicate' | 'capped';

/** What a refused open reads of the delivery that was there (its old item, as attribute values). */
const RefusedDeliverySchema = v.object({
  attempts: v.optional(v.object({ N: v.string() })),
  state: v.optional(stringAttribute(DeliveryItemSchema.entries.state)),
  redeliveryRequestedAt: v.optional(v.unknown()),
});

/** Opened before, and nothing ever attempted or asked of it since. */
const neverAttempted = (old: Record<string, unknown> | undefined): boolean => {
  const parsed = old && v.safeParse(RefusedDeliverySchema, old);
  if (!parsed?.success) return false;
  const { attempts, state, redeliveryRequestedAt } = parsed.output;
  return attempts?.N === '0' && state?.S === 'pending' && redeliveryRequestedAt === undefined;
};

/**
 * Opens the delivery of one lifecycle event: its delivery item, pending with no attempt,
 * on the condition that there is none yet, so a stream record handed over twice opens it once. A
 * step event also adds one to the run's count of step events, in the same transaction, on the
 * condition that the count is below the cap: past it, nothing is written and nothing is sent.
 */
export const openLifecycleDelivery = async (
  deps: Deps,
  jobId: string,
  ref: DeliveryRef,
  expiresAt: number,
): Promise<Opened> => {
  const key = webhookDeliveryKey(jobId, deliveryName(ref));
  // Opened and not attempted yet: what the webhook worker's first attempt expects.
  const set = { jobId, ...ref, state: 'pending' as const, attempts: 0, attemptLog: [], ttl: expiresAt };
  const onlyOnce = { ConditionExpression: 'attribute_not_exists(PK)' };
  // A refusal returns the delivery that was there: one never attempted is sent again.
  const oldOnRefusal = { ReturnValuesOnConditionCheckFailure: 'ALL_OLD' } as const;
  if (ref.nodeId === undefined) {
    const opened = await conditionalUpdate(deps, storedDelivery, key, { set }, onlyOnce, oldOnRefusal);
    if (opened.written) return 'opened';
    return neverAttempted(opened.oldItem) ? 'unsent' : 'duplicate';
  }
  const written = await namedTransactWrite<'delivery' | 'count'>(deps, {
    delivery: { Update: { ...tableUpdate(deps, storedDelivery, key, { set }, onlyOnce), ...oldOnRefusal } },
    count: {
      Update: tableUpdate(
        deps,
        storedStepEventCount,
        stepEventCountKey(jobId),
        { set: { jobId, ttl: expiresAt }, add: { sent: 1 } },
        {
          ConditionExpression: 'attribute_not_exists(PK) OR sent < :cap',
          ExpressionAttributeValues: { ':cap': stepEventCap },
        },
      ),
    },
  });
  if (written.written) return 'opened';
  if (!written.refused('delivery')) return 'capped';
  return neverAttempted(written.reason('delivery')?.Item) ? 'unsent' : 'duplicate';
};

/**
 * Takes back a delivery this consumer opened whose message could not be sent (and its count, for a
 * step event), while no attempt was made: the stream hands the record over again, and it opens it
 * anew. Without this, the delivery would read as opened, and the retry would send nothing.
 */
export const reopenableDelivery = async (deps: Deps, jobId: string, ref: DeliveryRef): Promise<void> => {
  const remove = {
    Delete: {
      TableName: deps.tableName,
      Key: webhookDeliveryKey(jobId, deliveryName(ref)),
      ConditionExpression: 'attempts = :none',
      ExpressionAttributeValues: { ':none': 0 },
    },
  };
  if (ref.nodeId === undefined) {
    await conditionalWrite(deps, new DeleteCommand(remove.Delete));
    return;
  }
  await transactWrite(deps, [
    remove,
    { Update: tableUpdate(deps, storedStepEventCount, stepEventCountKey(jobId), { add: { sent: -1 } }) },
  ]);
};

/** What the lifecycle webhooks read of a run item's insert. */
const RunStartImageSchema = v.pick(RunItemSchema, ['jobId', 'createdAt', 'notifyStart']);
/** What they read of a step item's change: its step, its end and the mark; its `ttl` is its run's. */
const StepEndImageSchema = v.object({
  ...v.pick(StepItemSchema, ['nodeId', 'status', 'notify']).entries,
  ttl: v.number(),
});

/** One lifecycle event a change of the table gives: whose, which, and until when its delivery is kept. */
export interface LifecycleChange {
  jobId: string;
  ref: DeliveryRef;
  /** The delivery item's `ttl`: its run's (epoch seconds). */
  expiresAt: number;
}

/**
 * The lifecycle event of one change the stream passed (platform/definitions.ts
 * `lifecycleWebhooksMapping`), read with the items' schemas: `run.started` from the insert of a run
 * marked `notifyStart`; a step event from a step item marked `notify` whose status became
 * `completed` or `failed`. Undefined for any other change (a later write to an ended step's item).
 */
export const lifecycleChangeOf = (
  change: Pick<ItemChange, 'oldImage' | 'newImage'>,
  now: Date,
  retentionDays: number,
): LifecycleChange | undefined => {
  const { oldImage, newImage } = change;
  if (!newImage) return undefined;
  const sk = String(newImage.SK);
  // A run's insert, or (a run queued behind another) its start from `waiting`.
  if (sk === runKey('').SK && (oldImage === undefined || oldImage.status === RunStatus.waiting)) {
    const run = parseItem(RunStartImageSchema, newImage);
    if (run.notifyStart !== true) return undefined;
    return {
      jobId: run.jobId,
      ref: { event: 'run.started' },
      expiresAt: runItemExpiry(run.createdAt, now, retentionDays),
    };
  }
  if (!sk.startsWith(stepSkPrefix)) return undefined;
  const step = parseItem(StepEndImageSchema, newImage);
  const event = stepEventOfStatus(step.status);
  if (step.notify !== true || event === undefined || oldImage?.status === step.status) return undefined;
  return {
    jobId: String(newImage.PK).slice(runPartition('').length),
    ref: { event, nodeId: step.nodeId },
    expiresAt: step.ttl,
  };
};
