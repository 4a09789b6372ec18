/**
 * GET /credits (our design): the team's balance and held credits, the key's month against its
 * cap and each project's hard cap, through the local API and the real handlers; and the 402's
 * balance, read against it.
 */
import { describe, expect, it } from 'vitest';
import { buildOpenApiDocument } from '../functions/docs/openapi.ts';
import { nextSpendMonthStart } from '../functions/domain/monthly-cap.ts';
import { createAgent, createProject, setPerStepLimit } from '../functions/store/tenancy.ts';
import { expectValidResponse } from './support/openapi-validator.ts';
import { addKey, call, createWorkflow, seedUnthrottledTeam, stackPerFile } from './support/stack.ts';

const { stack } = stackPerFile();
const doc = buildOpenApiDocument();

const credits = async (key: string | undefined) => {
  const answer = await call(stack.baseUrl, '/credits', { key });
  expectValidResponse(doc, { method: 'GET', path: '/credits', status: answer.status, body: answer.body });
  return answer;
};

describe('GET /credits', () => {
  it('answers the balance, held, the key’s month against its cap and each project’s cap; a 402 carries the same balance', async () => {
    const team = await seedUnthrottledTeam(stack.deps, 100, { monthlyCapHundredths: 500 });
    await setPerStepLimit(stack.deps, team.teamId, 400);
    const { projectId } = await createProject(stack.deps, {
      teamId: team.teamId,
      name: 'Capped',
      hardCapHundredths: 300,
    });
    const { agentId } = await createAgent(stack.deps, { teamId: team.teamId, projectId, name: 'In capped' });
    const first = await createWorkflow(stack, { ...team, agentId }, undefined, 'First');
    const second = await createWorkflow(stack, { ...team, agentId }, undefined, 'Second');

    const before = await credits(team.key);
    expect(before.status).toBe(200);
    expect(before.body).toEqual({
      balance: 100,
      held: 0,
      perStepLimit: 4,
      key: {
        monthlyCreditCap: 5,
        spentThisMonth: 0,
        remainingThisMonth: 5,
        resetsAt: nextSpendMonthStart(new Date()).toISOString(),
      },
      projects: expect.arrayContaining([
        { projectId: team.projectId, hardCap: null, spent: 0 },
        { projectId, hardCap: 3, spent: 0 },
      ]),
    });
    expect(before.body.projects).toHaveLength(2);

    // A run of the chain (2.03 credits) holds its estimate: the read follows it.
    const started = await call(stack.baseUrl, `/workflows/${first}/runs`, { key: team.key, method: 'POST' });
    expect(started.status).toBe(200);
    const after = await credits(team.key);
    expect(after.body).toMatchObject({
      balance: 97.97,
      held: 2.03,
      key: { monthlyCreditCap: 5, spentThisMonth: 2.03, remainingThisMonth: 2.97 },
    });
    expect(after.body.projects).toEqual(expect.arrayContaining([{ projectId, hardCap: 3, spent: 2.03 }]));

    // The next start passes the project's hard cap: its 402 keeps the contract's fields and adds the balance.
    const refused = await call(stack.baseUrl, `/workflows/${second}/runs`, { key: team.key, method: 'POST' });
    expect([refused.status, refused.body]).toEqual([
      402,
      { error: 'Project hard cap exceeded', hardCap: 3, spent: 2.03, estimate: 2.03, balance: 97.97 },
    ]);
    expect((await credits(team.key)).body).toEqual(after.body);

    // Another key of the team has its own month; a key without a cap reads null.
    const other = await addKey(stack.deps, team.teamId);
    expect((await credits(other.key)).body.key).toEqual({
      monthlyCreditCap: null,
      spentThisMonth: 0,
      remainingThisMonth: null,
      resetsAt: nextSpendMonthStart(new Date()).toISOString(),
    });
  });

  it('needs credits:read (a key without scopes has it), and a key: 401 and 403 as every keyed route', async () => {
    const team = await seedUnthrottledTeam(stack.deps, 10);
    const reader = await addKey(stack.deps, team.teamId, { scopes: ['credits:read'] });
    expect((await credits(reader.key)).body).toMatchObject({ balance: 10, held: 0 });
    const runsOnly = await addKey(stack.deps, team.teamId, { scopes: ['runs:read', 'runs:create'] });
    expect(await credits(runsOnly.key)).toMatchObject({
      status: 403,
      body: { error: 'Scope not permitted for this key' },
    });
    expect(await credits(undefined)).toMatchObject({ status: 401, body: { error: 'Unauthorized', reason: 'missing' } });
    // Another team's read is its own.
    const other = await seedUnthrottledTeam(stack.deps, 7);
    const theirs = await credits(other.key);
    expect(theirs.body).toMatchObject({
      balance: 7,
      projects: [{ projectId: other.projectId, hardCap: null, spent: 0 }],
    });
  });
});
