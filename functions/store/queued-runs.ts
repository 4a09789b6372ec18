import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../deps.ts';
import { queuedRunPartition, queuedRunShards } from './keys.ts';

/** A run the sweep may have to restart: still `queued`, with no finished step. */
export interface QueuedRun {
  jobId: string;
  workflowId: string;
}

/**
 * Runs started before `before` (an ISO time) that are still queued with no finished step, read from
 * the sparse index of such runs (every shard, every page).
 */
export const queuedRunsStartedBefore = async (deps: Deps, before: string): Promise<QueuedRun[]> => {
  const runs: QueuedRun[] = [];
  for (let shard = 0; shard < queuedRunShards; shard++) {
    let cursor: Record<string, unknown> | undefined;
    do {
      const page = await deps.ddb.send(
        new QueryCommand({
          TableName: deps.tableName,
          IndexName: 'GSI1',
          KeyConditionExpression: 'GSI1PK = :pk AND GSI1SK < :before',
          ExpressionAttributeValues: { ':pk': queuedRunPartition(shard), ':before': before },
          ExclusiveStartKey: cursor,
        }),
      );
      for (const run of page.Items ?? []) {
        if (run.status === 'queued') runs.push({ jobId: run.jobId as string, workflowId: run.workflowId as string });
      }
      cursor = page.LastEvaluatedKey;
    } while (cursor);
  }
  return runs;
};
