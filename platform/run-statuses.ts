/**
 * A run's and its steps' stored statuses, declared once. They live here because the stack filters
 * on them too (the operator events' and the webhooks' stream filters in `definitions.ts`) and lib/
 * never imports functions/. Their moves and meaning (the lock, what ends a run) are
 * `functions/domain/run-lifecycle.ts`, which also checks that the public picklists name them all.
 */

/**
 * A run's stored statuses. `claimed` is only how a queued run with a started step reads. `waiting`
 * is only stored: a run accepted behind its workflow's run in progress (`onConflict: "queue"`), its
 * estimate held but not the lock; it reads as `queued` (functions/domain/workflow-queue.ts).
 */
export const RunStatus = {
  waiting: 'waiting',
  queued: 'queued',
  processing: 'processing',
  completed: 'completed',
  failed: 'failed',
  cancelled: 'cancelled',
  stopped: 'stopped',
} as const;
export type StoredRunStatus = (typeof RunStatus)[keyof typeof RunStatus];

/** A step item's stored statuses; a step without an item has not started. */
export const StepStatus = {
  processing: 'processing',
  completed: 'completed',
  failed: 'failed',
  skipped: 'skipped',
  /** It finished after its run ended: its output dropped, never charged. */
  unknown: 'unknown',
} as const;
export type StoredStepStatus = (typeof StepStatus)[keyof typeof StepStatus];

/** Stored statuses of a run in progress: it holds its workflow's lock (functions/domain/workflow-lock.ts). */
export const inProgressStatuses = [RunStatus.queued, RunStatus.processing] as const;
export type InProgressStatus = (typeof inProgressStatuses)[number];

/** The statuses that end a run and free its workflow's lock; it never moves again. */
export const endStatuses = [RunStatus.completed, RunStatus.failed, RunStatus.cancelled, RunStatus.stopped] as const;
export type EndStatus = (typeof endStatuses)[number];

/** The step statuses whose end gives a lifecycle webhook event (`step.completed`, `step.failed`). */
export const eventfulStepStatuses = [StepStatus.completed, StepStatus.failed] as const;
