import { RunStatus, StepStatus } from '../../platform/run-statuses.ts';
import type { Run } from '../../schemas/runs.ts';
import type { Deps } from '../deps.ts';
import { keyMayUseWorkflow } from '../domain/key-workflows.ts';
import { cancelStatus, isInProgress, isWaiting } from '../domain/run-lifecycle.ts';
import { RunAlreadyEndedError, RunNotFoundError } from '../errors/table.ts';
import type { RunItem } from '../store/items/runs.ts';
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

/** Who ends a run early: its caller (`POST /runs/{jobId}/cancel`), its deadline, or a replacing start. */
type EarlyEnd = 'caller' | 'deadline' | 'replace';

/**
 * One try at ending the run as read. A waiting one (queued behind another) ends `cancelled` with its
 * whole hold released; one in progress is closed (`closeRun`): a deadline ends it `cancelled`
 * whatever ran, with `endReason: "deadline"`, a caller or a replacing start `cancelled`, or
 * `stopped` once a step completed. Its webhook is queued and its providers' jobs looked at.
 * 'moved' when it changed since the read (read again); 'over' when it had ended.
 */
const endAsRead = async (deps: Deps, run: RunItem, by: EarlyEnd): Promise<'ended' | 'moved' | 'over'> => {
  const endReason = by === 'deadline' ? 'deadline' : undefined;
  if (isWaiting(run.status)) {
    if (!(await cancelWaitingRun(deps, run, endReason))) return 'moved';
    await queueWebhook(deps, run, RunStatus.cancelled);
    return 'ended';
  }
  if (!isInProgress(run.status)) return 'over';
  const status = by === 'deadline' ? RunStatus.cancelled : cancelStatus(run.stepsCompleted);
  // A step charged between the read and the write (the hold moved): read again.
  if (!(await closeRun(deps, run, status, endReason))) return 'moved';
  await queueWebhook(deps, run, status);
  await stopProviderJobs(deps, run);
  return 'ended';
};

/**
 * The cancel, the one path for every early end: the run item as read passes `visible` (else it
 * throws), then `endAsRead`. Undefined when the run had already ended (a caller's cancel answers
 * that as a 409). Retried while steps keep charging.
 */
const endEarly = async (
  deps: Deps,
  jobId: string,
  by: EarlyEnd,
  visible: (run: RunItem | undefined) => RunItem,
): Promise<RunItem | undefined> => {
  const tries = 10;
  for (let attempt = 1; attempt <= tries; attempt++) {
    const run = visible(await readRunItem(deps, jobId));
    const outcome = await endAsRead(deps, run, by);
    if (outcome === 'over') return undefined;
    if (outcome === 'ended') return run;
  }
  // Steps kept charging between each read and its write: busy, the caller tries again shortly.
  throw storageBusy('run cancel', 'raceLost', tries, new Error(`run ${jobId} kept changing while being cancelled`));
};

/** The run as read, when it is the caller's: its team's, of a workflow the key may use; else it is not found. */
const callersRun =
  (teamId: string, jobId: string, keyWorkflowIds: readonly string[]) =>
  (run: RunItem | undefined): RunItem => {
    if (!run || run.teamId !== teamId || !keyMayUseWorkflow(keyWorkflowIds, run.workflowId)) {
      throw new RunNotFoundError(jobId);
    }
    return run;
  };

/**
 * POST /runs/{jobId}/cancel (our design; the spec names `cancelled` and `stopped` but not the
 * operation): a run no step of which has finished becomes `cancelled`; one already under way
 * becomes `stopped`; one queued behind another `cancelled`, its hold released. Unfinished steps read
 * `skipped` (not started) or `unknown` (in flight), nothing more is charged or published, and the
 * webhook goes out. The unspent hold is released exactly once and the workflow's lock freed at once
 * (handed to the next queued run), unless a model step is in flight: then when it settles
 * (docs/decisions/runs.md, "A run that has ended takes nothing more in").
 */
export const cancelRun = async (
  deps: Deps,
  teamId: string,
  jobId: string,
  keyWorkflowIds: readonly string[] = [],
): Promise<Run> => {
  const ended = await endEarly(deps, jobId, 'caller', callersRun(teamId, jobId, keyWorkflowIds));
  if (!ended) throw new RunAlreadyEndedError(jobId);
  // The Run as GET /runs/{jobId} answers it, its links included (the stream then sends `done`).
  return readRunWithLinks(deps, teamId, jobId, keyWorkflowIds);
};

/**
 * A run's deadline came (functions/app/run-deadline.ts): ends it as a cancel does, `cancelled` with
 * `endReason: "deadline"` (a run still queued behind another included). True when this call ended
 * it; false when it had ended already (by its deadline's earlier message, its last step, a failure
 * or its caller), which it leaves as it is.
 */
export const cancelAtDeadline = async (deps: Deps, jobId: string): Promise<boolean> =>
  (await endEarly(deps, jobId, 'deadline', (run) => {
    if (!run) throw new RunNotFoundError(jobId);
    return run;
  })) !== undefined;

/**
 * Cancels the run a replacing start found in progress (`onConflict: "replace"`), exactly as
 * POST /runs/{jobId}/cancel would. True when this call cancelled it; false when it had ended (or is gone).
 */
export const cancelReplaced = async (deps: Deps, jobId: string): Promise<boolean> => {
  const gone = new RunNotFoundError(jobId);
  try {
    return (
      (await endEarly(deps, jobId, 'replace', (run) => {
        if (!run) throw gone;
        return run;
      })) !== undefined
    );
  } catch (error) {
    if (error === gone) return false;
    throw error;
  }
};

/**
 * A bulk cancel's turn at one run (functions/app/bulk-cancel.ts): exactly POST /runs/{jobId}/cancel
 * for the caller, without its answer. True when this call ended the run; false when it had ended,
 * or is no run the caller may cancel (the two alike, as the bulk action counts them).
 */
export const cancelForCaller = async (
  deps: Deps,
  teamId: string,
  jobId: string,
  keyWorkflowIds: readonly string[],
): Promise<boolean> => {
  try {
    return (await endEarly(deps, jobId, 'caller', callersRun(teamId, jobId, keyWorkflowIds))) !== undefined;
  } catch (error) {
    if (error instanceof RunNotFoundError) return false;
    throw error;
  }
};
