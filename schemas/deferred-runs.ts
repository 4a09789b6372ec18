/** Deferred runs (spec sections 2.4, 3.2, 4.6). */
import * as v from 'valibot';
import { DateTimeSchema, UuidSchema } from './common.ts';
import { jsonResponse, type OperationSpec, uuidPath } from './openapi-parts.ts';
import { DeferredRunStatusSchema, deferredRunStatuses } from './run-words.ts';
import { listErrorWords, listQueryParameters } from './runs.ts';

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

/** The named schema of the document this module holds; the key is the name under `#/components/schemas/`. */
export const deferredRunComponents = {
  DeferredRun: DeferredRunSchema,
};

/** The named schema of the list of deferred runs (the document names it after the list of runs). */
export const deferredRunListComponents = {
  ListDeferredRunsResponse: ListDeferredRunsResponseSchema,
};

/** The operations of the deferred-run routes, for the document (schemas/openapi.ts). */
export const deferredRunOperations: OperationSpec[] = [
  {
    operationId: 'ListDeferredRuns',
    tag: 'Deferred runs',
    summary: 'List deferred runs',
    description:
      'Lists the team deferred runs, newest first, each as Get a deferred run answers it, a page at a time. A ' +
      'key limited to certain workflows sees only theirs.',
    parameters: listQueryParameters(deferredRunStatuses),
    responses: { 200: jsonResponse('A page of deferred runs.', 'ListDeferredRunsResponse') },
    errorWords: listErrorWords,
  },
  {
    operationId: 'GetDeferredRun',
    tag: 'Deferred runs',
    summary: 'Get a deferred run',
    description: 'Reads a deferred run. Once `dispatched`, `jobId` is the run to read with Get a run.',
    parameters: [uuidPath('id', 'The `deferredJobId`.')],
    responses: { 200: jsonResponse('The deferred run.', 'DeferredRun') },
    errorWords: { 404: 'No such deferred run in the team.' },
  },
  {
    operationId: 'CancelDeferredRun',
    tag: 'Deferred runs',
    summary: 'Cancel a deferred run',
    description: 'Cancels a deferred run that is still `waiting`; it will not start.',
    parameters: [uuidPath('id', 'The `deferredJobId`.')],
    responses: {
      200: jsonResponse('The deferred run, now `cancelled`.', 'DeferredRun'),
      500: jsonResponse('Server failure.', 'ServerError'),
    },
    errorWords: { 404: 'No such deferred run in the team.', 409: 'The deferred run is no longer waiting.' },
  },
];
