/**
 * The words and schemas of the OpenAPI 3.1.0 document served at GET /openapi.json, built from the
 * valibot schemas so the document, request validation and TypeScript types cannot drift apart. Its
 * error responses come from the error table's rows and their entries in functions/docs/error-docs.ts
 * (`describeApi(errors, nodeConfigs)`): each operation lists, under each status, the bodies of the
 * rows whose entries name its route. A workflow step
 * is one schema per node type, its `config` the catalogue's settings of that type. Each resource
 * module states its own operations and named schemas (`runOperations`, `runComponents` in
 * schemas/runs.ts, ...; their parts in schemas/openapi-parts.ts), so a new route or answer schema
 * leaves this file alone; the operations come in the order of their routes in platform/routes.ts,
 * then the provider webhook and the API description's own. functions/docs/openapi.ts passes the
 * rows and the settings in (schemas/ knows nothing of functions/).
 */
import { type ConversionConfig, toJsonSchemaDefs } from '@valibot/to-json-schema';
import type {
  HeaderObject,
  OpenAPIObject,
  OperationObject,
  ParameterObject,
  PathsObject,
  ReferenceObject,
  ResponseObject,
  SchemaObject,
} from 'openapi3-ts/oas31';
import * as v from 'valibot';
import { basePath, type RouteId, routeById, routes } from '../platform/routes.ts';
import { batchComponents, batchOperations } from './batches.ts';
import { bulkActionComponents, bulkActionOperations } from './bulk-actions.ts';
import { creditComponents, creditOperations } from './credits.ts';
import { deferredRunComponents, deferredRunListComponents, deferredRunOperations } from './deferred-runs.ts';
import { DeliveryPendingErrorSchema, deliveryComponents, deliveryOperations } from './deliveries.ts';
import * as errors from './errors.ts';
import { estimateComponents, estimateOperations } from './estimates.ts';
import { fileLinkOperations } from './file-links.ts';
import { FileNotAcceptedErrorSchema, fileComponents, fileOperations } from './files.ts';
import { lifecycleWebhookComponents, lifecycleWebhookEntries } from './lifecycle-webhooks.ts';
import { mcpComponents, mcpOperations } from './mcp.ts';
import { nodeTypeComponents, nodeTypeOperations } from './node-types.ts';
import {
  type DocumentedParameter,
  jsonResponse,
  namedResponse,
  type OperationSpec,
  ref,
  storageBusyText,
  uuidPath,
} from './openapi-parts.ts';
import { runStepComponents, runStepOperations } from './run-steps.ts';
import { runTokenComponents, runTokenOperations } from './run-tokens.ts';
import { WebhookEventSchema } from './run-words.ts';
import { runComponents, runListComponents, runOperations, webhookHeaderNames } from './runs.ts';
import { usageComponents, usageOperations } from './usage.ts';
import { webhookEndpointComponents, webhookEndpointOperations } from './webhook-endpoints.ts';
import { workflowDescriptionComponents, workflowDescriptionOperations } from './workflow-description.ts';
import { workflowVersionComponents, workflowVersionOperations } from './workflow-versions.ts';
import { type NodeType, nodeTypes } from './workflow-words.ts';
import { WorkflowStepConfigSchema, WorkflowStepSchema, workflowComponents, workflowOperations } from './workflows.ts';

/**
 * Every named schema of the document; the key is its name under `#/components/schemas/`. Each
 * resource module names its own (a new answer schema goes in its module's map); the errors' are
 * named here, after them, and any error body not here is named from the error table's rows.
 */
export const componentSchemas = {
  ...workflowComponents,
  ...workflowVersionComponents,
  ...runComponents,
  ...deferredRunComponents,
  ...runListComponents,
  ...deferredRunListComponents,
  InvalidQueryError: errors.InvalidQueryErrorSchema,
  InvalidCursorError: errors.InvalidCursorErrorSchema,
  ...deliveryComponents,
  ...lifecycleWebhookComponents,
  ...fileComponents,
  ...creditComponents,
  ...usageComponents,
  ...nodeTypeComponents,
  ...estimateComponents,
  ...runTokenComponents,
  ...webhookEndpointComponents,
  ...workflowDescriptionComponents,
  ...mcpComponents,
  ...runStepComponents,
  ...batchComponents,
  ...bulkActionComponents,
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
  FileNotFoundError: errors.FileNotFoundErrorSchema,
  RunInProgressError: errors.RunInProgressErrorSchema,
  RunAlreadyEndedError: errors.RunAlreadyEndedErrorSchema,
  ProviderWebhookRefusedError: errors.ProviderWebhookRefusedErrorSchema,
  ProviderJobUnknownError: errors.ProviderJobUnknownErrorSchema,
  DeferredRunNotWaitingError: errors.DeferredRunNotWaitingErrorSchema,
  DeliveryPendingError: DeliveryPendingErrorSchema,
  FileNotAcceptedError: FileNotAcceptedErrorSchema,
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

/**
 * An error as the document reads it: one row of the error table (functions/errors/table.ts: its
 * status and Retry-After) with its entry (functions/docs/error-docs.ts: its schemas, routes, words).
 */
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
 * against the catalogue, which refuses a setting a new step's type does not have; so does the
 * document (`additionalProperties: false`). `apiInputKey` is stated as the request schema states it.
 */
const documentedStep = (type: NodeType, settings: NodeConfigSchema) => {
  const entries: v.ObjectEntries = { ...settings.entries };
  if ('apiInputKey' in entries) entries.apiInputKey = WorkflowStepConfigSchema.entries.apiInputKey;
  const config = v.pipe(
    v.strictObject(entries),
    v.metadata({
      description: `The ${type} node's settings. A setting not listed here is refused (422 invalid_config).`,
    }),
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

const retryAfterRef: ReferenceObject = { $ref: '#/components/headers/Retry-After' };

function withRetryAfter(response: ResponseObject): ResponseObject {
  return { ...response, headers: { 'Retry-After': retryAfterRef } };
}

/** The words of an error status every operation that answers it shares, unless it has its own. */
const sharedErrorWords: Partial<Record<number, string>> = {
  401: 'The key is missing, malformed, unknown, revoked or expired.',
  403: 'The key lacks the scope this operation needs.',
  429: 'Too many requests with this key; wait `Retry-After` seconds.',
  503: storageBusyText,
};

const securitySchemeName = 'bearerAuth';
/** The run token (POST /runs/{jobId}/tokens), on the routes that accept one in place of the key. */
const runTokenSchemeName = 'runToken';
const allowOriginRef: ReferenceObject = { $ref: '#/components/headers/Access-Control-Allow-Origin' };

/** The query parameter a run token travels in, on the routes that accept one (the `runToken` scheme's). */
const accessTokenQuery: DocumentedParameter = {
  name: 'access_token',
  in: 'query',
  required: false,
  description:
    'A run token (POST /runs/{jobId}/tokens) for this run, in place of the key: for a browser. With it, the ' +
    '`Authorization` header is not read, and every answer carries `Access-Control-Allow-Origin: *`.',
  schema: { type: 'string' },
};

/** A route that accepts a run token: each of its answers may carry `Access-Control-Allow-Origin`. */
const withAllowOrigin = (response: ResponseObject): ResponseObject => ({
  ...response,
  headers: { ...response.headers, 'Access-Control-Allow-Origin': allowOriginRef },
});

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
    const withRetry = rows.some((error) => error.retryAfter !== undefined) ? withRetryAfter(response) : response;
    // The key's refusal names the scheme to authenticate with (RFC 6750 section 3).
    responses[status] = rows.some((error) => error.schemas.includes(errors.UnauthorizedErrorSchema))
      ? {
          ...withRetry,
          headers: { ...withRetry.headers, 'WWW-Authenticate': { $ref: '#/components/headers/WWW-Authenticate' } },
        }
      : withRetry;
  }
  return responses;
}

/** Whether a parameter's schema is a valibot schema (else it is a schema object already). */
const isValibotSchema = (schema: DocumentedParameter['schema']): schema is v.GenericSchema =>
  schema !== undefined && 'kind' in schema && schema.kind === 'schema';

/** A parameter as the document states it: its valibot schema, if any, converted (in its place). */
const documentedParameter = (parameter: DocumentedParameter): ParameterObject => {
  const { schema } = parameter;
  if (!isValibotSchema(schema)) return { ...parameter, schema };
  return { ...parameter, schema: toSchemaObjects({ Parameter: schema }).Parameter };
};

/** The resource modules' operations in the order of their routes in `platform/routes.ts`. */
const inRouteOrder = (specs: readonly OperationSpec[]): OperationSpec[] => {
  const position = (spec: OperationSpec) => routes.findIndex((route) => route.id === spec.operationId);
  return [...specs].sort((a, b) => position(a) - position(b));
};

function operation(spec: OperationSpec, documented: readonly DocumentedError[]): OperationObject {
  const { scope, runToken } = routeById(spec.operationId);
  const keyed = scope !== null;
  const stated: Record<number, ResponseObject> = { ...spec.responses, ...errorResponses(spec, documented) };
  const responses = runToken
    ? Object.fromEntries(Object.entries(stated).map(([status, response]) => [status, withAllowOrigin(response)]))
    : stated;
  const statuses = Object.keys(responses)
    .map(Number)
    .sort((a, b) => a - b);
  return {
    operationId: spec.operationId,
    tags: [spec.tag],
    summary: spec.summary,
    description: keyed ? `${spec.description}\n\nScope: \`${scope}\`.` : spec.description,
    security: keyed ? [{ [securitySchemeName]: [] }, ...(runToken ? [{ [runTokenSchemeName]: [] }] : [])] : [],
    ...(spec.parameters || runToken
      ? {
          parameters: [...(spec.parameters ?? []), ...(runToken ? [accessTokenQuery] : [])].map(documentedParameter),
        }
      : {}),
    ...(spec.requestBody ? { requestBody: spec.requestBody } : {}),
    responses: Object.fromEntries(statuses.map((status) => [String(status), responses[status]])),
  };
}

/**
 * The OpenAPI 3.1.0 document, its error responses from the error table's rows and each node type's
 * step from its settings.
 */
export function describeApi(documented: readonly DocumentedError[], nodeConfigs: NodeConfigSchemas): OpenAPIObject {
  const operations: OperationSpec[] = [
    ...inRouteOrder([
      ...workflowOperations,
      ...workflowVersionOperations,
      ...runOperations,
      ...deferredRunOperations,
      ...deliveryOperations,
      ...fileLinkOperations,
      ...fileOperations,
      ...creditOperations,
      ...nodeTypeOperations,
      ...estimateOperations,
      ...runTokenOperations,
      ...webhookEndpointOperations,
      ...workflowDescriptionOperations,
      ...mcpOperations,
      ...usageOperations,
      ...runStepOperations,
      ...batchOperations,
      ...bulkActionOperations,
    ]),
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
          description:
            'Accepted: the step looks at its job. Also the answer to a genuine delivery for a job no step waits on, ' +
            'which changes nothing: only a job the step recorded as replaced by its own newer submission is ' +
            'cancelled at the provider, never one a delivery merely names.',
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
        404: 'The URL names no step (a run id that is not a uuid, a step key no workflow can have), or the provider is not configured.',
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
    tags: [
      {
        name: 'Workflows',
        description: 'The team’s workflows: graphs of typed steps, described, versioned and priced.',
      },
      {
        name: 'Runs',
        description:
          'Start runs now or in batches, estimate them, follow, cancel and resume them, and read their steps, outputs and webhook deliveries.',
      },
      { name: 'Deferred runs', description: 'Runs waiting for a cheaper price, started when it comes.' },
      { name: 'Files', description: 'Files a caller uploads as run inputs, and the bytes the team stores.' },
      {
        name: 'Credits',
        description: 'The team’s balance, holds and caps, and its usage by day, workflow, key, tag, model or project.',
      },
      {
        name: 'Webhook endpoints',
        description:
          'The team’s own receivers: every matching run event of the team’s runs, signed, retried for a day.',
      },
      { name: 'Node types', description: 'What each node type does, its handles, settings, price and model.' },
      { name: 'MCP', description: 'Your workflows as tools for an AI agent (the Model Context Protocol).' },
      { name: 'Provider webhooks', description: "A model provider's own callbacks; not for API consumers." },
      { name: 'API description', description: 'This document and its reference page.' },
    ],
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
      // The lifecycle events a run may choose: schemas/lifecycle-webhooks.ts.
      ...lifecycleWebhookEntries((events) => ({ type: 'string', enum: [...events] })),
    },
    components: {
      schemas,
      headers: {
        'Retry-After': retryAfter,
        'Access-Control-Allow-Origin': {
          description:
            '`*` on every answer to a request a run token authenticated (`access_token`), so a page on any origin ' +
            'reads it; absent on a request with an API key (keys belong on servers).',
          required: false,
          schema: { type: 'string', const: '*' },
        },
        'WWW-Authenticate': {
          description:
            '`Bearer` when no key was sent, `Bearer error="invalid_token"` when the key sent is malformed, unknown, ' +
            'revoked or expired.',
          required: true,
          schema: { type: 'string' },
        },
      },
      securitySchemes: {
        [securitySchemeName]: {
          type: 'http',
          scheme: 'bearer',
          description:
            'A team API key, created under Team settings, API keys: `Authorization: Bearer <API_KEY>`. Keep it on ' +
            'a server or in a secret store; it can spend credits.',
        },
        [runTokenSchemeName]: {
          type: 'apiKey',
          in: 'query',
          name: 'access_token',
          description:
            'A run token (POST /runs/{jobId}/tokens) in place of the key, for a browser: GET /runs/{jobId} and ' +
            'GET /runs/{jobId}/events of its own run only, until its `expiresAt` and while the key that made it ' +
            'stands. Those two answer a request with it cross-origin (`Access-Control-Allow-Origin: *`) and answer ' +
            'their CORS preflight (OPTIONS).',
        },
      },
    },
  };
}

/**
 * A node type's `config` as the document states it (its step's `config`, converted alone): the
 * node-type reference lists its settings from it.
 */
export const documentedConfig = (type: NodeType, settings: NodeConfigSchema): SchemaObject => {
  const step = toSchemaObjects({ Step: documentedStep(type, settings) }).Step;
  return (step.properties?.config ?? { type: 'object' }) as SchemaObject;
};
