import type { Deps } from '../functions/deps.ts';
import { toHundredths } from '../functions/domain/credits.ts';
import { createApiKey } from '../functions/store/api-keys.ts';
import { createAgent, createProject, createTeam } from '../functions/store/tenancy.ts';
import { putWorkflow } from '../functions/store/workflows.ts';

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
      canvas: { nodes: [{ id: 'start', type: 'input' }], edges: [] },
      stepsCount: 1,
    });
    workflowIds.push(workflowId);
  }
  return { teamId, projectId, agentId, key, keyId, workflowIds };
};
