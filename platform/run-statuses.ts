/**
 * A run's stored statuses that the stack filters on too (the operator events' stream filter in
 * `definitions.ts`), so they live here, where both the stack and the runtime can read them. Their
 * meaning (the lock, what ends a run) is `functions/domain/workflow-lock.ts`.
 */

/** Stored statuses of a run in progress: it holds its workflow's lock. */
export const inProgressStatuses = ['queued', 'processing'] as const;

/** The statuses that end a run and free its workflow's lock. */
export const endStatuses = ['completed', 'failed', 'cancelled', 'stopped'] as const;

/** The step statuses whose end gives a lifecycle webhook event (`step.completed`, `step.failed`). */
export const eventfulStepStatuses = ['completed', 'failed'] as const;
