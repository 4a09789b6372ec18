import type { Deps } from '../../deps.ts';
import { retentionExpiry } from '../../domain/retention.ts';
import { itemVersion, type StoredItem } from '../items/item.ts';
import type { storedRunBatch, storedRunTag } from '../items/runs.ts';
import { runBatchKey, runTagKey } from '../keys.ts';

/**
 * The Puts of a run's tag entries (`RUNTAG#<team>#<tag>`), one per tag, for its start's transaction:
 * written with the run or not at all, never changed after, and kept exactly as long as a run that
 * ends in its retention (its start plus the retention; `retentionExpiry`). A run still in progress
 * past that (a stuck one) keeps later `ttl`s of its own, and leaves the tag's list before it.
 */
export const runTagPuts = (
  deps: Deps,
  run: { teamId: string; jobId: string; workflowId: string; tags: readonly string[] },
  createdAt: string,
) =>
  run.tags.map((tag) => ({
    Put: {
      TableName: deps.tableName,
      Item: {
        ...runTagKey(run.teamId, tag, createdAt, run.jobId),
        type: 'RunTag',
        v: itemVersion,
        jobId: run.jobId,
        workflowId: run.workflowId,
        teamId: run.teamId,
        tag,
        createdAt,
        ttl: retentionExpiry(createdAt, deps.retentionDays),
      } satisfies StoredItem<typeof storedRunTag>,
      // A run's entries are new with it: a jobId is never reused.
      ConditionExpression: 'attribute_not_exists(PK)',
    },
  }));

/** The Put of a run's entry under its batch (`RUNBATCH#<team>#<batch>`), for its start's transaction, as a tag's. */
export const runBatchPut = (
  deps: Deps,
  run: { teamId: string; jobId: string; workflowId: string; batchId: string },
  createdAt: string,
) => ({
  Put: {
    TableName: deps.tableName,
    Item: {
      ...runBatchKey(run.teamId, run.batchId, createdAt, run.jobId),
      type: 'RunBatch',
      v: itemVersion,
      jobId: run.jobId,
      workflowId: run.workflowId,
      teamId: run.teamId,
      batchId: run.batchId,
      createdAt,
      ttl: retentionExpiry(createdAt, deps.retentionDays),
    } satisfies StoredItem<typeof storedRunBatch>,
    ConditionExpression: 'attribute_not_exists(PK)',
  },
});
