import * as v from 'valibot';
import { RunStatus } from '../../../platform/run-statuses.ts';
import type { Deps } from '../../deps.ts';
import { isEndStatus, runTransitions } from '../../domain/run-lifecycle.ts';
import { parseItem } from '../items/item.ts';
import { QueuedRunEntrySchema, RunItemSchema, storedRun } from '../items/runs.ts';
import { queuedRunPartition, queuedRunShards, runKey } from '../keys.ts';
import { queryAll } from '../query.ts';
import { conditionalUpdate } from '../write.ts';
import { fromCondition, statusValues } from './lifecycle-conditions.ts';

/**
 * A run the sweep may have to restart: still `queued`, with no finished step; or `ended` but not
 * settled (a model step was in flight at its end), which the sweep settles once no claim holds it.
 */
export interface QueuedRun {
  jobId: string;
  workflowId: string;
  /** Its team: the group of its re-sent messages. */
  teamId: string;
  ended: boolean;
  /** Queued behind its workflow's run in progress (`waiting`): the sweep starts the queue or ends the wait. */
  waiting: boolean;
}

/**
 * Runs started before `before` (an ISO time) that are still queued with no finished step, and runs
 * ended before it that are not settled yet (`closeRunUpdate` enters them from their end; settling
 * removes them), read from the sparse index of such runs (every shard, every page).
 */
export const queuedRunsStartedBefore = async (deps: Deps, before: string): Promise<QueuedRun[]> => {
  const runs: QueuedRun[] = [];
  for (let shard = 0; shard < queuedRunShards; shard++) {
    const entries = await queryAll(
      deps,
      {
        IndexName: 'GSI1',
        KeyConditionExpression: 'GSI1PK = :pk AND GSI1SK < :before',
        ExpressionAttributeValues: { ':pk': queuedRunPartition(shard), ':before': before },
      },
      (item) => parseItem(QueuedRunEntrySchema, item),
    );
    for (const { jobId, workflowId, teamId, status } of entries) {
      if (status === RunStatus.queued || status === RunStatus.waiting || isEndStatus(status))
        runs.push({ jobId, workflowId, teamId, ended: isEndStatus(status), waiting: status === RunStatus.waiting });
    }
  }
  return runs;
};

/**
 * Counts one refused re-send of a run still `queued` (`sweepRefusals` on its run item): the count
 * after it, or undefined when the run is no longer queued (it started or ended meanwhile).
 */
export const countSweepRefusal = async (deps: Deps, jobId: string): Promise<number | undefined> => {
  const result = await conditionalUpdate(
    deps,
    storedRun,
    runKey(jobId),
    { add: { sweepRefusals: 1 } },
    {
      ConditionExpression: fromCondition(runTransitions.countSweepRefusal),
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: statusValues(RunStatus.queued),
    },
    { ReturnValues: 'UPDATED_NEW' },
  );
  if (!result.written) return undefined;
  return parseItem(SweepRefusalsSchema, result.output.Attributes ?? {}, runKey(jobId)).sweepRefusals;
};

/** What the sweep's count returns of the run item. */
const SweepRefusalsSchema = v.required(v.pick(RunItemSchema, ['sweepRefusals']));
