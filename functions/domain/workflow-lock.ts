/**
 * One run in progress per workflow (spec 8; a start beyond it gets 409).
 *
 * - A run is in progress while its stored status (platform/run-statuses.ts; the moves and
 *   `isInProgress`, `holdsEndedRun`: functions/domain/run-lifecycle.ts) is `queued` or `processing` (`claimed` is only how
 *   a queued run with a started step reads). It ends `completed`, `failed`, `cancelled` or
 *   `stopped` and never moves again.
 * - The lock is one item per workflow (`WFLOCK#<workflowId>`, functions/store/keys.ts) that names
 *   the run holding it (`workflowLock`). It exists while that run is in progress, and after its end
 *   while a model step of it is still in flight (`holdsEndedRun`): the start transaction takes it
 *   only when there is none, and the transaction that settles the run deletes it only while it
 *   still names that run. No item means the workflow is free.
 * - A start that finds the lock held is answered 409 naming the holder as `activeJobId`, before
 *   any 402 (functions/domain/admission.ts).
 */

/** The lock item's attributes beside its key: the run that holds it, and since when (ISO 8601). */
export const workflowLock = (jobId: string, since: string) => ({ type: 'WorkflowLock' as const, jobId, since });
