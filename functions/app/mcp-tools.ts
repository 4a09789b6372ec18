import type { Scope } from '../../platform/routes.ts';
import { type RunMode, RunModeSchema } from '../../schemas/run-words.ts';
import type { Deps } from '../deps.ts';
import { plannedLicence } from '../domain/licence.ts';
import { type WorkflowToolFacts, workflowToolName } from '../domain/mcp-tools.ts';
import { mayReadStartedRun } from '../domain/prefer-wait.ts';
import { estimateRun } from '../domain/pricing.ts';
import { workflowInputsSchema } from '../domain/workflow-inputs.ts';
import { visibleWorkflows } from '../domain/workflow-list.ts';
import { ScopeNotPermittedError } from '../errors/table.ts';
import type { Canvas } from '../nodes/catalogue/canvas.ts';
import { latestCanvases } from '../store/canvases.ts';
import type { ApiKeyItem } from '../store/items/api-keys.ts';
import { listWorkflowSummaries } from '../store/workflows.ts';
import { readRunWithLinks } from './read-run.ts';
import { type RunWait, waitForRunEnd } from './run-wait.ts';
import { startNowMultiplier } from './start-estimate.ts';
import { type RunStart, startWorkflowRun } from './start-run.ts';

/** A workflow as a tool: its name, the facts its description states, and its inputs' JSON Schema. */
export interface WorkflowTool {
  name: string;
  facts: WorkflowToolFacts;
  inputSchema: Record<string, unknown>;
}

/** A tool call's refusal when the key lacks `scope`: the same refusal a route that needs it answers. */
export const assertKeyScope = (key: Pick<ApiKeyItem, 'scopes'>, scope: Scope): void => {
  if (key.scopes.length > 0 && !key.scopes.includes(scope)) throw new ScopeNotPermittedError(scope);
};

const runModes = RunModeSchema.options as readonly RunMode[];

/** The facts a workflow's tool describes: its estimate's range over the run modes, and its licence now. */
const toolFacts = (
  deps: Deps,
  summary: { id: string; name: string; description: string | null },
  canvas: Canvas,
): WorkflowToolFacts => {
  // A tool call starts its run now: each mode priced as a start now is (`startEstimate`).
  const totals = runModes.map((mode) => estimateRun(canvas, mode, startNowMultiplier, deps.providers).totalHundredths);
  return {
    workflowId: summary.id,
    name: summary.name,
    description: summary.description,
    price: { minHundredths: Math.min(...totals), maxHundredths: Math.max(...totals) },
    licence: plannedLicence(canvas.nodes, deps.providers.modelDefaults, deps.now()),
  };
};

/**
 * The key's tools (MCP `tools/list`): each workflow of its team it may run (its workflow limits, as
 * GET /workflows lists them), newest change first; an archived workflow runs nothing, so it is no tool.
 */
export const listWorkflowTools = async (deps: Deps, key: ApiKeyItem): Promise<WorkflowTool[]> => {
  const summaries = visibleWorkflows(await listWorkflowSummaries(deps, key.teamId), key.workflowIds).filter(
    (summary) => summary.status !== 'archived',
  );
  // The summaries are read: their canvases in one BatchGet a hundred, as a start loads the latest.
  const canvases = await latestCanvases(
    deps,
    key.teamId,
    summaries.map((summary) => summary.id),
  );
  return summaries.flatMap((summary) => {
    const canvas = canvases.get(summary.id);
    if (!canvas) return [];
    return [
      {
        name: workflowToolName(summary.id),
        facts: toolFacts(deps, summary, canvas),
        // The inputs as GET /workflows/{id} describes them, and as the start checks them.
        inputSchema: { ...workflowInputsSchema({ canvas }) },
      },
    ];
  });
};

/** What a workflow tool's call answers: the run when it ended in the wait or is readable, else the start's answer. */
export type ToolRunAnswer =
  | { kind: 'run'; run: Awaited<ReturnType<typeof readRunWithLinks>> }
  | { kind: 'started'; started: Record<string, unknown> };

/**
 * A workflow tool's call (MCP `tools/call`): a run start as POST /workflows/{id}/runs makes it (the
 * key's scope and workflow limits, the 402 family, the workflow's lock), waiting behind a run in
 * progress (`onConflict: "queue"`) rather than refused, then waited for up to `wait`. A key that
 * may read runs is answered the Run as GET /runs/{jobId} shows it, ended or not; one that may not,
 * the start's answer.
 */
export const callWorkflowTool = async (
  deps: Deps,
  key: ApiKeyItem,
  workflowId: string,
  request: RunStart['request'],
  wait: RunWait,
): Promise<ToolRunAnswer> => {
  assertKeyScope(key, 'runs:create');
  const answer = await startWorkflowRun(
    deps,
    key,
    {
      request,
      idempotencyKey: undefined,
      target: { routeKey: 'POST /mcp', pathParameters: { id: workflowId } },
    },
    workflowId,
  );
  const jobId = answer.body.jobId;
  if (typeof jobId !== 'string' || !mayReadStartedRun(key.scopes)) return { kind: 'started', started: answer.body };
  await waitForRunEnd(deps, jobId, wait.until);
  return { kind: 'run', run: await readRunWithLinks(deps, key.teamId, jobId, key.workflowIds) };
};

/** `get_run`: the run as GET /runs/{jobId} shows it (another team's, or one outside the key's limits, is its 404). */
export const readRunTool = async (deps: Deps, key: ApiKeyItem, jobId: string) => {
  assertKeyScope(key, 'runs:read');
  return readRunWithLinks(deps, key.teamId, jobId, key.workflowIds);
};
