import { messages } from '../../schemas/errors.ts';
import { CreateWorkflowRequestSchema } from '../../schemas/workflows.ts';
import { type Deps, productionDeps } from '../deps.ts';
import {
  AgentOrProjectRequiredError,
  CreateWorkflowNotPermittedError,
  InvalidBodyError,
  NameRequiredError,
  StepsRequiredError,
  UnknownNodeTypeError,
  WorkflowValidationFailedError,
} from '../domain/errors.ts';
import { buildWorkflowGraph } from '../domain/workflow-graph.ts';
import { parseWith, readJsonBody } from '../http/body.ts';
import { keyedHandler } from '../http/keyed-handler.ts';
import { json } from '../http/response.ts';
import { createWorkflowForTeam } from '../store/workflows.ts';

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
const readBodyObject = (event: Parameters<typeof readJsonBody>[0]): Record<string, unknown> => {
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

/** POST /workflows (spec 4.2): validate the steps, build the canvas graph, store it atomically. */
export const makeHandler = (deps: Deps) =>
  keyedHandler(deps, 'CreateWorkflow', async (event, auth) => {
    if (auth.key.workflowIds.length > 0) throw new CreateWorkflowNotPermittedError();
    const body = readBodyObject(event);
    const request = parseWith(CreateWorkflowRequestSchema, body, specBadRequests);
    refuseArrayConfigs(body.steps);
    const graph = buildWorkflowGraph(request.steps);
    if (!graph.ok && 'unknownType' in graph) throw new UnknownNodeTypeError(graph.unknownType);
    if (!graph.ok) throw new WorkflowValidationFailedError(graph.issues);
    const owner =
      request.agentId !== undefined
        ? { agentId: request.agentId }
        : { projectId: request.projectId as string, agentName: request.agentName ?? request.name };
    const created = await createWorkflowForTeam(deps, {
      teamId: auth.teamId,
      name: request.name,
      canvas: graph.canvas,
      stepsCount: request.steps.length,
      ...owner,
    });
    return json(201, { ...created, stepsCount: request.steps.length });
  });

export const handler = makeHandler(productionDeps());
