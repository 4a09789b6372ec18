import { DeleteCommand } from '@aws-sdk/lib-dynamodb';
import * as v from 'valibot';
import type { Deps } from '../deps.ts';
import { type DeliveryRef, deliveryName, stepEventCap, stepEventOfStatus } from '../domain/lifecycle-events.ts';
import { runItemExpiry } from '../domain/retention.ts';
import { tableUpdate } from './item-update.ts';
import { parseItem, RunItemSchema, StepItemSchema, storedDelivery, storedStepEventCount } from './items.ts';
import { runKey, runPartition, stepEventCountKey, stepSkPrefix, webhookDeliveryKey } from './keys.ts';
import { namedTransactWrite } from './named-transaction.ts';
import type { ItemChange } from './stream-images.ts';
import { conditionalUpdate, conditionalWrite, transactWrite } from './write.ts';

/** What opening a lifecycle event's delivery did. */
export type Opened = 'opened' | 'duplicate' | 'capped';

/**
 * Opens the delivery of one lifecycle event (issue 26): its delivery item, pending with no attempt,
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
  if (ref.nodeId === undefined) {
    const opened = await conditionalUpdate(deps, storedDelivery, key, { set }, onlyOnce);
    return opened.written ? 'opened' : 'duplicate';
  }
  const written = await namedTransactWrite<'delivery' | 'count'>(deps, {
    delivery: { Update: tableUpdate(deps, storedDelivery, key, { set }, onlyOnce) },
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
  return written.refused('delivery') ? 'duplicate' : 'capped';
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

/** What the lifecycle events read of a run item's insert. */
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
 * `lifecycleEventsStream`), read with the items' schemas: `run.started` from the insert of a run
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
  if (sk === runKey('').SK && oldImage === undefined) {
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
