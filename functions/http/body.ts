import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import * as v from 'valibot';
import { messages } from '../../schemas/errors.ts';
import { BadRequestError, PayloadTooLargeError } from '../domain/errors.ts';

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
    throw new PayloadTooLargeError(messages.payloadTooLarge(options.maxBytes));
  }
  if (raw.trim() === '') return options.emptyAs;
  try {
    return JSON.parse(raw);
  } catch {
    throw new BadRequestError(messages.invalidBody('not valid JSON'));
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
 * Validates a parsed body. `fixedMessages` are spec messages a schema issue may carry as is (e.g.
 * `name is required`); any other issue becomes `Invalid request body: <path>: <message>`.
 */
export const parseWith = <TSchema extends v.GenericSchema>(
  schema: TSchema,
  body: unknown,
  fixedMessages: readonly string[] = [],
  toError: (message: string) => Error = (message) => new BadRequestError(message),
): v.InferOutput<TSchema> => {
  const result = v.safeParse(schema, body);
  if (result.success) return result.output;
  const [issue] = result.issues;
  if (fixedMessages.includes(issue.message)) throw toError(issue.message);
  const path = issuePath(issue);
  throw new BadRequestError(messages.invalidBody(path ? `${path}: ${issue.message}` : issue.message));
};
