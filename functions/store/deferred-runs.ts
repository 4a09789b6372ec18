import { GetCommand, PutCommand, QueryCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { DeferredRun } from '../../schemas/deferred-runs.ts';
import type { RunRequest } from '../../schemas/runs.ts';
import type { Deps } from '../deps.ts';
import { deferredExpiresAt } from '../domain/deferred-run-lifetime.ts';
import { DeferredRunNotFoundError, DeferredRunNotWaitingError } from '../domain/errors.ts';
import type { ApiKeyRecord } from './api-keys.ts';
import { batchGet, itemFor } from './batch.ts';
import { type IdempotencyRecord, idempotencyPut } from './idempotency.ts';
import { deferredRunKey, multiplierSortKey, waitingIndexes, waitingPartition } from './keys.ts';

export interface DeferredRecord {
  deferredJobId: string;
  teamId: string;
  keyId: string;
  workflowId: string;
  status: DeferredRun['status'];
  maxMultiplier: number;
  createdAt: string;
  expiresAt: string;
  dispatchedAt: string | null;
  jobId: string | null;
  request: RunRequest;
}

const toRecord = (item: Record<string, unknown>): DeferredRecord => ({
  deferredJobId: item.deferredJobId as string,
  teamId: item.teamId as string,
  keyId: item.keyId as string,
  workflowId: item.workflowId as string,
  status: item.status as DeferredRun['status'],
  maxMultiplier: item.maxMultiplier as number,
  createdAt: item.createdAt as string,
  expiresAt: item.expiresAt as string,
  dispatchedAt: (item.dispatchedAt as string | undefined) ?? null,
  jobId: (item.jobId as string | undefined) ?? null,
  request: item.request as RunRequest,
});

/** The DeferredRun a caller reads (spec 2.4). */
export const deferredView = (record: DeferredRecord): DeferredRun => ({
  deferredJobId: record.deferredJobId,
  workflowId: record.workflowId,
  status: record.status,
  maxMultiplier: record.maxMultiplier,
  createdAt: record.createdAt,
  expiresAt: record.expiresAt,
  dispatchedAt: record.dispatchedAt,
  jobId: record.jobId,
});

/** Stores a `waiting` deferred run; nothing is held yet. */
export const createDeferredRun = async (
  deps: Deps,
  input: {
    deferredJobId: string;
    key: ApiKeyRecord;
    workflowId: string;
    request: RunRequest;
    idempotency: IdempotencyRecord | null;
  },
) => {
  const now = deps.now();
  const createdAt = now.toISOString();
  const expiresAt = deferredExpiresAt(now).toISOString();
  const item = {
    ...deferredRunKey(input.deferredJobId),
    ...waitingIndexes(input.deferredJobId, input.request.maxMultiplier, createdAt, expiresAt),
    type: 'DeferredRun',
    deferredJobId: input.deferredJobId,
    teamId: input.key.teamId,
    keyId: input.key.keyId,
    workflowId: input.workflowId,
    status: 'waiting',
    maxMultiplier: input.request.maxMultiplier,
    createdAt,
    expiresAt,
    request: input.request,
  };
  if (!input.idempotency) {
    await deps.ddb.send(
      new PutCommand({ TableName: deps.tableName, Item: item, ConditionExpression: 'attribute_not_exists(PK)' }),
    );
    return;
  }
  await deps.ddb.send(
    new TransactWriteCommand({
      TransactItems: [
        { Put: { TableName: deps.tableName, Item: item, ConditionExpression: 'attribute_not_exists(PK)' } },
        idempotencyPut(deps, input.key.keyId, input.idempotency),
      ],
    }),
  );
};

/** A deferred run of the team; another team's reads as missing. */
export const getDeferredRun = async (deps: Deps, teamId: string, deferredJobId: string): Promise<DeferredRecord> => {
  const { Item } = await deps.ddb.send(
    new GetCommand({ TableName: deps.tableName, Key: deferredRunKey(deferredJobId), ConsistentRead: true }),
  );
  if (!Item || Item.teamId !== teamId) throw new DeferredRunNotFoundError(deferredJobId);
  return toRecord(Item);
};

/** The update that moves a waiting deferred run on; usable inside a transaction. */
export const leaveWaiting = (
  deps: Deps,
  deferredJobId: string,
  status: 'dispatched' | 'expired' | 'cancelled',
  extra: { jobId?: string } = {},
) => ({
  TableName: deps.tableName,
  Key: deferredRunKey(deferredJobId),
  UpdateExpression: `SET #status = :status, movedAt = :now${extra.jobId ? ', jobId = :job, dispatchedAt = :now' : ''} REMOVE GSI2PK, GSI2SK, GSI3PK, GSI3SK`,
  ConditionExpression: '#status = :waiting',
  ExpressionAttributeNames: { '#status': 'status' },
  ExpressionAttributeValues: {
    ':status': status,
    ':waiting': 'waiting',
    ':now': deps.now().toISOString(),
    ...(extra.jobId ? { ':job': extra.jobId } : {}),
  },
});

/** Moves a waiting deferred run to `expired` or `cancelled`; false when it was no longer waiting. */
export const moveDeferredRun = async (deps: Deps, deferredJobId: string, status: 'expired' | 'cancelled') => {
  try {
    await deps.ddb.send(new UpdateCommand(leaveWaiting(deps, deferredJobId, status)));
    return true;
  } catch (error) {
    if ((error as Error).name === 'ConditionalCheckFailedException') return false;
    throw error;
  }
};

/** DELETE /deferred-runs/{id}: cancels a waiting one of the team. */
export const cancelDeferredRun = async (deps: Deps, teamId: string, deferredJobId: string): Promise<DeferredRecord> => {
  const record = await getDeferredRun(deps, teamId, deferredJobId);
  if (record.status !== 'waiting' || !(await moveDeferredRun(deps, deferredJobId, 'cancelled'))) {
    throw new DeferredRunNotWaitingError(deferredJobId);
  }
  return getDeferredRun(deps, teamId, deferredJobId);
};

/** Every item of one waiting index at or past `bound`, as the index projects it. */
const queryWaiting = async (
  deps: Deps,
  index: 'GSI2' | 'GSI3',
  condition: string,
  bound: string,
  counter: { pages: number },
): Promise<Record<string, unknown>[]> => {
  const out: Record<string, unknown>[] = [];
  let cursor: Record<string, unknown> | undefined;
  do {
    const page = await deps.ddb.send(
      new QueryCommand({
        TableName: deps.tableName,
        IndexName: index,
        KeyConditionExpression: `${index}PK = :pk AND ${condition}`,
        ExpressionAttributeValues: { ':pk': waitingPartition, ':bound': bound },
        ExclusiveStartKey: cursor,
      }),
    );
    counter.pages++;
    out.push(...(page.Items ?? []));
    cursor = page.LastEvaluatedKey;
  } while (cursor);
  return out;
};

/**
 * Waiting runs whose maxMultiplier is at least the current multiplier, in the index's order. GSI2
 * (sparse) holds keys only, so that a run's request and its callback secret are never copied into
 * an index: each run is then read from the table, strongly consistent, and kept if still waiting.
 */
export const dispatchableDeferredRuns = async (
  deps: Deps,
  multiplier: number,
  counter = { pages: 0 },
): Promise<DeferredRecord[]> => {
  const keys = (await queryWaiting(deps, 'GSI2', 'GSI2SK >= :bound', multiplierSortKey(multiplier), counter)).map(
    (item) => ({ PK: item.PK as string, SK: item.SK as string }),
  );
  if (keys.length === 0) return [];
  const items = await batchGet(deps, keys);
  return keys.flatMap((key) => {
    const item = itemFor(items, key);
    return item?.status === 'waiting' ? [toRecord(item)] : [];
  });
};

/** Ids of waiting runs past their expiry (GSI3, sparse, projecting only the id). */
export const expiredDeferredRuns = async (
  deps: Deps,
  now: Date,
  counter = { pages: 0 },
): Promise<Pick<DeferredRecord, 'deferredJobId'>[]> =>
  (await queryWaiting(deps, 'GSI3', 'GSI3SK < :bound', now.toISOString(), counter)).map((item) => ({
    deferredJobId: item.deferredJobId as string,
  }));

/** Waiting deferred runs of a team (operators' CLI); reads the whole waiting index. */
export const listWaitingDeferredRuns = async (deps: Deps, teamId: string) =>
  (await dispatchableDeferredRuns(deps, 0)).filter((r) => r.teamId === teamId);
