/**
 * The workflow a start, an estimate or a read of it runs: its summary and the canvas of the version
 * asked for, or an agent's. Reads only; the start's writes are functions/store/run/runs.ts's.
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import * as v from 'valibot';
import type { Deps } from '../../deps.ts';
import {
  AgentNotFoundError,
  CanvasNotFoundError,
  NoWorkflowForAgentError,
  WorkflowNotFoundError,
  WorkflowVersionNotFoundError,
} from '../../errors/table.ts';
import type { Canvas } from '../../nodes/catalogue/canvas.ts';
import { batchGet, itemFor } from '../batch.ts';
import { parseItem } from '../items/item.ts';
import { AgentItemSchema } from '../items/tenancy.ts';
import { CanvasItemSchema, type WorkflowItem, WorkflowItemSchema } from '../items/workflows.ts';
import { agentKey, canvasKey, teamPartition, workflowKey, workflowSkPrefix } from '../keys.ts';
import { queryAll } from '../query.ts';
import { readVersionCanvas } from '../workflow-versions.ts';

export interface RunnableWorkflow {
  workflowId: string;
  agentId: string;
  projectId: string;
  /** The version whose canvas this is: the one the start pinned, else the latest. */
  version: number;
  /** The workflow's status (an archived workflow starts no run). */
  status: WorkflowItem['status'];
  canvas: Canvas;
}

/**
 * The workflow summary and its latest canvas in one BatchGet; with `version` another than the
 * latest, that version's own item too. WorkflowNotFoundError, CanvasNotFoundError or
 * WorkflowVersionNotFoundError. The summary item read is answered too (GET /workflows/{id} shows it).
 */
export const loadWorkflowAndSummary = async (
  deps: Deps,
  teamId: string,
  workflowId: string,
  version?: number,
): Promise<{ workflow: RunnableWorkflow; summary: WorkflowItem }> => {
  const summaryKey = workflowKey(teamId, workflowId);
  const items = await batchGet(deps, [summaryKey, canvasKey(workflowId)]);
  const summary = itemFor(items, summaryKey, WorkflowItemSchema);
  if (!summary) throw new WorkflowNotFoundError(workflowId);
  const latest = itemFor(items, canvasKey(workflowId), CanvasItemSchema);
  // The canvas partition is keyed by workflow id alone, so its team is checked too.
  if (!latest || latest.teamId !== teamId) throw new CanvasNotFoundError(workflowId);
  const found = { workflowId, agentId: summary.agentId, projectId: summary.projectId, status: summary.status };
  if (version === undefined || version === latest.version)
    return { workflow: { ...found, version: latest.version, canvas: latest.canvas }, summary };
  const pinned = version < latest.version ? await readVersionCanvas(deps, workflowId, version) : undefined;
  if (!pinned) throw new WorkflowVersionNotFoundError(workflowId, version);
  return { workflow: { ...found, version, canvas: pinned }, summary };
};

/** The workflow a run of it runs (`loadWorkflowAndSummary`'s, without the summary). */
export const loadRunnableWorkflow = async (
  deps: Deps,
  teamId: string,
  workflowId: string,
  version?: number,
): Promise<RunnableWorkflow> => (await loadWorkflowAndSummary(deps, teamId, workflowId, version)).workflow;

/** What the agent's newest workflow is chosen by. */
const NewestWorkflowSchema = v.pick(WorkflowItemSchema, ['workflowId', 'createdAt']);

/**
 * The workflow an agent runs (spec 4.4): its active workflow, else its newest (by creation).
 * AgentNotFoundError, NoWorkflowForAgentError, then the errors of the workflow itself.
 */
export const loadAgentWorkflow = async (
  deps: Deps,
  teamId: string,
  agentId: string,
  version?: number,
): Promise<RunnableWorkflow> => {
  const { Item } = await deps.ddb.send(
    new GetCommand({ TableName: deps.tableName, Key: agentKey(teamId, agentId), ConsistentRead: true }),
  );
  if (!Item) throw new AgentNotFoundError(agentId);
  let workflowId = parseItem(AgentItemSchema, Item).activeWorkflowId;
  if (!workflowId) {
    const candidates = await queryAll(
      deps,
      {
        KeyConditionExpression: 'PK = :pk AND begins_with(SK, :prefix)',
        FilterExpression: 'agentId = :agent',
        ProjectionExpression: 'PK, SK, workflowId, createdAt',
        ExpressionAttributeValues: { ':pk': teamPartition(teamId), ':prefix': workflowSkPrefix, ':agent': agentId },
        ConsistentRead: true,
      },
      (item) => parseItem(NewestWorkflowSchema, item),
    );
    const newest = candidates.reduce<(typeof candidates)[number] | undefined>(
      (best, candidate) => (!best || candidate.createdAt > best.createdAt ? candidate : best),
      undefined,
    );
    if (!newest) throw new NoWorkflowForAgentError(agentId);
    workflowId = newest.workflowId;
  }
  return loadRunnableWorkflow(deps, teamId, workflowId, version);
};
