import { messages } from '../../schemas/errors.ts';
import {
  BadRequestError,
  ConflictError,
  ForbiddenError,
  NotFoundError,
  PayloadTooLargeError,
  PaymentRequiredError,
  RateLimitedError,
  ScopeNotPermittedError,
  ServiceUnavailableError,
  UnauthorizedError,
  UnprocessableError,
} from '../domain/errors.ts';
import { logger } from '../observability/logger.ts';
import { type HttpResult, json } from './response.ts';

/**
 * The one table from domain errors to the spec's status codes and bodies (spec section 7).
 * Anything not listed is a server failure: 500 `Server error: <detail>` where the detail names the
 * kind of failure and the request id, never a stack, a key or a secret.
 */
export const errorResponse = (error: unknown, requestId: string): HttpResult => {
  if (error instanceof UnauthorizedError) return json(401, { error: messages.unauthorized });
  if (error instanceof ScopeNotPermittedError) return json(403, { error: messages.scopeNotPermitted });
  if (error instanceof ForbiddenError) return json(403, { error: error.message });
  if (error instanceof RateLimitedError) {
    return json(429, { error: messages.rateLimitExceeded }, { 'retry-after': String(error.retryAfterSeconds) });
  }
  if (error instanceof BadRequestError) return json(400, { error: error.message });
  if (error instanceof NotFoundError) return json(404, { error: error.message });
  if (error instanceof UnprocessableError) return json(422, error.body);
  if (error instanceof PayloadTooLargeError) return json(413, { error: error.message });
  if (error instanceof PaymentRequiredError) return json(402, error.body);
  if (error instanceof ConflictError) return json(409, error.body);
  if (error instanceof ServiceUnavailableError) {
    return json(503, { error: error.message }, { 'retry-after': String(error.retryAfterSeconds) });
  }
  logger.error('request failed', { requestId, error: error as Error });
  return json(500, { error: messages.serverError(`${serverErrorDetail(error)} (request ${requestId})`) });
};

/** AWS SDK errors carry a safe service error name; anything else is reported generically. */
const serverErrorDetail = (error: unknown): string => {
  if (error && typeof error === 'object' && '$metadata' in error && error instanceof Error) {
    return `storage unavailable (${error.name})`;
  }
  return 'unexpected failure';
};
