/**
 * Every message of an error body, as constants, so handlers, the error table
 * (functions/errors/table.ts) and the body schemas (schemas/errors.ts and the resource modules)
 * share one spelling. Plain strings, no schema: every function imports the error table, and a
 * message imported from a schema module would build that module's schemas at each cold start.
 *
 * Messages marked "our design" are not in the spec: the spec leaves them "not shown" or they belong
 * to operations the spec does not describe (cancelling runs, Idempotency-Key, malformed bodies).
 */

/** Fixed beginnings of the messages that end with a detail. */
export const messagePrefixes = {
  unknownNodeType: 'Unknown node type: ',
  unknownInputKeys: 'Unknown input key(s): ',
  /** Our design: a file a run's input names cannot be used. */
  inputFileNotUsable: 'Input file not usable: ',
  serverError: 'Server error: ',
  /** Our design: a body that is not JSON or does not fit the request schema. */
  invalidBody: 'Invalid request body: ',
  /** Our design: a list's query parameter with a value it does not take (GET /runs, GET /deferred-runs). */
  invalidQuery: 'Invalid query: ',
  /** Our design: a body above the operation's documented size limit (413). */
  payloadTooLarge: 'Request body too large: ',
} as const;

export const messages = {
  unauthorized: 'Unauthorized',
  scopeNotPermitted: 'Scope not permitted for this key',
  createWorkflowNotPermitted: 'This key is not permitted to create workflows',
  workflowNotPermitted: 'Workflow not permitted for this key',
  usageNotPermitted: 'This key is limited to certain workflows; usage covers the whole team',
  nameRequired: 'name is required',
  stepsRequired: 'steps is required',
  exactlyOneOfAgentOrProject: 'Provide exactly one of agentId or projectId',
  insufficientCredits: 'Insufficient credits',
  projectHardCapExceeded: 'Project hard cap exceeded',
  monthlyCreditCapReached: 'Monthly credit cap reached',
  agentOrProjectNotFound: 'Agent or project not found',
  workflowNotFound: 'Workflow not found',
  /** Our design: a version number the workflow does not have. */
  workflowVersionNotFound: 'Workflow version not found',
  canvasNotFound: 'Canvas not found',
  agentNotFound: 'Agent not found',
  noWorkflowForAgent: 'No workflow found for this agent',
  runNotFound: 'Run not found',
  deferredRunNotFound: 'Deferred run not found',
  stepNotFound: 'Step not found',
  batchNotFound: 'Batch not found',
  /**
   * Our design: a file unknown or another team's (GET /files/{fileId}), and a file link that is not,
   * or no longer, one this service made (GET /file-links/…); each reads the same whatever the cause.
   */
  fileNotFound: 'File not found',
  runInProgress: 'This workflow already has a run in progress',
  /** Our design (`onConflict: "queue"`): the workflow has its most runs waiting. */
  queueFull: "This workflow's queue is full",
  workflowValidationFailed: 'Workflow validation failed',
  callbackUrlInvalid: 'callbackUrl must be a valid https:// URL',
  rateLimitExceeded: 'Rate limit exceeded',
  /** Our design (GET /runs/{jobId}/events): the key holds its most event streams open at once. */
  tooManyStreams: 'Too many event streams open with this key',
  /** Our design (GET /runs/{jobId}/events): the run has its most event streams open at once. */
  tooManyRunStreams: 'Too many event streams open on this run',
  /** Our design (POST /runs/{jobId}/deliveries/redeliver): redeliveries are spaced and capped per run. */
  tooManyRedeliveries: 'Too many redeliveries; retry later',
  monthlyCapUnverifiable: 'Unable to verify monthly credit cap; try again shortly',
  /** Our design (POST /runs/{jobId}/cancel). */
  runAlreadyEnded: 'Run already ended',
  runNotResumable: 'Only a failed or stopped run can be resumed',
  /** Our design (POST /provider-webhooks/…): a provider's webhook whose signature or timestamp does not hold. */
  providerWebhookRefused: 'Webhook signature not valid',
  /** Our design (POST /provider-webhooks/…): a URL that names no step, or a provider not configured. */
  providerJobUnknown: 'Unknown provider job',
  /** Our design (DELETE /deferred-runs/{id}). */
  deferredRunNotWaiting: 'Deferred run is not waiting',
  /**
   * Our design (Idempotency-Key on the run starts): one key names one request, its endpoint, the id
   * in its path and its body; the same key sent with any of them different is refused.
   */
  idempotencyKeyReused: 'Idempotency-Key reused with a different request',
  /** Our design: a list's `cursor` that this list did not issue (another team or filters, altered). */
  invalidCursor: 'Invalid cursor: pass the nextCursor of this list back unchanged, with the same filters',
  /** Our design: a write met contention (a conflicting transaction, throttling) on every try. */
  storageBusy: 'Service busy; try again shortly',
  /** Our design: a run's `inputs` name more files, or more bytes of uploads, than a run may hold. */
  tooManyFileInputs: 'Too many file inputs',
  /** Our design: the team holds its storage quota (uploads, input copies, output files). */
  storageQuotaReached: 'Storage quota reached',
  /** Our design: a deferred run's `startBy` is not in the future, or lies further ahead than its bound. */
  startByOutOfRange: 'startBy must lie in the future and no later than latestStartBy',
  unknownNodeType: (type: string): string => `${messagePrefixes.unknownNodeType}${type}`,
  /** The keys are listed comma-separated, in the order the caller sent them. */
  unknownInputKeys: (keys: readonly string[]): string => `${messagePrefixes.unknownInputKeys}${keys.join(', ')}`,
  /** Our design: names the `inputs` key whose file (a `fileId` or a URL) cannot be used. */
  inputFileNotUsable: (key: string): string => `${messagePrefixes.inputFileNotUsable}${key}`,
  /** Only for details safe to show a caller; never an internal error's own message. */
  serverError: (detail: string): string => `${messagePrefixes.serverError}${detail}`,
  /** Our design: `detail` names the first offending field. */
  invalidBody: (detail: string): string => `${messagePrefixes.invalidBody}${detail}`,
  /** Our design: `detail` names the parameter and the values it takes. */
  invalidQuery: (detail: string): string => `${messagePrefixes.invalidQuery}${detail}`,
  /** Our design: names the limit in bytes. */
  payloadTooLarge: (maxBytes: number): string => `${messagePrefixes.payloadTooLarge}at most ${maxBytes} bytes`,
  /** Our design: a body within its limit whose workflow would not fit in one stored item. */
  workflowTooLargeToStore: (bytes: number, maxBytes: number): string =>
    `${messagePrefixes.payloadTooLarge}the workflow would take ${bytes} bytes to store; at most ${maxBytes}`,
  /** Our design: the spec leaves the text of the per-step limit 402 "not shown". */
  perStepLimitExceeded: (nodeType: string, estimatedCharge: number, ceiling: number): string =>
    `${nodeType} step would be charged an estimated ${estimatedCharge} credits, above the team's per-step limit of ${ceiling}`,
  /** The form the spec gives for the provider 422, with its remedies. */
  providerNotAvailable: (nodeType: string, providers: readonly string[]): string =>
    `${nodeType} runs on ${providers.join(' or ')}, which is not available through the API without your own key. ` +
    'Add a key under Team, Connections; run from the app; or pick another provider on that step.',
  /** The provider 422 for a model the deployment does not pay for on its own key. */
  modelNotPaid: (nodeType: string, model: string): string =>
    `${nodeType} runs ${model}, which this deployment does not run on its own key. ` +
    "Add a key under Team, Connections; or pick a model the deployment's model list names on that step.",
} as const;

/** The errors of the webhook endpoints (our design). */
export const webhookEndpointMessages = {
  notFound: 'Webhook endpoint not found',
  tooMany: 'Webhook endpoint limit reached',
  deliveryNotFound: 'Webhook delivery not found',
} as const;

/** 404 of GET /bulk-actions/{bulkActionId}: unknown, or another team's (the same answer). */
export const bulkActionNotFoundMessage = 'Bulk action not found' as const;

/** The 409 of a redelivery while the delivery is pending. */
export const deliveryPendingMessage = 'Webhook delivery pending';
