/**
 * The words and schemas of the OpenAPI 3.1.0 document served at GET /openapi.json, built from the
 * valibot schemas so the document, request validation and TypeScript types cannot drift apart. Its
 * error responses come from the error table's rows (`describeApi(errors, nodeConfigs)`): each
 * operation lists, under each status, the bodies of the rows that name its route. A workflow step
 * is one schema per node type, its `config` the catalogue's settings of that type.
 * functions/docs/openapi.ts passes the rows and the settings in (schemas/ knows nothing of
 * functions/).
 */
import { type ConversionConfig, toJsonSchemaDefs } from '@valibot/to-json-schema';
import type {
  HeaderObject,
  OpenAPIObject,
  OperationObject,
  ParameterObject,
  PathsObject,
  ReferenceObject,
  RequestBodyObject,
  ResponseObject,
  SchemaObject,
} from 'openapi3-ts/oas31';
import * as v from 'valibot';
import { basePath, type RouteId, routeById, scopeOf } from '../platform/routes.ts';
import { UuidSchema } from './common.ts';
import { DeferredRunSchema, deferredRunStatuses, ListDeferredRunsResponseSchema } from './deferred-runs.ts';
import {
  DeliveryPendingErrorSchema,
  RedeliveryQueuedSchema,
  WebhookAttemptSchema,
  WebhookDeliveriesSchema,
} from './deliveries.ts';
import * as errors from './errors.ts';
import {
  GeneratedBySchema,
  IdempotencyKeySchema,
  idempotencyKeyHeader,
  LicenceModelSchema,
  LicenceSchema,
  ListRunsResponseSchema,
  listedRunStatuses,
  listPageLimits,
  RunDeferredResponseSchema,
  RunFileSchema,
  RunOutputSchema,
  RunRequestSchema,
  RunSchema,
  RunStartedResponseSchema,
  RunStepSchema,
  RunSummarySchema,
  RunValidationFailedSchema,
  WebhookBodySchema,
  WebhookEventSchema,
  webhookHeaderNames,
} from './runs.ts';
import {
  CreateWorkflowRequestSchema,
  CreateWorkflowResponseSchema,
  ListWorkflowsResponseSchema,
  type NodeType,
  nodeTypes,
  ValidationIssueSchema,
  WorkflowStepConfigSchema,
  WorkflowStepInputSchema,
  WorkflowStepSchema,
  WorkflowSummarySchema,
  WorkflowValidationFailedSchema,
} from './workflows.ts';

/** Every named schema of the document; the key is its name under `#/components/schemas/`. */
export const componentSchemas = {
  WorkflowSummary: WorkflowSummarySchema,
  ListWorkflowsResponse: ListWorkflowsResponseSchema,
  WorkflowStepInput: WorkflowStepInputSchema,
  /** Replaced in the document by a `oneOf` of the node types' steps (`documentedSteps`). */
  WorkflowStep: WorkflowStepSchema,
  CreateWorkflowRequest: CreateWorkflowRequestSchema,
  CreateWorkflowResponse: CreateWorkflowResponseSchema,
  ValidationIssue: ValidationIssueSchema,
  WorkflowValidationFailed: WorkflowValidationFailedSchema,
  RunRequest: RunRequestSchema,
  RunStartedResponse: RunStartedResponseSchema,
  RunDeferredResponse: RunDeferredResponseSchema,
  RunValidationFailed: RunValidationFailedSchema,
  Run: RunSchema,
  RunStep: RunStepSchema,
  RunOutput: RunOutputSchema,
  RunFile: RunFileSchema,
  Licence: LicenceSchema,
  LicenceModel: LicenceModelSchema,
  GeneratedBy: GeneratedBySchema,
  WebhookBody: WebhookBodySchema,
  DeferredRun: DeferredRunSchema,
  RunSummary: RunSummarySchema,
  ListRunsResponse: ListRunsResponseSchema,
  ListDeferredRunsResponse: ListDeferredRunsResponseSchema,
  InvalidQueryError: errors.InvalidQueryErrorSchema,
  InvalidCursorError: errors.InvalidCursorErrorSchema,
  WebhookDeliveries: WebhookDeliveriesSchema,
  WebhookAttempt: WebhookAttemptSchema,
  RedeliveryQueued: RedeliveryQueuedSchema,
  NameRequiredError: errors.NameRequiredErrorSchema,
  StepsRequiredError: errors.StepsRequiredErrorSchema,
  AgentOrProjectRequiredError: errors.AgentOrProjectRequiredErrorSchema,
  InvalidBodyError: errors.InvalidBodyErrorSchema,
  PayloadTooLargeError: errors.PayloadTooLargeErrorSchema,
  UnauthorizedError: errors.UnauthorizedErrorSchema,
  InsufficientCreditsError: errors.InsufficientCreditsErrorSchema,
  ProjectHardCapExceededError: errors.ProjectHardCapExceededErrorSchema,
  PerStepLimitError: errors.PerStepLimitErrorSchema,
  MonthlyCreditCapReachedError: errors.MonthlyCreditCapReachedErrorSchema,
  ScopeNotPermittedError: errors.ScopeNotPermittedErrorSchema,
  CreateWorkflowNotPermittedError: errors.CreateWorkflowNotPermittedErrorSchema,
  WorkflowNotPermittedError: errors.WorkflowNotPermittedErrorSchema,
  AgentOrProjectNotFoundError: errors.AgentOrProjectNotFoundErrorSchema,
  WorkflowNotFoundError: errors.WorkflowNotFoundErrorSchema,
  CanvasNotFoundError: errors.CanvasNotFoundErrorSchema,
  AgentNotFoundError: errors.AgentNotFoundErrorSchema,
  NoWorkflowForAgentError: errors.NoWorkflowForAgentErrorSchema,
  RunNotFoundError: errors.RunNotFoundErrorSchema,
  DeferredRunNotFoundError: errors.DeferredRunNotFoundErrorSchema,
  RunInProgressError: errors.RunInProgressErrorSchema,
  RunAlreadyEndedError: errors.RunAlreadyEndedErrorSchema,
  ProviderWebhookRefusedError: errors.ProviderWebhookRefusedErrorSchema,
  ProviderJobUnknownError: errors.ProviderJobUnknownErrorSchema,
  DeferredRunNotWaitingError: errors.DeferredRunNotWaitingErrorSchema,
  DeliveryPendingError: DeliveryPendingErrorSchema,
  UnknownNodeTypeError: errors.UnknownNodeTypeErrorSchema,
  UnknownInputKeysError: errors.UnknownInputKeysErrorSchema,
  CallbackUrlInvalidError: errors.CallbackUrlInvalidErrorSchema,
  ProviderNotAvailableError: errors.ProviderNotAvailableErrorSchema,
  IdempotencyKeyReusedError: errors.IdempotencyKeyReusedErrorSchema,
  RateLimitExceededError: errors.RateLimitExceededErrorSchema,
  ServerError: errors.ServerErrorSchema,
  MonthlyCapUnverifiableError: errors.MonthlyCapUnverifiableErrorSchema,
  StorageBusyError: errors.StorageBusyErrorSchema,
};

type ComponentName = keyof typeof componentSchemas;

/** An error as the document reads it: one row of the error table (functions/errors/table.ts). */
export interface DocumentedError {
  status: number;
  /** Its body schemas: each one of `componentSchemas`, or an export `<Name>Schema` of schemas/errors.ts. */
  schemas: readonly v.GenericSchema[];
  /** The routes that answer it. */
  routes: readonly RouteId[];
  /** Set when it answers `Retry-After`. */
  retryAfter?: unknown;
  /** Words for it, after the operation's own for its status. */
  described?: string;
}

/** An error body schema's name in the document: its key in `componentSchemas`, else its export name in schemas/errors.ts. */
const componentNameOf = (schema: v.GenericSchema): string => {
  const named = Object.entries(componentSchemas).find(([, component]) => component === schema);
  if (named) return named[0];
  const exported = Object.entries(errors).find(([name, value]) => value === schema && name.endsWith('Schema'));
  if (exported) return exported[0].slice(0, -'Schema'.length);
  throw new Error('an error body schema the document cannot name: export it from schemas/errors.ts as <Name>Schema');
};

/** Every named schema of the document: `componentSchemas`, then the error bodies they do not hold, by name. */
export const documentedSchemas = (documented: readonly DocumentedError[]): Record<string, v.GenericSchema> => {
  const schemas: Record<string, v.GenericSchema> = { ...componentSchemas };
  for (const schema of documented.flatMap((error) => error.schemas)) schemas[componentNameOf(schema)] = schema;
  return schemas;
};

/** A node type's settings, as the catalogue states them (`NodeSpec.configSchema`). */
export type NodeConfigSchema = v.ObjectSchema<v.ObjectEntries, v.ErrorMessage<v.ObjectIssue> | undefined>;

/** Every node type's settings: functions/docs/openapi.ts passes the catalogue's. */
export type NodeConfigSchemas = Readonly<Record<NodeType, NodeConfigSchema>>;

/** The document's name of the step of a node type. */
export const stepComponentName = (type: NodeType): string => `WorkflowStep_${type}`;

const isOptional = (entry: v.ObjectEntries[string]): boolean =>
  entry.type === 'optional' || entry.type === 'exact_optional' || entry.type === 'nullish';

/**
 * The step of one node type, for the document only: `WorkflowStepSchema` with `type` that type and
 * `config` its settings, required when one of them is (a step without it fails validation). Requests
 * are still parsed as before: the step by `WorkflowStepSchema`, its config by the graph validation
 * against the catalogue, which keeps settings it does not list; so does the document (no
 * `additionalProperties: false`). `apiInputKey` is stated as the request schema states it.
 */
const documentedStep = (type: NodeType, settings: NodeConfigSchema) => {
  const entries: v.ObjectEntries = { ...settings.entries };
  if ('apiInputKey' in entries) entries.apiInputKey = WorkflowStepConfigSchema.entries.apiInputKey;
  const config = v.pipe(
    v.object(entries),
    v.metadata({ description: `The ${type} node's settings. A setting not listed here is kept as given.` }),
  );
  return v.object({
    ...WorkflowStepSchema.entries,
    type: v.literal(type),
    config: Object.values(entries).every(isOptional) ? v.optional(config) : config,
  });
};

/**
 * The step components: `WorkflowStep_<type>` for each node type, and `WorkflowStep` a `oneOf` of
 * them discriminated by `type`, so a generated client types each step's `config` by its `type`.
 */
const documentedSteps = (nodeConfigs: NodeConfigSchemas) => {
  const steps: Record<string, v.GenericSchema> = Object.fromEntries(
    nodeTypes.map((type) => [stepComponentName(type), documentedStep(type, nodeConfigs[type])]),
  );
  const union: SchemaObject = {
    description:
      'A step: `key`, `type`, `label`, `config` and `inputs`. Its `type` decides the schema of its `config`.',
    oneOf: nodeTypes.map((type) => ref(stepComponentName(type))),
    discriminator: {
      propertyName: 'type',
      mapping: Object.fromEntries(nodeTypes.map((type) => [type, ref(stepComponentName(type)).$ref])),
    },
  };
  return { steps, union };
};

const conversion: ConversionConfig = {
  target: 'draft-2020-12',
  // `check` actions (e.g. exactly one of agentId/projectId) are stated for the document by the
  // `v.metadata` beside them.
  ignoreActions: ['check'],
  overrideRef: ({ referenceId }) => `#/components/schemas/${referenceId}`,
};

/** Converts valibot schemas to OpenAPI 3.1 schema objects (JSON Schema 2020-12). */
function toSchemaObjects<TKey extends string>(
  schemas: Record<TKey, Parameters<typeof toJsonSchemaDefs>[0][string]>,
): Record<TKey, SchemaObject> {
  // JSON Schema 2020-12 is the schema dialect of OpenAPI 3.1; the two type libraries spell it apart.
  return toJsonSchemaDefs(schemas, conversion) as Record<TKey, SchemaObject>;
}

const ref = (name: string): ReferenceObject => ({ $ref: `#/components/schemas/${name}` });

const retryAfterRef: ReferenceObject = { $ref: '#/components/headers/Retry-After' };

/** A JSON response whose body is one of the named schemas. */
function jsonResponse(description: string, ...names: [ComponentName, ...ComponentName[]]): ResponseObject {
  return namedResponse(description, names);
}

function namedResponse(description: string, names: readonly string[]): ResponseObject {
  const schema = names.length === 1 ? ref(names[0] as string) : { oneOf: names.map(ref) };
  return { description, content: { 'application/json': { schema } } };
}

function withRetryAfter(response: ResponseObject): ResponseObject {
  return { ...response, headers: { 'Retry-After': retryAfterRef } };
}

/** The 503 of every operation that writes (our design): its write met contention on every try. */
const storageBusyText =
  'The service is busy (a write met a conflicting one or throttling on every try); nothing was written. ' +
  'Try again after `Retry-After` seconds.';

/** The words of an error status every operation that answers it shares, unless it has its own. */
const sharedErrorWords: Partial<Record<number, string>> = {
  401: 'The key is missing, malformed, unknown, revoked or expired.',
  403: 'The key lacks the scope this operation needs.',
  429: 'Too many requests with this key; wait `Retry-After` seconds.',
  503: storageBusyText,
};

/** One operation's words; its method, path and scope are the route's in `platform/routes.ts`. */
interface OperationSpec {
  /** The route's `id`, also the operationId. */
  operationId: RouteId;
  tag: string;
  summary: string;
  description: string;
  parameters?: ParameterObject[];
  requestBody?: RequestBodyObject;
  /** Its answers that are no row of the error table: its successes, and its 500 when it writes. */
  responses: Record<number, ResponseObject>;
  /** Its own words for an error status it answers (else `sharedErrorWords`); the bodies are the error rows'. */
  errorWords?: Partial<Record<number, string>>;
}

const securitySchemeName = 'bearerAuth';

/**
 * The error responses of an operation: for each status of the rows that name its route, their body
 * schemas (in the rows' order, each once), described by the operation's words for that status and
 * the rows' own, with `Retry-After` when a row answers it.
 */
function errorResponses(spec: OperationSpec, documented: readonly DocumentedError[]): Record<number, ResponseObject> {
  const answered = documented.filter((error) => error.routes.includes(spec.operationId));
  const responses: Record<number, ResponseObject> = {};
  for (const status of new Set(answered.map((error) => error.status))) {
    const rows = answered.filter((error) => error.status === status);
    const names = [...new Set(rows.flatMap((error) => error.schemas.map(componentNameOf)))];
    const words = [spec.errorWords?.[status] ?? sharedErrorWords[status], ...rows.map((error) => error.described)];
    const description = words.filter((text) => text !== undefined).join(' ');
    if (description === '') {
      throw new Error(`${spec.operationId} answers ${status} without words: give its row \`described\``);
    }
    const response = namedResponse(description, names);
    responses[status] = rows.some((error) => error.retryAfter !== undefined) ? withRetryAfter(response) : response;
  }
  return responses;
}

function operation(spec: OperationSpec, documented: readonly DocumentedError[]): OperationObject {
  const { scope } = routeById(spec.operationId);
  const keyed = scope !== null;
  const responses: Record<number, ResponseObject> = { ...spec.responses, ...errorResponses(spec, documented) };
  const statuses = Object.keys(responses)
    .map(Number)
    .sort((a, b) => a - b);
  return {
    operationId: spec.operationId,
    tags: [spec.tag],
    summary: spec.summary,
    description: keyed ? `${spec.description}\n\nScope: \`${scope}\`.` : spec.description,
    security: keyed ? [{ [securitySchemeName]: [] }] : [],
    ...(spec.parameters ? { parameters: spec.parameters } : {}),
    ...(spec.requestBody ? { requestBody: spec.requestBody } : {}),
    responses: Object.fromEntries(statuses.map((status) => [String(status), responses[status]])),
  };
}

/**
 * The OpenAPI 3.1.0 document, its error responses from the error table's rows and each node type's
 * step from its settings.
 */
export function describeApi(documented: readonly DocumentedError[], nodeConfigs: NodeConfigSchemas): OpenAPIObject {
  const uuid = toSchemaObjects({ Uuid: UuidSchema }).Uuid;
  const idempotencyKey = toSchemaObjects({ IdempotencyKey: IdempotencyKeySchema }).IdempotencyKey;
  const uuidPath = (name: string, description: string): ParameterObject => ({
    name,
    in: 'path',
    required: true,
    description,
    schema: uuid,
  });

  const runStart = (subject: 'workflow' | 'agent'): OperationSpec => ({
    operationId: subject === 'workflow' ? 'RunWorkflow' : 'RunAgent',
    tag: 'Runs',
    summary: subject === 'workflow' ? 'Run a workflow' : 'Run an agent',
    description: [
      subject === 'workflow'
        ? 'Starts a run of one workflow.'
        : "Runs the agent's active workflow; if it has none active, its newest workflow. " +
          '`workflowId` in the response names the workflow that ran.',
      'The cost is estimated and held from the team credits before anything runs; each step is charged when it ' +
        'finishes. One run in progress per workflow at a time. With `defer: true` the run is queued to start ' +
        'later, when the price multiplier reaches `maxMultiplier` (answer 202).',
      `An optional \`${idempotencyKeyHeader}\` makes a retry safe: the same key with the same request (this ` +
        'endpoint, this id, the same body) within 24 hours answers as the first request did; the same key with ' +
        'another request (another body, or the other run endpoint, or another id) answers 422.',
    ].join('\n\n'),
    parameters: [
      uuidPath('id', subject === 'workflow' ? 'The workflow to run.' : 'The agent whose workflow runs.'),
      {
        name: idempotencyKeyHeader,
        in: 'header',
        required: false,
        description:
          'Caller-chosen key, one per request: the same key, endpoint, id and body within 24 hours answer as the ' +
          'first request did.',
        schema: idempotencyKey,
      },
    ],
    requestBody: {
      required: false,
      description: 'Every field is optional; an empty or missing body runs the workflow as built.',
      content: { 'application/json': { schema: ref('RunRequest') } },
    },
    responses: {
      200: jsonResponse('The run is queued and its estimate held.', 'RunStartedResponse'),
      202: jsonResponse(
        'The run is deferred (`defer: true`); not a promise that it will start.',
        'RunDeferredResponse',
      ),
      500: jsonResponse('Server failure.', 'ServerError'),
    },
    errorWords: {
      400: 'The body is not JSON or a field has the wrong type.',
      413: 'The body is larger than 64 KiB.',
      402: 'Not enough credits, the project hard cap, the per-step credit limit, or the key monthly credit cap.',
      403: `The key lacks \`${scopeOf(subject === 'workflow' ? 'RunWorkflow' : 'RunAgent')}\`, or is limited to other workflows.`,
      404:
        subject === 'workflow'
          ? 'No such workflow in the team, or it has no canvas.'
          : 'No such agent in the team, no workflow for it, or no canvas.',
      409: 'The workflow already has a run in progress.',
      422:
        'An `inputs` key matches no step, `callbackUrl` is not https, the workflow fails validation, a step ' +
        'runs only on providers this run may not use, or the `Idempotency-Key` was used with another request.',
      503:
        'The key has a monthly cap that could not be checked (the run is refused rather than started ' +
        `unmetered), or: ${storageBusyText}`,
    },
  });

  /** The query parameters of the two lists (our design): filters, page size and cursor. */
  const listParameters = (statuses: readonly string[]): ParameterObject[] => [
    {
      name: 'workflowId',
      in: 'query',
      required: false,
      description: 'Only runs of this workflow. A key limited to other workflows gets an empty page.',
      schema: uuid,
    },
    {
      name: 'status',
      in: 'query',
      required: false,
      description: 'Only runs with this status.',
      schema: { type: 'string', enum: [...statuses] },
    },
    {
      name: 'limit',
      in: 'query',
      required: false,
      description:
        'The most entries on the page. A page can hold fewer (even none) and still have a `nextCursor` when a ' +
        'filter is given: follow `nextCursor` until it is null.',
      schema: { type: 'integer', minimum: 1, maximum: listPageLimits.max, default: listPageLimits.default },
    },
    {
      name: 'cursor',
      in: 'query',
      required: false,
      description:
        'The `nextCursor` of the previous page, unchanged; send the same filters with it (it is bound to them).',
      schema: { type: 'string' },
    },
  ];
  const noDeliveriesWords =
    'No such run in the team (or in the workflows the key is limited to), or the run has no `callbackUrl`.';
  const listErrorWords = {
    400: 'A filter, `limit` or `cursor` this list does not take (a cursor of another team or other filters, or altered).',
  };

  const operations: OperationSpec[] = [
    {
      operationId: 'ListWorkflows',
      tag: 'Workflows',
      summary: 'List workflows',
      description:
        'Lists the workflows the key can run, newest change first: only the team ones, and if the key is ' +
        'limited to certain workflows, only those. No pagination: all are returned.',
      responses: {
        200: jsonResponse(
          'The workflows; empty when the team has none or the key may run none.',
          'ListWorkflowsResponse',
        ),
      },
    },
    {
      operationId: 'CreateWorkflow',
      tag: 'Workflows',
      summary: 'Create a workflow',
      description:
        'Creates a workflow from a list of steps; the service builds the canvas graph. Exactly one of `agentId` ' +
        '(add it to this agent) and `projectId` (create a new agent in this project) must be given. Keys limited ' +
        'to certain workflows cannot create workflows.',
      requestBody: { required: true, content: { 'application/json': { schema: ref('CreateWorkflowRequest') } } },
      responses: {
        201: jsonResponse('The workflow was created.', 'CreateWorkflowResponse'),
        500: jsonResponse('Server failure.', 'ServerError'),
      },
      errorWords: {
        400:
          'Missing `name` or `steps`, not exactly one of `agentId` and `projectId`, or a body that is not JSON or ' +
          'has a field of the wrong type.',
        403: `The key lacks \`${scopeOf('CreateWorkflow')}\`, or is limited to certain workflows.`,
        404: 'The agent or project is not in the team.',
        413: 'The body is larger than 256 KiB.',
        422: 'An unknown node type, or a graph failing validation (repeated step key, input naming no step, ...).',
      },
    },
    runStart('workflow'),
    runStart('agent'),
    {
      operationId: 'ListRuns',
      tag: 'Runs',
      summary: 'List runs',
      description:
        'Lists the team runs, newest first, as summaries (no steps or output: Get a run reads those), a page at a ' +
        'time. A key limited to certain workflows sees only their runs. A run reads as `queued` here until a step ' +
        'has finished (Get a run says `claimed` once a worker has taken one). Reading never spends credits.',
      parameters: listParameters(listedRunStatuses),
      responses: { 200: jsonResponse('A page of runs.', 'ListRunsResponse') },
      errorWords: listErrorWords,
    },
    {
      operationId: 'ListDeferredRuns',
      tag: 'Deferred runs',
      summary: 'List deferred runs',
      description:
        'Lists the team deferred runs, newest first, each as Get a deferred run answers it, a page at a time. A ' +
        'key limited to certain workflows sees only theirs.',
      parameters: listParameters(deferredRunStatuses),
      responses: { 200: jsonResponse('A page of deferred runs.', 'ListDeferredRunsResponse') },
      errorWords: listErrorWords,
    },
    {
      operationId: 'GetRun',
      tag: 'Runs',
      summary: 'Get a run',
      description:
        'Reads a run status, per-step status and output. Poll until `status` is `completed` or `failed`; a few ' +
        'seconds between reads is enough. Reading never spends credits.',
      parameters: [uuidPath('jobId', 'The `jobId` returned when the run started.')],
      responses: { 200: jsonResponse('The run.', 'Run') },
      errorWords: { 404: 'No such run in the team.' },
    },
    {
      operationId: 'CancelRun',
      tag: 'Runs',
      summary: 'Cancel a run',
      description:
        'Cancels a run that is `queued`, `claimed` or `processing`: its steps stop, nothing more is charged, and ' +
        'the unspent hold is released. A `callbackUrl` given at the start receives `run.cancelled`.',
      parameters: [uuidPath('jobId', 'The `jobId` returned when the run started.')],
      responses: {
        200: jsonResponse('The run, now `cancelled`.', 'Run'),
        500: jsonResponse('Server failure.', 'ServerError'),
      },
      errorWords: { 404: 'No such run in the team.', 409: 'The run has already ended.' },
    },
    {
      operationId: 'ListDeliveries',
      tag: 'Runs',
      summary: 'List webhook deliveries of a run',
      description:
        'The run-finished webhook delivery log: its latest attempts (5 at most), newest first, each with when it ' +
        'started, the callback URL host, the status code or why there was none, its duration and when the retry ' +
        'it scheduled is due; and the delivery state. `pending` with no attempt until the run ends and its first ' +
        'attempt is made.',
      parameters: [uuidPath('jobId', 'The `jobId` returned when the run started.')],
      responses: { 200: jsonResponse('The delivery log.', 'WebhookDeliveries') },
      errorWords: { 404: noDeliveriesWords },
    },
    {
      operationId: 'RedeliverWebhook',
      tag: 'Runs',
      summary: 'Redeliver the webhook of a run',
      description:
        'Queues one new attempt of the run-finished webhook, with the same `webhook-id` (receivers deduplicate on ' +
        'it), numbered after the last attempt. It is a single attempt: no retries follow it, and its answer sets ' +
        'the state (`delivered` or `failed`). Refused while the delivery is `pending`. Of concurrent requests, one ' +
        'queues an attempt and the others answer 409.',
      parameters: [uuidPath('jobId', 'The `jobId` returned when the run started.')],
      responses: {
        202: jsonResponse('One attempt is queued.', 'RedeliveryQueued'),
        500: jsonResponse('Server failure.', 'ServerError'),
      },
      errorWords: {
        404: noDeliveriesWords,
        409: 'The delivery is pending: the run has not ended, an attempt is due, or a redelivery is queued.',
      },
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
    {
      operationId: 'ProviderWebhook',
      tag: 'Provider webhooks',
      summary: "Receive an asynchronous provider's webhook",
      description:
        "Where Replicate and fal announce that a step's job ended; not for API consumers. No key: the delivery must " +
        "carry the provider's signature (Standard Webhooks for Replicate, ED25519 for fal) with a timestamp within " +
        "5 minutes, and the URL the step's token. The step then reads the job's state from the provider itself; a " +
        'replayed or duplicated delivery changes nothing.',
      parameters: [
        {
          name: 'provider',
          in: 'path',
          required: true,
          description: 'The provider key.',
          schema: { type: 'string', enum: ['replicate', 'fal'] },
        },
        uuidPath('jobId', 'The run.'),
        { name: 'nodeId', in: 'path', required: true, description: 'The step.', schema: { type: 'string' } },
        {
          name: 'token',
          in: 'path',
          required: true,
          description: "The step's webhook token.",
          schema: { type: 'string' },
        },
      ],
      requestBody: {
        required: true,
        content: { 'application/json': { schema: { type: 'object' } } },
      },
      responses: {
        202: {
          description: 'Accepted: the step looks at its job.',
          content: {
            'application/json': {
              schema: { type: 'object', required: ['accepted'], properties: { accepted: { const: true } } },
            },
          },
        },
        500: jsonResponse('Server failure.', 'ServerError'),
      },
      errorWords: {
        401: 'The signature or its timestamp does not hold.',
        404: 'No step waits on this job (a genuine one is cancelled at the provider).',
      },
    },
    {
      operationId: 'GetOpenApi',
      tag: 'API description',
      summary: 'Get this API description',
      description: 'This OpenAPI 3.1.0 document. No key needed.',
      responses: {
        200: {
          description: 'The OpenAPI 3.1.0 document.',
          content: { 'application/json': { schema: { type: 'object' } } },
        },
      },
    },
    {
      operationId: 'GetDocs',
      tag: 'API description',
      summary: 'Get the API reference page',
      description: 'This document as an interactive HTML page (Swagger UI, served by the API itself). No key needed.',
      responses: {
        200: { description: 'The reference page.', content: { 'text/html': { schema: { type: 'string' } } } },
      },
    },
    {
      operationId: 'GetDocsAsset',
      tag: 'API description',
      summary: 'Get a file of the API reference page',
      description:
        "The renderer's script and style sheet, and the page's start script; Brotli or gzip as the client accepts. No key needed.",
      parameters: [
        {
          name: 'name',
          in: 'path',
          required: true,
          description: 'The file name.',
          schema: { type: 'string', enum: ['swagger-ui-bundle.js', 'swagger-ui.css', 'docs.js'] },
        },
      ],
      responses: {
        200: {
          description: 'The file.',
          content: { 'text/javascript': { schema: { type: 'string' } }, 'text/css': { schema: { type: 'string' } } },
        },
        304: { description: 'Not modified: `If-None-Match` matched the `ETag`.' },
        404: {
          description: 'No such file.',
          content: {
            'application/json': { schema: { type: 'object', properties: { message: { type: 'string' } } } },
          },
        },
      },
    },
  ];

  const paths: PathsObject = {};
  for (const spec of operations) {
    const { path, method } = routeById(spec.operationId);
    paths[path] = { ...paths[path], [method.toLowerCase()]: operation(spec, documented) };
  }

  // The step components follow `WorkflowStep`, which becomes their `oneOf`.
  const { steps, union } = documentedSteps(nodeConfigs);
  const named: Record<string, v.GenericSchema> = {};
  for (const [name, schema] of Object.entries(documentedSchemas(documented))) {
    named[name] = schema;
    if (name === 'WorkflowStep') Object.assign(named, steps);
  }
  const schemas = { ...toSchemaObjects(named), WorkflowStep: union };

  const retryAfter: HeaderObject = {
    description: 'Seconds to wait before trying again.',
    required: true,
    schema: { type: 'integer', minimum: 0 },
  };

  return {
    openapi: '3.1.0',
    info: {
      title: 'Workflow Run API',
      version: '1.0.0',
      description:
        'List and create workflows, start runs of a workflow or an agent, read run status and output, follow ' +
        'deferred runs, and receive a signed webhook when a run ends. 1 credit = $0.01.',
    },
    servers: [{ url: basePath }],
    security: [{ [securitySchemeName]: [] }],
    tags: [{ name: 'Workflows' }, { name: 'Runs' }, { name: 'Deferred runs' }, { name: 'API description' }],
    paths,
    webhooks: {
      runFinished: {
        post: {
          operationId: 'RunFinishedWebhook',
          summary: 'Run finished',
          description:
            'Sent to the `callbackUrl` given when the run started, when the run ends. Reply with any 2xx within 8 ' +
            'seconds, or the delivery is retried (5 attempts in all; first retry after 2 minutes, doubling, at most ' +
            'an hour apart). A delivery can arrive twice: `jobId` plus `event` is the idempotency key.',
          security: [],
          parameters: [
            {
              name: webhookHeaderNames.event,
              in: 'header',
              required: true,
              schema: toSchemaObjects({ WebhookEvent: WebhookEventSchema }).WebhookEvent,
            },
            {
              name: webhookHeaderNames.signature,
              in: 'header',
              required: false,
              description:
                'Only when `callbackSecret` was given: `sha256=` followed by the hex-encoded HMAC-SHA256 of the raw ' +
                'body keyed with the secret. Compare in constant time.',
              schema: { type: 'string', pattern: '^sha256=[0-9a-f]{64}$' },
            },
          ],
          requestBody: { required: true, content: { 'application/json': { schema: ref('WebhookBody') } } },
          responses: { '2XX': { description: 'Received.' } },
        },
      },
    },
    components: {
      schemas,
      headers: { 'Retry-After': retryAfter },
      securitySchemes: {
        [securitySchemeName]: {
          type: 'http',
          scheme: 'bearer',
          description:
            'A team API key, created under Team settings, API keys: `Authorization: Bearer <API_KEY>`. Keep it on ' +
            'a server or in a secret store; it can spend credits.',
        },
      },
    },
  };
}
