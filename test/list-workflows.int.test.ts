import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildOpenApiDocument } from '../functions/docs/openapi.ts';
import { putWorkflow, setWorkflowStatus } from '../functions/store/workflows.ts';
import { expectValidResponse } from './support/openapi-validator.ts';
import { addKey, call, type SeededTeam, seedTeam, startTestStack, type TestStack } from './support/stack.ts';

let stack: TestStack;
let clockMs = Date.parse('2026-11-01T10:00:00.000Z');
beforeAll(async () => {
  // The clock is injected so `updated_at` ordering is deterministic.
  stack = await startTestStack({ now: () => new Date(clockMs) });
});
afterAll(() => stack.close());

const addWorkflow = async (team: SeededTeam, name: string, description: string | null = null) => {
  clockMs += 1000;
  const { workflowId } = await putWorkflow(stack.deps, {
    teamId: team.teamId,
    agentId: team.agentId,
    projectId: team.projectId,
    name,
    description,
    status: 'draft',
    canvas: { nodes: [], edges: [] },
    stepsCount: 1,
  });
  return workflowId;
};

describe('GET /workflows (spec 4.1)', () => {
  it('lists only the team’s workflows, newest change first, with every summary field', async () => {
    const team = await seedTeam(stack.deps);
    const other = await seedTeam(stack.deps);
    const first = await addWorkflow(team, 'First', 'the first one');
    const second = await addWorkflow(team, 'Second');
    await addWorkflow(other, 'Not yours');
    clockMs += 1000;
    await setWorkflowStatus(stack.deps, team.teamId, first, 'active');

    const response = await call(stack.baseUrl, '/workflows', { key: team.key });
    expect(response.status).toBe(200);
    expectValidResponse(buildOpenApiDocument(), {
      method: 'GET',
      path: '/workflows',
      status: 200,
      body: response.body,
    });
    expect(response.body).toEqual({
      workflows: [
        {
          id: first,
          name: 'First',
          description: 'the first one',
          status: 'active',
          updated_at: '2026-11-01T10:00:04.000Z',
        },
        { id: second, name: 'Second', description: null, status: 'draft', updated_at: '2026-11-01T10:00:02.000Z' },
      ],
    });
  });

  it('shows a key limited to certain workflows only those', async () => {
    const team = await seedTeam(stack.deps);
    const allowed = await addWorkflow(team, 'Allowed');
    await addWorkflow(team, 'Hidden');
    const limited = await addKey(stack.deps, team.teamId, { workflowIds: [allowed] });
    const response = await call(stack.baseUrl, '/workflows', { key: limited.key });
    expect((response.body.workflows as { id: string }[]).map((w) => w.id)).toEqual([allowed]);
  });

  it('returns an empty list for a team without workflows, or a key limited to none of the team’s', async () => {
    const team = await seedTeam(stack.deps);
    expect((await call(stack.baseUrl, '/workflows', { key: team.key })).body).toEqual({ workflows: [] });
    const other = await seedTeam(stack.deps);
    const foreign = await addWorkflow(other, 'Other team');
    const limited = await addKey(stack.deps, team.teamId, { workflowIds: [foreign] });
    expect((await call(stack.baseUrl, '/workflows', { key: limited.key })).body).toEqual({ workflows: [] });
  });

  it('lists every workflow of a large team (no pagination)', async () => {
    const team = await seedTeam(stack.deps);
    const ids = await Promise.all(Array.from({ length: 60 }, (_, i) => addWorkflow(team, `W${i}`)));
    const response = await call(stack.baseUrl, '/workflows', { key: team.key });
    expect((response.body.workflows as unknown[]).length).toBe(ids.length);
  });
});
