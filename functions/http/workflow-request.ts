import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { messages } from '../../schemas/errors.ts';
import { type CreateWorkflowRequest, CreateWorkflowRequestSchema } from '../../schemas/workflows.ts';
import {
  AgentOrProjectRequiredError,
  InvalidBodyError,
  NameRequiredError,
  StepsRequiredError,
} from '../domain/errors.ts';
import { parseWith, readJsonBody } from './body.ts';

/**
 * Largest accepted body. It does not by itself keep the stored canvas inside DynamoDB's 400 KB
 * item limit (each connection becomes an edge of ~70 bytes), so `createWorkflowForTeam` measures
 * the canvas too and refuses one that would not fit with a 413 of its own.
 */
export const maxCreateWorkflowBodyBytes = 256 * 1024;

/** The spec's 400s, each raised by a schema issue carrying its message. */
const specBadRequests = {
  [messages.nameRequired]: () => new NameRequiredError(),
  [messages.stepsRequired]: () => new StepsRequiredError(),
  [messages.exactlyOneOfAgentOrProject]: () => new AgentOrProjectRequiredError(),
};

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * valibot's `v.object` takes an array for an object, so a body `[]` would read as `name is
 * required` and a step's `config: [1, 2]` would be stored as `{"0": 1, "1": 2}`. Both are refused
 * as the schema and the OpenAPI document (`type: object`) mean them to be.
 */
const readBodyObject = (event: APIGatewayProxyEventV2): Record<string, unknown> => {
  const body = readJsonBody(event, { maxBytes: maxCreateWorkflowBodyBytes });
  if (body === undefined) throw new InvalidBodyError('a JSON object is required');
  if (!isPlainObject(body)) throw new InvalidBodyError('expected a JSON object');
  return body;
};

/** A step whose `config` is an array (which passed the schema), as a 400 naming it. */
const refuseArrayConfigs = (rawSteps: unknown): void => {
  if (!Array.isArray(rawSteps)) return;
  rawSteps.forEach((step: unknown, i) => {
    if (isPlainObject(step) && Array.isArray(step.config)) {
      throw new InvalidBodyError(`steps[${i}].config: expected an object, not an array`);
    }
  });
};

/** The POST /workflows body, or the spec's 400 (413 past the size limit) for a malformed one. */
export const parseCreateWorkflowRequest = (event: APIGatewayProxyEventV2): CreateWorkflowRequest => {
  const body = readBodyObject(event);
  const request = parseWith(CreateWorkflowRequestSchema, body, specBadRequests);
  refuseArrayConfigs(body.steps);
  return request;
};
