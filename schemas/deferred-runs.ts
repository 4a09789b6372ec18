/** Deferred runs (spec sections 2.4, 3.2, 4.6). */
import * as v from 'valibot';
import { DateTimeSchema, UuidSchema } from './common.ts';

const deferredRunStatuses = ['waiting', 'dispatched', 'expired', 'cancelled'] as const;
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
