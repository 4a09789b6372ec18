/**
 * The body of POST /runs/batch (our design): 1 to 100 items, each a run start's body and its
 * target. Apart from schemas/batches.ts (its answers and operations), so the run starts, which read
 * a batch's items as their own bodies, do not build the batch's answers.
 */
import * as v from 'valibot';
import { notArray, UuidSchema } from './common.ts';
import { IdempotencyKeySchema, RunRequestSchema } from './run-request.ts';

/** The most items one batch takes: 100 answers fit one response, and one function's 10 s, with room. */
export const maxBatchItems = 100;

export const batchMessages = {
  items: `runs must hold 1 to ${maxBatchItems} items`,
  target: 'give exactly one of workflowId and agentId',
} as const;

/** What an item names besides its run start's body: what the path and header of a single start say. */
export const BatchItemTargetSchema = v.object({
  workflowId: v.optional(
    v.pipe(UuidSchema, v.description('The workflow to run (as `POST /workflows/{id}/runs`); or `agentId`.')),
  ),
  agentId: v.optional(
    v.pipe(UuidSchema, v.description('The agent whose workflow runs (as `POST /agents/{id}/runs`); or `workflowId`.')),
  ),
  idempotencyKey: v.optional(
    v.pipe(
      IdempotencyKeySchema,
      v.description(
        "This item's own `Idempotency-Key`: the same key, target and body answer as the first start did, " +
          'whether that start came in a batch or alone.',
      ),
    ),
  ),
});

/** One item: a run start's body, plus its target (`BatchItemTargetSchema`). */
export const BatchRunItemSchema = notArray(v.object({ ...BatchItemTargetSchema.entries, ...RunRequestSchema.entries }));

/** Body of POST /runs/batch as documented: 1 to 100 items. */
export const StartRunBatchRequestSchema = notArray(
  v.object({
    runs: v.pipe(
      v.array(BatchRunItemSchema),
      v.minLength(1, batchMessages.items),
      v.maxLength(maxBatchItems, batchMessages.items),
    ),
  }),
);

/**
 * What POST /runs/batch parses first: the envelope only. Each item is then read as its own run
 * start reads its body (functions/http/body.ts), so a bad item is that item's 400, not the batch's.
 */
export const BatchEnvelopeSchema = notArray(
  v.object({
    runs: v.pipe(
      v.array(v.unknown()),
      v.minLength(1, batchMessages.items),
      v.maxLength(maxBatchItems, batchMessages.items),
    ),
  }),
);
