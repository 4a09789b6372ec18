/** Why a step failed, in the words the alarms count (functions/domain/failure-reasons.ts): no I/O. */
import { describe, expect, it } from 'vitest';
import { failureReasonOf } from '../functions/domain/failure-reasons.ts';
import { StepFailedError } from '../functions/nodes/executors/types.ts';
import { SecretUnavailableError } from '../functions/nodes/providers/secret-refs.ts';
import { ProviderError } from '../functions/nodes/providers/types.ts';

describe('failureReasonOf', () => {
  it("reads a provider's refused key as provider_auth, whatever wraps it", () => {
    expect(failureReasonOf(new ProviderError('p answered 401', 401))).toBe('provider_auth');
    expect(failureReasonOf(new ProviderError('p answered 403', 403))).toBe('provider_auth');
    const reworded = new StepFailedError('ImageGen: p answered 401', { cause: new ProviderError('x', 401) });
    expect(failureReasonOf(reworded)).toBe('provider_auth');
  });

  it("reads a provider's other refusals as provider_4xx, and an answer it could not use too", () => {
    expect(failureReasonOf(new ProviderError('bad request', 400))).toBe('provider_4xx');
    expect(failureReasonOf(new ProviderError('unprocessable', 422))).toBe('provider_4xx');
    expect(failureReasonOf(new ProviderError('answered with something that is not a JSON object'))).toBe(
      'provider_4xx',
    );
  });

  it('reads a provider that kept refusing for now (429, 5xx, unreachable) as provider_unavailable', () => {
    expect(failureReasonOf(new ProviderError('busy', 429))).toBe('provider_unavailable');
    expect(failureReasonOf(new ProviderError('down', 503))).toBe('provider_unavailable');
    expect(failureReasonOf(new ProviderError('could not be reached', undefined, { retryable: true }))).toBe(
      'provider_unavailable',
    );
  });

  it("reads a timeout (the provider's 408 or 504, the node's own abort) as timeout", () => {
    expect(failureReasonOf(new ProviderError('timeout', 408))).toBe('timeout');
    expect(failureReasonOf(new ProviderError('gateway timeout', 504))).toBe('timeout');
    expect(failureReasonOf(new DOMException('The operation timed out.', 'TimeoutError'))).toBe('timeout');
    expect(failureReasonOf(new DOMException('aborted', 'AbortError'))).toBe('timeout');
  });

  it('reads a missing or refused secret, or a provider not configured, as configuration', () => {
    expect(failureReasonOf(new SecretUnavailableError("the stage's credentials for p cannot be read here"))).toBe(
      'configuration',
    );
    expect(failureReasonOf(new ProviderError('openai-compatible is not configured: no base URL'))).toBe(
      'configuration',
    );
  });

  it("reads the node's own failure and anything unexpected as code", () => {
    expect(failureReasonOf(new StepFailedError('JsonPath: no match'))).toBe('code');
    expect(failureReasonOf(new TypeError('x is undefined'))).toBe('code');
    expect(failureReasonOf('a string')).toBe('code');
    expect(failureReasonOf(undefined)).toBe('code');
  });
});
