/**
 * THE error table: every error the service throws on purpose, named for what went wrong, with its
 * facts, its log message, its status and its body (spec section 7). Adding an error is one row
 * here; the compiler then asks for its entry in functions/docs/error-docs.ts (the contract's schemas
 * for its body, from schemas/errors.ts when no existing one fits, and the routes that answer it).
 * The HTTP edge answers it from the row (functions/http/error-map.ts), and the OpenAPI document
 * lists its bodies under its status in the operation of each route its entry names
 * (functions/docs/openapi.ts). Anything not declared here is a server failure. Within a status, an
 * operation lists the bodies in the order of the rows here.
 *
 * Every function imports this table (through the edge), so it holds only what an answer needs:
 * messages and limits from small modules, never a schema or the route table.
 */

import type { DeliveryPendingErrorBody } from '../../schemas/deliveries.ts';
import {
  bulkActionNotFoundMessage,
  deliveryPendingMessage,
  messages,
  webhookEndpointMessages,
} from '../../schemas/error-messages.ts';
import type * as bodies from '../../schemas/errors.ts';
import { fileNotAcceptedPrefix, maxUploadBytes } from '../../schemas/file-limits.ts';
import { uploadContentTypes } from '../../schemas/upload-types.ts';
import type { ValidationIssue } from '../../schemas/workflows.ts';
import type { RunRefusal } from '../domain/admission.ts';
import { toCredits } from '../domain/credits.ts';
import { capResetsText } from '../domain/monthly-cap.ts';
import { maxFileInputBytes, maxFileInputs, type StorageUsage } from '../domain/stored-bytes.ts';
import { defineError } from './define.ts';

const retryAfter = (facts: { retryAfterSeconds: number }) => facts.retryAfterSeconds;
const none = () => ({});

// The caller and its key

/** `reason`: missing, malformed, or `invalid` for an unknown, revoked and expired key alike (no oracle). */
export const UnauthorizedError = defineError('UnauthorizedError', {
  facts: (reason: bodies.UnauthorizedReason) => ({ reason }),
  message: (f) => `no valid API key (${f.reason})`,
  status: 401,
  body: (f) => ({ error: messages.unauthorized, reason: f.reason }),
  // RFC 6750 section 3: the scheme to authenticate with; `invalid_token` once a token was sent.
  headers: (f) => ({ 'www-authenticate': f.reason === 'missing' ? 'Bearer' : 'Bearer error="invalid_token"' }),
});

/** The key lacks the scope the route needs. */
export const ScopeNotPermittedError = defineError('ScopeNotPermittedError', {
  facts: (scope: string) => ({ scope }),
  message: (f) => `key lacks scope ${f.scope}`,
  status: 403,
  body: () => ({ error: messages.scopeNotPermitted }),
});

/** The key is over its requests per minute. */
export const RateLimitedError = defineError('RateLimitedError', {
  facts: (retryAfterSeconds: number) => ({ retryAfterSeconds }),
  message: () => 'rate limit exceeded',
  status: 429,
  body: () => ({ error: messages.rateLimitExceeded }),
  retryAfter,
});

/** The key holds its most event streams open at once (`streamsPerKey`): one must end first. */
export const TooManyStreamsError = defineError('TooManyStreamsError', {
  facts: (cap: number, retryAfterSeconds: number) => ({ cap, retryAfterSeconds }),
  message: (f) => `key holds its ${f.cap} event streams`,
  status: 429,
  body: () => ({ error: messages.tooManyStreams }),
  retryAfter,
});

/** The run has its most event streams open at once (`streamsPerRun`), whatever keys opened them. */
export const TooManyRunStreamsError = defineError('TooManyRunStreamsError', {
  facts: (cap: number, retryAfterSeconds: number) => ({ cap, retryAfterSeconds }),
  message: (f) => `run holds its ${f.cap} event streams`,
  status: 429,
  body: () => ({ error: messages.tooManyRunStreams }),
  retryAfter,
});

/** A key restricted to some workflows may not create one. */
export const CreateWorkflowNotPermittedError = defineError('CreateWorkflowNotPermittedError', {
  facts: none,
  message: () => 'key restricted to some workflows',
  status: 403,
  body: () => ({ error: messages.createWorkflowNotPermitted }),
});

/** A key restricted to some workflows names another. */
export const WorkflowNotPermittedError = defineError('WorkflowNotPermittedError', {
  facts: (workflowId: string) => ({ workflowId }),
  message: (f) => `workflow ${f.workflowId} not permitted for this key`,
  status: 403,
  body: () => ({ error: messages.workflowNotPermitted }),
});

/** A key restricted to some workflows asks for the team's usage, which covers every workflow. */
export const UsageNotPermittedError = defineError('UsageNotPermittedError', {
  facts: none,
  message: () => 'key restricted to some workflows',
  status: 403,
  body: () => ({ error: messages.usageNotPermitted }),
});

// The request body

/**
 * A list's query string has a value it does not take (`detail` names the parameter and what it
 * takes), or a run's read an `output_cursor` that run did not give.
 */
export const InvalidQueryError = defineError('InvalidQueryError', {
  facts: (detail: string) => ({ detail }),
  message: (f) => `invalid query: ${f.detail}`,
  status: 400,
  body: (f) => ({ error: messages.invalidQuery(f.detail) }),
});

/**
 * A list's `cursor` was not issued for this list: another team's, another filter set's, altered or
 * not a cursor at all. Which of these is not said: the cursor is opaque.
 */
export const InvalidCursorError = defineError('InvalidCursorError', {
  facts: none,
  message: () => 'cursor not issued for this list',
  status: 400,
  body: () => ({ error: messages.invalidCursor }),
});

/** The body is above the operation's documented size limit. */
export const PayloadTooLargeError = defineError('PayloadTooLargeError', {
  facts: (maxBytes: number) => ({ maxBytes }),
  message: (f) => `body above ${f.maxBytes} bytes`,
  status: 413,
  body: (f) => ({ error: messages.payloadTooLarge(f.maxBytes) }),
});

/** A workflow within the body limit would still not fit in one stored item. */
export const WorkflowTooLargeToStoreError = defineError('WorkflowTooLargeToStoreError', {
  facts: (bytes: number, maxBytes: number) => ({ bytes, maxBytes }),
  message: (f) => `workflow takes ${f.bytes} bytes to store, at most ${f.maxBytes}`,
  status: 413,
  body: (f) => ({ error: messages.workflowTooLargeToStore(f.bytes, f.maxBytes) }),
});

/** A field POST /workflows requires is missing or empty. */
export const NameRequiredError = defineError('NameRequiredError', {
  facts: none,
  message: () => 'name is missing',
  status: 400,
  body: () => ({ error: messages.nameRequired }),
});

export const StepsRequiredError = defineError('StepsRequiredError', {
  facts: none,
  message: () => 'steps are missing',
  status: 400,
  body: () => ({ error: messages.stepsRequired }),
});

/** POST /workflows names neither or both of agentId and projectId. */
export const AgentOrProjectRequiredError = defineError('AgentOrProjectRequiredError', {
  facts: none,
  message: () => 'not exactly one of agentId or projectId',
  status: 400,
  body: () => ({ error: messages.exactlyOneOfAgentOrProject }),
});

/** The body is not JSON or does not fit the request schema; `detail` names the first problem. */
export const InvalidBodyError = defineError('InvalidBodyError', {
  facts: (detail: string) => ({ detail }),
  message: (f) => `invalid body: ${f.detail}`,
  status: 400,
  body: (f) => ({ error: messages.invalidBody(f.detail) }),
});

// Missing (or another team's, which reads the same)

export const AgentNotFoundError = defineError('AgentNotFoundError', {
  facts: (agentId: string) => ({ agentId }),
  message: (f) => `agent ${f.agentId} not found`,
  status: 404,
  body: () => ({ error: messages.agentNotFound }),
});

/** The agent has no workflow to run. */
export const NoWorkflowForAgentError = defineError('NoWorkflowForAgentError', {
  facts: (agentId: string) => ({ agentId }),
  message: (f) => `agent ${f.agentId} has no workflow`,
  status: 404,
  body: () => ({ error: messages.noWorkflowForAgent }),
});

export const WorkflowNotFoundError = defineError('WorkflowNotFoundError', {
  facts: (workflowId: string) => ({ workflowId }),
  message: (f) => `workflow ${f.workflowId} not found`,
  status: 404,
  body: () => ({ error: messages.workflowNotFound }),
});

/**
 * Our design: the workflow has no such version (a version read, or a start or estimate pinning
 * `version`): numbers run from 1 to its latest.
 */
export const WorkflowVersionNotFoundError = defineError('WorkflowVersionNotFoundError', {
  facts: (workflowId: string, version: number) => ({ workflowId, version }),
  message: (f) => `workflow ${f.workflowId} has no version ${f.version}`,
  status: 404,
  body: () => ({ error: messages.workflowVersionNotFound }),
});

/** The workflow exists but its canvas does not (or belongs to another team). */
export const CanvasNotFoundError = defineError('CanvasNotFoundError', {
  facts: (workflowId: string) => ({ workflowId }),
  message: (f) => `canvas of workflow ${f.workflowId} not found`,
  status: 404,
  body: () => ({ error: messages.canvasNotFound }),
});

/** The agent or project a new workflow names does not exist. */
export const AgentOrProjectNotFoundError = defineError('AgentOrProjectNotFoundError', {
  facts: none,
  message: () => 'agent or project not found',
  status: 404,
  body: () => ({ error: messages.agentOrProjectNotFound }),
});

export const RunNotFoundError = defineError('RunNotFoundError', {
  facts: (jobId: string) => ({ jobId }),
  message: (f) => `run ${f.jobId} not found`,
  status: 404,
  body: () => ({ error: messages.runNotFound }),
});

/** A step the run's workflow does not have (the run itself was found, and is the caller's). */
export const StepNotFoundError = defineError('StepNotFoundError', {
  facts: (jobId: string, nodeId: string) => ({ jobId, nodeId }),
  message: (f) => `step ${f.nodeId} of run ${f.jobId} not found`,
  status: 404,
  body: () => ({ error: messages.stepNotFound }),
});

/** No batch of the team by that id, or none of its runs is kept any more. */
export const BatchNotFoundError = defineError('BatchNotFoundError', {
  facts: (batchId: string) => ({ batchId }),
  message: (f) => `batch ${f.batchId} not found`,
  status: 404,
  body: () => ({ error: messages.batchNotFound }),
});

export const DeferredRunNotFoundError = defineError('DeferredRunNotFoundError', {
  facts: (deferredJobId: string) => ({ deferredJobId }),
  message: (f) => `deferred run ${f.deferredJobId} not found`,
  status: 404,
  body: () => ({ error: messages.deferredRunNotFound }),
});

/**
 * A file link that does not open: altered, ended, another team's object, or not a link at all. Which
 * is never said, and a link's object is not looked up, so the answer tells nothing of what exists.
 */
export const FileLinkNotFoundError = defineError('FileLinkNotFoundError', {
  facts: none,
  message: () => 'file link not valid',
  status: 404,
  body: () => ({ error: messages.fileNotFound }),
});

/** Unknown, or another team's: the same answer, so an id never tells that a file exists. */
export const FileNotFoundError = defineError('FileNotFoundError', {
  facts: (fileId: string) => ({ fileId }),
  message: (f) => `file ${f.fileId} not found`,
  status: 404,
  body: () => ({ error: messages.fileNotFound }),
});

// The resource's state

/** The workflow's run lock is held by `activeJobId`. */
export const RunInProgressError = defineError('RunInProgressError', {
  facts: (activeJobId: string) => ({ activeJobId }),
  message: (f) => `run ${f.activeJobId} in progress`,
  status: 409,
  body: (f) => ({ error: messages.runInProgress, activeJobId: f.activeJobId }),
});

/** A queued start (`onConflict: "queue"`) meets a workflow with its most runs waiting (functions/domain/workflow-queue.ts). */
export const QueueFullError = defineError('QueueFullError', {
  facts: (activeJobId: string, queueDepth: number) => ({ activeJobId, queueDepth }),
  message: (f) => `workflow queue full behind run ${f.activeJobId} (${f.queueDepth} waiting)`,
  status: 409,
  body: (f) => ({ error: messages.queueFull, activeJobId: f.activeJobId, queueDepth: f.queueDepth }),
});

/** The run to cancel has already ended. */
export const RunAlreadyEndedError = defineError('RunAlreadyEndedError', {
  facts: (jobId: string) => ({ jobId }),
  message: (f) => `run ${f.jobId} already ended`,
  status: 409,
  body: () => ({ error: messages.runAlreadyEnded }),
});

/** A resume names a run that is not `failed` or `stopped`: in progress, completed or cancelled. */
export const RunNotResumableError = defineError('RunNotResumableError', {
  // `runState`: the run's stored status, one of the body's (a failed or stopped run is resumable).
  facts: (jobId: string, status: string) => ({
    jobId,
    runState: status as bodies.RunNotResumableErrorBody['status'],
  }),
  message: (f) => `run ${f.jobId} is ${f.runState}, not resumable`,
  status: 409,
  body: (f) => ({ error: messages.runNotResumable, status: f.runState }),
});

/** A provider's webhook whose signature or timestamp does not hold (functions/app/provider-webhook.ts). */
export const ProviderWebhookRefusedError = defineError('ProviderWebhookRefusedError', {
  facts: (provider: string, reason: string) => ({ provider, reason }),
  message: (f) => `${f.provider} webhook refused: ${f.reason}`,
  status: 401,
  body: () => ({ error: messages.providerWebhookRefused }),
});

/** A provider webhook whose URL names no step (not a run id or step key), or whose provider is not configured. */
export const ProviderJobUnknownError = defineError('ProviderJobUnknownError', {
  facts: (provider: string, providerJobId: string) => ({ provider, providerJobId }),
  message: (f) => `${f.provider} job ${f.providerJobId} is no step's`,
  status: 404,
  body: () => ({ error: messages.providerJobUnknown }),
});

/** The deferred run to cancel is no longer waiting. */
export const DeferredRunNotWaitingError = defineError('DeferredRunNotWaitingError', {
  facts: (deferredJobId: string) => ({ deferredJobId }),
  message: (f) => `deferred run ${f.deferredJobId} not waiting`,
  status: 409,
  body: () => ({ error: messages.deferredRunNotWaiting }),
});

/**
 * A redelivery was asked for while the run's webhook is still pending (an attempt is due or
 * queued); `nextAttemptAt` is when its next attempt is due, when one is scheduled.
 */
export const DeliveryPendingError = defineError('DeliveryPendingError', {
  facts: (jobId: string, nextAttemptAt: string | null) => ({ jobId, nextAttemptAt }),
  message: (f) => `webhook delivery of run ${f.jobId} pending`,
  status: 409,
  body: (f): DeliveryPendingErrorBody => ({ error: deliveryPendingMessage, nextAttemptAt: f.nextAttemptAt }),
});

/**
 * A redelivery asked too soon: the delivery's last redelivery was under a minute ago, or the run's
 * deliveries took their redeliveries of the minute (functions/domain/redelivery-limits.ts).
 */
export const TooManyRedeliveriesError = defineError('TooManyRedeliveriesError', {
  facts: (retryAfterSeconds: number) => ({ retryAfterSeconds }),
  message: () => 'redelivery limit reached',
  status: 429,
  body: () => ({ error: messages.tooManyRedeliveries }),
  retryAfter,
});

// The workflow or run cannot be processed

/** `didYouMean`: the node type it most likely misspells, when one is near (functions/domain/did-you-mean.ts). */
export const UnknownNodeTypeError = defineError('UnknownNodeTypeError', {
  facts: (type: string, didYouMean: string | undefined) => ({ type, didYouMean }),
  message: (f) => `unknown node type ${f.type}`,
  status: 422,
  body: (f) => ({
    error: messages.unknownNodeType(f.type),
    ...(f.didYouMean === undefined ? {} : { didYouMean: f.didYouMean }),
  }),
});

/** POST /workflows: the graph fails validation. */
export const WorkflowValidationFailedError = defineError('WorkflowValidationFailedError', {
  facts: (errors: ValidationIssue[]) => ({ errors }),
  message: (f) => `workflow fails validation (${f.errors.length} issue(s))`,
  status: 422,
  body: (f) => ({ error: messages.workflowValidationFailed, errors: f.errors }),
});

/** Inputs the workflow does not accept, in the order sent, beside every key it does accept. */
export const UnknownInputKeysError = defineError('UnknownInputKeysError', {
  facts: (keys: readonly string[], validKeys: readonly string[]) => ({ keys, validKeys }),
  message: (f) => `unknown input keys ${f.keys.join(', ')}`,
  status: 422,
  body: (f) => ({ error: messages.unknownInputKeys(f.keys), validKeys: [...f.validKeys] }),
});

/**
 * A run start (our design): the file an `inputs` key names cannot be used (unknown or
 * another team's, not ready, of a type its step cannot read; a URL not https or not public).
 */
export const InputFileNotUsableError = defineError('InputFileNotUsableError', {
  facts: (key: string, reason: string) => ({ key, reason }),
  message: (f) => `input file ${f.key} not usable: ${f.reason}`,
  status: 422,
  body: (f) => ({ error: messages.inputFileNotUsable(f.key), key: f.key, reason: f.reason }),
});

/** A run start (our design): its `inputs` name more files, or bytes of uploads, than a run may hold. */
export const TooManyFileInputsError = defineError('TooManyFileInputsError', {
  facts: (fileInputs: number, fileInputBytes: number) => ({ fileInputs, fileInputBytes }),
  message: (f) => `${f.fileInputs} file inputs of ${f.fileInputBytes} bytes: over the run's cap`,
  status: 422,
  body: (f) => ({
    error: messages.tooManyFileInputs,
    fileInputs: f.fileInputs,
    maxFileInputs,
    fileInputBytes: f.fileInputBytes,
    maxFileInputBytes,
  }),
});

/** POST /files and the run starts (our design): the team holds its storage quota (functions/domain/stored-bytes.ts). */
export const StorageQuotaReachedError = defineError('StorageQuotaReachedError', {
  facts: (usage: StorageUsage, neededBytes: number) => ({ ...usage, neededBytes }),
  message: (f) => `storage quota reached: ${f.usedBytes} of ${f.quotaBytes} bytes held, ${f.neededBytes} more asked`,
  status: 409,
  body: (f) => ({
    error: messages.storageQuotaReached,
    quotaBytes: f.quotaBytes,
    usedBytes: f.usedBytes,
    neededBytes: f.neededBytes,
  }),
});

/** The run's callbackUrl is not an https:// URL. */
export const CallbackUrlInvalidError = defineError('CallbackUrlInvalidError', {
  facts: none,
  message: () => 'callbackUrl is not an https URL',
  status: 422,
  body: () => ({ error: messages.callbackUrlInvalid }),
});

/** A run start (our design): a deferred run's `startBy` has passed or lies too far ahead (functions/domain/deferred-run-lifetime.ts). */
export const StartByOutOfRangeError = defineError('StartByOutOfRangeError', {
  facts: (startBy: string, latestStartBy: string) => ({ startBy, latestStartBy }),
  message: (f) => `startBy ${f.startBy} outside now to ${f.latestStartBy}`,
  status: 422,
  body: (f) => ({ error: messages.startByOutOfRange, startBy: f.startBy, latestStartBy: f.latestStartBy }),
});

/** A run start: the stored workflow fails validation. */
export const RunValidationFailedError = defineError('RunValidationFailedError', {
  facts: (errors: ValidationIssue[]) => ({ errors }),
  message: (f) => `workflow to run fails validation (${f.errors.length} issue(s))`,
  status: 422,
  body: (f) => ({ success: false as const, errors: f.errors }),
});

/** A model step's provider is not open to API runs and the team has no own key that lifts it. */
export const ProviderNotAvailableError = defineError('ProviderNotAvailableError', {
  // `model`: only that model is refused (the stage does not pay for it on its key), not its provider.
  facts: (nodeType: string, providers: readonly string[], level: bodies.ProviderLevel, model?: string) => ({
    nodeType,
    providers,
    level,
    model,
  }),
  message: (f) => `${f.nodeType} runs on ${f.model ?? f.providers.join(', ')} (${f.level})`,
  status: 422,
  body: (f) => ({
    error:
      f.model === undefined
        ? messages.providerNotAvailable(f.nodeType, f.providers)
        : messages.modelNotPaid(f.nodeType, f.model),
    providers: [...f.providers],
    level: f.level,
  }),
});

/** The Idempotency-Key was used before with another request. */
export const IdempotencyKeyReusedError = defineError('IdempotencyKeyReusedError', {
  facts: none,
  message: () => 'Idempotency-Key reused with another body',
  status: 422,
  body: () => ({ error: messages.idempotencyKeyReused }),
});
/** POST /files: a size, content type or name outside the limits; `detail` says which, the body gives them all. */
export const FileNotAcceptedError = defineError('FileNotAcceptedError', {
  facts: (detail: string) => ({ detail }),
  message: (f) => `file not accepted: ${f.detail}`,
  status: 422,
  body: (f) => ({
    error: `${fileNotAcceptedPrefix}${f.detail}`,
    maxBytes: maxUploadBytes,
    contentTypes: [...uploadContentTypes],
  }),
});

// Admission (functions/domain/admission.ts decides; these carry its answer)

/** The spec's 402 body for a refusal, amounts in credits (the team's balance added by `RunRefusedError`). */
const refusalBody = (refusal: RunRefusal) => {
  switch (refusal.kind) {
    case 'perStepLimit': {
      const estimatedCharge = toCredits(refusal.estimatedChargeHundredths);
      const ceiling = toCredits(refusal.ceilingHundredths);
      return {
        error: messages.perStepLimitExceeded(refusal.nodeType, estimatedCharge, ceiling),
        nodeType: refusal.nodeType,
        estimatedCharge,
        ceiling,
      };
    }
    case 'projectHardCap':
      return {
        error: messages.projectHardCapExceeded,
        hardCap: toCredits(refusal.hardCapHundredths),
        spent: toCredits(refusal.spentHundredths),
        estimate: toCredits(refusal.estimateHundredths),
      };
    case 'monthlyCap':
      return {
        error: messages.monthlyCreditCapReached,
        monthlyCreditCap: toCredits(refusal.monthlyCapHundredths),
        spentThisMonth: toCredits(refusal.spentThisMonthHundredths),
        resets: capResetsText(refusal.resetsAt),
      };
    case 'insufficientCredits':
      return { error: messages.insufficientCredits, required: toCredits(refusal.requiredHundredths) };
  }
};

/** The run may not start: the refusal says which limit and by how much, in hundredths. */
export const RunRefusedError = defineError('RunRefusedError', {
  facts: (refusal: RunRefusal, balanceHundredths: number) => ({ refusal, balanceHundredths }),
  message: (f) => `run refused: ${f.refusal.kind}`,
  status: 402,
  // Our addition to each body: the team's balance when the start was refused, in credits.
  body: (f) => ({ ...refusalBody(f.refusal), balance: toCredits(f.balanceHundredths) }),
});

/** A capped key's month could not be read, so the run is not started unmetered. */
export const MonthlyCapUnverifiableError = defineError('MonthlyCapUnverifiableError', {
  facts: (retryAfterSeconds: number) => ({ retryAfterSeconds }),
  message: () => 'monthly cap could not be checked',
  status: 503,
  body: () => ({ error: messages.monthlyCapUnverifiable }),
  retryAfter,
});

// Contention (functions/store/write.ts)

/**
 * Why a write could not be made, or a read answered, after its retries: what DynamoDB kept answering
 * (`unavailable`: its own 5xx, classified on reads only, functions/store/read.ts), or a start that
 * kept losing its race.
 */
export type StorageContention = 'transactionConflict' | 'throttled' | 'unavailable' | 'raceLost';

/**
 * A write met contention on every try (another transaction on its items, throttling, or caps that
 * kept changing under a run start), or a read did once the SDK's own retries ran out (throttling,
 * DynamoDB's 5xx): nothing was written, and the caller may try again shortly.
 * functions/store/write.ts or functions/store/read.ts logged it with its cause.
 */
export const StorageBusyError = defineError('StorageBusyError', {
  facts: (contention: StorageContention, tries: number) => ({ contention, tries, retryAfterSeconds: 1 }),
  message: (f) => `storage busy (${f.contention}) after ${f.tries} tries`,
  status: 503,
  body: () => ({ error: messages.storageBusy }),
  retryAfter,
});

// Webhook endpoints

/** Unknown, or another team's: the same answer, so an id never tells that an endpoint exists. */
export const WebhookEndpointNotFoundError = defineError('WebhookEndpointNotFoundError', {
  facts: (endpointId: string) => ({ endpointId }),
  message: (f) => `webhook endpoint ${f.endpointId} not found`,
  status: 404,
  body: () => ({ error: webhookEndpointMessages.notFound }),
});

/** A redelivery names no delivery of the endpoint (or one whose run has expired). */
export const WebhookDeliveryNotFoundError = defineError('WebhookDeliveryNotFoundError', {
  facts: (deliveryId: string) => ({ deliveryId }),
  message: (f) => `webhook delivery ${f.deliveryId} not found`,
  status: 404,
  body: () => ({ error: webhookEndpointMessages.deliveryNotFound }),
});

/** The team keeps its most endpoints already (functions/domain/webhook-endpoints.ts `maxEndpointsPerTeam`). */
export const TooManyWebhookEndpointsError = defineError('TooManyWebhookEndpointsError', {
  facts: (maxEndpoints: number) => ({ maxEndpoints }),
  message: (f) => `team keeps its ${f.maxEndpoints} webhook endpoints`,
  status: 409,
  body: (f) => ({ error: webhookEndpointMessages.tooMany, maxEndpoints: f.maxEndpoints }),
});

// Bulk actions

/** Unknown, or another team's: the same answer, so an id never tells that an action exists. */
export const BulkActionNotFoundError = defineError('BulkActionNotFoundError', {
  facts: (bulkActionId: string) => ({ bulkActionId }),
  message: (f) => `bulk action ${f.bulkActionId} not found`,
  status: 404,
  body: () => ({ error: bulkActionNotFoundMessage }),
});
