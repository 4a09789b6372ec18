import { StepStatus } from '../../platform/run-statuses.ts';
import type { Run } from '../../schemas/runs.ts';
import type { Deps } from '../deps.ts';
import { keyMayUseWorkflow } from '../domain/key-workflows.ts';
import { cancelStatus, isInProgress } from '../domain/run-lifecycle.ts';
import { RunAlreadyEndedError, RunNotFoundError } from '../errors/table.ts';
import { closeRun, queueWebhook, readRunItem, readRunPartition } from '../store/run/index.ts';
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
  const tries = 10;
  for (let attempt = 1; attempt <= tries; attempt++) {
    const run = await readRunItem(deps, jobId);
    if (!run || run.teamId !== teamId || !keyMayUseWorkflow(keyWorkflowIds, run.workflowId)) {
      throw new RunNotFoundError(jobId);
    }
    if (!isInProgress(run.status)) throw new RunAlreadyEndedError(jobId);
    const status = cancelStatus(run.stepsCompleted);
    // false: a step charged between the read and the write (the hold moved); read again.
    if (await closeRun(deps, run, status)) {
      await queueWebhook(deps, run, status);
      await stopProviderJobs(deps, run);
      // The Run as GET /runs/{jobId} answers it, its links included (the stream then sends `done`).
      return readRunWithLinks(deps, teamId, jobId, keyWorkflowIds);
    }
  }
  // Steps kept charging between each read and its write: busy, the caller tries again shortly.
  throw storageBusy('run cancel', 'raceLost', tries, new Error(`run ${jobId} kept changing while being cancelled`));
};
