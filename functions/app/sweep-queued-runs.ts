import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../deps.ts';
import { rootNodeIds } from '../domain/workflow-graph.ts';
import { queuedRunPartition, queuedRunShards } from '../store/keys.ts';
import { sendStepMessages } from '../store/runs.ts';
import { canvasOf } from './read-run.ts';

/** A run still queued this long after its start has probably lost its root-step messages. */
export const sweepAfterSeconds = 120;

/**
 * Finds runs committed but left `queued` with no finished step (their root-step messages were
 * lost after the commit) and sends their root steps again. Re-sending is safe: a step already
 * taken ignores the duplicate. Reads only the sparse index of such runs.
 */
export const sweepQueuedRuns = async (deps: Deps): Promise<string[]> => {
  const before = new Date(deps.now().getTime() - sweepAfterSeconds * 1000).toISOString();
  const resent: string[] = [];
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
        if (run.status !== 'queued') continue;
        const canvas = await canvasOf(deps, run.workflowId as string);
        await sendStepMessages(
          deps,
          { jobId: run.jobId as string, workflowId: run.workflowId as string },
          rootNodeIds(canvas),
        );
        resent.push(run.jobId as string);
      }
      cursor = page.LastEvaluatedKey;
    } while (cursor);
  }
  return resent;
};
