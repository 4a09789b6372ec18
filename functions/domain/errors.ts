/**
 * What can go wrong, each error named for its meaning and carrying its facts as typed fields.
 * They never hold an HTTP status or a response body: `functions/http/error-map.ts` is the one table
 * that turns each into the spec's status and body.
 */
import type { ValidationIssue } from '../../schemas/workflows.ts';
import type { RunRefusal } from './admission.ts';

/** The base of every error the service throws on purpose; `cause` keeps the failure behind it. */
export class ServiceError extends Error {
  override name = 'ServiceError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

// The caller and its key

export class UnauthorizedError extends ServiceError {
  override readonly name = 'UnauthorizedError';
  constructor(options?: { cause?: unknown }) {
    super('no valid API key', options);
  }
}

/** The key lacks the scope the route needs. */
export class ScopeNotPermittedError extends ServiceError {
  override readonly name = 'ScopeNotPermittedError';
  readonly scope: string;
  constructor(scope: string) {
    super(`key lacks scope ${scope}`);
    this.scope = scope;
  }
}

/** The key is over its requests per minute. */
export class RateLimitedError extends ServiceError {
  override readonly name = 'RateLimitedError';
  readonly retryAfterSeconds: number;
  constructor(retryAfterSeconds: number) {
    super('rate limit exceeded');
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/** A key restricted to some workflows may not create one. */
export class CreateWorkflowNotPermittedError extends ServiceError {
  override readonly name = 'CreateWorkflowNotPermittedError';
  constructor() {
    super('key restricted to some workflows');
  }
}

/** A key restricted to some workflows names another. */
export class WorkflowNotPermittedError extends ServiceError {
  override readonly name = 'WorkflowNotPermittedError';
  readonly workflowId: string;
  constructor(workflowId: string) {
    super(`workflow ${workflowId} not permitted for this key`);
    this.workflowId = workflowId;
  }
}

// The request body

/** The body is not JSON or does not fit the request schema; `detail` names the first problem. */
export class InvalidBodyError extends ServiceError {
  override readonly name = 'InvalidBodyError';
  readonly detail: string;
  constructor(detail: string, options?: { cause?: unknown }) {
    super(`invalid body: ${detail}`, options);
    this.detail = detail;
  }
}

/** A list's query string has a value it does not take (`detail` names the parameter and what it takes). */
export class InvalidQueryError extends ServiceError {
  override readonly name = 'InvalidQueryError';
  readonly detail: string;
  constructor(detail: string) {
    super(`invalid query: ${detail}`);
    this.detail = detail;
  }
}

/**
 * A list's `cursor` was not issued for this list: another team's, another filter set's, altered or
 * not a cursor at all. Which of these is not said: the cursor is opaque.
 */
export class InvalidCursorError extends ServiceError {
  override readonly name = 'InvalidCursorError';
  constructor() {
    super('cursor not issued for this list');
  }
}

/** The body is above the operation's documented size limit. */
export class PayloadTooLargeError extends ServiceError {
  override readonly name = 'PayloadTooLargeError';
  readonly maxBytes: number;
  constructor(maxBytes: number) {
    super(`body above ${maxBytes} bytes`);
    this.maxBytes = maxBytes;
  }
}

/** A workflow within the body limit would still not fit in one stored item. */
export class WorkflowTooLargeToStoreError extends ServiceError {
  override readonly name = 'WorkflowTooLargeToStoreError';
  readonly bytes: number;
  readonly maxBytes: number;
  constructor(bytes: number, maxBytes: number) {
    super(`workflow takes ${bytes} bytes to store, at most ${maxBytes}`);
    this.bytes = bytes;
    this.maxBytes = maxBytes;
  }
}

/** A field POST /workflows requires is missing or empty. */
export class NameRequiredError extends ServiceError {
  override readonly name = 'NameRequiredError';
  constructor() {
    super('name is missing');
  }
}

export class StepsRequiredError extends ServiceError {
  override readonly name = 'StepsRequiredError';
  constructor() {
    super('steps are missing');
  }
}

/** POST /workflows names neither or both of agentId and projectId. */
export class AgentOrProjectRequiredError extends ServiceError {
  override readonly name = 'AgentOrProjectRequiredError';
  constructor() {
    super('not exactly one of agentId or projectId');
  }
}

/** The run's callbackUrl is not an https:// URL. */
export class CallbackUrlInvalidError extends ServiceError {
  override readonly name = 'CallbackUrlInvalidError';
  constructor() {
    super('callbackUrl is not an https URL');
  }
}

/** The Idempotency-Key was used before with another request. */
export class IdempotencyKeyReusedError extends ServiceError {
  override readonly name = 'IdempotencyKeyReusedError';
  constructor() {
    super('Idempotency-Key reused with another body');
  }
}

// Missing (or another team's, which reads the same)

export class WorkflowNotFoundError extends ServiceError {
  override readonly name = 'WorkflowNotFoundError';
  readonly workflowId: string;
  constructor(workflowId: string) {
    super(`workflow ${workflowId} not found`);
    this.workflowId = workflowId;
  }
}

/** The workflow exists but its canvas does not (or belongs to another team). */
export class CanvasNotFoundError extends ServiceError {
  override readonly name = 'CanvasNotFoundError';
  readonly workflowId: string;
  constructor(workflowId: string) {
    super(`canvas of workflow ${workflowId} not found`);
    this.workflowId = workflowId;
  }
}

export class AgentNotFoundError extends ServiceError {
  override readonly name = 'AgentNotFoundError';
  readonly agentId: string;
  constructor(agentId: string) {
    super(`agent ${agentId} not found`);
    this.agentId = agentId;
  }
}

/** The agent has no workflow to run. */
export class NoWorkflowForAgentError extends ServiceError {
  override readonly name = 'NoWorkflowForAgentError';
  readonly agentId: string;
  constructor(agentId: string) {
    super(`agent ${agentId} has no workflow`);
    this.agentId = agentId;
  }
}

/** The agent or project a new workflow names does not exist. */
export class AgentOrProjectNotFoundError extends ServiceError {
  override readonly name = 'AgentOrProjectNotFoundError';
  constructor(options?: { cause?: unknown }) {
    super('agent or project not found', options);
  }
}

export class RunNotFoundError extends ServiceError {
  override readonly name = 'RunNotFoundError';
  readonly jobId: string;
  constructor(jobId: string) {
    super(`run ${jobId} not found`);
    this.jobId = jobId;
  }
}

export class DeferredRunNotFoundError extends ServiceError {
  override readonly name = 'DeferredRunNotFoundError';
  readonly deferredJobId: string;
  constructor(deferredJobId: string) {
    super(`deferred run ${deferredJobId} not found`);
    this.deferredJobId = deferredJobId;
  }
}

// The resource's state

/** The workflow's run lock is held by `activeJobId`. */
export class RunInProgressError extends ServiceError {
  override readonly name = 'RunInProgressError';
  readonly activeJobId: string;
  constructor(activeJobId: string) {
    super(`run ${activeJobId} in progress`);
    this.activeJobId = activeJobId;
  }
}

/** The run to cancel has already ended. */
export class RunAlreadyEndedError extends ServiceError {
  override readonly name = 'RunAlreadyEndedError';
  readonly jobId: string;
  constructor(jobId: string) {
    super(`run ${jobId} already ended`);
    this.jobId = jobId;
  }
}

/** The deferred run to cancel is no longer waiting. */
export class DeferredRunNotWaitingError extends ServiceError {
  override readonly name = 'DeferredRunNotWaitingError';
  readonly deferredJobId: string;
  constructor(deferredJobId: string) {
    super(`deferred run ${deferredJobId} not waiting`);
    this.deferredJobId = deferredJobId;
  }
}

/** A redelivery was asked for while the run's webhook is still pending (an attempt is due or queued). */
export class DeliveryPendingError extends ServiceError {
  override readonly name = 'DeliveryPendingError';
  readonly jobId: string;
  /** When its next attempt is due, when one is scheduled. */
  readonly nextAttemptAt: string | null;
  constructor(jobId: string, nextAttemptAt: string | null) {
    super(`webhook delivery of run ${jobId} pending`);
    this.jobId = jobId;
    this.nextAttemptAt = nextAttemptAt;
  }
}

// The workflow or run cannot be processed

export class UnknownNodeTypeError extends ServiceError {
  override readonly name = 'UnknownNodeTypeError';
  readonly type: string;
  constructor(type: string) {
    super(`unknown node type ${type}`);
    this.type = type;
  }
}

/** POST /workflows: the graph fails validation. */
export class WorkflowValidationFailedError extends ServiceError {
  override readonly name = 'WorkflowValidationFailedError';
  readonly errors: ValidationIssue[];
  constructor(errors: ValidationIssue[]) {
    super(`workflow fails validation (${errors.length} issue(s))`);
    this.errors = errors;
  }
}

/** A run start: the stored workflow fails validation. */
export class RunValidationFailedError extends ServiceError {
  override readonly name = 'RunValidationFailedError';
  readonly errors: ValidationIssue[];
  constructor(errors: ValidationIssue[]) {
    super(`workflow to run fails validation (${errors.length} issue(s))`);
    this.errors = errors;
  }
}

/** Inputs the workflow does not accept, in the order sent, beside every key it does accept. */
export class UnknownInputKeysError extends ServiceError {
  override readonly name = 'UnknownInputKeysError';
  readonly keys: readonly string[];
  readonly validKeys: readonly string[];
  constructor(keys: readonly string[], validKeys: readonly string[]) {
    super(`unknown input keys ${keys.join(', ')}`);
    this.keys = keys;
    this.validKeys = validKeys;
  }
}

/** A model step's provider is not open to API runs and the team has no own key that lifts it. */
export class ProviderNotAvailableError extends ServiceError {
  override readonly name = 'ProviderNotAvailableError';
  readonly nodeType: string;
  readonly providers: readonly string[];
  readonly level: 'app_only' | 'byok_only' | 'not_allowed' | 'region_restricted';
  constructor(
    nodeType: string,
    providers: readonly string[],
    level: 'app_only' | 'byok_only' | 'not_allowed' | 'region_restricted',
  ) {
    super(`${nodeType} runs on ${providers.join(', ')} (${level})`);
    this.nodeType = nodeType;
    this.providers = providers;
    this.level = level;
  }
}

// Admission (functions/domain/admission.ts decides; these carry its answer)

/** The run may not start: the refusal says which limit and by how much, in hundredths. */
export class RunRefusedError extends ServiceError {
  override readonly name = 'RunRefusedError';
  readonly refusal: RunRefusal;
  constructor(refusal: RunRefusal) {
    super(`run refused: ${refusal.kind}`);
    this.refusal = refusal;
  }
}

/** A capped key's month could not be read, so the run is not started unmetered. */
export class MonthlyCapUnverifiableError extends ServiceError {
  override readonly name = 'MonthlyCapUnverifiableError';
  readonly retryAfterSeconds: number;
  constructor(retryAfterSeconds: number, options?: { cause?: unknown }) {
    super('monthly cap could not be checked', options);
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

// Contention (functions/store/write.ts)

/** Why a write could not be made after its retries: what DynamoDB kept answering, or a start that kept losing its race. */
export type StorageContention = 'transactionConflict' | 'throttled' | 'raceLost';

/**
 * A write met contention on every try (another transaction on its items, throttling, or caps that
 * kept changing under a run start): nothing was written, and the caller may try again shortly.
 */
export class StorageBusyError extends ServiceError {
  override readonly name = 'StorageBusyError';
  readonly contention: StorageContention;
  readonly tries: number;
  readonly retryAfterSeconds: number;
  constructor(contention: StorageContention, tries: number, options?: { cause?: unknown }) {
    super(`storage busy (${contention}) after ${tries} tries`, options);
    this.contention = contention;
    this.tries = tries;
    this.retryAfterSeconds = 1;
  }
}
