/**
 * How many executions of a step's node may fail unexpectedly (throw, time out, or, for a model
 * step, lose their worker while it runs) before the step, and so its run, fails visibly. Counted on
 * the step item (functions/store/run/steps.ts), never from SQS's receive count: a message handed
 * back after a throttle or a crash before the node ran executed nothing and spends nothing. The
 * steps queue lets a message be received more often than this (platform/definitions.ts), so the count
 * here, not the redrive policy, decides when a step has failed.
 */
export const stepExecutionAttempts = 5;

/** The error a step fails with once its node failed `attempts` times. */
export const executionsFailedError = (attempts: number) => `Step could not be executed after ${attempts} attempts`;

/**
 * A synchronous call (a model's, the Python runner's) that its step's deadline cut: the step is
 * tried again by a delayed message after a backoff, as a busy provider is (functions/app/step/fail-step.ts),
 * never left to the queue's visibility timeout and never counted as a lost worker. Classified
 * `timeout` (functions/domain/failure-reasons.ts).
 */
export class StepTimeoutError extends Error {
  override readonly name = 'StepTimeoutError';
  /** Never a provider's `Retry-After`: the backoff alone decides the wait. */
  readonly retryAfterSeconds = undefined;
  readonly status = undefined;
  constructor(timeoutMs: number) {
    super(`no answer within the step's deadline of ${timeoutMs / 1000} s`);
  }
}
