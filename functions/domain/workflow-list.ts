import type { WorkflowStatus } from '../../schemas/workflow-words.ts';
import { keyMayUseWorkflow } from './key-workflows.ts';

export interface WorkflowSummaryRecord {
  id: string;
  name: string;
  description: string | null;
  status: WorkflowStatus | null;
  updated_at: string | null;
}

/**
 * What a key may see of a team's workflows: all of them, or only those it is limited to; newest
 * change first (never-changed ones last), ties broken by id so the order is stable.
 */
export const visibleWorkflows = (
  summaries: readonly WorkflowSummaryRecord[],
  permittedWorkflowIds: readonly string[],
): WorkflowSummaryRecord[] => {
  return summaries
    .filter((w) => keyMayUseWorkflow(permittedWorkflowIds, w.id))
    .sort((a, b) => (b.updated_at ?? '').localeCompare(a.updated_at ?? '') || a.id.localeCompare(b.id));
};
