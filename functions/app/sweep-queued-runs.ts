import type { Deps } from '../deps.ts';
import { rootNodeIds } from '../domain/workflow-graph.ts';
import { canvasOf } from '../store/canvases.ts';
import { queuedRunsStartedBefore } from '../store/queued-runs.ts';
import { sendStepMessages } from '../store/runs.ts';

/** A run still queued this long after its start has probably lost its root-step messages. */
export const sweepAfterSeconds = 120;

/**
 * Finds runs committed but left `queued` with no finished step (their root-step messages were
 * lost after the commit) and sends their root steps again. Re-sending is safe: a step already
 * taken ignores the duplicate. Also sends them for a run that ended with a model step in flight
 * and is still not settled two minutes later (that step's worker died: its lease is out), and the
 * step executor, finding the run ended, settles it. Reads only the sparse index of such runs.
 */
export const sweepQueuedRuns = async (deps: Deps): Promise<string[]> => {
  const before = new Date(deps.now().getTime() - sweepAfterSeconds * 1000).toISOString();
  const resent: string[] = [];
  for (const run of await queuedRunsStartedBefore(deps, before)) {
    await sendStepMessages(deps, run, rootNodeIds(await canvasOf(deps, run.workflowId)));
    resent.push(run.jobId);
  }
  return resent;
};
