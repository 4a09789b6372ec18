import { messages } from '../../schemas/error-messages.ts';
import { declaredErrors, type ErrorAnswer } from '../errors/define.ts';
import '../errors/table.ts';
import { type HttpResult, json } from './response.ts';

/** One row of the error table as the edge reads it: the error's class, status, body and headers. */
export type ErrorMapping = ErrorAnswer;

/**
 * THE table from errors to the spec's status codes and bodies (spec section 7): the rows of
 * functions/errors/table.ts, one per error. Anything not listed is a server failure (see `errorResponse`).
 */
export const errorTable: readonly ErrorMapping[] = declaredErrors;

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
  if (mapping) {
    const retryAfter = mapping.retryAfter?.(error as never);
    const headers = {
      ...mapping.headers?.(error as never),
      ...(retryAfter === undefined ? {} : { 'retry-after': String(retryAfter) }),
    };
    return json(mapping.status, mapping.body(error as never), Object.keys(headers).length > 0 ? headers : undefined);
  }
  return json(500, { error: messages.serverError(`${serverErrorDetail(error)} (request ${requestId})`) });
};

/** AWS SDK errors carry a safe service error name; anything else is reported generically. */
const serverErrorDetail = (error: unknown): string => {
  if (error && typeof error === 'object' && '$metadata' in error && error instanceof Error) {
    return `storage unavailable (${error.name})`;
  }
  return 'unexpected failure';
};

/**
 * What a declared error answers, as data: its status and body (the estimate's `refusal`, which says
 * what a run start would answer without answering it). Undefined for an error with no row.
 */
export const answerOfError = (error: unknown): { status: number; body: unknown } | undefined => {
  const mapping = errorMapping(error);
  return mapping && { status: mapping.status, body: mapping.body(error as never) };
};
