/** Deferred runs (spec sections 2.4, 3.2, 4.6). */
import * as v from 'valibot';
import { DateTimeSchema, UuidSchema } from './common.ts';

export const deferredRunStatuses = ['waiting', 'dispatched', 'expired', 'cancelled'] as const;
const DeferredRunStatusSchema = v.picklist(deferredRunStatuses);
export type DeferredRunStatus = v.InferOutput<typeof DeferredRunStatusSchema>;

/** 200 of GET /deferred-runs/{id} and of DELETE /deferred-runs/{id}. */
export const DeferredRunSchema = v.strictObject({
  deferredJobId: UuidSchema,
  workflowId: UuidSchema,
  status: DeferredRunStatusSchema,
  maxMultiplier: v.number(),
  createdAt: DateTimeSchema,
  expiresAt: v.nullable(DateTimeSchema),
  dispatchedAt: v.nullable(DateTimeSchema),
  /** The run it became, once `dispatched`. */
  jobId: v.nullable(UuidSchema),
});
export type DeferredRun = v.InferOutput<typeof DeferredRunSchema>;

/**
 * 200 of GET /deferred-runs: newest first, at most `limit`. Each is the DeferredRun as GET
 * /deferred-runs/{id} answers it (it holds no request, inputs or callback).
 */
export const ListDeferredRunsResponseSchema = v.strictObject({
  deferredRuns: v.array(DeferredRunSchema),
  nextCursor: v.pipe(
    v.nullable(v.string()),
    v.description('Pass as `cursor` (with the same filters) for the next page; null on the last page.'),
  ),
});
export type ListDeferredRunsResponse = v.InferOutput<typeof ListDeferredRunsResponseSchema>;
