import { RunStatus } from '../../platform/run-statuses.ts';
import type { Deps } from '../deps.ts';
import { readyWhenDone } from '../domain/canvas-order.ts';
import { waitedTooLong } from '../domain/workflow-queue.ts';
import { logger } from '../observability/logger.ts';
import { countRunEnded, countStepFailed } from '../observability/metrics.ts';
import { canvasOf } from '../store/canvases.ts';
import { MessagesRefusedError } from '../store/queues.ts';
import {
  cancelWaitingRun,
  countSweepRefusal,
  failStep,
  type QueuedRun,
  queuedRunsStartedBefore,
  queueWebhook,
  readRunItem,
  sendStepMessages,
  settleEndedRun,
  startNextQueued,
} from '../store/run/index.ts';

/** A run still queued this long after its start has probably lost its root-step messages. */
export const sweepAfterSeconds = 120;

/**
 * Passes (one a minute) whose re-send SQS refuses, message by message, before the run is failed.
 * A refused message is refused again as it is, so waiting longer only keeps the hold and the lock;
 * three passes leave room for a refusal that is not the body's. Any other failure (SQS unreachable,
 * throttled) is not counted: the run is tried again at every pass, as a lost message is.
 */
export const maxSweepRefusals = 3;

/** The error of the root step of a run failed by the sweep. */
export const unqueuableStepError = 'The step could not be queued; the run was stopped';

export interface SweepReport {
  /** Runs whose root steps were sent again. */
  resent: string[];
  /** Runs failed because their messages kept being refused. */
  failed: string[];
  /** Ended runs settled once their in-flight model step's lease ran out (its worker died). */
  settled: string[];
  /** Runs queued behind another whose wait (`startBy`, or 24 hours) ran out: `cancelled`. */
  waitEnded: string[];
  /** Queued runs started by the tick: their workflow's lock was left free with runs waiting (the fallback). */
  startedFromQueue: string[];
}

/**
 * The waiting runs' part of a pass (those accepted two minutes ago or more, from the same index):
 * cancel those whose wait ran out, and start the queue of every workflow with runs waiting whose
 * lock is free (a run end hands it over itself; this is the fallback when that end's process died
 * between the two). One GetItem of each such run. One workflow's failure never stops the others.
 */
const sweepWaitingRuns = async (deps: Deps, report: SweepReport, waitingRuns: readonly QueuedRun[]) => {
  const workflows = new Set<string>();
  for (const waiting of waitingRuns) {
    try {
      const run = await readRunItem(deps, waiting.jobId);
      if (run?.status !== RunStatus.waiting) continue; // it started or ended meanwhile
      if (run.waitUntil === undefined || !waitedTooLong(run.waitUntil, deps.now())) {
        workflows.add(waiting.workflowId);
        continue;
      }
      if (await cancelWaitingRun(deps, run)) {
        report.waitEnded.push(waiting.jobId);
        await queueWebhook(deps, run, RunStatus.cancelled);
      }
    } catch (error) {
      logger.warn('a waiting run’s end was left to the next pass', { jobId: waiting.jobId, error: error as Error });
    }
  }
  for (const workflowId of workflows) {
    try {
      const started = await startNextQueued(deps, workflowId);
      if (started !== undefined) report.startedFromQueue.push(started);
    } catch (error) {
      logger.warn('a queue was left to the next pass', { workflowId, error: error as Error });
    }
  }
};

/**
 * Counts a refused re-send of the run and, at `maxSweepRefusals`, fails it as one failed step does:
 * its first root step `failed` with `unqueuableStepError`, the run `failed`, its hold released and
 * its workflow's lock freed, in one transaction; then its webhook. True when this pass failed it.
 */
const refused = async (deps: Deps, jobId: string, rootId: string, error: MessagesRefusedError) => {
  const refusals = await countSweepRefusal(deps, jobId);
  logger.warn('the sweep’s re-send was refused', { jobId, refusals, codes: error.codes });
  if (refusals === undefined || refusals < maxSweepRefusals) return false;
  const run = await readRunItem(deps, jobId);
  if (run?.status !== RunStatus.queued || !(await failStep(deps, run, rootId, null, unqueuableStepError))) return false;
  // SQS refused the step's message as it is: ours to look at, whatever the step would have done.
  countStepFailed('code');
  countRunEnded('code');
  await queueWebhook(deps, run, RunStatus.failed);
  return true;
};

/**
 * Finds runs committed but left `queued` with no finished step (their root-step messages were
 * lost after the commit) and sends their root steps again. Re-sending is safe: a step already
 * taken ignores the duplicate. Also settles a run that ended with a model step in flight and is
 * still not settled two minutes later (that step's worker died), once no live claim holds it: its
 * hold, spend and lock are released there, not through messages. Reads only the sparse index of
 * such runs. One
 * run's failure never stops the others' re-send; a run whose messages SQS keeps refusing is failed
 * (`maxSweepRefusals`).
 */
export const sweepQueuedRuns = async (deps: Deps): Promise<SweepReport> => {
  const before = new Date(deps.now().getTime() - sweepAfterSeconds * 1000).toISOString();
  const report: SweepReport = { resent: [], failed: [], settled: [], waitEnded: [], startedFromQueue: [] };
  const waitingRuns: QueuedRun[] = [];
  for (const run of await queuedRunsStartedBefore(deps, before)) {
    if (run.waiting) {
      waitingRuns.push(run);
      continue;
    }
    if (run.ended) {
      if (await settleEndedRun(deps, run.jobId)) report.settled.push(run.jobId);
      continue;
    }
    // Its steps ready at the start: the roots, or a resume's first steps after those it carried over
    // (its `doneSteps`, which a queued run has only from a resume).
    const item = await readRunItem(deps, run.jobId);
    if (item?.status !== RunStatus.queued) continue; // it started or ended meanwhile
    const roots = readyWhenDone(await canvasOf(deps, run.workflowId, item.workflowVersion), item.doneSteps);
    try {
      await sendStepMessages(deps, run, roots);
      report.resent.push(run.jobId);
    } catch (error) {
      if (!(error instanceof MessagesRefusedError)) {
        logger.warn('the sweep could not re-send; the next pass tries again', {
          jobId: run.jobId,
          error: error as Error,
        });
      } else if (await refused(deps, run.jobId, roots[0] as string, error)) {
        report.failed.push(run.jobId);
      }
    }
  }
  await sweepWaitingRuns(deps, report, waitingRuns);
  return report;
};
