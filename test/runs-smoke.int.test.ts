import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getTeam } from '../functions/store/tenancy.ts';
import { call, createWorkflow, seedTeam, startWorkingStack, type TestStack, waitForRun } from './support/stack.ts';

let stack: TestStack;
beforeAll(async () => {
  stack = await startWorkingStack();
});
afterAll(() => stack.close());

describe('a run end to end', () => {
  it('starts, executes every step through SQS, charges exactly and releases the rest', async () => {
    const team = await seedTeam(stack.deps, { credits: 100 });
    const workflowId = await createWorkflow(stack, team);
    const started = await call(stack.baseUrl, `/workflows/${workflowId}/runs`, {
      key: team.key,
      method: 'POST',
      body: { inputs: { topic: 'badgers' } },
    });
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    const run = await waitForRun(stack, team.key, started.body.jobId as string);
    expect(run.body.status, JSON.stringify(run.body)).toBe('completed');
    expect(run.body.progress).toBe(100);
    const ledger = await getTeam(stack.deps, team.teamId);
    expect(ledger).toBeDefined();
    expect((ledger?.balance ?? 0) + (ledger?.held ?? 0) + (ledger?.charged ?? 0)).toBe(ledger?.granted);
    expect(ledger?.held).toBe(0);
  });
});
