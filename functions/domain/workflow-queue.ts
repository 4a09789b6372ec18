/**
 * A workflow's queue: runs started with `onConflict: "queue"` while the workflow has a run in
 * progress (functions/domain/workflow-lock.ts). Pure rules; the store is functions/store/run/queue.ts.
 *
 * - A waiting run is stored `waiting` (platform/run-statuses.ts): accepted, its estimate held from
 *   the start (every start rule answered then), but it does not hold the workflow's lock. Callers
 *   read it as `queued`, with `queuePosition` and `queuedBehind`.
 * - The lock item counts the runs waiting (`waiting`), so a start cannot slip in ahead of them and
 *   a run's end knows to hand the lock over instead of deleting it; each waiting run has an entry
 *   in the workflow's queue partition, ordered by `queueOrder`.
 * - When the run holding the lock ends, the first waiting run takes the lock and starts (`queued`,
 *   its first steps sent) at once; the dispatcher's tick is the fallback.
 * - A run waits at most `queueWaitSeconds`, or until its `startBy`: then it ends `cancelled`.
 */

/** Runs that may wait on one workflow; the next queued start is answered 409. */
export const queueCap = 100;

/** How long a queued run waits without a `startBy` (as a deferred run). */
export const queueWaitSeconds = 24 * 3600;

/** A replacing run (`onConflict: "replace"`) goes ahead of every queued run; the others in acceptance order. */
export type QueueLane = 'replace' | 'queue';

/**
 * The sort key of a waiting run's queue entry: its lane, then its place in acceptance order (the
 * lock item's count of runs accepted, which the queueing transaction is conditional on, so two runs
 * never share one), then its id.
 */
export const queueOrder = (lane: QueueLane, sequence: string, jobId: string): string =>
  `${lane === 'replace' ? '0' : '1'}#${sequence}#${jobId}`;

/**
 * Where a waiting run stands: 1 = next. `ahead` is the queue's entries before it, in order; it
 * waits for the last of them, or for the run in progress (`holder`) when it is first.
 */
export const queueStanding = (
  ahead: readonly string[],
  holder: string | undefined,
): { queuePosition: number; queuedBehind: string | undefined } => ({
  queuePosition: ahead.length + 1,
  queuedBehind: ahead.length > 0 ? ahead[ahead.length - 1] : holder,
});

/** Whether a waiting run past its `waitUntil` (ISO 8601) may no longer start at `now`. */
export const waitedTooLong = (waitUntil: string, now: Date): boolean => Date.parse(waitUntil) <= now.getTime();
