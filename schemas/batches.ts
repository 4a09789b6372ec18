/**
 * Batches of run starts (our design): POST /runs/batch starts up to 100 runs in one request, each
 * item answered exactly as its own run start would answer it; GET /batches/{batchId} counts the
 * runs a batch started by status. Requests use `v.object` (unknown fields are ignored), never an
 * array for one (`notArray`); responses use `v.strictObject`.
 */
import * as v from 'valibot';
import { scopeOf } from '../platform/routes.ts';
import { BatchRunItemSchema, maxBatchItems, StartRunBatchRequestSchema } from './batch-request.ts';
import { UuidSchema } from './common.ts';
import { jsonResponse, type OperationSpec, storageBusyText, uuidPath } from './openapi-parts.ts';
import { IdempotencyKeySchema } from './run-request.ts';
import { idempotencyKeyHeader, type listedRunStatuses } from './run-words.ts';
import { RunDeferredResponseSchema, RunQueuedResponseSchema, RunStartedResponseSchema } from './runs.ts';

/** An error body as an item carries it: the single start's error body, whatever its row. */
const ItemErrorSchema = v.looseObject({ error: v.string() });

/** One item's answer: its place in the batch, and the status and body its single start would have answered. */
export const BatchItemResultSchema = v.strictObject({
  index: v.pipe(v.number(), v.integer(), v.minValue(0)),
  status: v.pipe(v.number(), v.integer(), v.description('The HTTP status its single run start would answer.')),
  body: v.union([RunStartedResponseSchema, RunQueuedResponseSchema, RunDeferredResponseSchema, ItemErrorSchema]),
});

/** 200 of POST /runs/batch. */
export const StartRunBatchResponseSchema = v.strictObject({
  batchId: UuidSchema,
  results: v.array(BatchItemResultSchema),
});
export type StartRunBatchResponse = v.InferOutput<typeof StartRunBatchResponseSchema>;

const count = v.pipe(v.number(), v.integer(), v.minValue(0));

/** Every status a list shows, each counted (0 when none); a run waiting behind another counts as `queued`, as in the list. */
const BatchCountsSchema = v.strictObject({
  queued: count,
  processing: count,
  completed: count,
  failed: count,
  cancelled: count,
  stopped: count,
} satisfies Record<(typeof listedRunStatuses)[number], typeof count>);

/** 200 of GET /batches/{batchId}. */
export const BatchSchema = v.strictObject({
  batchId: UuidSchema,
  /** The runs the batch started (a deferred item's run once it started), oldest first. */
  jobIds: v.array(UuidSchema),
  counts: BatchCountsSchema,
});
export type Batch = v.InferOutput<typeof BatchSchema>;

export const batchComponents = {
  StartRunBatchRequest: StartRunBatchRequestSchema,
  BatchRunItem: BatchRunItemSchema,
  StartRunBatchResponse: StartRunBatchResponseSchema,
  BatchItemResult: BatchItemResultSchema,
  Batch: BatchSchema,
};

export const batchOperations: OperationSpec[] = [
  {
    operationId: 'StartRunBatch',
    tag: 'Runs',
    summary: 'Start a batch of runs',
    description: [
      `Starts 1 to ${maxBatchItems} runs in one request. Each item is a run start's body plus \`workflowId\` or ` +
        '`agentId` (and any field a single start takes: `defer`, `onConflict`, `metadata`, `tags`, `callbackUrl`, ' +
        '`webhookEvents`, ...). Each item is answered exactly as its own start would answer it, in order: its ' +
        'status and body in `results`. Items are independent: one refused (a 402, a 409, a 400) stops no other, ' +
        'and each accepted item holds its own estimate. The answer is 200 whatever the items answered.',
      'The batch counts once against the key rate limit; each accepted run counts against the monthly credit ' +
        'cap as a single start does. Every run it starts carries `batchId` (Get a run shows it); Get a batch ' +
        'counts them by status and List runs lists them (`batchId`).',
      `An \`${idempotencyKeyHeader}\` on the batch replays the whole answer to the same batch within 24 hours ` +
        '(422 for another body). Each item may carry its own `idempotencyKey`, which works as on a single start ' +
        '(the same key, target and body answer as the first start did).',
      '`Prefer: wait` is not honoured: read each run, or wait on it, by its `jobId`.',
    ].join('\n\n'),
    parameters: [
      {
        name: idempotencyKeyHeader,
        in: 'header',
        required: false,
        description:
          'Caller-chosen key for the whole batch: the same key and body within 24 hours answer as the first.',
        schema: IdempotencyKeySchema,
      },
    ],
    requestBody: {
      required: true,
      description: `1 to ${maxBatchItems} run starts.`,
      content: { 'application/json': { schema: { $ref: '#/components/schemas/StartRunBatchRequest' } } },
    },
    responses: {
      200: jsonResponse("Each item's answer, in order.", 'StartRunBatchResponse'),
      500: jsonResponse('Server failure.', 'ServerError'),
    },
    errorWords: {
      400: `The body is not JSON, \`runs\` is not an array of 1 to ${maxBatchItems} items. (A bad item is that item's own 400.)`,
      413: 'The body is larger than 1 MiB.',
      403: `The key lacks \`${scopeOf('StartRunBatch')}\`.`,
      422: `The \`${idempotencyKeyHeader}\` was used with another batch.`,
      503: storageBusyText,
    },
  },
  {
    operationId: 'GetBatch',
    tag: 'Runs',
    summary: 'Get a batch',
    description:
      'The runs a batch started (`jobIds`, oldest first) and how many are in each status. A deferred item ' +
      'counts once its run has started. Reading never spends credits.',
    parameters: [uuidPath('batchId', 'The `batchId` the batch answered.')],
    responses: { 200: jsonResponse('The batch.', 'Batch') },
    errorWords: { 404: 'No such batch in the team (or none of its runs is kept any more).' },
  },
];
