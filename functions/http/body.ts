import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import * as v from 'valibot';
import { issueMessage } from '../../schemas/common.ts';
import type { ServiceError } from '../errors/define.ts';
import { InvalidBodyError, PayloadTooLargeError } from '../errors/table.ts';

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
  let body: unknown;
  try {
    body = JSON.parse(raw);
  } catch (error) {
    throw new InvalidBodyError('not valid JSON', { cause: error });
  }
  refuseHostileShapes(body);
  return body;
};

/**
 * Deepest nesting a body may have (objects and arrays, the body itself counted). DynamoDB stores
 * at most 32 levels in an item, and a step's free-form config (a JsonLoader's `data`) is stored
 * inside the canvas and again inside the outputs a step writes; 20 leaves room for both wrappers.
 */
const maxBodyDepth = 20;

/**
 * Keys the SDK's DynamoDB marshalling cannot store: it assigns each key to a plain object, so
 * `__proto__` would set a prototype (the item is refused), and it tells a plain object by
 * `value.constructor.name`, so an object with a `constructor` key reads as a class instance and
 * is refused.
 */
const refusedKeys = new Set(['__proto__', 'constructor']);

/**
 * Refuses, as 400s, the shapes JSON allows that storage cannot take: nesting deeper than
 * `maxBodyDepth` (a 10,000-level body would overflow the stack of the SDK's recursive marshalling)
 * and the `refusedKeys`, anywhere. Walked without recursion, so depth cannot overflow the walk.
 */
const refuseHostileShapes = (body: unknown): void => {
  const pending: { value: unknown; depth: number; path: string }[] = [{ value: body, depth: 1, path: '' }];
  for (let next = pending.pop(); next; next = pending.pop()) {
    const { value, depth, path } = next;
    if (value === null || typeof value !== 'object') continue;
    if (depth > maxBodyDepth) throw new InvalidBodyError(`nested more than ${maxBodyDepth} levels deep`);
    for (const [key, item] of Object.entries(value)) {
      const at = Array.isArray(value) ? `${path}[${key}]` : path ? `${path}.${key}` : key;
      if (refusedKeys.has(key) && !Array.isArray(value)) throw new InvalidBodyError(`${at}: this key is not allowed`);
      pending.push({ value: item, depth: depth + 1, path: at });
    }
  }
};

/**
 * The numbers storage holds exactly: DynamoDB refuses a magnitude below 1e-130 (and above 9.99e125),
 * and the SDK's marshalling refuses one above `Number.MAX_SAFE_INTEGER` rather than store it
 * imprecisely. Either was a 500 (`maxMultiplier: 1e-200`, a config's `1e308`). 0 (and -0, stored as
 * 0) is fine.
 */
export const storableNumbers = { smallest: 1e-130, largest: Number.MAX_SAFE_INTEGER } as const;
const unstorableNumber = `a number must be 0 or between ${storableNumbers.smallest} and ${storableNumbers.largest} in size`;

const isStorableNumber = (n: number): boolean =>
  n === 0 || (Math.abs(n) >= storableNumbers.smallest && Math.abs(n) <= storableNumbers.largest);

/**
 * Refuses, as a 400 naming it, a number of a parsed body that storage cannot hold. Run on what the
 * schema accepted (its own bounds, e.g. `maxMultiplier`'s, answer first, with their own words).
 */
const refuseUnstorableNumbers = (body: unknown): void => {
  const pending: { value: unknown; path: string }[] = [{ value: body, path: '' }];
  for (let next = pending.pop(); next; next = pending.pop()) {
    const { value, path } = next;
    if (typeof value === 'number' && !isStorableNumber(value)) {
      throw new InvalidBodyError(path ? `${path}: ${unstorableNumber}` : unstorableNumber);
    }
    if (value === null || typeof value !== 'object') continue;
    for (const [key, item] of Object.entries(value)) {
      pending.push({ value: item, path: Array.isArray(value) ? `${path}[${key}]` : path ? `${path}.${key}` : key });
    }
  }
};

/** Where a valibot issue points, as `steps[2].key`. */
const issuePath = (issue: v.BaseIssue<unknown>): string =>
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
  if (result.success) {
    refuseUnstorableNumbers(result.output);
    return result.output;
  }
  const [issue] = result.issues;
  const specError = Object.hasOwn(specErrors, issue.message) ? specErrors[issue.message] : undefined;
  if (specError) throw specError();
  const path = issuePath(issue);
  const message = issueMessage(issue);
  throw new InvalidBodyError(path ? `${path}: ${message}` : message);
};
