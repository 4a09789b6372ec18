import { messages } from '../../schemas/errors.ts';
import { CreateWorkflowRequestSchema } from '../../schemas/workflows.ts';
import { type Deps, productionDeps } from '../deps.ts';
import { ForbiddenError, UnprocessableError } from '../domain/errors.ts';
import { buildWorkflowGraph } from '../domain/workflow-graph.ts';
import { keyedHandler } from '../http/api-handler.ts';
import { parseWith, readJsonBody } from '../http/body.ts';
import { json } from '../http/response.ts';
import { createWorkflowForTeam } from '../store/workflows.ts';

/** Largest accepted body: keeps the stored canvas well inside DynamoDB's 400 KB item limit. */
export const maxCreateWorkflowBodyBytes = 256 * 1024;

const specBadRequests = [messages.nameRequired, messages.stepsRequired, messages.exactlyOneOfAgentOrProject];

/** POST /workflows (spec 4.2): validate the steps, build the canvas graph, store it atomically. */
export const makeHandler = (deps: Deps) =>
  keyedHandler(deps, 'workflows:write', async (event, auth) => {
    if (auth.key.workflowIds.length > 0) throw new ForbiddenError(messages.createWorkflowNotPermitted);
    const request = parseWith(
      CreateWorkflowRequestSchema,
      readJsonBody(event, { maxBytes: maxCreateWorkflowBodyBytes }),
      specBadRequests,
    );
    const graph = buildWorkflowGraph(request.steps);
    if (!graph.ok && 'unknownType' in graph) {
      throw new UnprocessableError({ error: messages.unknownNodeType(graph.unknownType) });
    }
    if (!graph.ok) throw new UnprocessableError({ error: messages.workflowValidationFailed, errors: graph.issues });
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
