/** The rules of a bulk cancel (POST /runs/cancel) that need no I/O; functions/app/bulk-cancel.ts applies them. */
import { stepsQueue } from '../../platform/definitions.ts';
import { type BulkCancelStatus, bulkCancelStatuses } from '../../schemas/bulk-actions.ts';

/**
 * Entries one page reads (a Query's `Limit`): a page's cancels (a few writes each) end well within
 * the step executor's minute, and the page's message is all a crash costs to run again.
 */
export const bulkCancelPageSize = 100;

/** Runs of a page cancelled at once: each cancel waits on DynamoDB, not on the function's one vCPU. */
export const bulkCancelTargetLanes = 8;

/**
 * How long a delivery holds a run it is cancelling: the step executor's whole run (the steps
 * queue's consumer timeout). A page's redelivery after a failure comes after the queue's visibility
 * timeout (six times as long), so it finds the leases of the delivery that stopped run out.
 */
export const bulkTargetLeaseSeconds = stepsQueue.consumerTimeoutSeconds;

/** The statuses a filter matches: those it names, or both a run can be cancelled in. */
export const wantedStatuses = (status: readonly BulkCancelStatus[] | undefined): readonly BulkCancelStatus[] =>
  status ?? bulkCancelStatuses;

/** A body of 100 ids or one filter: 16 KB is far above either. */
export const maxBulkCancelBodyBytes = 16 * 1024;
