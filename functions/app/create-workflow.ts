import type { CreateWorkflowRequest, CreateWorkflowResponse } from '../../schemas/workflows.ts';
import type { Deps } from '../deps.ts';
import { buildWorkflowGraph } from '../domain/workflow-graph.ts';
import {
  CreateWorkflowNotPermittedError,
  UnknownNodeTypeError,
  WorkflowValidationFailedError,
} from '../errors/table.ts';
import type { ApiKeyItem } from '../store/items/api-keys.ts';
import { createWorkflowForTeam } from '../store/workflows.ts';

/**
 * The create's rules on a body's steps (POST /workflows, and PUT /workflows/{id} for a new version):
 * the canvas graph they build, or the 422 of an unknown node type or a graph failing validation.
 */
export const compileWorkflow = (request: Pick<CreateWorkflowRequest, 'steps'>) => {
  const graph = buildWorkflowGraph(request.steps);
  if (!graph.ok && 'unknownType' in graph) throw new UnknownNodeTypeError(graph.unknownType, graph.didYouMean);
  if (!graph.ok) throw new WorkflowValidationFailedError(graph.issues);
  return graph.canvas;
};

/**
 * POST /workflows (spec 4.2): validate the steps, build the canvas graph, store it atomically.
 * `readRequest` is called only once the key may create workflows, so a key restricted to some
 * workflows is refused before its body is read.
 */
export const createWorkflow = async (
  deps: Deps,
  key: ApiKeyItem,
  readRequest: () => CreateWorkflowRequest,
): Promise<CreateWorkflowResponse> => {
  if (key.workflowIds.length > 0) throw new CreateWorkflowNotPermittedError();
  const request = readRequest();
  const canvas = compileWorkflow(request);
  const owner =
    request.agentId !== undefined
      ? { agentId: request.agentId }
      : { projectId: request.projectId as string, agentName: request.agentName ?? request.name };
  const created = await createWorkflowForTeam(deps, {
    teamId: key.teamId,
    name: request.name,
    canvas,
    stepsCount: request.steps.length,
    steps: request.steps,
    ...owner,
  });
  return { ...created, stepsCount: request.steps.length };
};
