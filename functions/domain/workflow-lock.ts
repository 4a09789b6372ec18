/**
 * One run in progress per workflow (spec 8; a start beyond it gets 409).
 *
 * - A run is in progress while its stored status is `queued` or `processing` (`claimed` is only how
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

import { endStatuses, inProgressStatuses } from '../../platform/run-statuses.ts';

// Shared with the stack's stream filter, so declared in platform/; the rules on them stay here.
export { endStatuses, inProgressStatuses };

export type InProgressStatus = (typeof inProgressStatuses)[number];

export type EndStatus = (typeof endStatuses)[number];

/** Whether a run with this stored status is in progress (and so holds its workflow's lock). */
export const isInProgress = (status: unknown): status is InProgressStatus =>
  inProgressStatuses.includes(status as InProgressStatus);

/** The lock item's attributes beside its key: the run that holds it, and since when (ISO 8601). */
export const workflowLock = (jobId: string, since: string) => ({ type: 'WorkflowLock' as const, jobId, since });

/**
 * A run that ended while a model step was in flight (cancelled, stopped, failed elsewhere) keeps
 * its workflow's lock and its whole hold until that step settles: a provider bills the operator
 * for work it was asked to do, so a start → cancel loop must not run more provider work at once
 * than a team's credits and one run per workflow allow (docs/decisions.md, "A run that has ended
 * takes nothing more in"). A step holds its run while it is claimed (only model steps are) and its
 * lease runs: once the lease is out its worker is gone (a node is aborted long before), and a
 * released claim (`leaseUntil` set to the epoch) holds nothing either.
 */
export interface ClaimState {
  status: string;
  attempts?: number | undefined;
  leaseUntil?: string | undefined;
}

/** Whether a step item is a live claim, which keeps an ended run's lock and hold (ISO times compare as text). */
export const holdsEndedRun = (step: ClaimState, now: Date): boolean =>
  step.status === 'processing' &&
  step.attempts !== undefined &&
  step.leaseUntil !== undefined &&
  step.leaseUntil > now.toISOString();
