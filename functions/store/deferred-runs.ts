import { GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { RunRequest } from '../../schemas/run-request.ts';
import type { Deps } from '../deps.ts';
import { deferredExpiresAt } from '../domain/deferred-run-lifetime.ts';
import { retentionExpiry } from '../domain/retention.ts';
import { DeferredRunNotFoundError } from '../errors/table.ts';
import { batchGet, itemFor } from './batch.ts';
import { IdempotencyRaceError, type IdempotencyRecord, idempotencyPut } from './idempotency.ts';
import { tableUpdate } from './item-update.ts';
import type { ApiKeyItem } from './items/api-keys.ts';
import { ExpiringDeferredRunSchema } from './items/deferred-run-entries.ts';
import { type DeferredRunItem, DeferredRunItemSchema, storedDeferredRun } from './items/deferred-runs.ts';
import { ItemKeySchema, itemVersion, parseItem, type StoredItem, unexpired } from './items/item.ts';
import type { CheckedUploadRecord } from './items/runs.ts';
import { deferredListIndex, deferredRunKey, multiplierSortKey, waitingIndexes, waitingPartition } from './keys.ts';
import { namedTransactWrite } from './named-transaction.ts';
import { queryAll } from './query.ts';
import { conditionalWrite } from './write.ts';

/**
 * A new deferred run's item: `waiting`, in both waiting indexes and in its team's list (GSI5),
 * expiring 24 hours after `now`, or at its `startBy`.
 */
export const deferredRunItem = (
  input: {
    deferredJobId: string;
    key: Pick<ApiKeyItem, 'teamId' | 'keyId'>;
    workflowId: string;
    request: RunRequest;
    inputUploads?: Record<string, CheckedUploadRecord>;
    batchId?: string | undefined;
  },
  now: Date,
) => {
  const createdAt = now.toISOString();
  const expiresAt = deferredExpiresAt(now, input.request.startBy).toISOString();
  return {
    ...deferredRunKey(input.deferredJobId),
    ...waitingIndexes(input.deferredJobId, input.request.maxMultiplier, createdAt, expiresAt),
    ...deferredListIndex(input.key.teamId, createdAt, input.deferredJobId),
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
    ...(input.batchId !== undefined && { batchId: input.batchId }),
    ...(input.inputUploads && Object.keys(input.inputUploads).length > 0 ? { inputUploads: input.inputUploads } : {}),
    v: itemVersion,
  } satisfies StoredItem<typeof storedDeferredRun>;
};

/** Stores a `waiting` deferred run; nothing is held yet. */
export const createDeferredRun = async (
  deps: Deps,
  input: {
    deferredJobId: string;
    key: ApiKeyItem;
    workflowId: string;
    request: RunRequest;
    inputUploads?: Record<string, CheckedUploadRecord>;
    idempotency: IdempotencyRecord | null;
    batchId?: string | undefined;
  },
) => {
  const item = deferredRunItem(input, deps.now());
  const created = input.idempotency
    ? await namedTransactWrite(deps, {
        deferredRun: {
          Put: { TableName: deps.tableName, Item: item, ConditionExpression: 'attribute_not_exists(PK)' },
        },
        idempotency: idempotencyPut(deps, input.key.keyId, input.idempotency),
      })
    : await conditionalWrite(
        deps,
        new PutCommand({ TableName: deps.tableName, Item: item, ConditionExpression: 'attribute_not_exists(PK)' }),
      );
  if (created.written) return;
  // A request with the same Idempotency-Key committed first: the caller answers as it did.
  if ('refused' in created && created.refused('idempotency')) throw new IdempotencyRaceError();
  throw new Error(`deferred run ${input.deferredJobId} exists already`);
};

/** A deferred run of the team; another team's, and one past its `ttl` (expired), read as missing. */
export const getDeferredRun = async (deps: Deps, teamId: string, deferredJobId: string): Promise<DeferredRunItem> => {
  const { Item } = await deps.ddb.send(
    new GetCommand({ TableName: deps.tableName, Key: deferredRunKey(deferredJobId), ConsistentRead: true }),
  );
  const item = unexpired(Item, deps.now());
  if (!item || item.teamId !== teamId) throw new DeferredRunNotFoundError(deferredJobId);
  return parseItem(DeferredRunItemSchema, item);
};

/**
 * The update that moves a waiting deferred run on; usable inside a transaction. A waiting run never
 * expires; the one that moved is kept the stage's retention from now, its end (`ttl`).
 */
export const leaveWaiting = (
  deps: Deps,
  deferredJobId: string,
  status: 'dispatched' | 'expired' | 'cancelled',
  extra: { jobId?: string } = {},
) => {
  const now = deps.now().toISOString();
  return tableUpdate(
    deps,
    storedDeferredRun,
    deferredRunKey(deferredJobId),
    {
      set: {
        status,
        movedAt: now,
        ttl: retentionExpiry(deps.now(), deps.retentionDays),
        ...(extra.jobId ? { jobId: extra.jobId, dispatchedAt: now } : {}),
      },
      remove: ['GSI2PK', 'GSI2SK', 'GSI3PK', 'GSI3SK'],
    },
    {
      ConditionExpression: '#status = :waiting',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: { ':waiting': 'waiting' },
    },
  );
};

/** Moves a waiting deferred run to `expired` or `cancelled`; false when it was no longer waiting. */
export const moveDeferredRun = async (deps: Deps, deferredJobId: string, status: 'expired' | 'cancelled') =>
  (await conditionalWrite(deps, new UpdateCommand(leaveWaiting(deps, deferredJobId, status)))).written;

/** Moves a waiting deferred run to `cancelled`: the item as the cancel left it, or null when it was no longer waiting. */
export const cancelWaitingDeferredRun = async (deps: Deps, deferredJobId: string): Promise<DeferredRunItem | null> => {
  const cancel = { ...leaveWaiting(deps, deferredJobId, 'cancelled'), ReturnValues: 'ALL_NEW' as const };
  const cancelled = await conditionalWrite(deps, new UpdateCommand(cancel));
  return cancelled.written ? parseItem(DeferredRunItemSchema, cancelled.output.Attributes ?? {}) : null;
};

/** One waiting index (GSI2 or GSI3) from `bound` on: every page, since a tick moves all it can. */
const waitingQuery = (index: 'GSI2' | 'GSI3', condition: string, bound: string) => ({
  IndexName: index,
  KeyConditionExpression: `${index}PK = :pk AND ${condition}`,
  ExpressionAttributeValues: { ':pk': waitingPartition, ':bound': bound },
});

/**
 * Waiting runs whose maxMultiplier is at least the current multiplier, in the index's order. GSI2
 * (sparse) holds keys only, so that a run's request and its callback secret are never copied into
 * an index: each run is then read from the table, strongly consistent, and kept if still waiting.
 */
export const dispatchableDeferredRuns = async (
  deps: Deps,
  multiplier: number,
  counter = { pages: 0 },
): Promise<DeferredRunItem[]> => {
  const keys = await queryAll(
    deps,
    waitingQuery('GSI2', 'GSI2SK >= :bound', multiplierSortKey(multiplier)),
    (item) => parseItem(ItemKeySchema, item),
    counter,
  );
  if (keys.length === 0) return [];
  const items = await batchGet(deps, keys);
  return keys.flatMap((key) => {
    const deferred = itemFor(items, key, DeferredRunItemSchema);
    return deferred?.status === 'waiting' ? [deferred] : [];
  });
};

/** Ids of waiting runs past their expiry (GSI3, sparse, projecting only the id). */
export const expiredDeferredRuns = async (
  deps: Deps,
  now: Date,
  counter = { pages: 0 },
): Promise<Pick<DeferredRunItem, 'deferredJobId'>[]> =>
  queryAll(
    deps,
    waitingQuery('GSI3', 'GSI3SK < :bound', now.toISOString()),
    (item) => parseItem(ExpiringDeferredRunSchema, item),
    counter,
  );

/** Waiting deferred runs of a team (operators' CLI); reads the whole waiting index. */
export const listWaitingDeferredRuns = async (deps: Deps, teamId: string) =>
  (await dispatchableDeferredRuns(deps, 0)).filter((r) => r.teamId === teamId);
