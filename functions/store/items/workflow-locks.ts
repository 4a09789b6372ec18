/**
 * A workflow's run lock (WFLOCK#<workflowId>) and its queue (WFQUEUE#<workflowId>). One family of
 * the stored items: see item.ts for how every item is read and written.
 */
import * as v from 'valibot';
import { counter, storedItem } from './item.ts';

/** The workflow's run lock (WFLOCK#<workflowId>), naming the run that holds it, and since when (for operators). */
/**
 * The workflow's run lock (WFLOCK#<workflowId>): `jobId` names the run holding it; `waiting` counts
 * the runs queued behind (functions/domain/workflow-queue.ts). With runs waiting the item outlives
 * its holder (no `jobId`) until the first of them takes it.
 */
export const WorkflowLockItemSchema = v.object({
  jobId: v.optional(v.string()),
  waiting: counter,
  /** Runs ever queued while the queue was not empty: the next one's place in acceptance order. */
  accepted: counter,
});
export const storedWorkflowLock = storedItem(WorkflowLockItemSchema, ['since']);

/** An entry of a workflow's queue (WFQUEUE#<workflowId>): the run waiting. */
export const WorkflowQueueEntrySchema = v.object({ jobId: v.string() });
export const storedWorkflowQueueEntry = storedItem(WorkflowQueueEntrySchema, ['acceptedAt']);
