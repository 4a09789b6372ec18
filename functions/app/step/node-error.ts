/**
 * What a step's node throwing leads to, as the step plan weighs it (`planNodeError`,
 * functions/domain/step-plan.ts): the step fails, is tried again after its deadline or a busy
 * provider's backoff, or its failed execution is counted and SQS hands its message back (a throw).
 * Run in its predecessor's invocation, a throw is not counted: the step loop sends its message.
 */
import type { Deps } from '../../deps.ts';
import { failureReasonOf } from '../../domain/failure-reasons.ts';
import { executionsFailedError } from '../../domain/step-attempts.ts';
import { failedAttempt, stepLogs } from '../../domain/step-history.ts';
import { type NodeErrorKind, planFailedExecution, planNodeError } from '../../domain/step-plan.ts';
import { StepFailedError } from '../../nodes/executors/types.ts';
import { SecretUnavailableError } from '../../nodes/providers/secret-refs.ts';
import { ProviderError } from '../../nodes/providers/types.ts';
import { logger } from '../../observability/logger.ts';
import type { RunItem } from '../../store/items/runs.ts';
import { type Attempt, countFailedExecution, releaseStep } from '../../store/run/index.ts';
import { type JobAttemptFacts, retryBusyProvider } from '../provider-job.ts';
import { endWithFailure, jobEnds, retryTimedOut } from './fail-step.ts';
import type { StepMessage } from './step-messages.ts';

/** What a node's throw was, in the order the plan weighs them. */
const errorKind = (error: unknown, signal: AbortSignal): NodeErrorKind => {
  if (error instanceof StepFailedError) return 'step-failed';
  if (signal.aborted) return 'deadline';
  if (error instanceof ProviderError && error.retryable) return 'busy-provider';
  return error instanceof SecretUnavailableError ? 'secret' : 'unexpected';
};

/** The step whose node threw, and what its attempt's history says. */
export interface ThrownStep {
  message: StepMessage;
  run: RunItem;
  nodeType: string;
  attempt: Attempt;
  facts: JobAttemptFacts;
  signal: AbortSignal;
  timeoutMs: number;
  /** Run in its predecessor's invocation (the step loop's next turn). */
  inline: boolean;
}

/** Carries out the plan for a node's throw; throws to have SQS redeliver the step's message. */
export const afterNodeError = async (deps: Deps, error: unknown, step: ThrownStep): Promise<undefined> => {
  const { message, run, nodeType, attempt, facts, timeoutMs } = step;
  const kind = errorKind(error, step.signal);
  const errorPlan = planNodeError(kind, { claimed: attempt !== null, inline: step.inline });
  if (errorPlan.kind === 'fail') {
    const text = kind === 'secret' ? `${nodeType}: ${(error as Error).message}` : (error as Error).message;
    const logs = error instanceof StepFailedError ? stepLogs(error.logs ?? {}) : undefined;
    return endWithFailure(deps, message, attempt, text, failureReasonOf(error), 0, { ...facts, logs });
  }
  // The step's deadline cut a synchronous call (a model's, the Python runner's): tried again later.
  if (errorPlan.kind === 'retry-deadline')
    return void (await retryTimedOut(deps, message, run, { attempt, nodeType, facts }, timeoutMs));
  // A busy provider (429, 5xx, a timeout): asked again after a backoff, never counted as a lost worker.
  if (errorPlan.kind === 'retry-busy' && attempt !== null && error instanceof ProviderError)
    return void (await retryBusyProvider(deps, message, attempt, error, nodeType, jobEnds(deps, message, facts)));
  // Run in its predecessor's invocation: not counted; the step loop sends its message instead.
  if (errorPlan.kind !== 'count-execution') throw error;
  // A failed execution, counted on the step item (a model step's claim counts it already), so a
  // message SQS handed back without running the node (a throttle) spends nothing.
  // Its entry in the step's history goes in the count's write (unclaimed) or the claim's release.
  const last = planFailedExecution(attempt ?? (facts.failures ?? 0) + 1).kind === 'fail';
  const entry = failedAttempt(
    { startedAt: facts.startedAt, endedAt: deps.now().toISOString() },
    {
      error: (error as Error).message,
      reason: failureReasonOf(error),
      retryClass: last ? 'none' : 'execution',
      ...(!last && { next: { why: 'redelivery' as const } }),
    },
    facts.at,
  );
  const failed = attempt ?? (await countFailedExecution(deps, run, message.nodeId, entry));
  const executionPlan = planFailedExecution(failed);
  if (executionPlan.kind === 'nothing') return; // another delivery finished the step meanwhile; it counts it
  if (executionPlan.kind === 'fail') {
    // The run fails visibly and the message is done: the DLQ is for messages we cannot process.
    logger.error('step failed on its last execution', { nodeId: message.nodeId, failed, error });
    // The last execution's error says why: a node that kept timing out, or code that kept throwing.
    const recorded = attempt === null;
    return endWithFailure(deps, message, attempt, executionsFailedError(failed ?? 0), failureReasonOf(error), 0, {
      ...facts,
      recorded,
    });
  }
  // SQS redelivers the message: let that delivery take the step, not drop it as a duplicate.
  await releaseStep(deps, message.jobId, message.nodeId, attempt, entry);
  throw error;
};
