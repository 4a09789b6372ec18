/**
 * Bulk actions (our design): POST /runs/cancel cancels many runs at once, by their ids or by a
 * filter, in the background; GET /bulk-actions/{bulkActionId} answers its progress. Responses use
 * `v.strictObject`.
 */
import * as v from 'valibot';
import { DateTimeSchema, notArray, UuidSchema } from './common.ts';
import { bulkActionNotFoundMessage } from './error-messages.ts';
import { jsonResponse, type OperationSpec, ref, uuidPath } from './openapi-parts.ts';
import { TagSchema } from './run-tags.ts';

/** Most run ids one bulk cancel names. */
export const maxBulkJobIds = 100;

/** The statuses a filter may name: the two a run can be cancelled in (a run waiting behind another is `queued`). */
export const bulkCancelStatuses = ['queued', 'processing'] as const;
export type BulkCancelStatus = (typeof bulkCancelStatuses)[number];

const JobIdsSchema = v.pipe(
  v.array(UuidSchema),
  v.minLength(1, 'name at least one run'),
  v.maxLength(maxBulkJobIds, `at most ${maxBulkJobIds} runs`),
  v.check((ids) => new Set(ids.map((id) => id.toLowerCase())).size === ids.length, 'a run is named at most once'),
  v.metadata({ uniqueItems: true }),
  v.description('The runs to cancel, by `jobId`.'),
);

/** A filter's fields; a filter gives one at least (`BulkCancelFilterSchema`). */
const filterFields = {
  workflowId: v.optional(UuidSchema),
  tag: v.optional(TagSchema),
  status: v.optional(
    v.pipe(
      v.array(v.picklist(bulkCancelStatuses)),
      v.minLength(1),
      v.maxLength(bulkCancelStatuses.length),
      v.check((statuses) => new Set(statuses).size === statuses.length, 'a status is given at most once'),
      v.metadata({ uniqueItems: true }),
    ),
  ),
  batchId: v.optional(UuidSchema),
};
export const BulkCancelFilterFieldsSchema = v.object(filterFields);

export const BulkCancelFilterSchema = v.pipe(
  // Loose, then checked: a misspelt field must refuse the filter, never widen what it cancels.
  notArray(v.looseObject(filterFields)),
  v.check(
    (filter) => Object.keys(filter).every((key) => Object.hasOwn(filterFields, key)),
    `a filter takes only ${Object.keys(filterFields).join(', ')}`,
  ),
  v.check(
    (filter) => Object.values(filter).some((value) => value !== undefined),
    'the filter needs at least one field',
  ),
  v.metadata({ minProperties: 1, additionalProperties: false }),
  v.description(
    'The runs of the team (and the waiting deferred runs) that match every field given. `status` absent: both ' +
      '`queued` and `processing`; a waiting deferred run counts as `queued`.',
  ),
);
export type BulkCancelFilter = v.InferOutput<typeof BulkCancelFilterSchema>;

/** Body of POST /runs/cancel: the runs by id, or a filter; exactly one of the two. */
export const BulkCancelRequestSchema = v.pipe(
  notArray(v.object({ jobIds: v.optional(JobIdsSchema), filter: v.optional(BulkCancelFilterSchema) })),
  v.check((body) => (body.jobIds === undefined) !== (body.filter === undefined), 'give either jobIds or filter'),
  v.metadata({ minProperties: 1, maxProperties: 1 }),
);
export type BulkCancelRequest = v.InferOutput<typeof BulkCancelRequestSchema>;

export const BulkActionAcceptedSchema = v.strictObject({ bulkActionId: UuidSchema });

export const bulkActionStatuses = ['running', 'done'] as const;

export const BulkActionSchema = v.strictObject({
  bulkActionId: UuidSchema,
  action: v.picklist(['cancel']),
  status: v.picklist(bulkActionStatuses),
  matched: v.pipe(v.number(), v.integer(), v.description('Runs taken up so far: cancelled + skipped + failed.')),
  cancelled: v.pipe(v.number(), v.integer(), v.description('Runs (and deferred runs) this action ended.')),
  skipped: v.pipe(
    v.number(),
    v.integer(),
    v.description('Runs that had ended (or were no run of the team) when their turn came: nothing done.'),
  ),
  failed: v.pipe(v.number(), v.integer(), v.description('Runs the action could not cancel (storage kept busy).')),
  createdAt: DateTimeSchema,
  finishedAt: v.nullable(DateTimeSchema),
});
export type BulkAction = v.InferOutput<typeof BulkActionSchema>;

/** 404 of GET /bulk-actions/{bulkActionId}: unknown, or another team's (the same answer). */
export const BulkActionNotFoundErrorSchema = v.strictObject({ error: v.literal(bulkActionNotFoundMessage) });

export const bulkActionComponents = {
  BulkCancelRequest: BulkCancelRequestSchema,
  BulkActionAccepted: BulkActionAcceptedSchema,
  BulkAction: BulkActionSchema,
  BulkActionNotFoundError: BulkActionNotFoundErrorSchema,
};

const tag = 'Runs';

export const bulkActionOperations: OperationSpec[] = [
  {
    operationId: 'CancelRuns',
    tag,
    summary: 'Cancel many runs',
    description:
      'Cancels up to 100 runs named by `jobIds`, or every run of the team a `filter` matches (any number, in pages), ' +
      'each by the rules of `POST /runs/{jobId}/cancel`; waiting deferred runs the filter matches are cancelled too. ' +
      'It runs in the background: follow it with `GET /bulk-actions/{bulkActionId}`.',
    requestBody: { required: true, content: { 'application/json': { schema: ref('BulkCancelRequest') } } },
    responses: {
      202: jsonResponse('The action is under way.', 'BulkActionAccepted'),
      500: jsonResponse('Server failure.', 'ServerError'),
    },
    errorWords: {
      400: 'Neither or both of `jobIds` and `filter`, no filter field, more than 100 ids, or a field invalid.',
      413: 'The body is over 16 KB.',
    },
  },
  {
    operationId: 'GetBulkAction',
    tag,
    summary: 'Get a bulk action',
    description: 'Its progress: `running` until every run it matched is counted, then `done`.',
    parameters: [uuidPath('bulkActionId', 'The `bulkActionId` `POST /runs/cancel` answered.')],
    responses: { 200: jsonResponse('The action and its counts.', 'BulkAction') },
    errorWords: { 404: "No such bulk action in the key's team." },
  },
];
