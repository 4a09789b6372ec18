/**
 * Deferred runs (DEFERRED#<deferredJobId>), their list entries and their expiry index. One family
 * of the stored items: see item.ts for how every item is read and written.
 */
import * as v from 'valibot';
import { DeferredRunSchema } from '../../../schemas/deferred-runs.ts';
import { RunRequestSchema } from '../../../schemas/runs.ts';
import { storedItem } from './item.ts';
import { CheckedUploadSchema, InputFileSchema } from './runs.ts';

/** A deferred run (functions/store/deferred-runs.ts); `dispatchedAt` and `jobId` once it started. */
export const DeferredRunItemSchema = v.object({
  deferredJobId: v.string(),
  teamId: v.string(),
  keyId: v.string(),
  workflowId: v.string(),
  status: DeferredRunSchema.entries.status,
  maxMultiplier: v.number(),
  createdAt: v.string(),
  expiresAt: v.string(),
  dispatchedAt: v.nullish(v.string(), null),
  jobId: v.nullish(v.string(), null),
  /** When it left `waiting` (functions/store/deferred-runs.ts `leaveWaiting`). */
  movedAt: v.optional(v.string()),
  /** The run start as the caller sent it, parsed then. */
  request: RunRequestSchema,
  /** The batch that created it (POST /runs/batch), if any: the run it becomes carries it too. */
  batchId: v.optional(v.string()),
  /** Copies made when it was deferred, by a deferred run stored before copies were made at dispatch; the run keeps them. */
  inputFiles: v.optional(v.record(v.string(), InputFileSchema), {}),
  /** The uploads its `inputs` named, as checked when it was deferred: copied for the run it becomes, at dispatch. */
  inputUploads: v.optional(v.record(v.string(), CheckedUploadSchema), {}),
});
export type DeferredRunItem = v.InferOutput<typeof DeferredRunItemSchema>;

export const storedDeferredRun = storedItem(DeferredRunItemSchema);

/** What the operator events read of a deferred run item's stream image (functions/store/operator-event-bus.ts). */
export const DeferredRunEventImageSchema = v.pick(DeferredRunItemSchema, [
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
export const DeferredListEntrySchema = v.pick(DeferredRunItemSchema, [
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
export const ExpiringDeferredRunSchema = v.pick(DeferredRunItemSchema, ['deferredJobId']);
