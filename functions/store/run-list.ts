import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { RunStatus, type StoredRunStatus } from '../../platform/run-statuses.ts';
import type { Deps } from '../deps.ts';
import type { CursorPosition } from '../domain/cursor.ts';
import { listedStatus } from '../domain/run-lifecycle.ts';
import { batchGet } from './batch.ts';
import { parseItem, unexpired } from './items/item.ts';
import { type RunListEntry, RunListEntrySchema, RunTagEntrySchema } from './items/runs.ts';
import { runBatchPartition, runKey, runTagPartition, teamDeferredPartition, teamRunsPartition } from './keys.ts';
import { signingSecret } from './server-secrets.ts';

/** The index a team's runs and deferred runs are listed from (platform/definitions.ts). */
const listIndex = 'GSI5';

/** DynamoDB takes at most 100 values in one `IN`. */
const maxInValues = 100;

export interface RunListQuery {
  list: 'runs' | 'deferred-runs';
  teamId: string;
  /** Only runs of these workflows (a filter, or the key's workflows); null for any. Never empty. */
  workflowIds: readonly string[] | null;
  status: string | null;
  /** Entries DynamoDB evaluates for the page: the filters apply after, so a page may hold fewer. */
  limit: number;
  /** Where the page starts (a previous page's `lastKey`), checked to be in the team's partition. */
  startKey: CursorPosition | null;
}

export interface RunListPage {
  /** The page's entries as the index holds them, newest first, expired ones left out. */
  entries: Record<string, unknown>[];
  /** The position after the page, when DynamoDB says there may be more. */
  lastKey: CursorPosition | null;
}

const partitionOf = (query: Pick<RunListQuery, 'list' | 'teamId'>) =>
  query.list === 'runs' ? teamRunsPartition(query.teamId) : teamDeferredPartition(query.teamId);

/** The filter for `workflowIds` (an `IN` per hundred) and `status`, with its names and values. */
const filterOf = (query: RunListQuery) => {
  const parts: string[] = [];
  const values: Record<string, string> = {};
  const names: Record<string, string> = {};
  if (query.workflowIds) {
    const groups: string[] = [];
    for (let i = 0; i < query.workflowIds.length; i += maxInValues) {
      const group = query.workflowIds.slice(i, i + maxInValues).map((id, j) => {
        values[`:w${i + j}`] = id;
        return `:w${i + j}`;
      });
      groups.push(`workflowId IN (${group.join(', ')})`);
    }
    parts.push(groups.length === 1 ? (groups[0] as string) : `(${groups.join(' OR ')})`);
  }
  if (query.status) {
    // A run waiting behind another (stored `waiting`) is listed, and found, as `queued`.
    const alsoWaiting = query.list === 'runs' && query.status === RunStatus.queued;
    parts.push(alsoWaiting ? '#status IN (:status, :waiting)' : '#status = :status');
    names['#status'] = 'status';
    values[':status'] = query.status;
    if (alsoWaiting) values[':waiting'] = RunStatus.waiting;
  }
  return { expression: parts.length > 0 ? parts.join(' AND ') : undefined, names, values };
};

/** The start key is a position in this team's partition of the index, with the index's key attributes only. */
const isStartOf = (query: RunListQuery, key: CursorPosition) => {
  const names = Object.keys(key).sort().join(',');
  return names === 'GSI4PK,GSI4SK,PK,SK' && key.GSI4PK === partitionOf(query);
};

/**
 * One page of a team's runs or deferred runs: exactly one Query of the sparse index GSI5, newest
 * first (the sort key is the creation time and id, read backwards). Eventually consistent, as
 * every index read: a run started a moment ago may show on the next read.
 */
export const queryRunList = async (deps: Deps, query: RunListQuery): Promise<RunListPage> => {
  if (query.startKey && !isStartOf(query, query.startKey)) throw new Error('run list start key outside its partition');
  const filter = filterOf(query);
  const { Items, LastEvaluatedKey } = await deps.ddb.send(
    new QueryCommand({
      TableName: deps.tableName,
      IndexName: listIndex,
      KeyConditionExpression: 'GSI4PK = :pk',
      ScanIndexForward: false,
      Limit: query.limit,
      ...(query.startKey ? { ExclusiveStartKey: query.startKey } : {}),
      ...(filter.expression ? { FilterExpression: filter.expression } : {}),
      ...(Object.keys(filter.names).length > 0 ? { ExpressionAttributeNames: filter.names } : {}),
      ExpressionAttributeValues: { ':pk': partitionOf(query), ...filter.values },
    }),
  );
  const now = deps.now();
  return {
    entries: (Items ?? []).filter((item) => unexpired(item, now) !== undefined),
    lastKey: (LastEvaluatedKey as CursorPosition | undefined) ?? null,
  };
};

/** What a page of one tag reads of each run: its list entry (`RunListEntrySchema`), as GSI5 projects it. */
const listEntryAttributes = Object.keys(RunListEntrySchema.entries);

/** One page of a tag's (or a batch's) runs: its partition, and the filters (`status` is applied to the runs read). */
export type RunTagQuery = Omit<RunListQuery, 'list'> & ({ tag: string } | { batchId: string });

/**
 * One page of a team's runs started with `tag` (GET /runs?tag=), newest first: exactly one Query of
 * the tag's partition (`RUNTAG#<team>#<tag>`, its entries written by each run's start), its
 * `workflowIds` a filter on the entries as the list's are, then one eventually consistent
 * BatchGetItem of those runs' list attributes, so each run's status, end and charge are as read
 * now: an entry is never updated. `status` is then applied to the runs read; a page may hold fewer
 * than `limit`, as the list's filtered pages do. A run gone (expired) is left out.
 */
export const queryRunTagPage = async (deps: Deps, query: RunTagQuery): Promise<RunListPage> => {
  // A batch's entries (`RUNBATCH#<team>#<batch>`) are a tag's in shape: one read for both.
  const partition =
    'tag' in query ? runTagPartition(query.teamId, query.tag) : runBatchPartition(query.teamId, query.batchId);
  if (query.startKey && Object.keys(query.startKey).sort().join(',') !== 'PK,SK') {
    throw new Error('run tag start key is not a table key');
  }
  if (query.startKey && query.startKey.PK !== partition) throw new Error('run tag start key outside its partition');
  const filter = filterOf({ ...query, list: 'runs', status: null });
  const { Items, LastEvaluatedKey } = await deps.ddb.send(
    new QueryCommand({
      TableName: deps.tableName,
      KeyConditionExpression: 'PK = :pk',
      ScanIndexForward: false,
      Limit: query.limit,
      ...(query.startKey ? { ExclusiveStartKey: query.startKey } : {}),
      ...(filter.expression ? { FilterExpression: filter.expression } : {}),
      ExpressionAttributeValues: { ':pk': partition, ...filter.values },
    }),
  );
  const now = deps.now();
  const jobIds = (Items ?? [])
    .filter((item) => unexpired(item, now) !== undefined)
    .map((item) => parseItem(RunTagEntrySchema, item).jobId);
  const runs =
    jobIds.length === 0
      ? new Map()
      : await batchGet(
          deps,
          jobIds.map((jobId) => runKey(jobId)),
          { attributes: listEntryAttributes, consistent: false },
        );
  const entries = jobIds
    .map((jobId) => runs.get(`${runKey(jobId).PK}|${runKey(jobId).SK}`))
    .filter((item): item is Record<string, unknown> => item !== undefined)
    .filter((item) => query.status === null || listedStatus(item.status as StoredRunStatus) === query.status);
  return { entries, lastKey: (LastEvaluatedKey as CursorPosition | undefined) ?? null };
};

/** The key that signs list cursors (functions/store/server-secrets.ts). */
export const cursorSigningSecret = (deps: Deps): Promise<Buffer> => signingSecret(deps, 'cursor');

/** At most this many entries a batch's read takes: a batch starts at most 100 runs. */
const batchEntriesRead = 100;

/**
 * The runs a batch started (GET /batches/{batchId}), oldest first: one Query of its partition, its
 * `workflowIds` a filter as the list's, then one eventually consistent BatchGetItem of those runs'
 * list attributes (their status now). A run gone (expired) is left out.
 */
export const readBatchRuns = async (
  deps: Deps,
  query: { teamId: string; batchId: string; workflowIds: readonly string[] | null },
): Promise<RunListEntry[]> => {
  const filter = filterOf({ ...query, list: 'runs', status: null, limit: batchEntriesRead, startKey: null });
  const { Items } = await deps.ddb.send(
    new QueryCommand({
      TableName: deps.tableName,
      KeyConditionExpression: 'PK = :pk',
      Limit: batchEntriesRead,
      ...(filter.expression ? { FilterExpression: filter.expression } : {}),
      ExpressionAttributeValues: { ':pk': runBatchPartition(query.teamId, query.batchId), ...filter.values },
    }),
  );
  const now = deps.now();
  const jobIds = (Items ?? [])
    .filter((item) => unexpired(item, now) !== undefined)
    .map((item) => parseItem(RunTagEntrySchema, item).jobId);
  if (jobIds.length === 0) return [];
  const runs = await batchGet(
    deps,
    jobIds.map((jobId) => runKey(jobId)),
    { attributes: listEntryAttributes, consistent: false },
  );
  return jobIds
    .map((jobId) => runs.get(`${runKey(jobId).PK}|${runKey(jobId).SK}`))
    .filter((item): item is Record<string, unknown> => item !== undefined)
    .map((item) => parseItem(RunListEntrySchema, item));
};
