/**
 * The typed client: openapi-fetch over the types generated from the served OpenAPI document, with
 * one method per operation, typed errors (`errors.ts`), `waitForRun` and `uploadFile`.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import createFetchClient, { type Client as FetchClient } from 'openapi-fetch';
import {
  errorFromResponse,
  FileRejectedError,
  RetryableError,
  ServerError,
  StorageRefusedError,
  UploadError,
  WaitTimeoutError,
} from './errors.ts';
import type { components, paths } from './openapi-types.ts';
import { type RunEvent, type RunEventsOptions, runEvents } from './run-stream.ts';
import {
  type ByteSource,
  chunkedStream,
  contentTypeOf,
  defaultName,
  nameOf,
  openFile,
  type UploadContentType,
  type UploadProgress,
} from './upload.ts';

export { parseServerSentEvents, type RunEvent, type RunEventsOptions, type ServerSentEvent } from './run-stream.ts';
export { contentTypeOf, contentTypesByExtension, type UploadContentType, type UploadProgress } from './upload.ts';

type Schemas = components['schemas'];

export type WorkflowSummary = Schemas['WorkflowSummary'];
export type WorkflowStepInput = Schemas['WorkflowStepInput'];
/**
 * A step of Create a workflow: a union discriminated by `type`, each node type's `config` typed
 * with its own settings (`provider`, `model` and `modelInput` on a model step).
 */
export type WorkflowStep = Schemas['WorkflowStep'];
export type NodeType = WorkflowStep['type'];
/** The step of one node type, e.g. `WorkflowStepOf<'ImageGen'>['config']`. */
export type WorkflowStepOf<T extends NodeType> = Extract<WorkflowStep, { type: T }>;
/** A node type's reference: what it does, its handles, settings, price and default model. */
export type NodeTypeReference = Schemas['NodeTypeReference'];
export type CreateWorkflowRequest = Schemas['CreateWorkflowRequest'];
export type CreateWorkflowResponse = Schemas['CreateWorkflowResponse'];
export type WorkflowVersion = Schemas['WorkflowVersion'];
export type WorkflowVersionSummary = Schemas['WorkflowVersionSummary'];
export type ListWorkflowVersionsResponse = Schemas['ListWorkflowVersionsResponse'];
export type WorkflowStatus = Schemas['SetWorkflowStatusRequest']['status'];
export type RunRequest = Schemas['RunRequest'];
/** A run's own string pairs and tags, given at its start and echoed wherever it is shown. */
export type RunMetadata = Schemas['RunMetadata'];
export type RunTags = Schemas['RunTags'];
export type RunStartedResponse = Schemas['RunStartedResponse'];
export type RunDeferredResponse = Schemas['RunDeferredResponse'];
/** Our design: a start (`onConflict: "queue"`) accepted to wait behind the workflow's run in progress (202). */
export type RunQueuedResponse = Schemas['RunQueuedResponse'];
export type RunStartResponse = RunStartedResponse | RunDeferredResponse | RunQueuedResponse;
/** What a start does when the workflow already has a run in progress: `reject` (409, the default), `queue`, `replace`. */
export type OnConflict = NonNullable<RunRequest['onConflict']>;
export type ResumeRunRequest = Schemas['ResumeRunRequest'];
export type RunResumedResponse = Schemas['RunResumedResponse'];
export type Run = Schemas['Run'];
export type RunStatus = Run['status'];
export type RunStep = Schemas['RunStep'];
export type RunStatusEvent = Schemas['RunStatusEvent'];
export type RunOutput = Schemas['RunOutput'];
export type RunFile = Schemas['RunFile'];
export type RunResult = Schemas['RunResult'];
export type ReadyRunFile = Extract<RunFile, { availability: 'ready' }>;
export type DeferredRun = Schemas['DeferredRun'];
export type RunSummary = Schemas['RunSummary'];
export type BatchRunItem = Schemas['BatchRunItem'];
export type StartRunBatchResponse = Schemas['StartRunBatchResponse'];
export type BatchItemResult = Schemas['BatchItemResult'];
export type Batch = Schemas['Batch'];
export type ListRunsResponse = Schemas['ListRunsResponse'];
export type ListDeferredRunsResponse = Schemas['ListDeferredRunsResponse'];
/** The filters, page size and cursor of GET /runs. */
export type ListRunsParams = NonNullable<paths['/runs']['get']['parameters']['query']>;
/** The filters, page size and cursor of GET /deferred-runs. */
export type ListDeferredRunsParams = NonNullable<paths['/deferred-runs']['get']['parameters']['query']>;
export type WebhookDeliveries = Schemas['WebhookDeliveries'];
export type WebhookAttempt = Schemas['WebhookAttempt'];
export type RedeliveryQueued = Schemas['RedeliveryQueued'];
/** One step of a run in detail: its attempts and logs (GET /runs/{jobId}/steps/{nodeId}). */
export type RunStepDetails = Schemas['RunStepDetails'];
export type StepAttempt = Schemas['StepAttempt'];
/** A run token and the two addresses it opens (POST /runs/{jobId}/tokens). */
export type RunToken = Schemas['RunToken'];
/** One delivery of a run that chose `webhookEvents`, and the redelivery's naming of one. */
export type LifecycleDelivery = Schemas['LifecycleDelivery'];
export type RedeliverRequest = Schemas['RedeliverRequest'];
export type CreateFileRequest = Schemas['CreateFileRequest'];
export type CreateFileResponse = Schemas['CreateFileResponse'];
export type FileUpload = Schemas['FileUpload'];
/** An uploaded file as GET /files/{fileId} reads it. */
export type UploadedFile = Schemas['File'];
export type StorageUsage = Schemas['StorageUsage'];
export type Credits = Schemas['Credits'];
/** What a run start would hold and answer now (POST /workflows/{id}/estimate, POST /agents/{id}/estimate). */
export type RunEstimate = Schemas['RunEstimate'];
export type WorkflowDescription = Schemas['WorkflowDescription'];
export type CreateWebhookEndpointRequest = Schemas['CreateWebhookEndpointRequest'];
export type UpdateWebhookEndpointRequest = Schemas['UpdateWebhookEndpointRequest'];
export type WebhookEndpoint = Schemas['WebhookEndpoint'];
/** An endpoint as its creation or a rotation answers it: with its secret, shown this once. */
export type WebhookEndpointWithSecret = Schemas['WebhookEndpointWithSecret'];
export type EndpointDelivery = Schemas['EndpointDelivery'];
export type EndpointDeliveryList = Schemas['EndpointDeliveryList'];
export type EndpointDeliveryQueued = Schemas['EndpointDeliveryQueued'];
/** The team's charges over a period by one grouping (GET /usage). */
export type Usage = Schemas['Usage'];
export type UsageRow = Schemas['UsageRow'];
/** The period (`from`, `to`: UTC dates, both included, at most 366 days) and the grouping of GET /usage. */
export type UsageParams = Omit<paths['/usage']['get']['parameters']['query'], 'format'>;
export type BulkCancelRequest = Schemas['BulkCancelRequest'];
export type BulkActionAccepted = Schemas['BulkActionAccepted'];
export type BulkAction = Schemas['BulkAction'];

/** Statuses a run never leaves. */
export const endedRunStatuses: readonly RunStatus[] = ['completed', 'failed', 'cancelled', 'stopped'];
export const isEnded = (run: Pick<Run, 'status'>): boolean => endedRunStatuses.includes(run.status);
export const isDeferred = (started: RunStartResponse): started is RunDeferredResponse => 'deferred' in started;
/** Whether a start was accepted to wait behind the run in progress (`queuePosition`, `queuedBehind`). */
export const isQueued = (started: RunStartResponse): started is RunQueuedResponse => 'queuePosition' in started;

export interface ClientOptions {
  /** The API's base URL, ending in `/api/v1`, e.g. `http://127.0.0.1:3000/api/v1`. */
  baseUrl: string;
  /** A team API key (`wra_…`). Keep it on a server. */
  apiKey: string;
  /** A fetch implementation (default: the global one). */
  fetch?: (request: Request) => Promise<Response>;
  /** Extra headers sent with every request. */
  headers?: Record<string, string>;
}

/** The body with `onConflict` from the options, when given (the body's own otherwise). */
const withConflict = <TBody extends { onConflict?: OnConflict | undefined }>(
  body: TBody,
  options: RunOptions,
): TBody => (options.onConflict === undefined ? body : { ...body, onConflict: options.onConflict });

export interface RequestOptions {
  signal?: AbortSignal;
}

export interface RunOptions extends RequestOptions {
  /**
   * Makes a retry safe: the same key with the same body within 24 hours answers as the first
   * request did (no second run); the same key with another body answers 422.
   */
  idempotencyKey?: string;
  /**
   * Seconds (1 to 25) to wait for the run to end (`Prefer: wait=N`): when it ends within them, the
   * answer carries `run`, the Run as `getRun` reads it. A deferred run is answered at once.
   */
  wait?: number;
  /**
   * What the start does when the workflow already has a run in progress (sent as the body's
   * `onConflict`): `reject` (409, the default), `queue` (wait behind it: 202 with `queuePosition`),
   * `replace` (cancel it and start first).
   */
  onConflict?: OnConflict;
}

export interface GetRunOptions extends RequestOptions {
  /** An `output_next` of an earlier read of this run: the run with the next page of `output`. */
  outputCursor?: string;
  /** Seconds (1 to 25) to wait (`Prefer: wait=N`): answered when the run ends or they pass, whichever is first. */
  wait?: number;
}

/** The `Prefer` header of a wait (RFC 7240), when one is asked for. */
const preferWait = (wait: number | undefined) => (wait === undefined ? {} : { Prefer: `wait=${wait}` });

/** The headers of a run start or resume: its Idempotency-Key and its wait, when given. */
const startHeaders = (runOptions: RunOptions) => {
  const header = {
    ...(runOptions.idempotencyKey ? { 'Idempotency-Key': runOptions.idempotencyKey } : {}),
    ...preferWait(runOptions.wait),
  };
  return Object.keys(header).length > 0 ? { header } : {};
};

export interface RunOutputsOptions extends RequestOptions {
  /** A read of the run already made (a `getRun`, `waitForRun` or webhook body): its page first, then the next ones. */
  from?: Pick<Run, 'output' | 'output_next'>;
}

export interface WaitForRunOptions extends RequestOptions {
  /** First wait between reads, and the wait again after the run changes (default 1,000 ms). */
  intervalMs?: number;
  /** The longest wait between reads (default 10,000 ms). */
  maxIntervalMs?: number;
  /** Each wait while nothing changes is this many times the previous one (default 1.5). */
  backoffFactor?: number;
  /** Give up with `WaitTimeoutError` after this long (default 30 minutes). */
  timeoutMs?: number;
  /** Called with the first read and every read that differs from the one before. */
  onProgress?: (run: Run) => void | Promise<void>;
  /** Network failures and 5xx (other than 503) in a row tolerated before giving up (default 3). */
  maxConsecutiveErrors?: number;
}

export interface WaitForBulkActionOptions extends RequestOptions {
  /** Wait between reads (default 1,000 ms), growing by half each read up to 10,000 ms. */
  intervalMs?: number;
  /** Give up with `WaitTimeoutError` after this long (default 30 minutes). */
  timeoutMs?: number;
  /** Called with each read. */
  onProgress?: (action: BulkAction) => void | Promise<void>;
}

export interface UploadFileOptions extends RequestOptions {
  /** The file's content type; from a path, its extension tells it when not given (`contentTypesByExtension`). */
  contentType?: UploadContentType;
  /** The file's name (default: the path's last part; for bytes, `upload` and the type's extension). */
  name?: string;
  /** Called each time a chunk (1 MiB) of the bytes is handed to the connection, the last with `sentBytes === totalBytes`. */
  onProgress?: (progress: UploadProgress) => void;
}

export interface WorkflowRunClient {
  /** GET /workflows: the workflows the key can run, newest change first. */
  listWorkflows(options?: RequestOptions): Promise<WorkflowSummary[]>;
  /** POST /workflows: creates a workflow from steps; exactly one of `agentId` and `projectId`. */
  createWorkflow(body: CreateWorkflowRequest, options?: RequestOptions): Promise<CreateWorkflowResponse>;
  /** POST /workflows/{id}/runs: starts (or with `defer: true`, defers) a run. */
  runWorkflow(id: string, body: RunRequest & { defer: true }, options?: RunOptions): Promise<RunDeferredResponse>;
  runWorkflow(id: string, body?: RunRequest & { defer?: false }, options?: RunOptions): Promise<RunStartedResponse>;
  runWorkflow(id: string, body?: RunRequest, options?: RunOptions): Promise<RunStartResponse>;
  /** POST /agents/{id}/runs: runs the agent's active (else newest) workflow. */
  runAgent(id: string, body: RunRequest & { defer: true }, options?: RunOptions): Promise<RunDeferredResponse>;
  runAgent(id: string, body?: RunRequest & { defer?: false }, options?: RunOptions): Promise<RunStartedResponse>;
  runAgent(id: string, body?: RunRequest, options?: RunOptions): Promise<RunStartResponse>;
  /**
   * GET /runs/{jobId}: status, per-step status and output. Never spends credits. `output` is one
   * page: when `output_next` is present, more outputs follow (`runOutputs` reads them all).
   */
  getRun(jobId: string, options?: GetRunOptions): Promise<Run>;
  /**
   * Every output of the run, in the workflow's order: each page's, following `output_next` until
   * it is absent. Read once the run has ended, every output comes exactly once.
   */
  runOutputs(jobId: string, options?: RunOutputsOptions): AsyncGenerator<RunOutput, void, undefined>;
  /** POST /runs/{jobId}/cancel: cancels a run in progress; 409 `ConflictError` once it has ended. */
  cancelRun(jobId: string, options?: RequestOptions): Promise<Run>;
  /**
   * POST /runs/{jobId}/resume: a new run of a failed or stopped run that keeps the steps it completed
   * (not run or charged again) and runs the rest; `inputs` apply to the steps that run.
   */
  resumeRun(
    jobId: string,
    body?: ResumeRunRequest,
    options?: RunOptions,
  ): Promise<RunResumedResponse | Schemas['RunResumeQueuedResponse']>;
  /**
   * GET /runs: one page of the team's runs, newest first, as summaries. With a filter a page can
   * hold fewer than `limit` (even none) and still have a `nextCursor`; `runs()` follows it for you.
   * `tag` lists the runs started with that tag (`runs({ tag: 'order:A-1042' })`).
   */
  listRuns(params?: ListRunsParams, options?: RequestOptions): Promise<ListRunsResponse>;
  /** Every run matching the filters, newest first, reading page after page as the loop asks. */
  runs(params?: Omit<ListRunsParams, 'cursor'>, options?: RequestOptions): AsyncGenerator<RunSummary, void, undefined>;
  /** GET /deferred-runs: one page of the team's deferred runs, newest first (see `listRuns`). */
  listDeferredRuns(params?: ListDeferredRunsParams, options?: RequestOptions): Promise<ListDeferredRunsResponse>;
  /** Every deferred run matching the filters, newest first, page after page. */
  deferredRuns(
    params?: Omit<ListDeferredRunsParams, 'cursor'>,
    options?: RequestOptions,
  ): AsyncGenerator<DeferredRun, void, undefined>;
  /**
   * GET /runs/{jobId}/deliveries: the run-finished webhook's latest attempts (5 at most, newest
   * first) and its state. `NotFoundError` for a run without `callbackUrl`.
   */
  listDeliveries(jobId: string, options?: RequestOptions): Promise<WebhookDeliveries>;
  /**
   * GET /runs/{jobId}/steps/{nodeId}: one step's attempts, oldest first (each failed one's error, retry
   * class and wait; its provider, model, job id and charge), and its logs, each cut to 16 KB.
   * `NotFoundError` for another team's run or a step the run's workflow does not have.
   */
  runStep(jobId: string, nodeId: string, options?: RequestOptions): Promise<RunStepDetails>;
  /**
   * POST /runs/{jobId}/deliveries/redeliver: queues one new attempt with the same `webhook-id`;
   * `ConflictError` while the delivery is pending (its body's `nextAttemptAt` says when). With
   * `delivery`, the lifecycle event's delivery it names (`event`, and `nodeId` for a step event).
   */
  redeliverWebhook(
    jobId: string,
    options?: RequestOptions & { delivery?: RedeliverRequest },
  ): Promise<RedeliveryQueued>;
  /** GET /deferred-runs/{id}. Once `dispatched`, `jobId` is the run to read. */
  getDeferredRun(id: string, options?: RequestOptions): Promise<DeferredRun>;
  /** DELETE /deferred-runs/{id}: cancels a deferred run still `waiting`. */
  cancelDeferredRun(id: string, options?: RequestOptions): Promise<DeferredRun>;
  /**
   * POST /files: declares a file (name, content type, exact size) and answers the presigned PUT to
   * send its bytes with: exactly its `upload.method`, `upload.url` and `upload.headers`, within 15 minutes.
   */
  createFile(body: CreateFileRequest, options?: RequestOptions): Promise<CreateFileResponse>;
  /** GET /files/{fileId}: its state; the first read after the bytes arrived checks them (`ready` or `rejected`). */
  getFile(fileId: string, options?: RequestOptions): Promise<UploadedFile>;
  /** GET /storage: the bytes the team holds (uploads, input copies, output files) and its storage quota. */
  getStorage(options?: RequestOptions): Promise<StorageUsage>;
  /** GET /credits: the team's balance and held credits, this key's month against its cap, each project's hard cap (scope `credits:read`). */
  getCredits(options?: RequestOptions): Promise<Credits>;
  /**
   * POST /workflows/{id}/estimate: what `runWorkflow(id, body)` would hold now, each step's part, the
   * refusal it would answer (`refusal`: null, or its status and body), the outputs' licence and the
   * next 24 hours' multipliers. Starts and holds nothing (scope `runs:create`).
   */
  estimate(workflowId: string, body?: RunRequest, options?: RequestOptions): Promise<RunEstimate>;
  /** POST /agents/{id}/estimate: `estimate` for a run of the agent's workflow (`runAgent(id, body)`). */
  estimateAgent(agentId: string, body?: RunRequest, options?: RequestOptions): Promise<RunEstimate>;
  /**
   * POST /webhook-endpoints: an endpoint hearing the events it names of every run of the team its
   * filters pass; its `secret` is answered this once (scope `webhooks:write`).
   */
  createWebhookEndpoint(
    body: CreateWebhookEndpointRequest,
    options?: RequestOptions,
  ): Promise<WebhookEndpointWithSecret>;
  /** GET /webhook-endpoints: the team's endpoints, never a secret (scope `webhooks:read`). */
  listWebhookEndpoints(options?: RequestOptions): Promise<WebhookEndpoint[]>;
  /** GET /webhook-endpoints/{endpointId}. */
  getWebhookEndpoint(endpointId: string, options?: RequestOptions): Promise<WebhookEndpoint>;
  /** PATCH /webhook-endpoints/{endpointId}: the fields given; `disabled: false` re-enables one its failures disabled. */
  updateWebhookEndpoint(
    endpointId: string,
    body: UpdateWebhookEndpointRequest,
    options?: RequestOptions,
  ): Promise<WebhookEndpoint>;
  /** DELETE /webhook-endpoints/{endpointId}. */
  deleteWebhookEndpoint(endpointId: string, options?: RequestOptions): Promise<WebhookEndpoint>;
  /** POST …/rotate-secret: a new secret, answered once; the old one signs beside it for 24 hours. */
  rotateWebhookEndpointSecret(endpointId: string, options?: RequestOptions): Promise<WebhookEndpointWithSecret>;
  /** POST …/test: queues a signed `ping` to the endpoint. */
  testWebhookEndpoint(endpointId: string, options?: RequestOptions): Promise<EndpointDeliveryQueued>;
  /** GET …/deliveries: one page of the endpoint's delivery log, newest first. */
  listWebhookEndpointDeliveries(
    endpointId: string,
    params?: { cursor?: string },
    options?: RequestOptions,
  ): Promise<EndpointDeliveryList>;
  /** Every delivery of the endpoint's log, newest first, page after page. */
  webhookEndpointDeliveries(
    endpointId: string,
    options?: RequestOptions,
  ): AsyncGenerator<EndpointDelivery, void, undefined>;
  /** POST …/deliveries/{deliveryId}/redeliver: one more attempt; `ConflictError` while it is pending. */
  redeliverWebhookEndpointDelivery(
    endpointId: string,
    deliveryId: string,
    options?: RequestOptions,
  ): Promise<EndpointDeliveryQueued>;
  /**
   * POST /runs/cancel: cancels up to 100 runs by `jobIds`, or every run (and waiting deferred run) a
   * `filter` matches, in the background; follow it with `getBulkAction` or `waitForBulkAction`.
   */
  cancelRuns(body: BulkCancelRequest, options?: RequestOptions): Promise<BulkActionAccepted>;
  /** GET /bulk-actions/{bulkActionId}: its status and counts. */
  getBulkAction(bulkActionId: string, options?: RequestOptions): Promise<BulkAction>;
  /**
   * Polls GET /bulk-actions/{bulkActionId} until it is `done`, and returns it. On 429 or 503 waits
   * at least `Retry-After`; throws `WaitTimeoutError` past `timeoutMs`.
   */
  waitForBulkAction(bulkActionId: string, options?: WaitForBulkActionOptions): Promise<BulkAction>;
  /** GET /node-types: every node type's reference (no key needed). */
  listNodeTypes(options?: RequestOptions): Promise<NodeTypeReference[]>;
  /** GET /node-types/{type}: one node type's reference. */
  getNodeType(type: NodeType, options?: RequestOptions): Promise<NodeTypeReference>;
  /**
   * Uploads a file (a path, read in chunks, or bytes): declares it (POST /files), sends its bytes to
   * storage with exactly the answered method, URL and headers, then reads it (GET /files/{fileId},
   * which checks them) and returns it `ready`. Throws `UnknownContentTypeError` before any request
   * when the type cannot be told, `ApiError` for the API's refusals (422 for a type or size not
   * accepted), `StorageRefusedError` when storage refuses the bytes (S3's `code` and message), and
   * `FileRejectedError` (with `reason`) when the check rejects them.
   */
  uploadFile(pathOrBytes: string | Uint8Array, options?: UploadFileOptions): Promise<UploadedFile>;
  /**
   * Polls GET /runs/{jobId} until the run is completed, failed, cancelled or stopped, and returns
   * it (whatever the status: check `run.status`). Waits `intervalMs`, growing by `backoffFactor`
   * up to `maxIntervalMs` while nothing changes; on 429 or 503 waits at least `Retry-After`.
   */
  waitForRun(jobId: string, options?: WaitForRunOptions): Promise<Run>;
  /**
   * GET /runs/{jobId}/events: the run's events as they happen (`step`, `output`,
   * `status`, then `done` with the final Run), reconnecting with `Last-Event-ID` after the server's
   * cap until `done`. The stream's address is the Run's `links.events` (read once unless `url`).
   */
  runEvents(jobId: string, options?: RunEventsOptions): AsyncGenerator<RunEvent, void, undefined>;
  /**
   * POST /runs/{jobId}/tokens: a run token for a browser, which reads this run and follows it live
   * with no key (`links.run` with `fetch`, `links.events` with `EventSource`) until `expiresAt`
   * (`expiresInSeconds`, 60 to 86,400; an hour unless given) or the key's revocation.
   */
  runToken(jobId: string, options?: RequestOptions & { expiresInSeconds?: number }): Promise<RunToken>;
  /**
   * GET /workflows/{id}: the workflow described: `inputs` (the JSON Schema of a run's `inputs`, the
   * rules a start checks them by), `outputs` (its final steps), `price` (a run's range) and `licence`.
   */
  getWorkflow(workflowId: string, options?: RequestOptions): Promise<WorkflowDescription>;
  /**
   * GET /usage: the team's charges from `from` to `to` (UTC dates, both included, at most 366 days)
   * by `groupBy` (day, workflow, key, tag, model or project); the rows sum exactly to the team's
   * charges in the period (scope `usage:read`). One answer, no pages.
   */
  getUsage(params: UsageParams, options?: RequestOptions): Promise<Usage>;
  /** GET /usage?format=csv: the same rows as CSV text (a header line, credits with two decimals). */
  getUsageCsv(params: UsageParams, options?: RequestOptions): Promise<string>;
  /**
   * PUT /workflows/{id}: a create's body (its `agentId` or `projectId` the workflow's own) becomes
   * the workflow's next version; answers it. Earlier versions are kept (scope `workflows:write`).
   */
  updateWorkflow(workflowId: string, body: CreateWorkflowRequest, options?: RequestOptions): Promise<WorkflowVersion>;
  /** PATCH /workflows/{id}: sets its status; an `archived` workflow starts no run. */
  setWorkflowStatus(workflowId: string, status: WorkflowStatus, options?: RequestOptions): Promise<WorkflowSummary>;
  /** GET /workflows/{id}/versions: one page of its versions, newest first. */
  listWorkflowVersions(
    workflowId: string,
    params?: { limit?: number; cursor?: string },
    options?: RequestOptions,
  ): Promise<ListWorkflowVersionsResponse>;
  /** Every version of the workflow, newest first, page after page. */
  workflowVersions(
    workflowId: string,
    options?: RequestOptions,
  ): AsyncGenerator<WorkflowVersionSummary, void, undefined>;
  /** GET /workflows/{id}/versions/{version}: one version, with the steps that made it. */
  getWorkflowVersion(workflowId: string, version: number, options?: RequestOptions): Promise<WorkflowVersion>;
  /**
   * POST /runs/batch: starts 1 to 100 runs in one request, each item (a run start's body plus
   * `workflowId` or `agentId`, and its own `idempotencyKey` if any) answered in `results` exactly as
   * its single start would answer it: a refused item (`status` 402, 409, ...) is no exception, and
   * stops no other. `idempotencyKey` here is the whole batch's: a retry replays its answer.
   */
  startRunBatch(
    runs: BatchRunItem[],
    options?: RequestOptions & { idempotencyKey?: string },
  ): Promise<StartRunBatchResponse>;
  /** GET /batches/{batchId}: the runs a batch started (`jobIds`) and how many are in each status. */
  getBatch(batchId: string, options?: RequestOptions): Promise<Batch>;
  /** The underlying openapi-fetch client, for anything the methods above do not cover. */
  readonly raw: FetchClient<paths>;
}

type Answer<T> = { data?: T; error?: unknown; response: Response };

/** The data of a 2xx answer, or the typed error of any other. */
const unwrap = async <T>(call: Promise<Answer<T>>): Promise<T> => {
  const { data, error, response } = await call;
  if (!response.ok) throw errorFromResponse(response.status, error, response.headers);
  return data as T;
};

const fingerprint = (run: Run): string =>
  JSON.stringify([run.status, run.progress, run.steps.map((s) => [s.node_id, s.status]), run.output.length]);

export const createClient = (options: ClientOptions): WorkflowRunClient => {
  const raw = createFetchClient<paths>({
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    headers: { ...options.headers, authorization: `Bearer ${options.apiKey}` },
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });

  const start = (subject: 'workflow' | 'agent', id: string, body: RunRequest = {}, runOptions: RunOptions = {}) => {
    const init = {
      params: { path: { id }, ...startHeaders(runOptions) },
      body: withConflict(body, runOptions),
      signal: runOptions.signal,
    };
    return unwrap<RunStartResponse>(
      subject === 'workflow' ? raw.POST('/workflows/{id}/runs', init) : raw.POST('/agents/{id}/runs', init),
    );
  };

  const getRun = (jobId: string, requestOptions: GetRunOptions = {}) =>
    unwrap<Run>(
      raw.GET('/runs/{jobId}', {
        params: {
          path: { jobId },
          ...(requestOptions.outputCursor === undefined
            ? {}
            : { query: { output_cursor: requestOptions.outputCursor } }),
          ...(requestOptions.wait === undefined ? {} : { header: preferWait(requestOptions.wait) }),
        },
        signal: requestOptions.signal,
      }),
    );

  async function* runOutputs(jobId: string, outputsOptions: RunOutputsOptions = {}) {
    const { signal } = outputsOptions;
    let page = outputsOptions.from ?? (await getRun(jobId, { signal }));
    for (;;) {
      yield* page.output;
      if (page.output_next === undefined) return;
      page = await getRun(jobId, { signal, outputCursor: page.output_next });
    }
  }

  const waitForRun = async (jobId: string, waitOptions: WaitForRunOptions = {}): Promise<Run> => {
    const baseInterval = waitOptions.intervalMs ?? 1_000;
    const maxInterval = Math.max(baseInterval, waitOptions.maxIntervalMs ?? 10_000);
    const factor = waitOptions.backoffFactor ?? 1.5;
    const timeoutMs = waitOptions.timeoutMs ?? 30 * 60_000;
    const maxErrors = waitOptions.maxConsecutiveErrors ?? 3;
    const signal = waitOptions.signal;
    const deadline = Date.now() + timeoutMs;
    let interval = baseInterval;
    let last: Run | undefined;
    let lastPrint: string | undefined;
    let errors = 0;
    for (;;) {
      signal?.throwIfAborted();
      let wait = interval;
      /** The server said when to come back: coming back sooner would only be refused again. */
      let told = false;
      let run: Run | undefined;
      try {
        run = await getRun(jobId, { signal });
        errors = 0;
      } catch (error) {
        if (signal?.aborted) throw signal.reason;
        if (error instanceof RetryableError) {
          // 429 / 503: never earlier than the server asked.
          wait = Math.max(interval, (error.retryAfterSeconds ?? 1) * 1000);
          told = true;
        } else if (error instanceof ServerError || error instanceof TypeError) {
          // A 5xx or a network failure (fetch throws TypeError): back off, give up after a few in a row.
          errors += 1;
          if (errors >= maxErrors) throw error;
          interval = Math.min(maxInterval, interval * factor);
          wait = interval;
        } else {
          throw error;
        }
      }
      if (run) {
        const print = fingerprint(run);
        if (print !== lastPrint) {
          lastPrint = print;
          interval = baseInterval;
          await waitOptions.onProgress?.(run);
        } else {
          interval = Math.min(maxInterval, interval * factor);
        }
        last = run;
        if (isEnded(run)) return run;
        wait = interval;
      }
      const remaining = deadline - Date.now();
      if (remaining <= 0 || (told && wait > remaining)) throw new WaitTimeoutError(jobId, timeoutMs, last);
      // The last read lands on the deadline.
      await sleep(Math.min(wait, remaining), undefined, { signal }).catch((error: unknown) => {
        throw signal?.aborted ? signal.reason : error;
      });
    }
  };

  const getBulkAction = (bulkActionId: string, requestOptions: RequestOptions = {}) =>
    unwrap<BulkAction>(
      raw.GET('/bulk-actions/{bulkActionId}', { params: { path: { bulkActionId } }, signal: requestOptions.signal }),
    );

  const waitForBulkAction = async (bulkActionId: string, waitOptions: WaitForBulkActionOptions = {}) => {
    const timeoutMs = waitOptions.timeoutMs ?? 30 * 60_000;
    const deadline = Date.now() + timeoutMs;
    const signal = waitOptions.signal;
    let interval = waitOptions.intervalMs ?? 1_000;
    let last: BulkAction | undefined;
    for (;;) {
      let wait = interval;
      try {
        last = await getBulkAction(bulkActionId, { signal });
        await waitOptions.onProgress?.(last);
        if (last.status === 'done') return last;
      } catch (error) {
        // 429 / 503: never earlier than the server asked.
        if (!(error instanceof RetryableError)) throw error;
        wait = Math.max(interval, (error.retryAfterSeconds ?? 1) * 1000);
      }
      const remaining = deadline - Date.now();
      if (remaining <= 0) throw new WaitTimeoutError(bulkActionId, timeoutMs, last, 'Bulk action');
      await sleep(Math.min(wait, remaining), undefined, { signal });
      interval = Math.min(10_000, interval * 1.5);
    }
  };

  const getFile = (fileId: string, requestOptions: RequestOptions = {}) =>
    unwrap<UploadedFile>(raw.GET('/files/{fileId}', { params: { path: { fileId } }, signal: requestOptions.signal }));

  const getStorage = (requestOptions: RequestOptions = {}) =>
    unwrap<StorageUsage>(raw.GET('/storage', { signal: requestOptions.signal }));
  const getCredits = (requestOptions: RequestOptions = {}) =>
    unwrap<Credits>(raw.GET('/credits', { signal: requestOptions.signal }));

  /**
   * The file once its check has run. Storage has the bytes when the PUT answers (S3 reads after
   * writes), so `awaiting_upload` should not last; a few short waits cover a slower store.
   */
  const checkedFile = async (fileId: string, signal: AbortSignal | undefined): Promise<UploadedFile> => {
    for (let attempt = 1; ; attempt++) {
      const file = await getFile(fileId, { signal });
      if (file.state === 'ready') return file;
      if (file.state === 'rejected') throw new FileRejectedError(fileId, file.reason ?? 'no reason given', file);
      if (attempt === 5)
        throw new UploadError(`file ${fileId} still reads awaiting_upload after its bytes were sent`, fileId);
      await sleep(200 * attempt, undefined, { signal });
    }
  };

  const uploadFile = async (pathOrBytes: string | Uint8Array, uploadOptions: UploadFileOptions = {}) => {
    const { signal, onProgress } = uploadOptions;
    const path = typeof pathOrBytes === 'string' ? pathOrBytes : undefined;
    // Both checked before any request: nothing is declared for a file that cannot be sent.
    if (path === undefined && !uploadOptions.contentType)
      throw new UploadError('uploadFile of bytes needs options.contentType (only a path has an extension to tell it)');
    const contentType = uploadOptions.contentType ?? contentTypeOf(path ?? '');
    const opened = path === undefined ? undefined : await openFile(path);
    let fileId: string;
    try {
      const source: ByteSource = opened?.source ?? { kind: 'bytes', bytes: pathOrBytes as Uint8Array };
      const size = source.kind === 'bytes' ? source.bytes.length : source.size;
      const name = uploadOptions.name ?? (path === undefined ? defaultName(contentType) : nameOf(path));
      const declared = await unwrap(raw.POST('/files', { body: { name, contentType, size }, signal }));
      fileId = declared.fileId;
      const { method, url, headers } = declared.upload;
      // A stream, so a large file is read a chunk at a time; its content-length stays the signed one.
      const init: RequestInit & { duplex: 'half' } = {
        method,
        headers,
        body: chunkedStream(source, size, onProgress),
        duplex: 'half',
        signal,
      };
      const response = await (options.fetch ?? fetch)(new Request(url, init));
      if (!response.ok) throw new StorageRefusedError(fileId, response.status, await response.text());
      await response.body?.cancel();
    } finally {
      await opened?.close();
    }
    return checkedFile(fileId, signal);
  };

  const listRuns = (params: ListRunsParams = {}, requestOptions: RequestOptions = {}) =>
    unwrap<ListRunsResponse>(raw.GET('/runs', { params: { query: params }, signal: requestOptions.signal }));
  const listDeferredRuns = (params: ListDeferredRunsParams = {}, requestOptions: RequestOptions = {}) =>
    unwrap<ListDeferredRunsResponse>(
      raw.GET('/deferred-runs', { params: { query: params }, signal: requestOptions.signal }),
    );

  /** Every entry of a list: each page's, then the next page's, until `nextCursor` is null. */
  async function* everyPage<TParams extends { cursor?: string }, TPage extends { nextCursor: string | null }, TEntry>(
    read: (params: TParams) => Promise<TPage>,
    entries: (page: TPage) => TEntry[],
    params: TParams,
  ): AsyncGenerator<TEntry, void, undefined> {
    let cursor: string | null = null;
    do {
      const page = await read(cursor === null ? params : { ...params, cursor });
      yield* entries(page);
      cursor = page.nextCursor;
    } while (cursor !== null);
  }

  const client: WorkflowRunClient = {
    raw,
    listWorkflows: async (requestOptions = {}) =>
      (await unwrap(raw.GET('/workflows', { signal: requestOptions.signal }))).workflows,
    createWorkflow: (body, requestOptions = {}) =>
      unwrap(raw.POST('/workflows', { body, signal: requestOptions.signal })),
    runWorkflow: ((id: string, body?: RunRequest, runOptions?: RunOptions) =>
      start('workflow', id, body, runOptions)) as WorkflowRunClient['runWorkflow'],
    runAgent: ((id: string, body?: RunRequest, runOptions?: RunOptions) =>
      start('agent', id, body, runOptions)) as WorkflowRunClient['runAgent'],
    getRun,
    runOutputs,
    resumeRun: (jobId, body = {}, runOptions = {}) =>
      unwrap(
        raw.POST('/runs/{jobId}/resume', {
          params: { path: { jobId }, ...startHeaders(runOptions) },
          body: withConflict(body, runOptions),
          signal: runOptions.signal,
        }),
      ),
    cancelRun: (jobId, requestOptions = {}) =>
      unwrap(raw.POST('/runs/{jobId}/cancel', { params: { path: { jobId } }, signal: requestOptions.signal })),
    listRuns,
    runs: (params = {}, requestOptions = {}) =>
      everyPage(
        (query: ListRunsParams) => listRuns(query, requestOptions),
        (page: ListRunsResponse) => page.runs,
        params,
      ),
    listDeferredRuns,
    deferredRuns: (params = {}, requestOptions = {}) =>
      everyPage(
        (query: ListDeferredRunsParams) => listDeferredRuns(query, requestOptions),
        (page: ListDeferredRunsResponse) => page.deferredRuns,
        params,
      ),
    listDeliveries: (jobId, requestOptions = {}) =>
      unwrap(raw.GET('/runs/{jobId}/deliveries', { params: { path: { jobId } }, signal: requestOptions.signal })),
    runStep: (jobId, nodeId, requestOptions = {}) =>
      unwrap(
        raw.GET('/runs/{jobId}/steps/{nodeId}', { params: { path: { jobId, nodeId } }, signal: requestOptions.signal }),
      ),
    redeliverWebhook: (jobId, requestOptions = {}) =>
      unwrap(
        raw.POST('/runs/{jobId}/deliveries/redeliver', {
          params: { path: { jobId } },
          ...(requestOptions.delivery && { body: requestOptions.delivery }),
          signal: requestOptions.signal,
        }),
      ),
    getDeferredRun: (id, requestOptions = {}) =>
      unwrap(raw.GET('/deferred-runs/{id}', { params: { path: { id } }, signal: requestOptions.signal })),
    cancelDeferredRun: (id, requestOptions = {}) =>
      unwrap(raw.DELETE('/deferred-runs/{id}', { params: { path: { id } }, signal: requestOptions.signal })),
    createFile: (body, requestOptions = {}) => unwrap(raw.POST('/files', { body, signal: requestOptions.signal })),
    getFile,
    getStorage,
    getCredits,
    estimate: (workflowId, body = {}, requestOptions = {}) =>
      unwrap(
        raw.POST('/workflows/{id}/estimate', {
          params: { path: { id: workflowId } },
          body,
          signal: requestOptions.signal,
        }),
      ),
    estimateAgent: (agentId, body = {}, requestOptions = {}) =>
      unwrap(
        raw.POST('/agents/{id}/estimate', { params: { path: { id: agentId } }, body, signal: requestOptions.signal }),
      ),
    listNodeTypes: async (requestOptions = {}) =>
      (await unwrap(raw.GET('/node-types', { signal: requestOptions.signal }))).nodeTypes,
    getNodeType: (type, requestOptions = {}) =>
      unwrap(raw.GET('/node-types/{type}', { params: { path: { type } }, signal: requestOptions.signal })),
    uploadFile,
    waitForRun,
    cancelRuns: (body, requestOptions = {}) =>
      unwrap(raw.POST('/runs/cancel', { body, signal: requestOptions.signal })),
    getBulkAction,
    waitForBulkAction,
    createWebhookEndpoint: (body, requestOptions = {}) =>
      unwrap(raw.POST('/webhook-endpoints', { body, signal: requestOptions.signal })),
    listWebhookEndpoints: async (requestOptions = {}) =>
      (await unwrap(raw.GET('/webhook-endpoints', { signal: requestOptions.signal }))).endpoints,
    getWebhookEndpoint: (endpointId, requestOptions = {}) =>
      unwrap(
        raw.GET('/webhook-endpoints/{endpointId}', { params: { path: { endpointId } }, signal: requestOptions.signal }),
      ),
    updateWebhookEndpoint: (endpointId, body, requestOptions = {}) =>
      unwrap(
        raw.PATCH('/webhook-endpoints/{endpointId}', {
          params: { path: { endpointId } },
          body,
          signal: requestOptions.signal,
        }),
      ),
    deleteWebhookEndpoint: (endpointId, requestOptions = {}) =>
      unwrap(
        raw.DELETE('/webhook-endpoints/{endpointId}', {
          params: { path: { endpointId } },
          signal: requestOptions.signal,
        }),
      ),
    rotateWebhookEndpointSecret: (endpointId, requestOptions = {}) =>
      unwrap(
        raw.POST('/webhook-endpoints/{endpointId}/rotate-secret', {
          params: { path: { endpointId } },
          signal: requestOptions.signal,
        }),
      ),
    testWebhookEndpoint: (endpointId, requestOptions = {}) =>
      unwrap(
        raw.POST('/webhook-endpoints/{endpointId}/test', {
          params: { path: { endpointId } },
          signal: requestOptions.signal,
        }),
      ),
    listWebhookEndpointDeliveries: (endpointId, params = {}, requestOptions = {}) =>
      unwrap(
        raw.GET('/webhook-endpoints/{endpointId}/deliveries', {
          params: { path: { endpointId }, query: params },
          signal: requestOptions.signal,
        }),
      ),
    webhookEndpointDeliveries: (endpointId, requestOptions = {}) =>
      everyPage(
        (query: { cursor?: string }) => client.listWebhookEndpointDeliveries(endpointId, query, requestOptions),
        (page: EndpointDeliveryList) => page.deliveries,
        {},
      ),
    redeliverWebhookEndpointDelivery: (endpointId, deliveryId, requestOptions = {}) =>
      unwrap(
        raw.POST('/webhook-endpoints/{endpointId}/deliveries/{deliveryId}/redeliver', {
          params: { path: { endpointId, deliveryId } },
          signal: requestOptions.signal,
        }),
      ),
    getUsage: (params, requestOptions = {}) =>
      unwrap<Usage>(
        raw.GET('/usage', { params: { query: params }, signal: requestOptions.signal }) as Promise<Answer<Usage>>,
      ),
    getUsageCsv: (params, requestOptions = {}) =>
      unwrap<string>(
        raw.GET('/usage', {
          params: { query: { ...params, format: 'csv' } },
          parseAs: 'text',
          signal: requestOptions.signal,
        }) as Promise<Answer<string>>,
      ),
    runEvents: (jobId, eventsOptions) =>
      runEvents(
        {
          baseUrl: options.baseUrl.replace(/\/+$/, ''),
          headers: { ...options.headers, authorization: `Bearer ${options.apiKey}` },
          fetch: (url, init) => (options.fetch ? options.fetch(new Request(url, init)) : fetch(url, init)),
          eventsUrlOf: async (id, signal) => (await getRun(id, signal ? { signal } : {})).links?.events,
        },
        jobId,
        eventsOptions,
      ),
    runToken: (jobId, requestOptions = {}) =>
      unwrap(
        raw.POST('/runs/{jobId}/tokens', {
          params: { path: { jobId } },
          ...(requestOptions.expiresInSeconds !== undefined && {
            body: { expiresInSeconds: requestOptions.expiresInSeconds },
          }),
          signal: requestOptions.signal,
        }),
      ),
    getWorkflow: (workflowId, requestOptions = {}) =>
      unwrap(raw.GET('/workflows/{id}', { params: { path: { id: workflowId } }, signal: requestOptions.signal })),
    updateWorkflow: (workflowId, body, requestOptions = {}) =>
      unwrap(raw.PUT('/workflows/{id}', { params: { path: { id: workflowId } }, body, signal: requestOptions.signal })),
    setWorkflowStatus: (workflowId, status, requestOptions = {}) =>
      unwrap(
        raw.PATCH('/workflows/{id}', {
          params: { path: { id: workflowId } },
          body: { status },
          signal: requestOptions.signal,
        }),
      ),
    listWorkflowVersions: (workflowId, params = {}, requestOptions = {}) =>
      unwrap(
        raw.GET('/workflows/{id}/versions', {
          params: { path: { id: workflowId }, query: params },
          signal: requestOptions.signal,
        }),
      ),
    workflowVersions: (workflowId, requestOptions = {}) =>
      everyPage(
        (query: { cursor?: string }) => client.listWorkflowVersions(workflowId, query, requestOptions),
        (page: ListWorkflowVersionsResponse) => page.versions,
        {},
      ),
    getWorkflowVersion: (workflowId, version, requestOptions = {}) =>
      unwrap(
        raw.GET('/workflows/{id}/versions/{version}', {
          params: { path: { id: workflowId, version } },
          signal: requestOptions.signal,
        }),
      ),
    startRunBatch: (runs, requestOptions = {}) =>
      unwrap(
        raw.POST('/runs/batch', {
          params: startHeaders({
            ...(requestOptions.idempotencyKey && { idempotencyKey: requestOptions.idempotencyKey }),
          }),
          body: { runs },
          signal: requestOptions.signal,
        }),
      ),
    getBatch: (batchId, requestOptions = {}) =>
      unwrap(raw.GET('/batches/{batchId}', { params: { path: { batchId } }, signal: requestOptions.signal })),
  };
  return client;
};

/** One file found in a run's output. */
export interface OutputFile {
  node_id: string;
  step_type: string;
  /** Where in the output's `result` it sits, e.g. `result.image[1]`. */
  path: string;
  file: RunFile;
}

/** Whether a value inside a result is a file (a `RunFile`): narrows a result, or a part of one, without a cast. */
export const isRunFile = (value: unknown): value is RunFile =>
  typeof value === 'object' &&
  value !== null &&
  !Array.isArray(value) &&
  ['ready', 'processing', 'unavailable'].includes((value as { availability?: unknown }).availability as string) &&
  'url' in value;

/** Every file object in a run's output, in output order (ready ones have a signed `url`, valid two hours). */
export const outputFiles = (run: Pick<Run, 'output'>): OutputFile[] => {
  const found: OutputFile[] = [];
  const walk = (output: RunOutput, value: unknown, path: string) => {
    if (isRunFile(value)) found.push({ node_id: output.node_id, step_type: output.step_type, path, file: value });
    else if (Array.isArray(value)) for (const [i, item] of value.entries()) walk(output, item, `${path}[${i}]`);
    else if (value && typeof value === 'object')
      for (const [key, item] of Object.entries(value)) walk(output, item, `${path}.${key}`);
  };
  for (const output of run.output) walk(output, output.result, 'result');
  return found;
};
