/**
 * A key limited to certain workflows (spec: keys can be limited to workflows) may run, list and
 * follow the webhooks of only those; a key with no list may use every workflow of its team.
 */
export const keyMayUseWorkflow = (keyWorkflowIds: readonly string[], workflowId: string): boolean =>
  keyWorkflowIds.length === 0 || keyWorkflowIds.includes(workflowId);
