/**
 * A deferred run's own fields, without the run start it keeps (`request`) or its inputs: what its
 * list entries, its stream images and the expiry index read. Apart from the whole item
 * (./deferred-runs.ts), whose `request` is the run contract's schema, so a reader of these builds
 * none of that. One family of the stored items: see item.ts for how every item is read and written.
 */
import * as v from 'valibot';
import { DeferredRunStatusSchema } from '../../../schemas/run-words.ts';

/** The fields of a deferred run item (./deferred-runs.ts `DeferredRunItemSchema`) up to its request, in its order. */
export const DeferredRunFieldsSchema = v.object({
  deferredJobId: v.string(),
  teamId: v.string(),
  keyId: v.string(),
  workflowId: v.string(),
  status: DeferredRunStatusSchema,
  maxMultiplier: v.number(),
  createdAt: v.string(),
  expiresAt: v.string(),
  dispatchedAt: v.nullish(v.string(), null),
  jobId: v.nullish(v.string(), null),
  /** When it left `waiting` (functions/store/deferred-runs.ts `leaveWaiting`). */
  movedAt: v.optional(v.string()),
});

/** What the operator events read of a deferred run item's stream image (functions/store/operator-event-bus.ts). */
export const DeferredRunEventImageSchema = v.pick(DeferredRunFieldsSchema, [
  'deferredJobId',
  'teamId',
  'workflowId',
  'status',
  'maxMultiplier',
  'createdAt',
  'expiresAt',
  'movedAt',
  'jobId',
]);

/** A deferred run's entry in its team's list (GSI5): the DeferredRun a caller reads, nothing more. */
export const DeferredListEntrySchema = v.pick(DeferredRunFieldsSchema, [
  'deferredJobId',
  'workflowId',
  'status',
  'maxMultiplier',
  'createdAt',
  'expiresAt',
  'dispatchedAt',
  'jobId',
]);
export type DeferredListEntry = v.InferOutput<typeof DeferredListEntrySchema>;

/** An entry of the index of waiting runs by expiry (GSI3), which projects only the id. */
export const ExpiringDeferredRunSchema = v.pick(DeferredRunFieldsSchema, ['deferredJobId']);
