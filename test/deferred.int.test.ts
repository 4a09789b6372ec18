import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildOpenApiDocument } from '../functions/docs/openapi.ts';
import { estimateRun } from '../functions/domain/pricing.ts';
import { revokeApiKey } from '../functions/store/api-keys.ts';
import { canvasOf } from '../functions/store/canvases.ts';
import { setLiveMultiplier } from '../functions/store/price-multiplier.ts';
import { readRunPartition } from '../functions/store/run/index.ts';
import { getTeam } from '../functions/store/tenancy.ts';
import { expectValidResponse } from './support/openapi-validator.ts';
import { dispatcherHandler } from './support/runs.ts';
import { addKey, call, createWorkflow, seedTeam, startTestStack, type TestStack } from './support/stack.ts';

let stack: TestStack;
let clockMs = Date.parse('2026-11-22T03:00:00.000Z');
const doc = buildOpenApiDocument();
beforeAll(async () => {
  stack = await startTestStack({ now: () => new Date(clockMs) });
});
afterAll(() => stack.close());

const tick = () => dispatcherHandler(stack.deps)();

const defer = async (key: string, workflowId: string, body: Record<string, unknown> = {}) => {
  const response = await call(stack.baseUrl, `/workflows/${workflowId}/runs`, {
    key,
    method: 'POST',
    body: { defer: true, ...body },
  });
  expectValidResponse(doc, {
    method: 'POST',
    path: `/workflows/${workflowId}/runs`,
    status: response.status,
    body: response.body,
  });
  return response;
};

const getDeferred = async (key: string, id: string) => {
  const response = await call(stack.baseUrl, `/deferred-runs/${id}`, { key });
  expectValidResponse(doc, {
    method: 'GET',
    path: `/deferred-runs/${id}`,
    status: response.status,
    body: response.body,
  });
  return response;
};

describe('deferred runs (spec 2.4, 3.2, 4.6)', () => {
  it('waits (202, nothing held), dispatches at a multiplier at most its maxMultiplier, priced at that multiplier', async () => {
    await setLiveMultiplier(stack.deps, 1);
    const team = await seedTeam(stack.deps, { credits: 100 });
    const workflowId = await createWorkflow(stack, team);
    const accepted = await defer(team.key, workflowId, { maxMultiplier: 0.6 });
    expect(accepted.status).toBe(202);
    expect(accepted.body).toMatchObject({ deferred: true, workflowId });
    const id = accepted.body.deferredJobId as string;
    const waiting = await getDeferred(team.key, id);
    expect(waiting.body).toEqual({
      deferredJobId: id,
      workflowId,
      status: 'waiting',
      maxMultiplier: 0.6,
      createdAt: new Date(clockMs).toISOString(),
      expiresAt: new Date(clockMs + 24 * 3600_000).toISOString(),
      dispatchedAt: null,
      jobId: null,
    });
    expect((await getTeam(stack.deps, team.teamId))?.held).toBe(0);

    expect((await tick()).keptWaiting).not.toContain(id); // 1.0 > 0.6: not even read
    expect((await getDeferred(team.key, id)).body.status).toBe('waiting');

    await setLiveMultiplier(stack.deps, 0.5);
    const report = await tick();
    const dispatched = report.dispatched.find((d) => d.deferredJobId === id);
    expect(dispatched).toBeDefined();
    const after = await getDeferred(team.key, id);
    expect(after.body).toMatchObject({
      status: 'dispatched',
      jobId: dispatched?.jobId,
      dispatchedAt: new Date(clockMs).toISOString(),
    });
    const { run } = await readRunPartition(stack.deps, dispatched?.jobId as string);
    // The chain costs 1 + 1 + 200 + 1 hundredths at 1.0; at 0.5 each step rounds up.
    const canvas = await canvasOf(stack.deps, workflowId, 1);
    expect(run?.estimateHundredths).toBe(estimateRun(canvas, 'production', 0.5).totalHundredths);
    expect(run?.estimateHundredths).toBeLessThan(estimateRun(canvas, 'production', 1).totalHundredths);
    expect((await getTeam(stack.deps, team.teamId))?.held).toBe(run?.estimateHundredths);
  });

  it('starts each deferred run at most once under duplicate and concurrent ticks', async () => {
    await setLiveMultiplier(stack.deps, 0.5);
    const team = await seedTeam(stack.deps, { credits: 100 });
    const key = await addKey(stack.deps, team.teamId, { rateLimitPerMinute: 1000 });
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const workflowId = await createWorkflow(stack, team, undefined, `W${i}`);
      ids.push((await defer(key.key, workflowId)).body.deferredJobId as string);
    }
    const reports = await Promise.all([tick(), tick(), tick()]);
    const dispatched = reports.flatMap((r) => r.dispatched.map((d) => d.deferredJobId)).filter((d) => ids.includes(d));
    expect(dispatched.sort()).toEqual([...ids].sort());
    expect((await tick()).dispatched.filter((d) => ids.includes(d.deferredJobId))).toEqual([]);
  });

  it('keeps waiting while the workflow is busy, expires after 24 hours, cancels when the key is revoked', async () => {
    await setLiveMultiplier(stack.deps, 0.5);
    const team = await seedTeam(stack.deps, { credits: 100 });
    const key = await addKey(stack.deps, team.teamId, { rateLimitPerMinute: 1000 });
    const workflowId = await createWorkflow(stack, team);
    const busy = await call(stack.baseUrl, `/workflows/${workflowId}/runs`, { key: key.key, method: 'POST' });
    expect(busy.status).toBe(200);
    const waitingId = (await defer(key.key, workflowId)).body.deferredJobId as string;
    expect((await tick()).keptWaiting).toContain(waitingId);

    const other = await createWorkflow(stack, team, undefined, 'Other');
    const revokedKey = await addKey(stack.deps, team.teamId);
    const toCancel = (await defer(revokedKey.key, other, { maxMultiplier: 0.4 })).body.deferredJobId as string;
    await revokeApiKey(stack.deps, revokedKey.keyId);
    await setLiveMultiplier(stack.deps, 0.4);
    expect((await tick()).cancelled).toContain(toCancel);
    expect((await getDeferred(team.key, toCancel)).body.status).toBe('cancelled');

    clockMs += 24 * 3600_000 + 1000;
    expect((await tick()).expired).toContain(waitingId);
    expect((await getDeferred(team.key, waitingId)).body.status).toBe('expired');
  });

  it('expires one whose turn came but cannot be paid for', async () => {
    await setLiveMultiplier(stack.deps, 0.5);
    const team = await seedTeam(stack.deps, { credits: 0.5 });
    const workflowId = await createWorkflow(stack, team);
    const id = (await defer(team.key, workflowId)).body.deferredJobId as string;
    expect((await tick()).expired).toContain(id);
  });

  it('cancels a waiting one with DELETE, refuses a second, and hides other teams’ deferred runs', async () => {
    await setLiveMultiplier(stack.deps, 1);
    const team = await seedTeam(stack.deps);
    const workflowId = await createWorkflow(stack, team);
    const id = (await defer(team.key, workflowId)).body.deferredJobId as string;
    const other = await seedTeam(stack.deps);
    expect(await call(stack.baseUrl, `/deferred-runs/${id}`, { key: other.key })).toMatchObject({
      status: 404,
      body: { error: 'Deferred run not found' },
    });
    expect((await call(stack.baseUrl, `/deferred-runs/${id}`, { key: other.key, method: 'DELETE' })).status).toBe(404);
    const cancelled = await call(stack.baseUrl, `/deferred-runs/${id}`, { key: team.key, method: 'DELETE' });
    expectValidResponse(doc, {
      method: 'DELETE',
      path: `/deferred-runs/${id}`,
      status: cancelled.status,
      body: cancelled.body,
    });
    expect(cancelled.body).toMatchObject({ status: 'cancelled', jobId: null });
    const again = await call(stack.baseUrl, `/deferred-runs/${id}`, { key: team.key, method: 'DELETE' });
    expect(again).toMatchObject({ status: 409, body: { error: 'Deferred run is not waiting' } });
  });

  it('validates a deferred start like a normal one', async () => {
    const team = await seedTeam(stack.deps);
    const workflowId = await createWorkflow(stack, team);
    expect((await defer(team.key, workflowId, { inputs: { nope: 'x' } })).status).toBe(422);
    expect((await defer(team.key, workflowId, { callbackUrl: 'http://example.com' })).status).toBe(422);
    expect((await defer(team.key, '00000000-0000-4000-8000-000000000000')).status).toBe(404);
    expect((await defer(team.key, workflowId, { maxMultiplier: -1 })).status).toBe(400);
  });
});
