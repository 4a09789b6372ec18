/**
 * The DeferredRun a caller reads, from a deferred run's item or its list entry. Apart from
 * functions/store/deferred-runs.ts, whose writers build the whole item (with the run start it
 * keeps), so the run list, which reads only list entries, builds none of the run contract.
 */
import type { DeferredRun } from '../../schemas/deferred-runs.ts';
import type { DeferredListEntry } from './items/deferred-run-entries.ts';

/** The DeferredRun a caller reads (spec 2.4), from its item or its list entry (GSI5). */
export const deferredView = (record: DeferredListEntry): DeferredRun => ({
  deferredJobId: record.deferredJobId,
  workflowId: record.workflowId,
  status: record.status,
  maxMultiplier: record.maxMultiplier,
  createdAt: record.createdAt,
  expiresAt: record.expiresAt,
  dispatchedAt: record.dispatchedAt,
  jobId: record.jobId,
});
