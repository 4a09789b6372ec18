/**
 * Deferred runs (DEFERRED#<deferredJobId>): the whole item, with the run start it keeps. Its list
 * entries, stream images and expiry index are ./deferred-run-entries.ts. One family of the stored
 * items: see item.ts for how every item is read and written.
 */
import * as v from 'valibot';
import { RunRequestSchema } from '../../../schemas/run-request.ts';
import { DeferredRunFieldsSchema } from './deferred-run-entries.ts';
import { storedItem } from './item.ts';
import { CheckedUploadSchema, InputFileSchema } from './runs.ts';

/** A deferred run (functions/store/deferred-runs.ts); `dispatchedAt` and `jobId` once it started. */
export const DeferredRunItemSchema = v.object({
  ...DeferredRunFieldsSchema.entries,
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
