/**
 * A workflow's writes by a key (our design): PUT /workflows/{id}, its next version, and PATCH
 * /workflows/{id}, its status. Their reads are functions/app/workflow-versions.ts's: those compile
 * nothing, so they import no node type's settings.
 */
import type { SetWorkflowStatusRequest, WorkflowVersion } from '../../schemas/workflow-versions.ts';
import type { CreateWorkflowRequest, WorkflowSummary } from '../../schemas/workflows.ts';
import type { Deps } from '../deps.ts';
import { keyMayUseWorkflow } from '../domain/key-workflows.ts';
import { WorkflowNotFoundError, WorkflowNotPermittedError, WorkflowValidationFailedError } from '../errors/table.ts';
import type { ApiKeyItem } from '../store/items/api-keys.ts';
import { putNextVersion, readWorkflowSummary } from '../store/workflow-versions.ts';
import { setWorkflowStatus } from '../store/workflows.ts';
import { compileWorkflow } from './create-workflow.ts';
import type { TeamWorkflow } from './workflow-versions.ts';

/** A workflow a key writes: its own team's (else 404), one of the key's workflows when it is limited (else 403). */
const writableWorkflow = async (deps: Deps, key: ApiKeyItem, workflowId: string): Promise<TeamWorkflow> => {
  if (!keyMayUseWorkflow(key.workflowIds, workflowId)) throw new WorkflowNotPermittedError(workflowId);
  const summary = await readWorkflowSummary(deps, key.teamId, workflowId);
  if (!summary) throw new WorkflowNotFoundError(workflowId);
  return { ...summary, teamId: key.teamId };
};

/**
 * A new version keeps its workflow where it is: the body's `agentId` (or `projectId`) must be the
 * workflow's own, else the create's validation 422 names it (moving a workflow is no new version).
 */
const checkSameOwner = (summary: TeamWorkflow, request: CreateWorkflowRequest) => {
  const [path, given, own] =
    request.agentId !== undefined
      ? (['agentId', request.agentId, summary.agentId] as const)
      : (['projectId', request.projectId, summary.projectId] as const);
  if (given?.toLowerCase() === own.toLowerCase()) return;
  throw new WorkflowValidationFailedError([
    {
      code: 'owner_changed',
      key: null,
      path,
      message: `A new version stays with its workflow's ${path === 'agentId' ? 'agent' : 'project'}: ${path} must be ${own}`,
    },
  ]);
};

/**
 * PUT /workflows/{id} (our design): a create's body, checked by the create's own schema and rules,
 * becomes the workflow's next version (its name too); earlier versions are kept, and runs pinned to
 * them, or in progress on them, keep running them. `readRequest` is called once the key may write
 * this workflow.
 */
export const updateWorkflow = async (
  deps: Deps,
  key: ApiKeyItem,
  workflowId: string,
  readRequest: () => CreateWorkflowRequest,
): Promise<WorkflowVersion> => {
  const summary = await writableWorkflow(deps, key, workflowId);
  const request = readRequest();
  checkSameOwner(summary, request);
  const canvas = compileWorkflow(request);
  const made = await putNextVersion(
    deps,
    {
      teamId: key.teamId,
      workflowId,
      name: request.name,
      canvas,
      steps: request.steps,
      stepsCount: request.steps.length,
    },
    summary,
  );
  return {
    workflowId,
    version: made.version,
    name: request.name,
    stepsCount: request.steps.length,
    createdAt: made.createdAt,
    steps: request.steps as WorkflowVersion['steps'],
  };
};

/**
 * PATCH /workflows/{id} (our design): sets its status. An `archived` workflow starts no run (the
 * run start's validation 422) and keeps its runs and versions readable; `draft` or `active` opens it again.
 */
export const setStatus = async (
  deps: Deps,
  key: ApiKeyItem,
  workflowId: string,
  readRequest: () => SetWorkflowStatusRequest,
): Promise<WorkflowSummary> => {
  const summary = await writableWorkflow(deps, key, workflowId);
  const { status } = readRequest();
  if (!(await setWorkflowStatus(deps, key.teamId, workflowId, status))) throw new WorkflowNotFoundError(workflowId);
  return {
    id: workflowId,
    name: summary.name,
    description: summary.description,
    status,
    updated_at: deps.now().toISOString(),
  };
};
