/**
 * GET /workflows/{id} (our design): a workflow as a caller (or an agent) needs it to run it: what
 * its `inputs` take (functions/domain/workflow-inputs.ts, the schema the run start checks by), what
 * its final steps give, what a run costs at the least and the most, and the licence its outputs
 * would carry. Reads only; another team's workflow reads as none, one the key is limited away from
 * as the start answers it.
 */
import type { Deps } from '../deps.ts';
import { terminalNodeIds } from '../domain/canvas-order.ts';
import { keyMayUseWorkflow } from '../domain/key-workflows.ts';
import { type OutputLicence, plannedLicence } from '../domain/licence.ts';
import { type WorkflowInputsSchema, workflowInputsSchema } from '../domain/workflow-inputs.ts';
import type { WorkflowSummaryRecord } from '../domain/workflow-list.ts';
import { WorkflowNotFoundError } from '../errors/table.ts';
import type { Canvas } from '../nodes/catalogue/canvas.ts';
import { getNodeSpec } from '../nodes/catalogue/index.ts';
import type { ValueKind } from '../nodes/catalogue/kinds.ts';
import type { ApiKeyItem } from '../store/items/api-keys.ts';
import { loadWorkflowAndSummary } from '../store/run/workflow-loads.ts';
import { summaryRecordOf } from '../store/workflows.ts';
import { type PriceRange, workflowPriceRange } from './workflow-price-range.ts';

/** A final step: its results are a run's `output`. */
export interface WorkflowOutput {
  key: string;
  type: string;
  /** Each output handle of the step and the kind of value it gives. */
  handles: { name: string; kind: ValueKind }[];
}

export interface WorkflowDescription {
  summary: WorkflowSummaryRecord;
  version: number;
  inputs: WorkflowInputsSchema;
  outputs: WorkflowOutput[];
  price: PriceRange;
  licence: OutputLicence | undefined;
}

/** The steps nothing reads from, with their handles' kinds (in step order). */
export const workflowOutputs = (canvas: Canvas): WorkflowOutput[] =>
  terminalNodeIds(canvas).flatMap((id) => {
    const node = canvas.nodes.find((n) => n.id === id);
    const spec = node && getNodeSpec(node.type);
    return node && spec
      ? [{ key: node.id, type: node.type, handles: spec.outputs.map((h) => ({ name: h.name, kind: h.kind })) }]
      : [];
  });

/** GET /workflows/{id}: the workflow `workflowId` of the key's team, described. */
export const describeWorkflow = async (
  deps: Deps,
  key: Pick<ApiKeyItem, 'teamId' | 'workflowIds'>,
  workflowId: string,
): Promise<WorkflowDescription> => {
  // A read: a workflow outside the ones the key is limited to reads as none, as its versions and
  // its runs do (only a write or a start answers 403 for it). Nothing is read for it.
  if (!keyMayUseWorkflow(key.workflowIds, workflowId)) throw new WorkflowNotFoundError(workflowId);
  // One BatchGet of the summary and the canvas, as a start reads them.
  const { workflow, summary } = await loadWorkflowAndSummary(deps, key.teamId, workflowId);
  return {
    summary: summaryRecordOf(summary),
    // The latest version: the one a start without `version` runs.
    version: workflow.version,
    inputs: workflowInputsSchema(workflow),
    outputs: workflowOutputs(workflow.canvas),
    price: await workflowPriceRange(deps, workflow),
    licence: plannedLicence(workflow.canvas.nodes, deps.providers.modelDefaults, deps.now()),
  };
};
