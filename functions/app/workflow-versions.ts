import type { ListWorkflowVersionsResponse, WorkflowVersion } from '../../schemas/workflow-versions.ts';
import type { Deps } from '../deps.ts';
import { openCursor, signCursor } from '../domain/cursor.ts';
import { keyMayUseWorkflow } from '../domain/key-workflows.ts';
import { WorkflowNotFoundError, WorkflowVersionNotFoundError } from '../errors/table.ts';
import type { WorkflowItem } from '../store/items/workflows.ts';
import { cursorSigningSecret } from '../store/run-list.ts';
import { queryWorkflowVersions, readWorkflowSummary, readWorkflowVersion } from '../store/workflow-versions.ts';
import { type Lister, type ListQueryString, pageLimit } from './list-runs.ts';

/** A workflow's summary as a key of its team reads or writes it. */
export type TeamWorkflow = WorkflowItem & { teamId: string };

/**
 * The team's workflow `workflowId` as a key reads it: a workflow outside the workflows the key is
 * limited to reads as none, as another team's does (404).
 */
const readableWorkflow = async (deps: Deps, lister: Lister, workflowId: string): Promise<TeamWorkflow> => {
  const summary = keyMayUseWorkflow(lister.workflowIds, workflowId)
    ? await readWorkflowSummary(deps, lister.teamId, workflowId)
    : undefined;
  if (!summary) throw new WorkflowNotFoundError(workflowId);
  return { ...summary, teamId: lister.teamId };
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
