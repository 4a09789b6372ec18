import { RunStatus, StepStatus } from '../../platform/run-statuses.ts';
import type { Run } from '../../schemas/runs.ts';
import type { Deps } from '../deps.ts';
import { keyMayUseWorkflow } from '../domain/key-workflows.ts';
import { cancelStatus, isInProgress, isWaiting } from '../domain/run-lifecycle.ts';
import { RunAlreadyEndedError, RunNotFoundError } from '../errors/table.ts';
import type { RunItem } from '../store/items.ts';
import { cancelWaitingRun, closeRun, queueWebhook, readRunItem, readRunPartition } from '../store/run/index.ts';
import { sendDelayedStepMessage } from '../store/run/provider-jobs.ts';
import { storageBusy } from '../store/write.ts';
import { readRunWithLinks } from './read-run.ts';

/**
 * Each step of the run waiting on a provider's job gets a look now (functions/app/provider-job.ts):
 * it finds the run ended, cancels the job at the provider and gives the step up, which lets the
 * run settle. Without it the job's next poll (at most 2 minutes away) would do the same.
 */
const stopProviderJobs = async (deps: Deps, run: { jobId: string; workflowId: string; teamId: string }) => {
  const { steps } = await readRunPartition(deps, run.jobId);
  for (const step of steps) {
    if (step.status !== StepStatus.processing || step.providerJob?.id === undefined) continue;
    await sendDelayedStepMessage(
      deps,
      { jobId: run.jobId, workflowId: run.workflowId, teamId: run.teamId, nodeId: step.nodeId, check: 'look' },
      0,
    );
  }
};

/**
 * One try at cancelling the run as read: a waiting one (queued behind another) ends `cancelled` with
 * its whole hold released; one in progress is closed (`closeRun`), its webhook queued and its
 * providers' jobs looked at. False when it moved since the read (read again); RunAlreadyEndedError
 * when it has ended.
 */
const cancelAsRead = async (deps: Deps, run: RunItem): Promise<boolean> => {
  if (isWaiting(run.status)) {
    if (!(await cancelWaitingRun(deps, run))) return false;
    await queueWebhook(deps, run, RunStatus.cancelled);
    return true;
  }
  if (!isInProgress(run.status)) throw new RunAlreadyEndedError(run.jobId);
  const status = cancelStatus(run.stepsCompleted);
  // false: a step charged between the read and the write (the hold moved); read again.
  if (!(await closeRun(deps, run, status))) return false;
  await queueWebhook(deps, run, status);
  await stopProviderJobs(deps, run);
  return true;
};

const cancelTries = 10;

/**
 * Cancels the run a replacing start found in progress (`onConflict: "replace"`), exactly as
 * POST /runs/{jobId}/cancel would. True when this call cancelled it; false when it had ended.
 */
export const cancelReplaced = async (deps: Deps, jobId: string): Promise<boolean> => {
  for (let attempt = 1; attempt <= cancelTries; attempt++) {
    const run = await readRunItem(deps, jobId);
    if (!run) return false;
    try {
      if (await cancelAsRead(deps, run)) return true;
    } catch (error) {
      if (error instanceof RunAlreadyEndedError) return false;
      throw error;
    }
  }
  throw storageBusy(
    'run replace',
    'raceLost',
    cancelTries,
    new Error(`run ${jobId} kept changing while being replaced`),
  );
};

/**
 * POST /runs/{jobId}/cancel (our design; the spec names `cancelled` and `stopped` but not the
 * operation): a run no step of which has finished becomes `cancelled`; one already under way
 * becomes `stopped`. Unfinished steps read `skipped` (not started) or `unknown` (in flight), nothing
 * more is charged or published, and the webhook goes out. The unspent hold is released exactly once
 * and the workflow's lock freed at once, unless a model step is in flight: then when it settles
 * (docs/decisions/runs.md, "A run that has ended takes nothing more in").
 */
export const cancelRun = async (
  deps: Deps,
  teamId: string,
  jobId: string,
  keyWorkflowIds: readonly string[] = [],
): Promise<Run> => {
  for (let attempt = 1; attempt <= cancelTries; attempt++) {
    const run = await readRunItem(deps, jobId);
    if (!run || run.teamId !== teamId || !keyMayUseWorkflow(keyWorkflowIds, run.workflowId)) {
      throw new RunNotFoundError(jobId);
    }
    if (await cancelAsRead(deps, run)) {
      // The Run as GET /runs/{jobId} answers it, its links included (the stream then sends `done`).
      return readRunWithLinks(deps, teamId, jobId, keyWorkflowIds);
    }
  }
  // Steps kept charging between each read and its write: busy, the caller tries again shortly.
  throw storageBusy(
    'run cancel',
    'raceLost',
    cancelTries,
    new Error(`run ${jobId} kept changing while being cancelled`),
  );
};
