/**
 * The one route table: API Gateway routes in the CDK stack, the local server, each handler's scope
 * check (`keyedHandler`) and the OpenAPI document are all built from it. Pure data. `entry` is the
 * handler module (relative to the repository root); each module exports `handler` (used by Lambda)
 * and `makeHandler(deps)` (used locally and in tests).
 */
import type { Access } from './access.ts';

export type Scope =
  | 'workflows:read'
  | 'workflows:write'
  | 'runs:create'
  | 'runs:read'
  | 'credits:read'
  | 'webhooks:read'
  | 'webhooks:write'
  | 'usage:read';

export const allScopes: readonly Scope[] = [
  'workflows:read',
  'workflows:write',
  'runs:create',
  'runs:read',
  'credits:read',
  'webhooks:read',
  'webhooks:write',
  'usage:read',
];

export interface Route {
  /** Stable logical id, used for CDK construct ids, logs and the OpenAPI operationId. */
  id: string;
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Path under the base path, with `{param}` placeholders as API Gateway writes them. */
  path: string;
  entry: string;
  /** Scope the key needs, written only here; null for the unauthenticated routes. */
  scope: Scope | null;
  /** Exactly the AWS actions the function's code sends (`platform/access.ts`), for least-privilege grants. */
  grants: Access;
  /**
   * How it is reached. Absent: an HTTP API route. `stream`: no HTTP API route (HTTP APIs cannot
   * stream); its function answers on a Lambda function URL in RESPONSE_STREAM mode, at the same
   * path under `basePath` (lib/api-stack.ts; locally, local/api-gateway.ts streams it).
   */
  transport?: 'stream';
  /**
   * It reads a JSON body (functions/http/body.ts `readJsonBody`), so it answers the body's 400 and
   * 413 (functions/errors/table.ts reads this) and its operation documents a request body
   * (test/openapi.test.ts holds the two equal).
   */
  body?: true;
  /**
   * It honours `Prefer: wait=N` (functions/http/prefer-wait.ts): its function is given
   * `waitingFunctionTimeoutSeconds` (platform/run-wait.ts), not the other routes' 10 s, and the
   * Run's `links.events` address (RUN_EVENTS_BASE_URL), which a Run it answers carries.
   */
  waits?: true;
  /**
   * It also accepts a run token (`?access_token=`, functions/domain/run-token.ts) in place of a key,
   * for the token's own run: its answers to such a request carry `Access-Control-Allow-Origin: *`,
   * and it answers its CORS preflight (OPTIONS; lib/api-stack.ts routes it, the edge lets it through).
   * No other route reads the token.
   */
  runToken?: true;
}

/** Every route lives under this prefix, locally and on API Gateway (spec section 9). */
export const basePath = '/api/v1';

/**
 * The HTTP API's access log line: one JSON object of these context variables per request (no
 * headers, so bearer keys never reach the log). The stack's access log format, and what the cost
 * model (bench/cost-meter.ts) counts as the bytes each request writes.
 */
export const accessLogFields = {
  // The gateway-429 metric filter's dimension (lib/observability.ts): this stage's API, not another's.
  apiId: '$context.apiId',
  requestId: '$context.requestId',
  requestTime: '$context.requestTime',
  sourceIp: '$context.identity.sourceIp',
  userAgent: '$context.identity.userAgent',
  method: '$context.httpMethod',
  path: '$context.path',
  routeKey: '$context.routeKey',
  status: '$context.status',
  protocol: '$context.protocol',
  responseLength: '$context.responseLength',
  responseLatency: '$context.responseLatency',
  integrationLatency: '$context.integrationLatency',
  integrationError: '$context.integrationErrorMessage',
} as const;

const table = [
  {
    id: 'GetOpenApi',
    method: 'GET',
    path: '/openapi.json',
    entry: 'functions/api/get-openapi.ts',
    scope: null,
    grants: {},
  },
  {
    id: 'ListWorkflows',
    method: 'GET',
    path: '/workflows',
    entry: 'functions/api/list-workflows.ts',
    scope: 'workflows:read',
    grants: { table: ['GetItem', 'UpdateItem', 'Query'] },
  },
  {
    id: 'CreateWorkflow',
    method: 'POST',
    path: '/workflows',
    entry: 'functions/api/create-workflow.ts',
    scope: 'workflows:write',
    body: true,
    grants: { table: ['GetItem', 'UpdateItem', 'PutItem', 'ConditionCheckItem'] },
  },
  {
    // The files its inputs name (functions/app/run-inputs.ts): settled as GET /files settles them
    // (uploads: HeadObject and a ranged GetObject, DeleteObject of one rejected), then copied to
    // the run's own key (CopyObject: GetObject on the upload, PutObject under teams/).
    // `onConflict` (functions/store/run/queue.ts): Query, the workflow's queue; DeleteItem, a queue
    // entry or lock as a replaced run settles; webhooksQueue, the replaced run's `run.cancelled`.
    id: 'RunWorkflow',
    method: 'POST',
    path: '/workflows/{id}/runs',
    entry: 'functions/api/run-workflow.ts',
    scope: 'runs:create',
    body: true,
    // Query: the Run a start that waited answers (GET /runs/{jobId}'s read).
    waits: true,
    grants: {
      table: ['GetItem', 'BatchGetItem', 'Query', 'PutItem', 'UpdateItem', 'DeleteItem'],
      stepsQueue: 'send',
      webhooksQueue: 'send',
      uploads: ['GetObject', 'DeleteObject'],
      bucket: ['PutObject'],
    },
  },
  {
    // Its input files and `onConflict` as RunWorkflow's.
    id: 'RunAgent',
    method: 'POST',
    path: '/agents/{id}/runs',
    entry: 'functions/api/run-agent.ts',
    scope: 'runs:create',
    body: true,
    waits: true,
    grants: {
      table: ['GetItem', 'BatchGetItem', 'Query', 'PutItem', 'UpdateItem', 'DeleteItem'],
      stepsQueue: 'send',
      webhooksQueue: 'send',
      uploads: ['GetObject', 'DeleteObject'],
      bucket: ['PutObject'],
    },
  },
  {
    // GetItem: the key, and the cursor signing key; PutItem: creating that key, once per table.
    // Query and BatchGetItem: `?tag=`, a page of the tag's entries, then those runs.
    id: 'ListRuns',
    method: 'GET',
    path: '/runs',
    entry: 'functions/api/list-runs.ts',
    scope: 'runs:read',
    grants: { table: ['GetItem', 'UpdateItem', 'PutItem', 'Query', 'BatchGetItem'], indexes: ['GSI5'] },
  },
  {
    // Each item is a run start (RunWorkflow's or RunAgent's grants); the batch's own Idempotency-Key
    // is read with GetItem and its whole answer remembered with PutItem.
    id: 'StartRunBatch',
    method: 'POST',
    path: '/runs/batch',
    entry: 'functions/api/start-run-batch.ts',
    scope: 'runs:create',
    body: true,
    grants: {
      table: ['GetItem', 'BatchGetItem', 'Query', 'PutItem', 'UpdateItem', 'DeleteItem'],
      stepsQueue: 'send',
      webhooksQueue: 'send',
      uploads: ['GetObject', 'DeleteObject'],
      bucket: ['PutObject'],
    },
  },
  {
    // Query: the batch's entries; BatchGetItem: those runs' statuses.
    id: 'GetBatch',
    method: 'GET',
    path: '/batches/{batchId}',
    entry: 'functions/api/get-batch.ts',
    scope: 'runs:read',
    grants: { table: ['GetItem', 'UpdateItem', 'Query', 'BatchGetItem'] },
  },
  {
    id: 'ListDeferredRuns',
    method: 'GET',
    path: '/deferred-runs',
    entry: 'functions/api/list-deferred-runs.ts',
    scope: 'runs:read',
    grants: { table: ['GetItem', 'UpdateItem', 'PutItem'], indexes: ['GSI5'] },
  },
  {
    id: 'GetRun',
    method: 'GET',
    path: '/runs/{jobId}',
    entry: 'functions/api/get-run.ts',
    scope: 'runs:read',
    waits: true,
    runToken: true,
    // PutItem: creating the file links' (or the cursors') signing key, once per table, at its first use.
    grants: { table: ['GetItem', 'UpdateItem', 'Query', 'PutItem'] },
  },
  {
    id: 'CancelRun',
    method: 'POST',
    path: '/runs/{jobId}/cancel',
    entry: 'functions/api/cancel-run.ts',
    scope: 'runs:create',
    grants: {
      // PutItem: creating the file links' signing key, when a cancelled run's file is the first linked.
      table: ['GetItem', 'Query', 'UpdateItem', 'DeleteItem', 'PutItem'],
      // A look for each step waiting on a provider's job, which cancels it there.
      stepsQueue: 'send',
      webhooksQueue: 'send',
    },
  },
  {
    // A run start of the original's workflow (RunWorkflow's grants): its step items read (Query) and
    // those carried over written (PutItem); their files and the original's input files are shared,
    // not copied (only new uploads are: CopyObject, GetObject on the upload and PutObject under teams/).
    id: 'ResumeRun',
    method: 'POST',
    path: '/runs/{jobId}/resume',
    entry: 'functions/api/resume-run.ts',
    scope: 'runs:create',
    body: true,
    waits: true,
    grants: {
      table: ['GetItem', 'BatchGetItem', 'Query', 'PutItem', 'UpdateItem', 'DeleteItem'],
      stepsQueue: 'send',
      webhooksQueue: 'send',
      uploads: ['GetObject', 'DeleteObject'],
      bucket: ['PutObject'],
    },
  },
  {
    // The run's events as they happen: text/event-stream, on a function URL (`transport`).
    // GetItem: the key and the run item each second; BatchGetItem: the step items it still needs;
    // Query: the ended run's partition, once, for its last events.
    id: 'GetRunEvents',
    method: 'GET',
    path: '/runs/{jobId}/events',
    entry: 'functions/api/get-run-events.ts',
    scope: 'runs:read',
    runToken: true,
    grants: { table: ['GetItem', 'BatchGetItem', 'UpdateItem', 'Query', 'PutItem'] },
    transport: 'stream',
  },
  {
    id: 'ListDeliveries',
    method: 'GET',
    path: '/runs/{jobId}/deliveries',
    entry: 'functions/api/list-deliveries.ts',
    scope: 'runs:read',
    grants: { table: ['GetItem', 'UpdateItem', 'Query'] },
  },
  {
    // One step's attempts and logs: the run item, the step item and the workflow's canvas (GetItem each).
    // No run token: its errors and logs are the team's, not the run's viewers' (docs/decisions/runs.md).
    id: 'GetRunStep',
    method: 'GET',
    path: '/runs/{jobId}/steps/{nodeId}',
    entry: 'functions/api/get-run-step.ts',
    scope: 'runs:read',
    grants: { table: ['GetItem', 'UpdateItem'] },
  },
  {
    id: 'RedeliverWebhook',
    method: 'POST',
    path: '/runs/{jobId}/deliveries/redeliver',
    entry: 'functions/api/redeliver-webhook.ts',
    scope: 'runs:create',
    body: true,
    grants: { table: ['GetItem', 'UpdateItem', 'Query'], webhooksQueue: 'send' },
  },
  {
    // A run token for a browser (functions/app/run-tokens.ts): GetItem, the key, the run item and
    // the tokens' signing key; PutItem, creating that key, once per table; UpdateItem, the rate counter.
    id: 'CreateRunToken',
    method: 'POST',
    path: '/runs/{jobId}/tokens',
    entry: 'functions/api/create-run-token.ts',
    scope: 'runs:read',
    body: true,
    grants: { table: ['GetItem', 'UpdateItem', 'PutItem'] },
  },
  {
    id: 'GetDeferredRun',
    method: 'GET',
    path: '/deferred-runs/{id}',
    entry: 'functions/api/get-deferred-run.ts',
    scope: 'runs:read',
    grants: { table: ['GetItem', 'UpdateItem'] },
  },
  {
    id: 'CancelDeferredRun',
    method: 'DELETE',
    path: '/deferred-runs/{id}',
    entry: 'functions/api/cancel-deferred-run.ts',
    scope: 'runs:create',
    grants: { table: ['GetItem', 'UpdateItem'] },
  },
  {
    // PutObject: presigning the caller's PUT (a presigned URL carries the signer's rights, no more).
    id: 'CreateFile',
    method: 'POST',
    path: '/files',
    entry: 'functions/api/create-file.ts',
    scope: 'runs:create',
    body: true,
    grants: { table: ['GetItem', 'UpdateItem', 'PutItem'], uploads: ['PutObject'] },
  },
  {
    // The read settles an upload (functions/app/uploads.ts): HeadObject and a ranged GetObject read
    // what arrived (both are s3:GetObject), DeleteObject drops what it rejects.
    id: 'GetFile',
    method: 'GET',
    path: '/files/{fileId}',
    entry: 'functions/api/get-file.ts',
    scope: 'runs:read',
    grants: { table: ['GetItem', 'UpdateItem'], uploads: ['GetObject', 'DeleteObject'] },
  },
  {
    // The team's stored bytes against its storage quota (functions/store/stored-bytes.ts): one GetItem.
    id: 'GetStorage',
    method: 'GET',
    path: '/storage',
    entry: 'functions/api/get-storage.ts',
    scope: 'runs:read',
    grants: { table: ['GetItem', 'UpdateItem'] },
  },
  {
    // The team's money as the key sees it (functions/store/credits.ts): BatchGetItem, the team and
    // the key's month; Query, the team's projects; GetItem and UpdateItem, the key and its rate counter.
    id: 'GetCredits',
    method: 'GET',
    path: '/credits',
    entry: 'functions/api/get-credits.ts',
    scope: 'credits:read',
    grants: { table: ['GetItem', 'UpdateItem', 'BatchGetItem', 'Query'] },
  },
  {
    // What a run start with this body would hold and answer, started nothing (functions/app/estimate-run.ts):
    // RunWorkflow's reads (an upload settled as any read of it settles it: UpdateItem, GetObject,
    // DeleteObject) and the price settings, no write of a run; UpdateItem also counts the request.
    // Query: the lock's read (activeJobOf) names the first queued run while the lock is handed over.
    id: 'EstimateWorkflowRun',
    method: 'POST',
    path: '/workflows/{id}/estimate',
    entry: 'functions/api/estimate-workflow-run.ts',
    scope: 'runs:create',
    body: true,
    grants: { table: ['GetItem', 'BatchGetItem', 'UpdateItem', 'Query'], uploads: ['GetObject', 'DeleteObject'] },
  },
  {
    // EstimateWorkflowRun's, and Query: the agent's workflows (as RunAgent).
    id: 'EstimateAgentRun',
    method: 'POST',
    path: '/agents/{id}/estimate',
    entry: 'functions/api/estimate-agent-run.ts',
    scope: 'runs:create',
    body: true,
    grants: { table: ['GetItem', 'BatchGetItem', 'Query', 'UpdateItem'], uploads: ['GetObject', 'DeleteObject'] },
  },
  {
    // Asynchronous providers announce a step's job's end here (functions/app/provider-webhook.ts):
    // no API key; the provider's signature, the step's token and the job's id are the check.
    // UpdateItem: a job announced under a submission whose id was never recorded is recorded or adopted.
    id: 'ProviderWebhook',
    method: 'POST',
    path: '/provider-webhooks/{provider}/{jobId}/{nodeId}/{token}',
    entry: 'functions/api/provider-webhook.ts',
    scope: null,
    grants: {
      table: ['GetItem', 'UpdateItem'],
      stepsQueue: 'send',
      secrets: 'providers-and-connections',
    },
  },
  {
    // The file links of runs and webhooks (functions/app/file-links.ts): no API key; the link's
    // signature is the check. GetItem: the links' signing key (only read here); GetObject: what the
    // redirect's presigned URL reads, with this function's role.
    id: 'GetFileLink',
    method: 'GET',
    path: '/file-links/{object}',
    entry: 'functions/api/get-file-link.ts',
    scope: null,
    grants: { table: ['GetItem'], bucket: ['GetObject'] },
  },
  {
    // The node-type reference, generated from the catalogue: the same for every caller, so no key.
    id: 'ListNodeTypes',
    method: 'GET',
    path: '/node-types',
    entry: 'functions/api/list-node-types.ts',
    scope: null,
    grants: {},
  },
  {
    id: 'GetNodeType',
    method: 'GET',
    path: '/node-types/{type}',
    entry: 'functions/api/get-node-type.ts',
    scope: null,
    grants: {},
  },
  {
    id: 'GetDocs',
    method: 'GET',
    path: '/docs',
    entry: 'functions/api/get-docs.ts',
    scope: null,
    grants: {},
  },
  {
    // The reference page's renderer, in a function of its own: it is ~1.9 MB, the page's function stays small.
    id: 'GetDocsAsset',
    method: 'GET',
    path: '/docs/assets/{name}',
    entry: 'functions/api/get-docs-asset.ts',
    scope: null,
    grants: {},
  },
  {
    // The team's webhook endpoints (functions/app/webhook-endpoints.ts). Query: the team's endpoints,
    // counted against the most a team keeps; PutItem: the new one.
    id: 'CreateWebhookEndpoint',
    method: 'POST',
    path: '/webhook-endpoints',
    entry: 'functions/api/create-webhook-endpoint.ts',
    scope: 'webhooks:write',
    body: true,
    grants: { table: ['GetItem', 'UpdateItem', 'Query', 'PutItem'] },
  },
  {
    id: 'ListWebhookEndpoints',
    method: 'GET',
    path: '/webhook-endpoints',
    entry: 'functions/api/list-webhook-endpoints.ts',
    scope: 'webhooks:read',
    grants: { table: ['GetItem', 'UpdateItem', 'Query'] },
  },
  {
    id: 'GetWebhookEndpoint',
    method: 'GET',
    path: '/webhook-endpoints/{endpointId}',
    entry: 'functions/api/get-webhook-endpoint.ts',
    scope: 'webhooks:read',
    grants: { table: ['GetItem', 'UpdateItem'] },
  },
  {
    id: 'UpdateWebhookEndpoint',
    method: 'PATCH',
    path: '/webhook-endpoints/{endpointId}',
    entry: 'functions/api/update-webhook-endpoint.ts',
    scope: 'webhooks:write',
    body: true,
    grants: { table: ['GetItem', 'UpdateItem'] },
  },
  {
    id: 'DeleteWebhookEndpoint',
    method: 'DELETE',
    path: '/webhook-endpoints/{endpointId}',
    entry: 'functions/api/delete-webhook-endpoint.ts',
    scope: 'webhooks:write',
    grants: { table: ['GetItem', 'UpdateItem', 'DeleteItem'] },
  },
  {
    id: 'RotateWebhookEndpointSecret',
    method: 'POST',
    path: '/webhook-endpoints/{endpointId}/rotate-secret',
    entry: 'functions/api/rotate-webhook-endpoint-secret.ts',
    scope: 'webhooks:write',
    grants: { table: ['GetItem', 'UpdateItem'] },
  },
  {
    // PutItem: the ping's delivery item; the webhook worker delivers it.
    id: 'TestWebhookEndpoint',
    method: 'POST',
    path: '/webhook-endpoints/{endpointId}/test',
    entry: 'functions/api/test-webhook-endpoint.ts',
    scope: 'webhooks:write',
    grants: { table: ['GetItem', 'UpdateItem', 'PutItem'], webhooksQueue: 'send' },
  },
  {
    id: 'ListWebhookEndpointDeliveries',
    method: 'GET',
    path: '/webhook-endpoints/{endpointId}/deliveries',
    entry: 'functions/api/list-webhook-endpoint-deliveries.ts',
    scope: 'webhooks:read',
    grants: { table: ['GetItem', 'UpdateItem', 'Query'] },
  },
  {
    id: 'RedeliverWebhookEndpointDelivery',
    method: 'POST',
    path: '/webhook-endpoints/{endpointId}/deliveries/{deliveryId}/redeliver',
    entry: 'functions/api/redeliver-webhook-endpoint-delivery.ts',
    scope: 'webhooks:write',
    grants: { table: ['GetItem', 'UpdateItem'], webhooksQueue: 'send' },
  },
  {
    // GetItem: the price settings and the key; BatchGetItem: the summary and the canvas, read once
    // (the run start's read, its summary answered too); UpdateItem: the key's rate counter.
    id: 'GetWorkflow',
    method: 'GET',
    path: '/workflows/{id}',
    entry: 'functions/api/get-workflow.ts',
    scope: 'workflows:read',
    grants: { table: ['GetItem', 'BatchGetItem', 'UpdateItem'] },
  },
  {
    // The MCP server (functions/http/mcp.ts): `tools/list` reads the key's workflows (Query, and
    // BatchGetItem: each one's canvas); `tools/call` is a run start with `onConflict: "queue"`
    // (RunWorkflow's grants) that waits for its run and reads it (GET /runs/{jobId}'s Query; PutItem:
    // the file links' signing key at its first use); `get_run` is that read. The key needs
    // `workflows:read` to connect; each tool checks the scope its route would need.
    id: 'Mcp',
    method: 'POST',
    path: '/mcp',
    entry: 'functions/api/mcp.ts',
    scope: 'workflows:read',
    body: true,
    waits: true,
    grants: {
      table: ['GetItem', 'BatchGetItem', 'Query', 'PutItem', 'UpdateItem', 'DeleteItem'],
      stepsQueue: 'send',
      webhooksQueue: 'send',
      uploads: ['GetObject', 'DeleteObject'],
      bucket: ['PutObject'],
    },
  },
  {
    // The team's usage by a grouping over a period (functions/app/usage.ts): one Query of the
    // grouping's rollups (functions/store/usage.ts); GetItem and UpdateItem, the key and its rate counter.
    id: 'GetUsage',
    method: 'GET',
    path: '/usage',
    entry: 'functions/api/get-usage.ts',
    scope: 'usage:read',
    grants: { table: ['GetItem', 'UpdateItem', 'Query'] },
  },
  {
    // A workflow's versions (functions/store/workflow-versions.ts). GetItem: its summary and latest
    // canvas; TransactWriteItems (PutItem, UpdateItem): the new version, the canvas, the summary.
    id: 'UpdateWorkflow',
    method: 'PUT',
    path: '/workflows/{id}',
    entry: 'functions/api/update-workflow.ts',
    scope: 'workflows:write',
    body: true,
    grants: { table: ['GetItem', 'UpdateItem', 'PutItem'] },
  },
  {
    id: 'SetWorkflowStatus',
    method: 'PATCH',
    path: '/workflows/{id}',
    entry: 'functions/api/set-workflow-status.ts',
    scope: 'workflows:write',
    body: true,
    grants: { table: ['GetItem', 'UpdateItem'] },
  },
  {
    // Query: one page of the version items, newest first. PutItem: the cursors' signing key, made
    // once where none is yet (as the run lists).
    id: 'ListWorkflowVersions',
    method: 'GET',
    path: '/workflows/{id}/versions',
    entry: 'functions/api/list-workflow-versions.ts',
    scope: 'workflows:read',
    grants: { table: ['GetItem', 'UpdateItem', 'PutItem', 'Query'] },
  },
  {
    id: 'GetWorkflowVersion',
    method: 'GET',
    path: '/workflows/{id}/versions/{version}',
    entry: 'functions/api/get-workflow-version.ts',
    scope: 'workflows:read',
    grants: { table: ['GetItem', 'UpdateItem'] },
  },
  {
    // A bulk cancel (functions/app/bulk-cancel.ts): PutItem, the action's item; stepsQueue, its first
    // page's message. The step executor cancels the runs, a page a message.
    id: 'CancelRuns',
    method: 'POST',
    path: '/runs/cancel',
    entry: 'functions/api/cancel-runs.ts',
    scope: 'runs:create',
    body: true,
    grants: { table: ['GetItem', 'UpdateItem', 'PutItem'], stepsQueue: 'send' },
  },
  {
    id: 'GetBulkAction',
    method: 'GET',
    path: '/bulk-actions/{bulkActionId}',
    entry: 'functions/api/get-bulk-action.ts',
    scope: 'runs:read',
    grants: { table: ['GetItem', 'UpdateItem'] },
  },
] as const satisfies readonly Route[];

/** Every route, in the order API Gateway and the local server register them. */
export const routes: readonly Route[] = table;

/** The routes API Gateway's HTTP API serves: every route but the streaming ones. */
export const httpApiRoutes: readonly Route[] = routes.filter((route) => route.transport !== 'stream');

/** The routes answered on a function URL as a stream (`transport: 'stream'`). */
export const streamRoutes: readonly Route[] = routes.filter((route) => route.transport === 'stream');

/** A route's id, e.g. `RunWorkflow`. */
export type RouteId = (typeof table)[number]['id'];

/** The id of a route that needs a key (its `scope` is not null). */
export type KeyedRouteId = Extract<(typeof table)[number], { scope: Scope }>['id'];

/** The route with this id. */
export const routeById = (id: RouteId): Route => {
  const route = routes.find((r) => r.id === id);
  if (!route) throw new Error(`No route ${id}`);
  return route;
};

/** Whether a route accepts a run token in place of a key (`runToken`). */
export const acceptsRunToken = (id: RouteId): boolean => (routeById(id) as Route).runToken === true;

/** The scope a keyed route needs. */
export const scopeOf = (id: KeyedRouteId): Scope => routeById(id).scope as Scope;
