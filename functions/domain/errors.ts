/**
 * Typed domain errors. The domain throws them; `functions/http/error-map.ts` is the one table that
 * turns each into the spec's status and body. They carry facts, never HTTP.
 */

export class UnauthorizedError extends Error {
  override readonly name = 'UnauthorizedError';
}

export class ScopeNotPermittedError extends Error {
  override readonly name = 'ScopeNotPermittedError';
}

export class RateLimitedError extends Error {
  override readonly name = 'RateLimitedError';
  readonly retryAfterSeconds: number;
  constructor(retryAfterSeconds: number) {
    super('rate limit exceeded');
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/** The request itself is wrong (bad JSON, a missing field); `message` is shown to the caller. */
export class BadRequestError extends Error {
  override readonly name = 'BadRequestError';
}

/** A resource is missing or belongs to another team; `message` is the spec's exact 404 text. */
export class NotFoundError extends Error {
  override readonly name = 'NotFoundError';
}

/** The request is well formed but refused; `message` and `extra` form the spec's 403 body. */
export class ForbiddenError extends Error {
  override readonly name = 'ForbiddenError';
}

/** An error whose complete response body the domain decides (422, 402, 409). */
export class ErrorWithBody extends Error {
  readonly body: Record<string, unknown>;
  constructor(body: Record<string, unknown>) {
    super(typeof body.error === 'string' ? body.error : 'refused');
    this.body = body;
  }
}

/** Well-formed input that cannot be processed; `body` is the complete 422 body. */
export class UnprocessableError extends ErrorWithBody {
  override readonly name = 'UnprocessableError';
}

/** The request body exceeds the documented size limit. */
export class PayloadTooLargeError extends Error {
  override readonly name = 'PayloadTooLargeError';
}

/** The run cannot be paid for or allowed; `body` is the spec's complete 402 body. */
export class PaymentRequiredError extends ErrorWithBody {
  override readonly name = 'PaymentRequiredError';
}

/** The resource is busy or in the wrong state; `body` is the complete 409 body. */
export class ConflictError extends ErrorWithBody {
  override readonly name = 'ConflictError';
}

/** A check that must not be skipped could not be made; the caller should retry later. */
export class ServiceUnavailableError extends Error {
  override readonly name = 'ServiceUnavailableError';
  readonly retryAfterSeconds: number;
  constructor(message: string, retryAfterSeconds: number) {
    super(message);
    this.retryAfterSeconds = retryAfterSeconds;
  }
}
