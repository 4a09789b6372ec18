/**
 * Bulk actions (POST /runs/cancel): the action's item, the marker of each target it took up, and
 * the message of each page. The rules are functions/app/bulk-cancel.ts's.
 */
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import * as v from 'valibot';
import type { Deps } from '../deps.ts';
import { batchGet } from './batch.ts';
import { ifNotExists } from './item-update.ts';
import {
  type BulkActionItem,
  BulkActionItemSchema,
  type BulkOutcome,
  BulkTargetItemSchema,
  storedBulkAction,
  storedBulkTarget,
} from './items/bulk-actions.ts';
import { itemVersion, parseItem, type StoredItem, unexpired } from './items/item.ts';
import { bulkActionKey, bulkTargetKey } from './keys.ts';
import { sqsMessageBody, stepMessageGroup } from './queues.ts';
import { conditionalUpdate, conditionalWrite } from './write.ts';

/** Writes a new action (its id is new: the condition only guards a collision). */
export const putBulkAction = async (deps: Deps, action: BulkActionItem): Promise<void> => {
  const item = {
    ...bulkActionKey(action.bulkActionId),
    ...action,
    v: itemVersion,
  } satisfies StoredItem<typeof storedBulkAction>;
  await conditionalWrite(
    deps,
    new PutCommand({ TableName: deps.tableName, Item: item, ConditionExpression: 'attribute_not_exists(PK)' }),
  );
};

/** The action as it stands (strongly consistent), or undefined when there is none (or it expired). */
export const readBulkAction = async (deps: Deps, bulkActionId: string): Promise<BulkActionItem | undefined> => {
  const { Item } = await deps.ddb.send(
    new GetCommand({ TableName: deps.tableName, Key: bulkActionKey(bulkActionId), ConsistentRead: true }),
  );
  const item = unexpired(Item, deps.now());
  return item && parseItem(BulkActionItemSchema, item);
};

/** The outcome a refused write's old marker holds (its image as attribute values). */
const RefusedMarkerSchema = v.object({ outcome: v.object({ S: BulkTargetItemSchema.entries.outcome }) });
const refusedOutcome = (oldItem: Record<string, unknown> | undefined) =>
  v.parse(RefusedMarkerSchema, oldItem ?? {}).outcome.S;

/** A target another delivery of its page is cancelling now (its lease runs): the page comes again later. */
export class BulkTargetBusyError extends Error {
  override readonly name = 'BulkTargetBusyError';
}

/**
 * Takes up one target: its marker is written `pending`, leased to this delivery until `until`,
 * unless it exists (a lease that ran out is taken over: its delivery stopped). `new` the first
 * time; `resumed` when taken over, with when it was first taken up; else the outcome it was settled
 * with (nothing more to do).
 * Throws BulkTargetBusyError on a live lease.
 */
export const takeUpTarget = async (
  deps: Deps,
  bulkActionId: string,
  target: string,
  ttl: number,
  until: string,
): Promise<{ taken: 'new' } | { taken: 'resumed'; takenAt: string } | { taken: BulkOutcome }> => {
  const written = await conditionalUpdate(
    deps,
    storedBulkTarget,
    bulkTargetKey(bulkActionId, target),
    { set: { outcome: 'pending', until, ttl, takenAt: ifNotExists(deps.now().toISOString()) } },
    {
      ConditionExpression: 'attribute_not_exists(PK) OR (outcome = :pending AND #until < :now)',
      ExpressionAttributeNames: { '#until': 'until' },
      ExpressionAttributeValues: { ':pending': 'pending', ':now': deps.now().toISOString() },
    },
    { ReturnValues: 'ALL_OLD', ReturnValuesOnConditionCheckFailure: 'ALL_OLD' },
  );
  if (written.written) {
    const old = written.output.Attributes;
    return old === undefined
      ? { taken: 'new' }
      : { taken: 'resumed', takenAt: parseItem(BulkTargetItemSchema, old).takenAt };
  }
  const outcome = refusedOutcome(written.oldItem);
  if (outcome === 'pending')
    throw new BulkTargetBusyError(`bulk target ${target} is being cancelled by another delivery`);
  return { taken: outcome };
};

/**
 * Settles a target's marker as `outcome`, once; answers the outcome it holds: this one, or the one
 * a concurrent delivery of its page settled it with first.
 */
export const settleTarget = async (
  deps: Deps,
  bulkActionId: string,
  target: string,
  outcome: BulkOutcome,
): Promise<BulkOutcome> => {
  const written = await conditionalUpdate(
    deps,
    storedBulkTarget,
    bulkTargetKey(bulkActionId, target),
    { set: { outcome }, remove: ['until'] },
    { ConditionExpression: 'outcome = :pending', ExpressionAttributeValues: { ':pending': 'pending' } },
    { ReturnValuesOnConditionCheckFailure: 'ALL_OLD' },
  );
  if (written.written) return outcome;
  const settled = refusedOutcome(written.oldItem);
  if (settled === 'pending') throw new Error(`bulk target ${target} read pending after its settle was refused`);
  return settled;
};

/** Which of `targets` the action has taken up already (one strongly consistent BatchGetItem per 100). */
export const takenTargets = async (deps: Deps, bulkActionId: string, targets: readonly string[]) => {
  if (targets.length === 0) return new Set<string>();
  const found = await batchGet(
    deps,
    targets.map((target) => bulkTargetKey(bulkActionId, target)),
    { attributes: ['PK', 'SK'] },
  );
  return new Set(targets.filter((target) => found.has(keyString(bulkTargetKey(bulkActionId, target)))));
};

const keyString = (key: { PK: string; SK: string }) => `${key.PK}|${key.SK}`;

/** A page's counts, added to the action's with the move that ends the page. */
export interface PageCounts {
  matched: number;
  cancelled: number;
  skipped: number;
  failed: number;
}

/**
 * Ends page `page`: its counts added and the action moved to the next page, recording where that
 * one starts (`next`). Conditional on the page, so only one delivery of a page counts it and one
 * chain of pages runs. False when it had moved already.
 */
export const advanceBulkPage = async (
  deps: Deps,
  bulkActionId: string,
  page: number,
  counts: PageCounts,
  next: string,
) =>
  (
    await conditionalUpdate(
      deps,
      storedBulkAction,
      bulkActionKey(bulkActionId),
      { set: { next }, add: { page: 1, ...counts } },
      { ConditionExpression: 'page = :page', ExpressionAttributeValues: { ':page': page } },
    )
  ).written;

/** Ends the last page: its counts added and the action `done` (once: a later delivery changes nothing). */
export const finishBulkAction = async (deps: Deps, bulkActionId: string, page: number, counts: PageCounts) => {
  await conditionalUpdate(
    deps,
    storedBulkAction,
    bulkActionKey(bulkActionId),
    { set: { status: 'done', finishedAt: deps.now().toISOString() }, add: { ...counts } },
    {
      ConditionExpression: 'page = :page AND #status = :running',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: { ':page': page, ':running': 'running' },
    },
  );
};

/** One page's message, on the steps queue in the team's group (functions/app/bulk-cancel.ts reads it). */
export const sendBulkPageMessage = async (deps: Deps, teamId: string, message: object) => {
  await deps.sqs.send(
    new SendMessageCommand({
      QueueUrl: deps.queueUrls.steps,
      MessageBody: sqsMessageBody(message),
      ...stepMessageGroup(teamId),
    }),
  );
};
