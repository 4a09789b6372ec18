/**
 * Every error body of spec section 7, each as its own schema, with the messages of
 * schemas/error-messages.ts, so handlers and schemas share one spelling. Bodies are exact
 * (`strictObject`).
 *
 * Messages marked "our design" are not in the spec: the spec leaves them "not shown" or they belong
 * to operations the spec does not describe (cancelling runs, Idempotency-Key, malformed bodies).
 *
 * Body types end in `Body` (`RunInProgressErrorBody`) so that none shares a name with an error class
 * of the error table, `functions/errors/table.ts`, the one place that builds them.
 */
import * as v from 'valibot';
import { UuidSchema } from './common.ts';
import { messagePrefixes, messages } from './error-messages.ts';

const fixed = <const TMessage extends string>(message: TMessage) => v.strictObject({ error: v.literal(message) });
const prefixed = (prefix: string) => v.pipe(v.string(), v.startsWith(prefix));

// 400 (Create workflow)
export const NameRequiredErrorSchema = fixed(messages.nameRequired);
export type NameRequiredErrorBody = v.InferOutput<typeof NameRequiredErrorSchema>;
export const StepsRequiredErrorSchema = fixed(messages.stepsRequired);
export type StepsRequiredErrorBody = v.InferOutput<typeof StepsRequiredErrorSchema>;
export const AgentOrProjectRequiredErrorSchema = fixed(messages.exactlyOneOfAgentOrProject);
export type AgentOrProjectRequiredErrorBody = v.InferOutput<typeof AgentOrProjectRequiredErrorSchema>;
/** Our design: a body that is not JSON, or whose fields have the wrong types. */
export const InvalidBodyErrorSchema = v.strictObject({ error: prefixed(messagePrefixes.invalidBody) });
export type InvalidBodyErrorBody = v.InferOutput<typeof InvalidBodyErrorSchema>;

// 400 (our design: GET /runs and GET /deferred-runs)
export const InvalidQueryErrorSchema = v.strictObject({ error: prefixed(messagePrefixes.invalidQuery) });
export type InvalidQueryErrorBody = v.InferOutput<typeof InvalidQueryErrorSchema>;
export const InvalidCursorErrorSchema = fixed(messages.invalidCursor);
export type InvalidCursorErrorBody = v.InferOutput<typeof InvalidCursorErrorSchema>;

// 413 (our design: POST /workflows and both run starts)
export const PayloadTooLargeErrorSchema = v.strictObject({ error: prefixed(messagePrefixes.payloadTooLarge) });
export type PayloadTooLargeErrorBody = v.InferOutput<typeof PayloadTooLargeErrorSchema>;

// 401 (all keyed)
/**
 * Our addition to the contract's `{ error: "Unauthorized" }`: why, without telling a valid key from
 * one that is not (`invalid` is an unknown, revoked and expired key alike).
 */
export const unauthorizedReasons = ['missing', 'malformed', 'invalid'] as const;
export type UnauthorizedReason = (typeof unauthorizedReasons)[number];
export const UnauthorizedErrorSchema = v.strictObject({
  error: v.literal(messages.unauthorized),
  reason: v.pipe(
    v.picklist(unauthorizedReasons),
    v.description(
      'Our addition: `missing` (no `Authorization: Bearer` key), `malformed` (not a key of ours: wrong form or ' +
        'checksum), `invalid` (a well-formed key that is unknown, revoked or expired: one word for all three).',
    ),
  ),
});
export type UnauthorizedErrorBody = v.InferOutput<typeof UnauthorizedErrorSchema>;

// 402 (both run starts)

/** Our addition to every 402: the team's balance (credits) when the start was refused. */
const balanceEntry = {
  balance: v.pipe(v.number(), v.description("Our addition: the team's balance in credits when the start was refused.")),
};

export const InsufficientCreditsErrorSchema = v.strictObject({
  error: v.literal(messages.insufficientCredits),
  /** Credits the run needs held. */
  required: v.number(),
  ...balanceEntry,
});
export type InsufficientCreditsErrorBody = v.InferOutput<typeof InsufficientCreditsErrorSchema>;

export const ProjectHardCapExceededErrorSchema = v.strictObject({
  error: v.literal(messages.projectHardCapExceeded),
  hardCap: v.number(),
  spent: v.number(),
  estimate: v.number(),
  ...balanceEntry,
});
export type ProjectHardCapExceededErrorBody = v.InferOutput<typeof ProjectHardCapExceededErrorSchema>;

export const PerStepLimitErrorSchema = v.strictObject({
  error: v.string(),
  nodeType: v.string(),
  estimatedCharge: v.number(),
  ceiling: v.number(),
  ...balanceEntry,
});
export type PerStepLimitErrorBody = v.InferOutput<typeof PerStepLimitErrorSchema>;

export const MonthlyCreditCapReachedErrorSchema = v.strictObject({
  error: v.literal(messages.monthlyCreditCapReached),
  monthlyCreditCap: v.number(),
  spentThisMonth: v.number(),
  /** Text about when the cap resets. */
  resets: v.string(),
  ...balanceEntry,
});
export type MonthlyCreditCapReachedErrorBody = v.InferOutput<typeof MonthlyCreditCapReachedErrorSchema>;

// 403
export const ScopeNotPermittedErrorSchema = fixed(messages.scopeNotPermitted);
export type ScopeNotPermittedErrorBody = v.InferOutput<typeof ScopeNotPermittedErrorSchema>;
export const CreateWorkflowNotPermittedErrorSchema = fixed(messages.createWorkflowNotPermitted);
export type CreateWorkflowNotPermittedErrorBody = v.InferOutput<typeof CreateWorkflowNotPermittedErrorSchema>;
export const WorkflowNotPermittedErrorSchema = fixed(messages.workflowNotPermitted);
export type WorkflowNotPermittedErrorBody = v.InferOutput<typeof WorkflowNotPermittedErrorSchema>;
export const UsageNotPermittedErrorSchema = fixed(messages.usageNotPermitted);
export type UsageNotPermittedErrorBody = v.InferOutput<typeof UsageNotPermittedErrorSchema>;

// 404
export const AgentOrProjectNotFoundErrorSchema = fixed(messages.agentOrProjectNotFound);
export type AgentOrProjectNotFoundErrorBody = v.InferOutput<typeof AgentOrProjectNotFoundErrorSchema>;
export const WorkflowNotFoundErrorSchema = fixed(messages.workflowNotFound);
export type WorkflowNotFoundErrorBody = v.InferOutput<typeof WorkflowNotFoundErrorSchema>;
export const WorkflowVersionNotFoundErrorSchema = fixed(messages.workflowVersionNotFound);
export type WorkflowVersionNotFoundErrorBody = v.InferOutput<typeof WorkflowVersionNotFoundErrorSchema>;
export const CanvasNotFoundErrorSchema = fixed(messages.canvasNotFound);
export type CanvasNotFoundErrorBody = v.InferOutput<typeof CanvasNotFoundErrorSchema>;
export const AgentNotFoundErrorSchema = fixed(messages.agentNotFound);
export type AgentNotFoundErrorBody = v.InferOutput<typeof AgentNotFoundErrorSchema>;
export const NoWorkflowForAgentErrorSchema = fixed(messages.noWorkflowForAgent);
export type NoWorkflowForAgentErrorBody = v.InferOutput<typeof NoWorkflowForAgentErrorSchema>;
export const RunNotFoundErrorSchema = fixed(messages.runNotFound);
export type RunNotFoundErrorBody = v.InferOutput<typeof RunNotFoundErrorSchema>;
export const StepNotFoundErrorSchema = fixed(messages.stepNotFound);
export type StepNotFoundErrorBody = v.InferOutput<typeof StepNotFoundErrorSchema>;
export const DeferredRunNotFoundErrorSchema = fixed(messages.deferredRunNotFound);
export type DeferredRunNotFoundErrorBody = v.InferOutput<typeof DeferredRunNotFoundErrorSchema>;
export const BatchNotFoundErrorSchema = fixed(messages.batchNotFound);
export const FileLinkNotFoundErrorSchema = fixed(messages.fileNotFound);
export type FileLinkNotFoundErrorBody = v.InferOutput<typeof FileLinkNotFoundErrorSchema>;
export const FileNotFoundErrorSchema = fixed(messages.fileNotFound);
export type FileNotFoundErrorBody = v.InferOutput<typeof FileNotFoundErrorSchema>;

// 409
export const RunInProgressErrorSchema = v.strictObject({
  error: v.literal(messages.runInProgress),
  /** The run in progress. */
  activeJobId: UuidSchema,
});
export type RunInProgressErrorBody = v.InferOutput<typeof RunInProgressErrorSchema>;
/** Our design: a queued start (`onConflict: "queue"`) when the workflow already has its most runs waiting. */
export const QueueFullErrorSchema = v.strictObject({
  error: v.literal(messages.queueFull),
  /** The run in progress (or, between two runs, the next to start). */
  activeJobId: UuidSchema,
  /** Runs waiting behind it. */
  queueDepth: v.pipe(v.number(), v.integer(), v.minValue(0)),
});
/** A resume of a run that is not `failed` or `stopped`; `status` is the run's, as GET /runs/{jobId} shows it. */
export const RunNotResumableErrorSchema = v.strictObject({
  error: v.literal(messages.runNotResumable),
  status: v.picklist(['queued', 'processing', 'completed', 'cancelled']),
});
export type RunNotResumableErrorBody = v.InferOutput<typeof RunNotResumableErrorSchema>;
export const RunAlreadyEndedErrorSchema = fixed(messages.runAlreadyEnded);
export const ProviderWebhookRefusedErrorSchema = fixed(messages.providerWebhookRefused);
export const ProviderJobUnknownErrorSchema = fixed(messages.providerJobUnknown);
export type RunAlreadyEndedErrorBody = v.InferOutput<typeof RunAlreadyEndedErrorSchema>;
export const DeferredRunNotWaitingErrorSchema = fixed(messages.deferredRunNotWaiting);
export type DeferredRunNotWaitingErrorBody = v.InferOutput<typeof DeferredRunNotWaitingErrorSchema>;

// 422 (the two validation failures with `errors` live beside their resources)
export const UnknownNodeTypeErrorSchema = v.strictObject({
  error: prefixed(messagePrefixes.unknownNodeType),
  didYouMean: v.optional(
    v.pipe(v.string(), v.description('Our addition: the node type it most likely misspells, when one is near.')),
  ),
});
export type UnknownNodeTypeErrorBody = v.InferOutput<typeof UnknownNodeTypeErrorSchema>;

export const UnknownInputKeysErrorSchema = v.strictObject({
  error: prefixed(messagePrefixes.unknownInputKeys),
  /** Every API input key the workflow accepts. */
  validKeys: v.array(v.string()),
});
export type UnknownInputKeysErrorBody = v.InferOutput<typeof UnknownInputKeysErrorSchema>;

/**
 * 422 of a run start (our design): the file an `inputs` key names is unknown (or another
 * team's, read alike), not `ready`, of a type its step cannot read, or a URL that is not https or
 * whose host is not public.
 */
export const InputFileNotUsableErrorSchema = v.strictObject({
  error: prefixed(messagePrefixes.inputFileNotUsable),
  /** The `inputs` key. */
  key: v.string(),
  /** Why, for a person. */
  reason: v.string(),
});
export type InputFileNotUsableErrorBody = v.InferOutput<typeof InputFileNotUsableErrorSchema>;

export const CallbackUrlInvalidErrorSchema = fixed(messages.callbackUrlInvalid);
export type CallbackUrlInvalidErrorBody = v.InferOutput<typeof CallbackUrlInvalidErrorSchema>;

/**
 * How far a provider's integration is open to API runs: `app_only` (through the API only on the
 * team's own key), `byok_only` (only on the team's own key), `not_allowed` and `region_restricted`.
 */
export const providerLevels = ['app_only', 'byok_only', 'not_allowed', 'region_restricted'] as const;
export const ProviderLevelSchema = v.picklist(providerLevels);
export type ProviderLevel = v.InferOutput<typeof ProviderLevelSchema>;

export const ProviderNotAvailableErrorSchema = v.strictObject({
  error: v.string(),
  /** Provider keys the step can run on. */
  providers: v.array(v.string()),
  level: ProviderLevelSchema,
});
export type ProviderNotAvailableErrorBody = v.InferOutput<typeof ProviderNotAvailableErrorSchema>;

export const IdempotencyKeyReusedErrorSchema = fixed(messages.idempotencyKeyReused);
export type IdempotencyKeyReusedErrorBody = v.InferOutput<typeof IdempotencyKeyReusedErrorSchema>;

// 429 (all keyed; with Retry-After)
export const RateLimitExceededErrorSchema = fixed(messages.rateLimitExceeded);
export type RateLimitExceededErrorBody = v.InferOutput<typeof RateLimitExceededErrorSchema>;
export const TooManyStreamsErrorSchema = fixed(messages.tooManyStreams);
export type TooManyStreamsErrorBody = v.InferOutput<typeof TooManyStreamsErrorSchema>;
export const TooManyRunStreamsErrorSchema = fixed(messages.tooManyRunStreams);
export const TooManyRedeliveriesErrorSchema = fixed(messages.tooManyRedeliveries);

// 500
export const ServerErrorSchema = v.strictObject({ error: prefixed(messagePrefixes.serverError) });
export type ServerErrorBody = v.InferOutput<typeof ServerErrorSchema>;

// 503 (with Retry-After)
/** Both run starts. */
export const MonthlyCapUnverifiableErrorSchema = fixed(messages.monthlyCapUnverifiable);
export type MonthlyCapUnverifiableErrorBody = v.InferOutput<typeof MonthlyCapUnverifiableErrorSchema>;
/** Our design: every operation that writes (create workflow, run starts, cancels). */
export const StorageBusyErrorSchema = fixed(messages.storageBusy);
export type StorageBusyErrorBody = v.InferOutput<typeof StorageBusyErrorSchema>;

/**
 * 422 of a run start (our design): its `inputs` name more files than a run may (`maxFileInputs`,
 * a `fileId` or a URL each), or distinct uploads weighing more than `maxFileInputBytes`.
 */
export const TooManyFileInputsErrorSchema = v.strictObject({
  error: v.literal(messages.tooManyFileInputs),
  /** The file inputs the request names, and the most a run may. */
  fileInputs: v.number(),
  maxFileInputs: v.number(),
  /** The bytes of the distinct uploads it names, and the most a run may. */
  fileInputBytes: v.number(),
  maxFileInputBytes: v.number(),
});
export type TooManyFileInputsErrorBody = v.InferOutput<typeof TooManyFileInputsErrorSchema>;

/**
 * 422 of the run starts (our design): a deferred run's `startBy` has passed, or lies past the latest
 * it may (7 days ahead; 24 hours when its `inputs` name uploaded files).
 */
export const StartByOutOfRangeErrorSchema = v.strictObject({
  error: v.literal(messages.startByOutOfRange),
  /** The `startBy` sent, as sent. */
  startBy: v.string(),
  /** The latest `startBy` this request could have given, at the time it was read. */
  latestStartBy: v.string(),
});
export type StartByOutOfRangeErrorBody = v.InferOutput<typeof StartByOutOfRangeErrorSchema>;

/**
 * 409 of POST /files and the run starts (our design): the team holds its storage quota; bytes free
 * as the retention expires them.
 */
export const StorageQuotaReachedErrorSchema = v.strictObject({
  error: v.literal(messages.storageQuotaReached),
  /** The team's quota, what it holds now, and what the refused request would have stored. */
  quotaBytes: v.number(),
  usedBytes: v.number(),
  neededBytes: v.number(),
});
export type StorageQuotaReachedErrorBody = v.InferOutput<typeof StorageQuotaReachedErrorSchema>;
