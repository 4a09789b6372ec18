/**
 * POST /runs/batch, GET /batches/{batchId} and GET /runs?batchId= through the real path: the local
 * API over DynamoDB Local and the queues' emulator, every answer checked against the OpenAPI
 * document. Each item answers exactly what its single start answers; items are independent; money
 * is exact (each accepted item holds its own estimate); the batch counts once against the rate
 * limit and each run against the monthly cap; an Idempotency-Key replays the whole batch.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runBatchPartition } from '../functions/store/keys.ts';
import { setLiveMultiplier } from '../functions/store/price-multiplier.ts';
import { createClient } from '../packages/client/src/index.ts';
import { runCli } from './support/cli.ts';
import { api, chainPrice, dispatcherHandler, expectBalanced, ledgerOf, pairPrice, pairSteps } from './support/runs.ts';
import {
  addKey,
  chainSteps,
  createWorkflow,
  type SeededTeam,
  seedTeam,
  seedUnthrottledTeam,
  startTestStack,
  type TestStack,
} from './support/stack.ts';

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack();
}, 120_000);
afterAll(() => stack?.close());

type Result = { index: number; status: number; body: Record<string, unknown> };

const postBatch = (key: string, runs: unknown[], headers: Record<string, string> = {}) =>
  api(stack.baseUrl, 'POST', '/runs/batch', { key, body: { runs }, headers });

const resultsOf = (answer: { body: Record<string, unknown> }) => answer.body.results as Result[];

/** `count` workflows of two cheap steps (`pairPrice`), made through the API. */
const pairWorkflows = async (team: SeededTeam, count: number) => {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) ids.push(await createWorkflow(stack, team, pairSteps, `Pair ${i}`));
  return ids;
};

describe('a batch of 100 items, 3 of them unaffordable', () => {
  it('creates 97 runs and answers 3 per-item 402s, in order, with the ledger exact', async () => {
    // 97 cheap runs fit; the chain workflow's estimate (203) is more than the whole balance (199), so
    // each of its items is refused whatever order the batch starts them in.
    const granted = 97 * pairPrice + 5;
    const team = await seedUnthrottledTeam(stack.deps, granted / 100);
    const cheap = await pairWorkflows(team, 97);
    const dear = await createWorkflow(stack, team, chainSteps, 'Dear');
    const unaffordable = new Set([6, 50, 99]);
    const runs: Record<string, unknown>[] = [];
    for (let i = 0, c = 0; i < 100; i++) {
      runs.push(
        unaffordable.has(i)
          ? { workflowId: dear, tags: ['dear'] }
          : { workflowId: cheap[c++], metadata: { item: String(i) }, tags: ['cheap'] },
      );
    }
    expect(chainPrice).toBeGreaterThan(granted);

    const answer = await postBatch(team.key, runs);
    expect(answer.status, JSON.stringify(answer.body).slice(0, 500)).toBe(200);
    const batchId = answer.body.batchId as string;
    const results = resultsOf(answer);
    expect(results.map((r) => r.index)).toEqual([...Array(100).keys()]);
    const refused = results.filter((r) => r.status !== 200);
    expect(refused.map((r) => r.index)).toEqual([6, 50, 99]);

    // Each refusal is what a single start of that workflow answers.
    const single = await api(stack.baseUrl, 'POST', `/workflows/${dear}/runs`, {
      key: team.key,
      body: { tags: ['dear'] },
    });
    expect(single.status).toBe(402);
    for (const item of refused) {
      expect(item.status).toBe(single.status);
      expect(item.body.error).toBe(single.body.error);
      expect(Object.keys(item.body).sort()).toEqual(Object.keys(single.body).sort());
    }
    // Each accepted item answers as its single start: the run queued, its own estimate.
    const started = results.filter((r) => r.status === 200);
    expect(started).toHaveLength(97);
    for (const item of started) {
      expect(item.body).toMatchObject({ status: 'queued', estimatedCredits: pairPrice / 100, stepsCount: 2 });
      expect(item.body.workflowId).toBe(runs[item.index]?.workflowId);
    }
    const jobIds = started.map((r) => r.body.jobId as string);
    expect(new Set(jobIds).size).toBe(97);

    // The ledger: exactly 97 holds of `pairPrice`, nothing else moved.
    const ledger = await ledgerOf(stack.deps, team.teamId);
    expectBalanced(ledger);
    expect(ledger).toEqual({ balance: 5, held: 97 * pairPrice, charged: 0, granted });

    // Every run carries the batch.
    for (const jobId of jobIds.slice(0, 5)) {
      const run = await api(stack.baseUrl, 'GET', `/runs/${jobId}`, { key: team.key });
      expect(run.body.batchId).toBe(batchId);
    }
    // The batch: its runs, counted by status.
    const batch = await api(stack.baseUrl, 'GET', `/batches/${batchId}`, { key: team.key });
    expect(batch.status).toBe(200);
    expect([...(batch.body.jobIds as string[])].sort()).toEqual([...jobIds].sort());
    expect(batch.body.counts).toEqual({ queued: 97, processing: 0, completed: 0, failed: 0, cancelled: 0, stopped: 0 });
    // The list of the batch's runs.
    const listed = await api(stack.baseUrl, 'GET', `/runs?batchId=${batchId}&limit=100`, { key: team.key });
    expect(listed.status).toBe(200);
    expect((listed.body.runs as { jobId: string }[]).map((r) => r.jobId).sort()).toEqual([...jobIds].sort());
    // The entries were written with the runs, in their start transactions: one per run.
    const { Items } = await stack.deps.ddb.send(
      new QueryCommand({
        TableName: stack.deps.tableName,
        KeyConditionExpression: 'PK = :pk',
        ExpressionAttributeValues: { ':pk': runBatchPartition(team.teamId, batchId) },
      }),
    );
    expect(Items).toHaveLength(97);

    // Another team's batch reads as none.
    const other = await seedUnthrottledTeam(stack.deps, 1);
    const theirs = await api(stack.baseUrl, 'GET', `/batches/${batchId}`, { key: other.key });
    expect([theirs.status, theirs.body]).toEqual([404, { error: 'Batch not found' }]);
    const theirList = await api(stack.baseUrl, 'GET', `/runs?batchId=${batchId}`, { key: other.key });
    expect(theirList.body.runs).toEqual([]);
  }, 180_000);
});

describe('each item is its single start', () => {
  it('answers a bad item, an unknown workflow, a busy workflow and a deferred start as a single start does', async () => {
    const team = await seedUnthrottledTeam(stack.deps, 10);
    const [first, second] = await pairWorkflows(team, 2);
    const missing = '00000000-0000-4000-8000-000000000000';
    const answer = await postBatch(team.key, [
      { workflowId: first },
      // The same workflow again: its run is in progress (onConflict reject), as a second single start.
      { workflowId: first },
      { workflowId: missing },
      { workflowId: second, tags: 'not-a-list' },
      { inputs: {} },
      { workflowId: second, agentId: team.agentId },
      { workflowId: second, defer: true },
      { agentId: team.agentId, onConflict: 'queue' },
    ]);
    expect(answer.status).toBe(200);
    const results = resultsOf(answer);
    const statuses = results.map((r) => r.status);
    // The first two race for one workflow: exactly one runs, the other meets it (409).
    expect(statuses.slice(0, 2).sort()).toEqual([200, 409]);
    const single409 = await api(stack.baseUrl, 'POST', `/workflows/${first}/runs`, { key: team.key, body: {} });
    const busy = results.slice(0, 2).find((r) => r.status === 409);
    expect(busy?.body.error).toBe(single409.body.error);
    const singleMissing = await api(stack.baseUrl, 'POST', `/workflows/${missing}/runs`, { key: team.key, body: {} });
    expect([results[2]?.status, results[2]?.body]).toEqual([singleMissing.status, singleMissing.body]);
    const singleBad = await api(stack.baseUrl, 'POST', `/workflows/${second}/runs`, {
      key: team.key,
      body: { tags: 'not-a-list' },
    });
    expect([results[3]?.status, results[3]?.body]).toEqual([singleBad.status, singleBad.body]);
    expect(results[4]?.status).toBe(400);
    expect(results[4]?.body.error).toBe('Invalid request body: workflowId: give exactly one of workflowId and agentId');
    expect(results[5]?.status).toBe(400);
    // Deferred: 202 and its deferred run; the agent's newest workflow is `second`, queued behind nothing or running.
    expect(results[6]?.status).toBe(202);
    expect(results[6]?.body).toMatchObject({ deferred: true, workflowId: second });
    expect([200, 202]).toContain(results[7]?.status);
    // An item that queues behind the run in progress: 202, its place, its estimate held.
    const queued = resultsOf(await postBatch(team.key, [{ workflowId: first, onConflict: 'queue' }]))[0];
    expect(queued?.status).toBe(202);
    expect(queued?.body).toMatchObject({ queuePosition: 1, status: 'queued' });
    const ledger = await ledgerOf(stack.deps, team.teamId);
    expectBalanced(ledger);
    // Three runs held (the first workflow's, the agent's, the queued one), and the refusals held nothing.
    expect(ledger.held).toBe(3 * pairPrice);
  }, 120_000);

  it('counts each accepted run against the monthly cap', async () => {
    const team = await seedTeam(stack.deps, { credits: 10, key: { rateLimitPerMinute: 100_000 } });
    const capped = await addKey(stack.deps, team.teamId, {
      monthlyCapHundredths: 3 * pairPrice,
      rateLimitPerMinute: 100_000,
    });
    const ids = await pairWorkflows(team, 5);
    const answer = await postBatch(
      capped.key,
      ids.map((workflowId) => ({ workflowId })),
    );
    const statuses = resultsOf(answer).map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(3);
    expect(statuses.filter((s) => s === 402)).toHaveLength(2);
    const refusal = resultsOf(answer).find((r) => r.status === 402);
    expect(String(refusal?.body.error)).toMatch(/monthly/i);
    expect((await ledgerOf(stack.deps, team.teamId)).held).toBe(3 * pairPrice);
  }, 120_000);

  it('counts the batch once against the rate limit', async () => {
    const team = await seedTeam(stack.deps, { credits: 10, key: { rateLimitPerMinute: 100_000 } });
    const ids = await pairWorkflows(team, 10);
    const slow = await addKey(stack.deps, team.teamId, { rateLimitPerMinute: 2 });
    const answer = await postBatch(
      slow.key,
      ids.map((workflowId) => ({ workflowId })),
    );
    expect(answer.status).toBe(200);
    expect(resultsOf(answer).every((r) => r.status === 200)).toBe(true);
    // Ten runs started, one request counted: the key's second request of the minute is still let in.
    const second = await api(stack.baseUrl, 'GET', '/runs', { key: slow.key });
    expect(second.status).toBe(200);
    const third = await api(stack.baseUrl, 'GET', '/runs', { key: slow.key });
    expect(third.status).toBe(429);
  }, 120_000);
});

describe('idempotency', () => {
  it('replays the whole batch for its Idempotency-Key, refuses another batch with it, and honours an item key', async () => {
    const team = await seedUnthrottledTeam(stack.deps, 10);
    const ids = await pairWorkflows(team, 4);
    const runs = ids.slice(0, 3).map((workflowId) => ({ workflowId }));
    const headers = { 'Idempotency-Key': 'batch-1' };
    const first = await postBatch(team.key, runs, headers);
    const again = await postBatch(team.key, runs, headers);
    expect(again.body).toEqual(first.body);
    expect((await ledgerOf(stack.deps, team.teamId)).held).toBe(3 * pairPrice);
    const other = await postBatch(team.key, [{ workflowId: ids[3] }], headers);
    expect(other.status).toBe(422);

    // An item's own key is a single start's: the same key, workflow and body answer as the first start.
    const alone = await api(stack.baseUrl, 'POST', `/workflows/${ids[3]}/runs`, {
      key: team.key,
      body: { tags: ['k'] },
      headers: { 'Idempotency-Key': 'item-1' },
    });
    expect(alone.status).toBe(200);
    const keyed = await postBatch(team.key, [{ workflowId: ids[3], tags: ['k'], idempotencyKey: 'item-1' }]);
    expect(resultsOf(keyed)[0]).toEqual({ index: 0, status: 200, body: alone.body });
    expect((await ledgerOf(stack.deps, team.teamId)).held).toBe(4 * pairPrice);
  }, 120_000);
});

describe('the batch body', () => {
  it('refuses an empty batch, more than 100 items, and a body that is no batch', async () => {
    const team = await seedUnthrottledTeam(stack.deps, 1);
    const workflowId = '00000000-0000-4000-8000-000000000000';
    const empty = await postBatch(team.key, []);
    expect([empty.status, empty.body]).toEqual([
      400,
      { error: 'Invalid request body: runs: runs must hold 1 to 100 items' },
    ]);
    const tooMany = await postBatch(
      team.key,
      Array.from({ length: 101 }, () => ({ workflowId })),
    );
    expect(tooMany.status).toBe(400);
    const array = await api(stack.baseUrl, 'POST', '/runs/batch', { key: team.key, body: [] });
    expect(array.status).toBe(400);
  });
});

describe('the typed client and the CLI', () => {
  it('starts a batch and reads it with the client, and with `batch start`, `batch show` and `runs list --batch-id`', async () => {
    const team = await seedUnthrottledTeam(stack.deps, 10);
    const ids = await pairWorkflows(team, 4);
    const client = createClient({ baseUrl: stack.baseUrl, apiKey: team.key });
    const started = await client.startRunBatch([{ workflowId: ids[0] }, { workflowId: ids[1], tags: ['client'] }], {
      idempotencyKey: 'client-batch',
    });
    expect(started.results.map((r) => r.status)).toEqual([200, 200]);
    const batch = await client.getBatch(started.batchId);
    expect(batch.counts.queued).toBe(2);
    const listed = await client.listRuns({ batchId: started.batchId });
    expect(listed.runs).toHaveLength(2);

    const file = join(process.env.TMPDIR ?? '/tmp', `batch-${team.teamId}.json`);
    // One item refused (an unknown workflow): the others start, and the exit code says so.
    writeFileSync(
      file,
      JSON.stringify({ runs: [{ workflowId: ids[2] }, { workflowId: '00000000-0000-4000-8000-000000000000' }] }),
    );
    const cli = await runCli({ baseUrl: stack.baseUrl, key: team.key }, ['batch', 'start', '--file', file]);
    expect(cli.code, cli.stderr).toBe(1);
    const batchId = /batchId: (\S+)/.exec(cli.stdout)?.[1] ?? '';
    expect(cli.stdout).toContain('404');
    const shown = await runCli({ baseUrl: stack.baseUrl, key: team.key }, ['--json', 'batch', 'show', batchId]);
    expect(shown.code, shown.stderr).toBe(0);
    expect(JSON.parse(shown.stdout).counts.queued).toBe(1);
    const runsOf = await runCli({ baseUrl: stack.baseUrl, key: team.key }, [
      '--json',
      'runs',
      'list',
      '--batch-id',
      batchId,
    ]);
    expect(JSON.parse(runsOf.stdout).runs).toHaveLength(1);
  }, 120_000);
});

describe('a deferred item', () => {
  it('carries the batch to the run it becomes, which the batch then counts', async () => {
    const team = await seedUnthrottledTeam(stack.deps, 10);
    const [now, later] = await pairWorkflows(team, 2);
    await setLiveMultiplier(stack.deps, 2);
    try {
      const answer = await postBatch(team.key, [
        { workflowId: now },
        { workflowId: later, defer: true, maxMultiplier: 0.5 },
      ]);
      const [started, deferred] = resultsOf(answer);
      expect([started?.status, deferred?.status]).toEqual([200, 202]);
      const batchId = answer.body.batchId as string;
      // Waiting, it is no run yet: the batch counts the one that started.
      const before = await api(stack.baseUrl, 'GET', `/batches/${batchId}`, { key: team.key });
      expect(before.body.jobIds).toEqual([started?.body.jobId]);
      await setLiveMultiplier(stack.deps, 0.5);
      await dispatcherHandler(stack.deps)();
      const read = await api(stack.baseUrl, 'GET', `/deferred-runs/${deferred?.body.deferredJobId}`, { key: team.key });
      expect(read.body.status).toBe('dispatched');
      const run = await api(stack.baseUrl, 'GET', `/runs/${read.body.jobId}`, { key: team.key });
      expect(run.body.batchId).toBe(batchId);
      const after = await api(stack.baseUrl, 'GET', `/batches/${batchId}`, { key: team.key });
      expect([...(after.body.jobIds as string[])].sort()).toEqual([started?.body.jobId, read.body.jobId].sort());
      expect((after.body.counts as Record<string, number>).queued).toBe(2);
    } finally {
      await setLiveMultiplier(stack.deps, null);
    }
  }, 120_000);
});
