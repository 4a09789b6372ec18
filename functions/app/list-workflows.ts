import type { ListWorkflowsResponse } from '../../schemas/workflows.ts';
import type { Deps } from '../deps.ts';
import { visibleWorkflows } from '../domain/workflow-list.ts';
import { listWorkflowSummaries } from '../store/workflows.ts';
import type { Lister } from './list-runs.ts';

/** GET /workflows (spec 4.1): the team's workflows this key may run, newest change first. */
export const listWorkflows = async (deps: Deps, caller: Lister): Promise<ListWorkflowsResponse> => ({
  workflows: visibleWorkflows(await listWorkflowSummaries(deps, caller.teamId), caller.workflowIds),
});
