/**
 * A workflow's queue in the table (the rules: functions/domain/workflow-queue.ts): queue a run
 * behind the run in progress, hand the lock to the first waiting run when the lock is free, cancel
 * a waiting run, and where a waiting run stands. Every move is one transaction conditional on the
 * lock item as read, so a start, a promotion and a cancel racing each other never lose a run or
 * start one twice.
 */
import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { RunStatus } from '../../../platform/run-statuses.ts';
import type { EndReason } from '../../../schemas/run-words.ts';
import type { Deps } from '../../deps.ts';
import { readyWhenDone } from '../../domain/canvas-order.ts';
import { notifiesStart } from '../../domain/lifecycle-webhooks.ts';
import { runItemExpiry } from '../../domain/retention.ts';
import { type QueueLane, queueCap, queueOrder, queueStanding, waitedTooLong } from '../../domain/workflow-queue.ts';
import { QueueFullError } from '../../errors/table.ts';
import { logger } from '../../observability/logger.ts';
import { canvasOf } from '../canvases.ts';
import type { IdempotencyRecord } from '../idempotency.ts';
import { tableUpdate } from '../item-update.ts';
import { itemVersion, parseItem, type StoredItem } from '../items/item.ts';
import { type RunItem, storedRun } from '../items/runs.ts';
import { storedKeyMonth, storedProject, storedTeam } from '../items/tenancy.ts';
import {
  storedWorkflowLock,
  type storedWorkflowQueueEntry,
  WorkflowLockItemSchema,
  WorkflowQueueEntrySchema,
} from '../items/workflow-locks.ts';
import {
  keyMonthKey,
  projectKey,
  queuedRunIndex,
  runKey,
  teamKey,
  workflowLockKey,
  workflowQueueKey,
  workflowQueuePartition,
} from '../keys.ts';
import { namedTransactWrite } from '../named-transaction.ts';
import { type TransactItems, transactWrite } from '../write.ts';
import { queueWebhook } from './run-webhook.ts';
import {
  type NewRun,
  readRunItem,
  runItem,
  type StartItemName,
  sendStepMessages,
  startRefusal,
  startRunItems,
} from './runs.ts';

/** The lock item as read: the run holding it (none between two runs), runs waiting, runs accepted. */
export interface LockState {
  jobId?: string | undefined;
  waiting: number;
  accepted: number;
}

/** The workflow's lock item, strongly consistent; undefined when there is none (the workflow is free). */
export const readLock = async (deps: Deps, workflowId: string): Promise<LockState | undefined> => {
  const { Item } = await deps.ddb.send(
    new GetCommand({ TableName: deps.tableName, Key: workflowLockKey(workflowId), ConsistentRead: true }),
  );
  return Item && parseItem(WorkflowLockItemSchema, Item);
};

/** Whether a lock as read lets a plain start take it: no run holds it and none waits. */
export const isFree = (lock: LockState | undefined) => !lock || (lock.jobId === undefined && lock.waiting === 0);

/**
 * The job ids of the workflow's queue (before `before`), in order: one strongly consistent Query.
 * One page holds them all: at most `queueCap` entries and the few replacements, each under 200 bytes.
 */
const queueEntries = async (deps: Deps, workflowId: string, before?: string): Promise<string[]> => {
  const { Items } = await deps.ddb.send(
    new QueryCommand({
      TableName: deps.tableName,
      KeyConditionExpression: before === undefined ? 'PK = :pk' : 'PK = :pk AND SK < :before',
      ExpressionAttributeValues: {
        ':pk': workflowQueuePartition(workflowId),
        ...(before !== undefined && { ':before': before }),
      },
      ProjectionExpression: 'jobId',
      ConsistentRead: true,
    }),
  );
  return (Items ?? []).map((item) => parseItem(WorkflowQueueEntrySchema, item).jobId);
};

/** The first waiting run of the workflow's queue (one strongly consistent Query of one entry). */
export const firstInQueue = async (deps: Deps, workflowId: string): Promise<string | undefined> => {
  const { Items } = await deps.ddb.send(
    new QueryCommand({
      TableName: deps.tableName,
      KeyConditionExpression: 'PK = :pk',
      ExpressionAttributeValues: { ':pk': workflowQueuePartition(workflowId) },
      ConsistentRead: true,
      Limit: 1,
    }),
  );
  const first = Items?.[0];
  return first && parseItem(WorkflowQueueEntrySchema, first).jobId;
};

/** The run to name as in progress: the lock's holder, or between two runs the first waiting (the next to start). */
export const activeOrNext = async (deps: Deps, workflowId: string, lock: LockState | undefined) =>
  lock?.jobId ?? (lock && lock.waiting > 0 ? await firstInQueue(deps, workflowId) : undefined);

/** Where a waiting run stands: its place (1 = next) and the run it waits for. */
/**
 * A queueing start's refusal when its workflow's queue is full (`queueCap` runs waiting, as the lock
 * counts them): the 409 naming the run in progress and the depth. Shared by the start and the estimate.
 */
export const assertQueueRoom = async (deps: Deps, workflowId: string, lock: LockState | undefined) => {
  if (lock && !isFree(lock) && lock.waiting >= queueCap) {
    throw new QueueFullError((await activeOrNext(deps, workflowId, lock)) ?? '', lock.waiting);
  }
};

export interface Standing {
  queuePosition: number;
  queuedBehind: string | undefined;
}

/** What queuing a run did. */
export type QueueOutcome =
  /** It waits; `holder` is the run in progress it was queued behind (none between two runs). */
  | { kind: 'waits'; standing: Standing; holder: string | undefined }
  /** The workflow was free when read, or the queue moved since: start or queue again. */
  | { kind: 'free' }
  | { kind: 'moved' };

const sequence = (n: number) => String(n).padStart(12, '0');

/** A counter of the lock item equals `value` as read (a counter never written reads 0). */
const countIs = (counter: 'waiting' | 'accepted', value: number) =>
  value === 0 ? `(attribute_not_exists(${counter}) OR ${counter} = :${counter})` : `${counter} = :${counter}`;

/**
 * Queues `run` behind the workflow's run in progress, in ONE transaction: the start's items
 * (`startRunItems`: the hold, the spends, the Idempotency-Key's answer, tags, extra items) with the
 * run item `waiting` (not the lock) and its queue entry, and the lock item counting it. The lock's
 * condition is the queue exactly as read (holder, runs waiting, runs accepted), so the place
 * answered is exact; a queue that moved meanwhile is `moved`. `remember` builds the Idempotency-Key
 * record from the standing. QueueFullError past `queueCap` (a replacement is never refused).
 */
export const queueRun = async (
  deps: Deps,
  run: Omit<NewRun, 'idempotency'>,
  wait: { lane: QueueLane; waitUntil: string },
  remember: (standing: Standing, holder: string | undefined) => IdempotencyRecord | null,
): Promise<QueueOutcome> => {
  const workflowId = run.workflow.workflowId;
  const lock = await readLock(deps, workflowId);
  if (isFree(lock) || !lock) return { kind: 'free' };
  if (wait.lane === 'queue') await assertQueueRoom(deps, workflowId, lock);
  const now = deps.now().toISOString();
  // Replacements go first, in their own order; the others after every run queued before them.
  const order = queueOrder(wait.lane, sequence(lock.accepted + 1), run.jobId);
  const ahead =
    wait.lane === 'queue' ? await queueEntries(deps, workflowId) : await queueEntries(deps, workflowId, order);
  const standing = queueStanding(ahead, lock.jobId);
  const items = startRunItems(deps, { ...run, idempotency: remember(standing, lock.jobId) });
  const { notifyStart: _unsent, ...started } = runItem({ ...run, idempotency: null }, now);
  const queued: NamedItemsOf<StartItemName | 'entry'> = {
    ...items,
    lock: {
      Update: {
        ...tableUpdate(
          deps,
          storedWorkflowLock,
          workflowLockKey(workflowId),
          { add: { waiting: 1, accepted: 1 } },
          {
            ConditionExpression: [
              lock.jobId === undefined ? 'attribute_not_exists(jobId)' : 'jobId = :holder',
              countIs('waiting', lock.waiting),
              countIs('accepted', lock.accepted),
            ].join(' AND '),
            ExpressionAttributeValues: {
              ...(lock.jobId !== undefined && { ':holder': lock.jobId }),
              ':waiting': lock.waiting,
              ':accepted': lock.accepted,
            },
          },
        ),
      },
    },
    run: {
      Put: {
        TableName: deps.tableName,
        Item: {
          // In the sweep's index from its acceptance, as any run not under way (`queuedRunsStartedBefore`).
          ...started,
          status: RunStatus.waiting,
          queueOrder: order,
          waitUntil: wait.waitUntil,
        },
        ConditionExpression: 'attribute_not_exists(PK)',
      },
    },
    entry: {
      Put: {
        TableName: deps.tableName,
        Item: {
          ...workflowQueueKey(workflowId, order),
          jobId: run.jobId,
          acceptedAt: now,
          v: itemVersion,
        } satisfies StoredItem<typeof storedWorkflowQueueEntry>,
        ConditionExpression: 'attribute_not_exists(PK)',
      },
    },
  };
  const result = await namedTransactWrite(deps, queued);
  if (result.written) return { kind: 'waits', standing, holder: lock.jobId };
  if (result.refused('lock')) return { kind: 'moved' };
  // Any other refusal is the start's own (the 402 of a balance that moved, the Idempotency-Key's race, ...).
  throw startRefusal({ ...run, idempotency: null }, result as Parameters<typeof startRefusal>[1]);
};

type NamedItemsOf<TName extends string> = Record<TName, TransactItems[number] | undefined>;

/**
 * What a waiting run's cancel writes, in one transaction: the run `cancelled` (never started,
 * nothing charged, finalized), its whole hold back to the team's balance and off the project's and
 * key's spend, one fewer waiting on the lock, and its queue entry gone. Conditional on the run still
 * waiting with the hold read.
 */
const cancelWaitingItems = (deps: Deps, run: RunItem, endReason?: EndReason): TransactItems => {
  const now = deps.now().toISOString();
  const held = run.heldHundredths;
  return [
    {
      Update: tableUpdate(
        deps,
        storedRun,
        runKey(run.jobId),
        {
          set: {
            status: RunStatus.cancelled,
            endedAt: now,
            finalChargedHundredths: 0,
            finalizedAt: now,
            heldHundredths: 0,
            ttl: runItemExpiry(run.createdAt, deps.now(), deps.retentionDays),
            ...(endReason !== undefined && { endReason }),
          },
          remove: ['GSI1PK', 'GSI1SK', 'queueOrder', 'waitUntil'],
        },
        {
          ConditionExpression: '#status = :waiting AND heldHundredths = :held',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: { ':waiting': RunStatus.waiting, ':held': held },
        },
      ),
    },
    ...(held > 0
      ? [
          { Update: tableUpdate(deps, storedTeam, teamKey(run.teamId), { add: { balance: held, held: -held } }) },
          {
            Update: tableUpdate(deps, storedProject, projectKey(run.teamId, run.projectId), {
              add: { spentHundredths: -held },
            }),
          },
          {
            Update: tableUpdate(deps, storedKeyMonth, keyMonthKey(run.keyId, run.spendMonth), {
              add: { spentHundredths: -held },
            }),
          },
        ]
      : []),
    {
      Update: tableUpdate(
        deps,
        storedWorkflowLock,
        workflowLockKey(run.workflowId),
        { add: { waiting: -1 } },
        { ConditionExpression: 'waiting > :none', ExpressionAttributeValues: { ':none': 0 } },
      ),
    },
    {
      Delete: {
        TableName: deps.tableName,
        Key: workflowQueueKey(run.workflowId, run.queueOrder ?? ''),
        ConditionExpression: 'attribute_exists(PK)',
      },
    },
  ];
};

/**
 * Cancels a waiting run (its caller's cancel, or its wait ran out): `cancelled`, its hold released.
 * False when it was no longer waiting (it started, or was cancelled already). The caller queues its
 * webhook (`queueWebhook`).
 */
export const cancelWaitingRun = async (deps: Deps, run: RunItem, endReason?: EndReason): Promise<boolean> =>
  run.status === RunStatus.waiting && (await transactWrite(deps, cancelWaitingItems(deps, run, endReason))).written;

/**
 * The promotion of the first waiting run, in one transaction: the lock names it (one fewer
 * waiting; only while free and counting exactly the runs read), the run becomes `queued` (in the
 * sweep's index of queued runs from now, marked for `run.started` when it chose it), its queue
 * entry goes.
 */
const promoteItems = (deps: Deps, run: RunItem, lock: LockState): TransactItems => {
  const now = deps.now().toISOString();
  return [
    {
      Update: tableUpdate(
        deps,
        storedWorkflowLock,
        workflowLockKey(run.workflowId),
        { set: { jobId: run.jobId, since: now }, add: { waiting: -1 } },
        {
          ConditionExpression: 'attribute_not_exists(jobId) AND waiting = :waiting',
          ExpressionAttributeValues: { ':waiting': lock.waiting },
        },
      ),
    },
    {
      Update: tableUpdate(
        deps,
        storedRun,
        runKey(run.jobId),
        {
          set: {
            status: RunStatus.queued,
            ...queuedRunIndex(run.jobId, now),
            ...(notifiesStart(run.webhookEvents) && { notifyStart: true as const }),
          },
          remove: ['queueOrder', 'waitUntil'],
        },
        {
          ConditionExpression: '#status = :waiting',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: { ':waiting': RunStatus.waiting },
        },
      ),
    },
    {
      Delete: {
        TableName: deps.tableName,
        Key: workflowQueueKey(run.workflowId, run.queueOrder ?? ''),
        ConditionExpression: 'attribute_exists(PK)',
      },
    },
  ];
};

/** Tries a promotion makes before leaving the queue to the next end or the dispatcher's tick. */
const promotionTries = 10;

/**
 * Starts the workflow's next waiting run when its lock is free: the first in the queue takes the
 * lock and its first steps are sent. A first run whose wait ran out is cancelled and the next tried.
 * Safe to call at any time and any number of times (a run's end, a queued start, the tick): it does
 * nothing while a run holds the lock, and each promotion is conditional on the lock as read, so a
 * call repeated or racing another starts each run once. The started run's id, if any.
 */
export const startNextQueued = async (deps: Deps, workflowId: string): Promise<string | undefined> => {
  for (let attempt = 0; attempt < promotionTries; attempt++) {
    const lock = await readLock(deps, workflowId);
    if (!lock || lock.jobId !== undefined || lock.waiting <= 0) return undefined;
    const first = await firstInQueue(deps, workflowId);
    if (first === undefined) {
      logger.error('the lock counts runs waiting but the queue is empty', { workflowId, waiting: lock.waiting });
      return undefined;
    }
    const run = await readRunItem(deps, first);
    if (run?.status !== RunStatus.waiting) continue; // cancelled or started meanwhile: read again
    if (run.waitUntil !== undefined && waitedTooLong(run.waitUntil, deps.now())) {
      if (await cancelWaitingRun(deps, run)) await queueWebhook(deps, run, RunStatus.cancelled);
      continue;
    }
    if (!(await transactWrite(deps, promoteItems(deps, run, lock))).written) continue;
    try {
      const ready = readyWhenDone(await canvasOf(deps, workflowId, run.workflowVersion), run.doneSteps);
      await sendStepMessages(deps, run, ready);
    } catch (error) {
      // It holds the lock, `queued`: the sweep re-sends the first steps of a run left so.
      logger.error('a promoted run’s first steps were not sent; the sweep will retry', {
        jobId: run.jobId,
        error: error as Error,
      });
    }
    return run.jobId;
  }
  return undefined;
};

/** Where a waiting run stands now (GET /runs/{jobId}): the entries before it and the lock's holder. */
export const standingOf = async (deps: Deps, run: Pick<RunItem, 'workflowId' | 'queueOrder'>): Promise<Standing> => {
  const [lock, ahead] = await Promise.all([
    readLock(deps, run.workflowId),
    queueEntries(deps, run.workflowId, run.queueOrder ?? ''),
  ]);
  return queueStanding(ahead, lock?.jobId);
};
