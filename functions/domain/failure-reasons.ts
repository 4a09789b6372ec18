/**
 * Why a step failed for good, in the few words an operator alarms on (`failureReasons` in
 * platform/alarm-rules.ts): a refused key, a provider's refusal, a provider that would not answer,
 * a timeout, a stage or team missing its configuration, or anything else (the node's own failure,
 * our code). Pure: it reads the error's name and fields, never its class, so it needs no import of
 * the layers that throw them, and it is tested without I/O (test/failure-reasons.test.ts).
 */
import type { FailureReason } from '../../platform/alarm-rules.ts';

const fieldsOf = (error: unknown): Record<string, unknown> | undefined =>
  typeof error === 'object' && error !== null ? (error as Record<string, unknown>) : undefined;

/**
 * The reason of a step failure from what was thrown (or handed back) when it failed:
 * - `ProviderError` (functions/nodes/providers/types.ts): 401 or 403 is `provider_auth`, 408 or 504
 *   `timeout`, a retryable one (429, 5xx, unreachable: the step failed after every try)
 *   `provider_unavailable`, one saying the provider `is not configured` `configuration`, any other
 *   (a 4xx, an answer we cannot use) `provider_4xx`;
 * - `SecretUnavailableError` (a stage secret or team connection refused, missing or malformed): `configuration`;
 * - `TimeoutError` or `AbortError` (the node's time ran out), or `StepTimeoutError` (a synchronous
 *   call its step's deadline cut, after its delayed retries): `timeout`;
 * - `StepFailedError`: the reason of its `cause` when it has one (a provider's refusal the executor
 *   reworded), else `code`;
 * - anything else: `code`.
 */
export const failureReasonOf = (error: unknown): FailureReason => {
  const fields = fieldsOf(error);
  if (!fields) return 'code';
  switch (fields.name) {
    case 'StepFailedError':
      return fields.cause === undefined ? 'code' : failureReasonOf(fields.cause);
    case 'SecretUnavailableError':
      return 'configuration';
    case 'TimeoutError':
    case 'AbortError':
    case 'StepTimeoutError':
      return 'timeout';
    case 'ProviderError': {
      const status = typeof fields.status === 'number' ? fields.status : undefined;
      if (status === 401 || status === 403) return 'provider_auth';
      if (status === 408 || status === 504) return 'timeout';
      if (fields.retryable === true) return 'provider_unavailable';
      if (status === undefined && /\bis not configured\b/.test(String(fields.message))) return 'configuration';
      return 'provider_4xx';
    }
    default:
      return 'code';
  }
};
