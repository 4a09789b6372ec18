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
