import { randomUUID } from 'node:crypto';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../functions/deps.ts';
import { toHundredths } from '../functions/domain/credits.ts';
import { spendMonth } from '../functions/domain/monthly-cap.ts';
import { createApiKey } from '../functions/store/api-keys.ts';
import { canvasKey } from '../functions/store/keys.ts';
import { claimStep, countStep, finishStepItem, type NewRun, readRunItem } from '../functions/store/run/index.ts';
import { createAgent, createProject, createTeam } from '../functions/store/tenancy.ts';
import { createWorkflowForTeam, putWorkflow } from '../functions/store/workflows.ts';
import { StepStatus } from '../platform/run-statuses.ts';

export interface BenchTeam {
  teamId: string;
  projectId: string;
  agentId: string;
  key: string;
  keyId: string;
  workflowIds: string[];
}

/**
 * A team, project and agent (as `test/support/stack.ts` seeds them), `workflows` workflows, and a
 * key with every scope and a per-key rate limit high enough that the load never meets it.
 */
export const seedBenchTeam = async (deps: Deps, workflows: number): Promise<BenchTeam> => {
  const { teamId } = await createTeam(deps, {
    name: 'Bench team',
    creditsHundredths: toHundredths(100),
    perStepLimitHundredths: null,
  });
  const { projectId } = await createProject(deps, { teamId, name: 'Bench project', hardCapHundredths: null });
  const { agentId } = await createAgent(deps, { teamId, projectId, name: 'Bench agent' });
  const { key, keyId } = await createApiKey(deps, { teamId, rateLimitPerMinute: 1_000_000 });
  const workflowIds: string[] = [];
  for (let i = 0; i < workflows; i++) {
    const { workflowId } = await putWorkflow(deps, {
      teamId,
      agentId,
      projectId,
      name: `Bench workflow ${i + 1}`,
      description: i % 2 === 0 ? `A workflow the bench lists (${i + 1})` : null,
      status: i % 3 === 0 ? 'active' : 'draft',
      // A canvas of the stored shape (the list reads only the summary, so one node is enough).
      canvas: {
        nodes: [{ id: 'start', type: 'TextEntry', label: 'start', config: { text: '' }, position: { x: 0, y: 0 } }],
        edges: [],
      },
      stepsCount: 1,
    });
    workflowIds.push(workflowId);
  }
  return { teamId, projectId, agentId, key, keyId, workflowIds };
};

/** A team with enough credits for every run the bench starts, a project, an agent and a key. */
export const seedRunsTeam = async (deps: Deps, credits: number): Promise<Omit<BenchTeam, 'workflowIds'>> => {
  const { teamId } = await createTeam(deps, {
    name: 'Bench runs team',
    creditsHundredths: toHundredths(credits),
    perStepLimitHundredths: null,
  });
  const { projectId } = await createProject(deps, { teamId, name: 'Bench runs project', hardCapHundredths: null });
  const { agentId } = await createAgent(deps, { teamId, projectId, name: 'Bench runs agent' });
  const { key, keyId } = await createApiKey(deps, { teamId, rateLimitPerMinute: 1_000_000 });
  return { teamId, projectId, agentId, key, keyId };
};

/** A chain of `length` steps: a TextEntry, then TextConsoles each reading the one before (`s0` … `s<n-1>`). */
export const chainSteps = (length: number): { key: string; type: string; config?: object; inputs?: string[] }[] =>
  Array.from({ length }, (_, i) =>
    i === 0
      ? { key: 's0', type: 'TextEntry', config: { text: 'bench' } }
      : { key: `s${i}`, type: 'TextConsole', inputs: [`s${i - 1}`] },
  );

/** The chain of `chainSteps` with its second step an AI model step (LlmWorker, on the sandbox provider locally). */
export const chainWithModelStep = (length: number) =>
  chainSteps(length).map((step, i) => (i === 1 ? { key: step.key, type: 'LlmWorker', inputs: ['s0'] } : step));

/** Runs `fn` over `items` with at most `limit` at once; results in input order. */
export const mapLimit = async <T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
) => {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await fn(items[index] as T, index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
};

/**
 * `count` workflows of a `length`-step chain: the first through POST /workflows as a client creates
 * it, the others with the same canvas through the store function that request ends in (the same
 * items, without validating and laying out the same graph again).
 */
export const createChainWorkflows = async (
  deps: Deps,
  baseUrl: string,
  team: { teamId: string; key: string; agentId: string },
  count: number,
  length: number,
  steps: unknown[] = chainSteps(length),
): Promise<string[]> => {
  const response = await fetch(`${baseUrl}/workflows`, {
    method: 'POST',
    headers: { authorization: `Bearer ${team.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'Bench chain 1', steps, agentId: team.agentId }),
  });
  const body = (await response.json()) as { workflowId?: string };
  if (response.status !== 201 || !body.workflowId) {
    throw new Error(`POST /workflows answered ${response.status}: ${JSON.stringify(body)}`);
  }
  const first = body.workflowId;
  const { Item } = await deps.ddb.send(
    new GetCommand({ TableName: deps.tableName, Key: canvasKey(first), ConsistentRead: true }),
  );
  if (!Item) throw new Error('the created workflow has no canvas');
  const others = await mapLimit(
    Array.from({ length: count - 1 }, (_, i) => i + 2),
    8,
    async (n) =>
      (
        await createWorkflowForTeam(deps, {
          teamId: team.teamId,
          agentId: team.agentId,
          name: `Bench chain ${n}`,
          canvas: Item.canvas,
          stepsCount: length,
        })
      ).workflowId,
  );
  return [first, ...others];
};

/**
 * A team with 1,000 credits, one `steps` workflow over HTTP, and the headers its key sends: what
 * each cost run starts from.
 */
export const seedCostTeam = async (deps: Deps, baseUrl: string, length: number, steps: unknown[]) => {
  const team = await seedRunsTeam(deps, 1_000);
  const [workflowId] = await createChainWorkflows(deps, baseUrl, team, 1, length, steps);
  const headers = { authorization: `Bearer ${team.key}`, 'content-type': 'application/json' };
  return { team, workflowId: workflowId as string, headers };
};

/**
 * A run moved on through the store's own writes, as its steps' ends move it (no worker runs): its first
 * `completed` steps each ended with an output of `outputBytes` and counted on the run, the next one
 * claimed (a model step at work), the rest not started; with every step ended, the last count ends
 * the run. Nodes are named `s0`, `s1`... as `chainSteps` names them.
 */
export const endStepsThroughStore = async (deps: Deps, jobId: string, completed: number, outputBytes: number) => {
  const run = await readRunItem(deps, jobId);
  if (!run) throw new Error(`run ${jobId} not found`);
  const output = 'x'.repeat(outputBytes);
  let counts = run;
  for (let i = 0; i < completed; i++) {
    const nodeId = `s${i}`;
    const end = { status: StepStatus.completed, outputs: { text: output }, model: undefined, licence: undefined };
    await finishStepItem(deps, run, nodeId, null, { ...end, chargeHundredths: 0 });
    const counted = await countStep(deps, counts, nodeId, { status: StepStatus.completed, chargeHundredths: 0 });
    if (!counted.counted) throw new Error(`step ${nodeId} not counted`);
    if (!counted.ended) counts = counted.run;
  }
  if (completed < run.stepsTotal) await claimStep(deps, run, `s${completed}`);
  return counts;
};

/**
 * A run's start as the ledger's writers take it, on a workflow no store holds (they read no canvas):
 * a model step `llm` and a last step `show`, estimated at the hundredths given, with `tags`. The
 * usage bench and the usage test settle such runs through the real counts.
 */
export const ledgerRunStart = (
  team: { teamId: string; keyId: string; agentId: string; projectId: string },
  options: { jobId: string; llmHundredths: number; showHundredths: number; tags: string[] },
): NewRun => ({
  jobId: options.jobId,
  teamId: team.teamId,
  keyId: team.keyId,
  workflow: {
    workflowId: randomUUID(),
    agentId: team.agentId,
    projectId: team.projectId,
    version: 1,
    status: 'active',
    canvas: { nodes: [], edges: [] },
  },
  mode: 'production',
  inputs: {},
  callbackUrl: null,
  callbackSecret: null,
  estimate: {
    steps: [
      { nodeId: 'llm', type: 'LlmWorker', hundredths: options.llmHundredths },
      { nodeId: 'show', type: 'TextConsole', hundredths: options.showHundredths },
    ],
    totalHundredths: options.llmHundredths + options.showHundredths,
    multiplier: 1,
  },
  month: spendMonth(new Date()),
  monthlyCap: null,
  hardCap: null,
  idempotency: null,
  deferredJobId: null,
  labels: { tags: options.tags },
});
