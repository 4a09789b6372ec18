import { type DeliveryPendingErrorBody, deliveryPendingMessage } from '../../schemas/deliveries.ts';
import {
  type AgentNotFoundErrorBody,
  type AgentOrProjectNotFoundErrorBody,
  type AgentOrProjectRequiredErrorBody,
  type CallbackUrlInvalidErrorBody,
  type CanvasNotFoundErrorBody,
  type CreateWorkflowNotPermittedErrorBody,
  type DeferredRunNotFoundErrorBody,
  type DeferredRunNotWaitingErrorBody,
  type IdempotencyKeyReusedErrorBody,
  type InsufficientCreditsErrorBody,
  type InvalidBodyErrorBody,
  type InvalidCursorErrorBody,
  type InvalidQueryErrorBody,
  type MonthlyCapUnverifiableErrorBody,
  type MonthlyCreditCapReachedErrorBody,
  messages,
  type NameRequiredErrorBody,
  type NoWorkflowForAgentErrorBody,
  type PayloadTooLargeErrorBody,
  type PerStepLimitErrorBody,
  type ProjectHardCapExceededErrorBody,
  type ProviderNotAvailableErrorBody,
  type RateLimitExceededErrorBody,
  type RunAlreadyEndedErrorBody,
  type RunInProgressErrorBody,
  type RunNotFoundErrorBody,
  type ScopeNotPermittedErrorBody,
  type StepsRequiredErrorBody,
  type StorageBusyErrorBody,
  type UnauthorizedErrorBody,
  type UnknownInputKeysErrorBody,
  type UnknownNodeTypeErrorBody,
  type WorkflowNotFoundErrorBody,
  type WorkflowNotPermittedErrorBody,
} from '../../schemas/errors.ts';
import type { RunValidationFailed } from '../../schemas/runs.ts';
import type { WorkflowValidationFailed } from '../../schemas/workflows.ts';
import type { RunRefusal } from '../domain/admission.ts';
import { toCredits } from '../domain/credits.ts';
import {
  AgentNotFoundError,
  AgentOrProjectNotFoundError,
  AgentOrProjectRequiredError,
  CallbackUrlInvalidError,
  CanvasNotFoundError,
  CreateWorkflowNotPermittedError,
  DeferredRunNotFoundError,
  DeferredRunNotWaitingError,
  DeliveryPendingError,
  IdempotencyKeyReusedError,
  InvalidBodyError,
  InvalidCursorError,
  InvalidQueryError,
  MonthlyCapUnverifiableError,
  NameRequiredError,
  NoWorkflowForAgentError,
  PayloadTooLargeError,
  ProviderNotAvailableError,
  RateLimitedError,
  RunAlreadyEndedError,
  RunInProgressError,
  RunNotFoundError,
  RunRefusedError,
  RunValidationFailedError,
  ScopeNotPermittedError,
  StepsRequiredError,
  StorageBusyError,
  UnauthorizedError,
  UnknownInputKeysError,
  UnknownNodeTypeError,
  WorkflowNotFoundError,
  WorkflowNotPermittedError,
  WorkflowTooLargeToStoreError,
  WorkflowValidationFailedError,
} from '../domain/errors.ts';
import { capResetsText } from '../domain/monthly-cap.ts';
import { type HttpResult, json } from './response.ts';

/** One row of the table: an error class, its status, its body, and its headers when it has any. */
export interface ErrorMapping<TError extends Error = Error> {
  error: abstract new (...args: never[]) => TError;
  status: number;
  body: (error: TError) => unknown;
  headers?: (error: TError) => Record<string, string>;
}

const row = <TError extends Error, TBody>(
  error: abstract new (...args: never[]) => TError,
  status: number,
  body: (error: TError) => TBody,
  headers?: (error: TError) => Record<string, string>,
): ErrorMapping => ({ error, status, body, headers }) as unknown as ErrorMapping;

const retryAfter = (error: { retryAfterSeconds: number }) => ({ 'retry-after': String(error.retryAfterSeconds) });

/** The spec's 402 body for a refusal, amounts in credits. */
const refusalBody = (
  refusal: RunRefusal,
):
  | InsufficientCreditsErrorBody
  | ProjectHardCapExceededErrorBody
  | PerStepLimitErrorBody
  | MonthlyCreditCapReachedErrorBody => {
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

/**
 * THE table from domain errors to the spec's status codes and bodies (spec section 7), one row per
 * error class. Anything not listed is a server failure (see `errorResponse`).
 */
export const errorTable: readonly ErrorMapping[] = [
  // 400
  row(InvalidBodyError, 400, (e): InvalidBodyErrorBody => ({ error: messages.invalidBody(e.detail) })),
  row(NameRequiredError, 400, (): NameRequiredErrorBody => ({ error: messages.nameRequired })),
  row(StepsRequiredError, 400, (): StepsRequiredErrorBody => ({ error: messages.stepsRequired })),
  row(
    AgentOrProjectRequiredError,
    400,
    (): AgentOrProjectRequiredErrorBody => ({ error: messages.exactlyOneOfAgentOrProject }),
  ),
  row(InvalidQueryError, 400, (e): InvalidQueryErrorBody => ({ error: messages.invalidQuery(e.detail) })),
  row(InvalidCursorError, 400, (): InvalidCursorErrorBody => ({ error: messages.invalidCursor })),
  // 401
  row(UnauthorizedError, 401, (): UnauthorizedErrorBody => ({ error: messages.unauthorized })),
  // 402
  row(RunRefusedError, 402, (e) => refusalBody(e.refusal)),
  // 403
  row(ScopeNotPermittedError, 403, (): ScopeNotPermittedErrorBody => ({ error: messages.scopeNotPermitted })),
  row(
    CreateWorkflowNotPermittedError,
    403,
    (): CreateWorkflowNotPermittedErrorBody => ({ error: messages.createWorkflowNotPermitted }),
  ),
  row(WorkflowNotPermittedError, 403, (): WorkflowNotPermittedErrorBody => ({ error: messages.workflowNotPermitted })),
  // 404
  row(WorkflowNotFoundError, 404, (): WorkflowNotFoundErrorBody => ({ error: messages.workflowNotFound })),
  row(CanvasNotFoundError, 404, (): CanvasNotFoundErrorBody => ({ error: messages.canvasNotFound })),
  row(AgentNotFoundError, 404, (): AgentNotFoundErrorBody => ({ error: messages.agentNotFound })),
  row(NoWorkflowForAgentError, 404, (): NoWorkflowForAgentErrorBody => ({ error: messages.noWorkflowForAgent })),
  row(
    AgentOrProjectNotFoundError,
    404,
    (): AgentOrProjectNotFoundErrorBody => ({ error: messages.agentOrProjectNotFound }),
  ),
  row(RunNotFoundError, 404, (): RunNotFoundErrorBody => ({ error: messages.runNotFound })),
  row(DeferredRunNotFoundError, 404, (): DeferredRunNotFoundErrorBody => ({ error: messages.deferredRunNotFound })),
  // 409
  row(
    RunInProgressError,
    409,
    (e): RunInProgressErrorBody => ({ error: messages.runInProgress, activeJobId: e.activeJobId }),
  ),
  row(RunAlreadyEndedError, 409, (): RunAlreadyEndedErrorBody => ({ error: messages.runAlreadyEnded })),
  row(
    DeferredRunNotWaitingError,
    409,
    (): DeferredRunNotWaitingErrorBody => ({ error: messages.deferredRunNotWaiting }),
  ),
  row(
    DeliveryPendingError,
    409,
    (e): DeliveryPendingErrorBody => ({ error: deliveryPendingMessage, nextAttemptAt: e.nextAttemptAt }),
  ),
  // 413
  row(PayloadTooLargeError, 413, (e): PayloadTooLargeErrorBody => ({ error: messages.payloadTooLarge(e.maxBytes) })),
  row(
    WorkflowTooLargeToStoreError,
    413,
    (e): PayloadTooLargeErrorBody => ({ error: messages.workflowTooLargeToStore(e.bytes, e.maxBytes) }),
  ),
  // 422
  row(UnknownNodeTypeError, 422, (e): UnknownNodeTypeErrorBody => ({ error: messages.unknownNodeType(e.type) })),
  row(
    WorkflowValidationFailedError,
    422,
    (e): WorkflowValidationFailed => ({ error: messages.workflowValidationFailed, errors: e.errors }),
  ),
  row(RunValidationFailedError, 422, (e): RunValidationFailed => ({ success: false, errors: e.errors })),
  row(
    UnknownInputKeysError,
    422,
    (e): UnknownInputKeysErrorBody => ({ error: messages.unknownInputKeys(e.keys), validKeys: [...e.validKeys] }),
  ),
  row(CallbackUrlInvalidError, 422, (): CallbackUrlInvalidErrorBody => ({ error: messages.callbackUrlInvalid })),
  row(
    ProviderNotAvailableError,
    422,
    (e): ProviderNotAvailableErrorBody => ({
      error: messages.providerNotAvailable(e.nodeType, e.providers),
      providers: [...e.providers],
      level: e.level,
    }),
  ),
  row(IdempotencyKeyReusedError, 422, (): IdempotencyKeyReusedErrorBody => ({ error: messages.idempotencyKeyReused })),
  // 429
  row(RateLimitedError, 429, (): RateLimitExceededErrorBody => ({ error: messages.rateLimitExceeded }), retryAfter),
  // 503
  row(
    MonthlyCapUnverifiableError,
    503,
    (): MonthlyCapUnverifiableErrorBody => ({ error: messages.monthlyCapUnverifiable }),
    retryAfter,
  ),
  // Contention on every try of a write (functions/store/write.ts logged it with its cause).
  row(StorageBusyError, 503, (): StorageBusyErrorBody => ({ error: messages.storageBusy }), retryAfter),
];

/** The row for an error, if the table has one. */
export const errorMapping = (error: unknown): ErrorMapping | undefined =>
  errorTable.find((mapping) => error instanceof mapping.error);

/**
 * The response for anything a handler throws: the table's row, else a server failure: 500
 * `Server error: <detail>` where the detail names the kind of failure and the request id, never a
 * message, a stack, a key or a secret. The caller logs a server failure (an error without a row):
 * the keyed handlers through the Powertools logger, the public ones with `logLine`.
 */
export const errorResponse = (error: unknown, requestId: string): HttpResult => {
  const mapping = errorMapping(error);
  if (mapping) return json(mapping.status, mapping.body(error as Error), mapping.headers?.(error as Error));
  return json(500, { error: messages.serverError(`${serverErrorDetail(error)} (request ${requestId})`) });
};

/** AWS SDK errors carry a safe service error name; anything else is reported generically. */
const serverErrorDetail = (error: unknown): string => {
  if (error && typeof error === 'object' && '$metadata' in error && error instanceof Error) {
    return `storage unavailable (${error.name})`;
  }
  return 'unexpected failure';
};
