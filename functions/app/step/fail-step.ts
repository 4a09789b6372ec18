/**
 * A step that fails for good (its run with it), and a step whose deadline cut its node's call,
 * tried again later. Decisions: functions/domain/step-plan.ts.
 */

import type { FailureReason } from '../../../platform/alarm-rules.ts';
import { RunStatus } from '../../../platform/run-statuses.ts';
import type { StepLogs } from '../../../schemas/step-attempts.ts';
import type { Deps } from '../../deps.ts';
import { failureReasonOf } from '../../domain/failure-reasons.ts';
import { stepRetryDelaySeconds } from '../../domain/provider-jobs.ts';
import { StepTimeoutError } from '../../domain/step-attempts.ts';
import { type AttemptWhere, failedAttempt, retryWait } from '../../domain/step-history.ts';
import { failureRecordTries, planDeadlineRetry, planReread } from '../../domain/step-plan.ts';
import { logger } from '../../observability/logger.ts';
import { addCreditsCharged, countRunEnded, countStepFailed } from '../../observability/metrics.ts';
import type { RunItem } from '../../store/items/runs.ts';
import {
  type Attempt,
  abandonStep,
  countFailedExecution,
  failStep,
  queueWebhook,
  readRunAndSteps,
  settleEndedRun,
} from '../../store/run/index.ts';
import { sendDelayedStepMessage } from '../../store/run/provider-jobs.ts';
import { type JobAttemptFacts, type JobStepEnds, retryBusyProvider } from '../provider-job.ts';
import { type StepMessage, stepMessage } from './step-messages.ts';

/**
 * What the step's history says of the attempt a failure ends (functions/domain/step-history.ts):
 * when it started, where it ran and its logs; `recorded` when the write that counted it (a busy
 * provider's try, a failed execution) recorded it already.
 */
export interface FailedAttemptFacts {
  startedAt?: string | undefined;
  at?: AttemptWhere | undefined;
  logs?: StepLogs | undefined;
  recorded?: boolean | undefined;
}

/**
 * Fails the step for good and, in the same transaction, its run; both counted under `reason`.
 * `chargeHundredths`: what the step is charged all the same (a job that ran to its end).
 */
export const endWithFailure = async (
  deps: Deps,
  message: StepMessage,
  attempt: Attempt,
  error: string,
  reason: FailureReason,
  chargeHundredths = 0,
  facts: FailedAttemptFacts = {},
): Promise<undefined> => {
  const times = { startedAt: facts.startedAt, endedAt: deps.now().toISOString() };
  const history = {
    logs: facts.logs,
    attempt: facts.recorded
      ? undefined
      : failedAttempt(times, { error, reason, retryClass: 'none', chargedHundredths: chargeHundredths }, facts.at),
  };
  // The hold may move between read and write (a parallel step charged): re-read and retry.
  for (let i = 0; i < failureRecordTries; i++) {
    const run = (await readRunAndSteps(deps, message, () => []))?.run;
    const plan = planReread(run);
    if (!run || plan.kind === 'gone') return; // gone (expired): nothing left to record
    if (plan.kind === 'ended') {
      await abandonStep(deps, run, message.nodeId, attempt);
      if (plan.settle) await settleEndedRun(deps, message.jobId);
      return;
    }
    if (await failStep(deps, run, message.nodeId, attempt, error, chargeHundredths, history)) {
      countStepFailed(reason);
      addCreditsCharged(chargeHundredths);
      countRunEnded(reason);
      // The run's trail and the failed-runs-by-reason query (lib/log-queries.ts) read this line.
      logger.warn('run failed', { nodeId: message.nodeId, reason, error });
      await queueWebhook(deps, run, RunStatus.failed);
      return;
    }
  }
  throw new Error(`Could not record the failure of step ${message.nodeId}`);
};

/**
 * The ends the step path gives a provider's job (functions/app/provider-job.ts), with what it knows
 * of the attempt for the step's history (`facts`: when it started, where, the provider's tries so far).
 */
export const jobEnds = (deps: Deps, message: StepMessage, facts?: JobAttemptFacts): JobStepEnds => ({
  fail: (attempt: number, error: string, reason: FailureReason, recorded?: boolean) =>
    endWithFailure(deps, message, attempt, error, reason, 0, { ...facts, recorded }),
  ...(facts !== undefined && { facts }),
});

/**
 * A step whose deadline cut its node's synchronous call: tried again by a delayed message after a
 * jittered backoff, never left to the queue's visibility timeout (a redelivery minutes later, its
 * claim read as a lost worker). A model step counts it as one of its provider's tries (its claim
 * given back, `retryBusyProvider`); a step that is not claimed (PythonSandbox) as a failed execution
 * of its node. Past either bound the step fails as a `timeout`. Nothing is charged until a delivery
 * finishes the step, once (`finishStepItem` is conditioned on the claim, or on no end yet).
 */
export const retryTimedOut = async (
  deps: Deps,
  message: StepMessage,
  run: RunItem,
  { attempt, nodeType, facts }: { attempt: Attempt; nodeType: string; facts?: JobAttemptFacts },
  timeoutMs: number,
) => {
  const error = new StepTimeoutError(timeoutMs);
  logger.warn('step deadline cut its call; step tried again later', { nodeId: message.nodeId, timeoutMs });
  if (attempt !== null)
    return retryBusyProvider(deps, message, attempt, error, nodeType, jobEnds(deps, message, facts));
  // The entry says the wait this count leads to: the count is the failures read with the step, plus this one.
  const expected = (facts?.failures ?? 0) + 1;
  const planned = planDeadlineRetry(expected, (tries) => stepRetryDelaySeconds(tries, undefined, Math.random()));
  const entry = failedAttempt(
    { startedAt: facts?.startedAt, endedAt: deps.now().toISOString() },
    {
      error: `${nodeType}: ${error.message}`,
      reason: failureReasonOf(error),
      retryClass: planned.kind === 'retry' ? 'deadline' : 'none',
      ...(planned.kind === 'retry' && { next: retryWait(planned.delaySeconds, undefined) }),
    },
  );
  const failed = await countFailedExecution(deps, run, message.nodeId, entry);
  const plan =
    failed === expected
      ? planned
      : planDeadlineRetry(failed, (tries) => stepRetryDelaySeconds(tries, undefined, Math.random()));
  // `nothing`: another delivery finished the step meanwhile; it counts it.
  if (plan.kind === 'fail')
    return endWithFailure(
      deps,
      message,
      attempt,
      `${nodeType}: ${error.message} (after ${failed} tries)`,
      failureReasonOf(error),
      0,
      { recorded: true },
    );
  if (plan.kind === 'retry')
    await sendDelayedStepMessage(deps, stepMessage(message, message.nodeId), plan.delaySeconds);
};
