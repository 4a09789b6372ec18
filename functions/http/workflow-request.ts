import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { messages } from '../../schemas/error-messages.ts';
import { type SetWorkflowStatusRequest, SetWorkflowStatusRequestSchema } from '../../schemas/workflow-versions.ts';
import { type CreateWorkflowRequest, CreateWorkflowRequestSchema } from '../../schemas/workflows.ts';
import {
  AgentOrProjectRequiredError,
  InvalidBodyError,
  NameRequiredError,
  StepsRequiredError,
} from '../errors/table.ts';
import { parseWith, readJsonBody } from './body.ts';

/**
 * Largest accepted body. It does not by itself keep the stored canvas inside DynamoDB's 400 KB
 * item limit (each connection becomes an edge of ~70 bytes), so `createWorkflowForTeam` measures
 * the canvas too and refuses one that would not fit with a 413 of its own.
 */
export const maxCreateWorkflowBodyBytes = 256 * 1024;

/** Largest PATCH /workflows/{id} body: one status. */
export const maxSetWorkflowStatusBodyBytes = 1024;

/** The spec's 400s, each raised by a schema issue carrying its message. */
const specBadRequests = {
  [messages.nameRequired]: () => new NameRequiredError(),
  [messages.stepsRequired]: () => new StepsRequiredError(),
  [messages.exactlyOneOfAgentOrProject]: () => new AgentOrProjectRequiredError(),
};

/**
 * The POST /workflows body, or the spec's 400 (413 past the size limit) for a malformed one: a
 * missing body, one that is not a JSON object (an array included: the schemas refuse one wherever
 * they take an object, `notArray`), or a field the schema refuses.
 */
export const parseCreateWorkflowRequest = (event: APIGatewayProxyEventV2): CreateWorkflowRequest => {
  const body = readJsonBody(event, { maxBytes: maxCreateWorkflowBodyBytes });
  if (body === undefined) throw new InvalidBodyError('a JSON object is required');
  return parseWith(CreateWorkflowRequestSchema, body, specBadRequests);
};

/** The PATCH /workflows/{id} body, or its 400 (413 past the size limit). */
export const parseSetWorkflowStatusRequest = (event: APIGatewayProxyEventV2): SetWorkflowStatusRequest => {
  const body = readJsonBody(event, { maxBytes: maxSetWorkflowStatusBodyBytes });
  if (body === undefined) throw new InvalidBodyError('a JSON object is required');
  return parseWith(SetWorkflowStatusRequestSchema, body);
};
