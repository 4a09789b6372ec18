import type {
  ListWorkflowVersionsResponse,
  SetWorkflowStatusRequest,
  WorkflowVersion,
} from '../../schemas/workflow-versions.ts';
import type { CreateWorkflowRequest, WorkflowSummary } from '../../schemas/workflows.ts';
import type { Deps } from '../deps.ts';
import { openCursor, signCursor } from '../domain/cursor.ts';
import { keyMayUseWorkflow } from '../domain/key-workflows.ts';
import {
  WorkflowNotFoundError,
  WorkflowNotPermittedError,
  WorkflowValidationFailedError,
  WorkflowVersionNotFoundError,
} from '../errors/table.ts';
import type { ApiKeyItem } from '../store/items/api-keys.ts';
import type { WorkflowItem } from '../store/items/workflows.ts';
import { cursorSigningSecret } from '../store/run-list.ts';
import {
  putNextVersion,
  queryWorkflowVersions,
  readWorkflowSummary,
  readWorkflowVersion,
} from '../store/workflow-versions.ts';
import { setWorkflowStatus } from '../store/workflows.ts';
import { compileWorkflow } from './create-workflow.ts';
import { type Lister, type ListQueryString, pageLimit } from './list-runs.ts';

type Summary = WorkflowItem & { teamId: string };

/**
 * The team's workflow `workflowId` as a key reads it: a workflow outside the workflows the key is
 * limited to reads as none, as another team's does (404).
 */
const readableWorkflow = async (deps: Deps, lister: Lister, workflowId: string): Promise<Summary> => {
  const summary = keyMayUseWorkflow(lister.workflowIds, workflowId)
    ? await readWorkflowSummary(deps, lister.teamId, workflowId)
    : undefined;
  if (!summary) throw new WorkflowNotFoundError(workflowId);
  return { ...summary, teamId: lister.teamId };
};

/** A workflow a key writes: its own team's (else 404), one of the key's workflows when it is limited (else 403). */
const writableWorkflow = async (deps: Deps, key: ApiKeyItem, workflowId: string): Promise<Summary> => {
  if (!keyMayUseWorkflow(key.workflowIds, workflowId)) throw new WorkflowNotPermittedError(workflowId);
  const summary = await readWorkflowSummary(deps, key.teamId, workflowId);
  if (!summary) throw new WorkflowNotFoundError(workflowId);
  return { ...summary, teamId: key.teamId };
};

/**
 * A new version keeps its workflow where it is: the body's `agentId` (or `projectId`) must be the
 * workflow's own, else the create's validation 422 names it (moving a workflow is no new version).
 */
const checkSameOwner = (summary: Summary, request: CreateWorkflowRequest) => {
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

const versionView = (workflowId: string, item: NonNullable<Awaited<ReturnType<typeof readWorkflowVersion>>>) =>
  ({
    workflowId,
    version: item.version,
    name: item.name,
    stepsCount: item.stepsCount,
    createdAt: item.createdAt,
    steps: (item.steps ?? null) as WorkflowVersion['steps'],
  }) satisfies WorkflowVersion;

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

/** GET /workflows/{id}/versions/{version} (our design): one version, whole. */
export const getWorkflowVersion = async (
  deps: Deps,
  lister: Lister,
  workflowId: string,
  versionText: string,
): Promise<WorkflowVersion> => {
  const summary = await readableWorkflow(deps, lister, workflowId);
  // Only a whole number from 1 names a version; anything else names none.
  const version = /^[1-9][0-9]{0,8}$/.test(versionText) ? Number(versionText) : 0;
  const item = version > 0 ? await readWorkflowVersion(deps, summary, version) : undefined;
  if (!item) throw new WorkflowVersionNotFoundError(workflowId, version);
  return versionView(workflowId, item);
};

/**
 * GET /workflows/{id}/versions (our design): newest first, a page at a time, as the run lists are
 * (`limit`, and a signed `cursor` bound to the team and the workflow).
 */
export const listWorkflowVersions = async (
  deps: Deps,
  lister: Lister,
  workflowId: string,
  query: ListQueryString,
): Promise<ListWorkflowVersionsResponse> => {
  const summary = await readableWorkflow(deps, lister, workflowId);
  const limit = pageLimit(query?.limit);
  const scope = { list: 'workflow-versions', teamId: lister.teamId, workflowId, status: null } as const;
  const secret = await cursorSigningSecret(deps);
  const startKey = query?.cursor === undefined ? null : openCursor(secret, scope, query.cursor);
  const page = await queryWorkflowVersions(deps, workflowId, { limit, startKey });
  if (page.versions.length === 0 && startKey === null) {
    // A workflow stored before versions: its one version lives in its canvas.
    const first = await readWorkflowVersion(deps, summary, 1);
    const versions = first
      ? [{ version: first.version, name: first.name, stepsCount: first.stepsCount, createdAt: first.createdAt }]
      : [];
    return { versions, nextCursor: null };
  }
  return {
    versions: page.versions,
    nextCursor: page.lastKey ? signCursor(secret, scope, page.lastKey) : null,
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
