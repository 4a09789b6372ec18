/**
 * What the OpenAPI document says of each error of the table (functions/errors/table.ts) beyond its
 * status: the contract's schemas for its body and the routes that answer it (and, where an
 * operation has no words of its own for its status, a sentence). Kept here, beside the document,
 * and not in the rows every handler imports: a handler answers an error from its row alone, so it
 * never builds these schemas or the route table.
 *
 * `errorDocs` is keyed by the rows' names and each entry's schemas are held to its row's body type,
 * so a row without an entry, an entry without a row, or a body its schemas do not accept is a type
 * error. test/errors.test.ts checks at run time that every body parses with one of its schemas.
 */
import type * as v from 'valibot';
import { type Route, type RouteId, routes } from '../../platform/routes.ts';
import { BulkActionNotFoundErrorSchema } from '../../schemas/bulk-actions.ts';
import { DeliveryPendingErrorSchema } from '../../schemas/deliveries.ts';
import * as bodies from '../../schemas/errors.ts';
import { FileNotAcceptedErrorSchema } from '../../schemas/files.ts';
import type { DocumentedError } from '../../schemas/openapi.ts';
import { RunValidationFailedSchema } from '../../schemas/runs.ts';
import {
  TooManyWebhookEndpointsErrorSchema,
  WebhookDeliveryNotFoundErrorSchema,
  WebhookEndpointNotFoundErrorSchema,
} from '../../schemas/webhook-endpoints.ts';
import { WorkflowValidationFailedSchema } from '../../schemas/workflows.ts';
import type { BodyOf } from '../errors/define.ts';
import type * as table from '../errors/table.ts';
import { errorTable } from '../http/error-map.ts';

/** One error's entry: its body schemas, the routes that answer it, and its words, if any. */
export interface ErrorDoc<TBody> {
  /**
   * The body schemas of the contract (schemas/), each one of the OpenAPI document's components (a
   * schema the document does not name yet joins them under its export name in schemas/errors.ts).
   */
  schemas: readonly v.GenericSchema[];
  /** The routes that answer it, whose operations in the OpenAPI document list its bodies under its status. */
  routes: readonly RouteId[];
  /**
   * A sentence for the document, after the operation's own words for its status (schemas/openapi.ts);
   * needed where an operation answers its status with no words of its own.
   */
  described?: string;
  /** Type only, never set: holds the row's body (`TBody`) to what the schemas accept. */
  readonly accepts?: (body: TBody) => void;
}

/** An entry whose schemas accept what `TSchemas` parse to. */
const doc = <const TSchemas extends readonly v.GenericSchema[]>(
  schemas: TSchemas,
  answeredBy: readonly RouteId[],
  described?: string,
): ErrorDoc<v.InferOutput<TSchemas[number]>> => ({
  schemas,
  routes: answeredBy,
  ...(described === undefined ? {} : { described }),
});

// Which routes answer an error. Where the route table says it (a key, a scope that writes, a path, a
// body), a new route answers it without a word here; the rest are named.
const routeIds = (answers: (route: Route) => boolean) => routes.filter(answers).map((route) => route.id as RouteId);
/** The routes a key calls: the key's own errors. */
const keyedRoutes = routeIds((route) => route.scope !== null);
/** The routes whose function reads or writes the table: any of them may meet contention. */
const tableRoutes = routeIds((route) => (route.grants.table?.length ?? 0) > 0);
/** The routes that read a JSON body: its errors. */
const bodyRoutes = routeIds((route) => route.body === true);
/** The routes under `path` (itself included), which all read what it names first. */
const under = (path: string) => routeIds((route) => route.path === path || route.path.startsWith(`${path}/`));
// A resume (POST /runs/{jobId}/resume) is a run start: it answers every error of one.
const runStarts: RouteId[] = ['RunWorkflow', 'RunAgent', 'ResumeRun'];
const lists: RouteId[] = ['ListRuns', 'ListDeferredRuns'];
// An estimate resolves the workflow as a start does and answers its 404s and its 403 itself; the
// start's other refusals are in its 200 (`refusal`), not answered.
const estimates: RouteId[] = ['EstimateWorkflowRun', 'EstimateAgentRun'];
/** The routes of one workflow's versions and status: its 404 (a workflow outside a limited key's reads the same). */
const workflowRoutes: RouteId[] = ['UpdateWorkflow', 'SetWorkflowStatus', 'ListWorkflowVersions', 'GetWorkflowVersion'];

/** Every row's entry, by the row's name: its body schemas must accept the body its row answers. */
export const errorDocs: { readonly [Name in keyof typeof table]: ErrorDoc<BodyOf<(typeof table)[Name]>> } = {
  UnauthorizedError: doc([bodies.UnauthorizedErrorSchema], keyedRoutes),
  ScopeNotPermittedError: doc([bodies.ScopeNotPermittedErrorSchema], keyedRoutes),
  RateLimitedError: doc([bodies.RateLimitExceededErrorSchema], keyedRoutes),
  TooManyStreamsError: doc([bodies.TooManyStreamsErrorSchema], ['GetRunEvents']),
  TooManyRunStreamsError: doc([bodies.TooManyRunStreamsErrorSchema], ['GetRunEvents']),
  CreateWorkflowNotPermittedError: doc([bodies.CreateWorkflowNotPermittedErrorSchema], ['CreateWorkflow']),
  WorkflowNotPermittedError: doc(
    [bodies.WorkflowNotPermittedErrorSchema],
    [...runStarts, ...estimates, 'CreateWebhookEndpoint', 'UpdateWorkflow', 'SetWorkflowStatus'],
  ),
  UsageNotPermittedError: doc([bodies.UsageNotPermittedErrorSchema], ['GetUsage']),
  InvalidQueryError: doc(
    [bodies.InvalidQueryErrorSchema],
    [...lists, 'GetRun', 'ListWebhookEndpointDeliveries', 'GetUsage', 'ListWorkflowVersions'],
  ),
  InvalidCursorError: doc([bodies.InvalidCursorErrorSchema], [...lists, 'ListWorkflowVersions']),
  PayloadTooLargeError: doc([bodies.PayloadTooLargeErrorSchema], bodyRoutes),
  WorkflowTooLargeToStoreError: doc([bodies.PayloadTooLargeErrorSchema], ['CreateWorkflow', 'UpdateWorkflow']),
  NameRequiredError: doc([bodies.NameRequiredErrorSchema], ['CreateWorkflow', 'UpdateWorkflow']),
  StepsRequiredError: doc([bodies.StepsRequiredErrorSchema], ['CreateWorkflow', 'UpdateWorkflow']),
  AgentOrProjectRequiredError: doc([bodies.AgentOrProjectRequiredErrorSchema], ['CreateWorkflow', 'UpdateWorkflow']),
  InvalidBodyError: doc([bodies.InvalidBodyErrorSchema], bodyRoutes),
  AgentNotFoundError: doc([bodies.AgentNotFoundErrorSchema], ['RunAgent', 'EstimateAgentRun']),
  NoWorkflowForAgentError: doc([bodies.NoWorkflowForAgentErrorSchema], ['RunAgent', 'EstimateAgentRun']),
  WorkflowNotFoundError: doc(
    [bodies.WorkflowNotFoundErrorSchema],
    [...runStarts, ...estimates, 'GetWorkflow', ...workflowRoutes],
  ),
  WorkflowVersionNotFoundError: doc(
    [bodies.WorkflowVersionNotFoundErrorSchema],
    [...runStarts, ...estimates, 'GetWorkflowVersion'],
  ),
  CanvasNotFoundError: doc([bodies.CanvasNotFoundErrorSchema], [...runStarts, ...estimates, 'GetWorkflow']),
  AgentOrProjectNotFoundError: doc([bodies.AgentOrProjectNotFoundErrorSchema], ['CreateWorkflow']),
  RunNotFoundError: doc([bodies.RunNotFoundErrorSchema], under('/runs/{jobId}')),
  StepNotFoundError: doc([bodies.StepNotFoundErrorSchema], ['GetRunStep']),
  BatchNotFoundError: doc([bodies.BatchNotFoundErrorSchema], under('/batches/{batchId}')),
  DeferredRunNotFoundError: doc([bodies.DeferredRunNotFoundErrorSchema], under('/deferred-runs/{id}')),
  FileLinkNotFoundError: doc([bodies.FileLinkNotFoundErrorSchema], ['GetFileLink']),
  FileNotFoundError: doc([bodies.FileNotFoundErrorSchema], under('/files/{fileId}')),
  RunInProgressError: doc([bodies.RunInProgressErrorSchema], runStarts),
  QueueFullError: doc([bodies.QueueFullErrorSchema], runStarts),
  RunAlreadyEndedError: doc([bodies.RunAlreadyEndedErrorSchema], ['CancelRun']),
  RunNotResumableError: doc([bodies.RunNotResumableErrorSchema], ['ResumeRun']),
  ProviderWebhookRefusedError: doc([bodies.ProviderWebhookRefusedErrorSchema], ['ProviderWebhook']),
  ProviderJobUnknownError: doc([bodies.ProviderJobUnknownErrorSchema], ['ProviderWebhook']),
  DeferredRunNotWaitingError: doc([bodies.DeferredRunNotWaitingErrorSchema], ['CancelDeferredRun']),
  DeliveryPendingError: doc([DeliveryPendingErrorSchema], ['RedeliverWebhook', 'RedeliverWebhookEndpointDelivery']),
  TooManyRedeliveriesError: doc(
    [bodies.TooManyRedeliveriesErrorSchema],
    ['RedeliverWebhook', 'RedeliverWebhookEndpointDelivery'],
  ),
  UnknownNodeTypeError: doc([bodies.UnknownNodeTypeErrorSchema], ['CreateWorkflow', 'UpdateWorkflow']),
  WorkflowValidationFailedError: doc([WorkflowValidationFailedSchema], ['CreateWorkflow', 'UpdateWorkflow']),
  UnknownInputKeysError: doc([bodies.UnknownInputKeysErrorSchema], runStarts),
  InputFileNotUsableError: doc([bodies.InputFileNotUsableErrorSchema], runStarts),
  TooManyFileInputsError: doc([bodies.TooManyFileInputsErrorSchema], runStarts),
  StorageQuotaReachedError: doc(
    [bodies.StorageQuotaReachedErrorSchema],
    [...runStarts, 'CreateFile'],
    'The team holds its storage quota (uploads, input copies, output files)',
  ),
  CallbackUrlInvalidError: doc([bodies.CallbackUrlInvalidErrorSchema], [...runStarts, ...estimates]),
  StartByOutOfRangeError: doc([bodies.StartByOutOfRangeErrorSchema], ['RunWorkflow', 'RunAgent']),
  RunValidationFailedError: doc([RunValidationFailedSchema], runStarts),
  ProviderNotAvailableError: doc([bodies.ProviderNotAvailableErrorSchema], runStarts),
  IdempotencyKeyReusedError: doc([bodies.IdempotencyKeyReusedErrorSchema], [...runStarts, 'StartRunBatch']),
  FileNotAcceptedError: doc([FileNotAcceptedErrorSchema], ['CreateFile']),
  RunRefusedError: doc(
    [
      bodies.InsufficientCreditsErrorSchema,
      bodies.ProjectHardCapExceededErrorSchema,
      bodies.PerStepLimitErrorSchema,
      bodies.MonthlyCreditCapReachedErrorSchema,
    ],
    runStarts,
  ),
  MonthlyCapUnverifiableError: doc([bodies.MonthlyCapUnverifiableErrorSchema], runStarts),
  // Every route that reads the table: a read may be throttled too (functions/store/read.ts).
  StorageBusyError: doc([bodies.StorageBusyErrorSchema], tableRoutes),
  WebhookEndpointNotFoundError: doc([WebhookEndpointNotFoundErrorSchema], under('/webhook-endpoints/{endpointId}')),
  WebhookDeliveryNotFoundError: doc([WebhookDeliveryNotFoundErrorSchema], ['RedeliverWebhookEndpointDelivery']),
  TooManyWebhookEndpointsError: doc([TooManyWebhookEndpointsErrorSchema], ['CreateWebhookEndpoint']),
  BulkActionNotFoundError: doc([BulkActionNotFoundErrorSchema], ['GetBulkAction']),
};

/** The rows as the document reads them, in the table's order: each row's status and Retry-After, with its entry. */
export const documentedErrors: readonly DocumentedError[] = errorTable.map((row) => {
  const entry = (errorDocs as Readonly<Record<string, ErrorDoc<never>>>)[row.error.name];
  if (!entry) throw new Error(`${row.error.name} has no entry in functions/docs/error-docs.ts`);
  return {
    status: row.status,
    schemas: entry.schemas,
    routes: entry.routes,
    ...(row.retryAfter === undefined ? {} : { retryAfter: row.retryAfter }),
    ...(entry.described === undefined ? {} : { described: entry.described }),
  };
});
