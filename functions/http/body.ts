import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import * as v from 'valibot';
import { messages } from '../../schemas/errors.ts';
import { type RunRequest, RunRequestSchema } from '../../schemas/runs.ts';
import {
  CallbackUrlInvalidError,
  InvalidBodyError,
  PayloadTooLargeError,
  type ServiceError,
} from '../domain/errors.ts';

/**
 * The JSON body of a request: 413 past `maxBytes`, 400 `Invalid request body: …` when it is not
 * JSON. An empty or missing body is `emptyAs` (undefined unless the endpoint allows none).
 */
export const readJsonBody = (
  event: APIGatewayProxyEventV2,
  options: { maxBytes: number; emptyAs?: unknown },
): unknown => {
  const raw = event.body
    ? event.isBase64Encoded
      ? Buffer.from(event.body, 'base64').toString('utf8')
      : event.body
    : '';
  if (Buffer.byteLength(raw) > options.maxBytes) {
    throw new PayloadTooLargeError(options.maxBytes);
  }
  if (raw.trim() === '') return options.emptyAs;
  try {
    return JSON.parse(raw);
  } catch (error) {
    throw new InvalidBodyError('not valid JSON', { cause: error });
  }
};

/** Where a valibot issue points, as `steps[2].key`. */
export const issuePath = (issue: v.BaseIssue<unknown>): string =>
  (issue.path ?? [])
    .map((item, index) =>
      typeof item.key === 'number' ? `[${item.key}]` : `${index === 0 ? '' : '.'}${String(item.key)}`,
    )
    .join('');

/**
 * Validates a parsed body. `specErrors` names the error for each spec message a schema issue may
 * carry (e.g. `name is required`); any other issue is an InvalidBodyError naming its path.
 */
export const parseWith = <TSchema extends v.GenericSchema>(
  schema: TSchema,
  body: unknown,
  specErrors: Readonly<Record<string, () => ServiceError>> = {},
): v.InferOutput<TSchema> => {
  const result = v.safeParse(schema, body);
  if (result.success) return result.output;
  const [issue] = result.issues;
  const specError = Object.hasOwn(specErrors, issue.message) ? specErrors[issue.message] : undefined;
  if (specError) throw specError();
  const path = issuePath(issue);
  throw new InvalidBodyError(path ? `${path}: ${issue.message}` : issue.message);
};

/** Largest accepted run-start body. */
export const maxRunBodyBytes = 64 * 1024;

/** The run-start body: CallbackUrlInvalidError for callbackUrl (spec 422), InvalidBodyError for any other field. */
export const parseRunRequest = (event: APIGatewayProxyEventV2): RunRequest =>
  parseWith(RunRequestSchema, readJsonBody(event, { maxBytes: maxRunBodyBytes, emptyAs: {} }), {
    [messages.callbackUrlInvalid]: () => new CallbackUrlInvalidError(),
  });
