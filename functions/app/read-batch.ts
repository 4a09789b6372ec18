import type { Batch } from '../../schemas/batches.ts';
import type { Deps } from '../deps.ts';
import { listedStatus } from '../domain/run-lifecycle.ts';
import { BatchNotFoundError } from '../errors/table.ts';
import { readBatchRuns } from '../store/run-list.ts';
import type { Lister } from './list-runs.ts';

/**
 * GET /batches/{batchId}: the runs the batch started, oldest first, and how many are in each status
 * (a run waiting behind another counts `queued`, as the list reads it). A key limited to workflows
 * sees only their runs; a batch of another team, or none of whose runs is kept, is a 404.
 */
export const readBatch = async (deps: Deps, lister: Lister, batchId: string): Promise<Batch> => {
  const workflowIds = lister.workflowIds.length > 0 ? lister.workflowIds : null;
  const runs = await readBatchRuns(deps, { teamId: lister.teamId, batchId, workflowIds });
  if (runs.length === 0) throw new BatchNotFoundError(batchId);
  const counts: Batch['counts'] = {
    queued: 0,
    processing: 0,
    completed: 0,
    failed: 0,
    cancelled: 0,
    stopped: 0,
  };
  for (const run of runs) {
    counts[listedStatus(run.status)] += 1;
  }
  return { batchId, jobIds: runs.map((run) => run.jobId), counts };
};
