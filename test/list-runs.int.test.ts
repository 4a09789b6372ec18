/**
 * GET /runs and GET /deferred-runs through the real path: runs started, cancelled and completed over
 * HTTP (the step executor run from the steps queue), listed over HTTP from the local API on
 * DynamoDB Local; every answer checked against the OpenAPI document. The clock is pinned (and moved
 * by hand) so the runs' order is known; each key gets a high rate limit, for the number of calls.
 */
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countDynamoDbCalls, newCallCounts, snapshot } from '../bench/counters.ts';
import { cursorSigningKey, runKey } from '../functions/store/keys.ts';
import { api, cancelRunCall, drainSteps, pairSteps, realStepHandler, startRunCall } from './support/runs.ts';
import { addKey, createWorkflow, type SeededTeam, seedTeam, startTestStack, type TestStack } from './support/stack.ts';

let stack: TestStack;
let clockMs = Date.parse('2026-11-24T10:00:00.000Z');
const calls = newCallCounts();

beforeAll(async () => {
  stack = await startTestStack({ now: () => new Date(clockMs) });
  countDynamoDbCalls(stack.deps.ddb, calls);
});
afterAll(() => stack.close());

const fast = { rateLimitPerMinute: 100_000 };
const newTeam = () => seedTeam(stack.deps, { credits: 1000, key: fast });

type Page = { status: number; body: Record<string, unknown> };
type Summary = Record<string, unknown> & { jobId: string; workflowId: string; status: string };
type DeferredSummary = Record<string, unknown> & { deferredJobId: string; status: string };

const get = (key: string, path: string): Promise<Page> => api(stack.baseUrl, 'GET', path, { key });

const query = (params: Record<string, string | number | undefined>) => {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) if (value !== undefined) search.set(name, String(value));
  const text = search.toString();
  return text ? `?${text}` : '';
};

/** Every page of a list, following `nextCursor` until it is null. */
const allPages = async (
  key: string,
  path: '/runs' | '/deferred-runs',
  params: Record<string, string | number> = {},
) => {
  const pages: Page[] = [];
  let cursor: string | undefined;
  do {
    const page = await get(key, `${path}${query({ ...params, cursor })}`);
    expect(page.status, JSON.stringify(page.body)).toBe(200);
    pages.push(page);
    cursor = (page.body.nextCursor as string | null) ?? undefined;
    expect(pages.length).toBeLessThan(100);
  } while (cursor);
  return pages;
};
const runsOf = (pages: Page[]) => pages.flatMap((page) => page.body.runs as Summary[]);
const deferredOf = (pages: Page[]) => pages.flatMap((page) => page.body.deferredRuns as DeferredSummary[]);

/** Starts a run a second after the last one; cancelled at once unless `keep`. */
const startRun = async (team: SeededTeam, workflowId: string, options: { keep?: boolean } = {}) => {
  clockMs += 1000;
  const started = await startRunCall(stack.baseUrl, team.key, workflowId);
  expect(started.status, JSON.stringify(started.body)).toBe(200);
  const jobId = started.body.jobId as string;
  if (!options.keep) expect((await cancelRunCall(stack.baseUrl, team.key, jobId)).status).toBe(200);
  return jobId;
};

describe('GET /runs', () => {
  let team: SeededTeam;
  let other: SeededTeam;
  let flowA: string;
  let flowB: string;
  /** Oldest first: [completed on A, then cancelled alternately on B and A…, the last still queued on A]. */
  const started: { jobId: string; workflowId: string }[] = [];

  beforeAll(async () => {
    team = await newTeam();
    other = await newTeam();
    flowA = await createWorkflow(stack, team, pairSteps, 'A');
    flowB = await createWorkflow(stack, team, pairSteps, 'B');
    // One run completes: the step executor runs its steps from the queue.
    const completed = await startRun(team, flowA, { keep: true });
    await drainSteps(stack.deps, realStepHandler(stack.deps));
    started.push({ jobId: completed, workflowId: flowA });
    for (let i = 0; i < 22; i++) {
      const workflowId = i % 2 === 0 ? flowB : flowA;
      started.push({ jobId: await startRun(team, workflowId, { keep: i === 21 }), workflowId });
    }
    // Another team's run, newer than all of them.
    await startRun(other, await createWorkflow(stack, other, pairSteps, 'Theirs'));
  }, 180_000);

  it('pages through the team’s runs, newest first, 20 by default, each a summary', async () => {
    const pages = await allPages(team.key, '/runs');
    expect(pages[0]?.body.runs).toHaveLength(20);
    expect(runsOf(pages).map((r) => r.jobId)).toEqual(started.map((r) => r.jobId).reverse());
    const byId = new Map(runsOf(pages).map((r) => [r.jobId, r]));
    const [completed] = started;
    expect(byId.get(completed?.jobId ?? '')).toEqual({
      jobId: completed?.jobId,
      workflowId: flowA,
      status: 'completed',
      mode: 'production',
      createdAt: '2026-11-24T10:00:01.000Z',
      endedAt: '2026-11-24T10:00:01.000Z',
      estimatedCredits: 0.02,
      chargedCredits: 0.02,
      deferredJobId: null,
    });
    expect(byId.get(started[1]?.jobId ?? '')).toMatchObject({
      workflowId: flowB,
      status: 'cancelled',
      createdAt: '2026-11-24T10:00:02.000Z',
      endedAt: '2026-11-24T10:00:02.000Z',
      chargedCredits: 0,
    });
    expect(byId.get(started.at(-1)?.jobId ?? '')).toMatchObject({
      status: 'queued',
      endedAt: null,
      estimatedCredits: 0.02,
      chargedCredits: null,
    });
  });

  it('reads one page with exactly one Query (and no other read of the runs)', async () => {
    await get(team.key, '/runs?limit=5'); // the signing key is read once per container; not counted below
    const before = snapshot(calls);
    const first = await get(team.key, '/runs?limit=5');
    await get(team.key, `/runs${query({ limit: 5, cursor: first.body.nextCursor as string })}`);
    const sent = Object.fromEntries(
      Object.entries(calls.byCommand).map(([name, n]) => [name, n - (before.byCommand[name] ?? 0)]),
    );
    // Per request: the key's GetItem, the rate counter's UpdateItem and the page's Query.
    expect(sent).toMatchObject({ QueryCommand: 2, GetItemCommand: 2, UpdateItemCommand: 2 });
    expect(Object.values(sent).reduce((sum, n) => sum + n, 0)).toBe(6);
  });

  it('takes any limit from 1 to 100 and changes it between pages', async () => {
    const first = await get(team.key, '/runs?limit=1');
    expect((first.body.runs as Summary[]).map((r) => r.jobId)).toEqual([started.at(-1)?.jobId]);
    const rest = await get(team.key, `/runs${query({ limit: 100, cursor: first.body.nextCursor as string })}`);
    expect((rest.body.runs as Summary[]).map((r) => r.jobId)).toEqual(
      started
        .slice(0, -1)
        .map((r) => r.jobId)
        .reverse(),
    );
    expect(rest.body.nextCursor).toBeNull();
  });

  it('filters by workflow and by status; a filtered page may hold fewer than limit and still go on', async () => {
    const ofA = runsOf(await allPages(team.key, '/runs', { workflowId: flowA }));
    expect(ofA.map((r) => r.jobId)).toEqual(
      started
        .filter((r) => r.workflowId === flowA)
        .map((r) => r.jobId)
        .reverse(),
    );
    const cancelled = runsOf(await allPages(team.key, '/runs', { status: 'cancelled' }));
    expect(cancelled).toHaveLength(21);
    expect(new Set(cancelled.map((r) => r.status))).toEqual(new Set(['cancelled']));
    // Upper-case ids are the same filter.
    const both = await allPages(team.key, '/runs', { workflowId: flowA.toUpperCase(), status: 'queued', limit: 3 });
    expect(runsOf(both).map((r) => r.jobId)).toEqual([started.at(-1)?.jobId]);
    // The queued run is the newest: the first page holds it, the pages after hold none and still go on.
    expect(both.length).toBeGreaterThan(2);
    expect(both[1]?.body).toMatchObject({ runs: [], nextCursor: expect.any(String) });
    const completed = runsOf(await allPages(team.key, '/runs', { status: 'completed', limit: 7 }));
    expect(completed.map((r) => r.jobId)).toEqual([started[0]?.jobId]);
  });

  it('shows a key limited to workflows only their runs, and an empty page for another workflow', async () => {
    const limited = await addKey(stack.deps, team.teamId, { ...fast, workflowIds: [flowA] });
    const seen = runsOf(await allPages(limited.key, '/runs', { limit: 4 }));
    expect(seen.map((r) => r.jobId)).toEqual(
      started
        .filter((r) => r.workflowId === flowA)
        .map((r) => r.jobId)
        .reverse(),
    );
    expect((await get(limited.key, `/runs?workflowId=${flowB}`)).body).toEqual({ runs: [], nextCursor: null });
    expect(runsOf(await allPages(limited.key, '/runs', { workflowId: flowA })).length).toBe(seen.length);
    // By id too: a run of another workflow reads, and cancels, as a missing one; its own reads.
    const mine = started.find((r) => r.workflowId === flowA)?.jobId;
    const notMine = started.find((r) => r.workflowId === flowB)?.jobId;
    expect((await get(limited.key, `/runs/${mine}`)).status).toBe(200);
    const notFound = { status: 404, body: { error: 'Run not found' } };
    expect(await get(limited.key, `/runs/${notMine}`)).toMatchObject(notFound);
    expect(await api(stack.baseUrl, 'POST', `/runs/${notMine}/cancel`, { key: limited.key })).toMatchObject(notFound);
    expect((await get(team.key, `/runs/${notMine}`)).status).toBe(200);
  });

  it('lists nothing of another team, and answers a team without runs with an empty last page', async () => {
    const theirs = runsOf(await allPages(other.key, '/runs'));
    expect(theirs).toHaveLength(1);
    expect(started.map((r) => r.jobId)).not.toContain(theirs[0]?.jobId);
    const empty = await newTeam();
    expect((await get(empty.key, '/runs')).body).toEqual({ runs: [], nextCursor: null });
  });

  it('refuses a cursor of another team, other filters, the other list, altered or garbage: 400', async () => {
    const page = await get(team.key, '/runs?limit=2');
    const cursor = page.body.nextCursor as string;
    const filtered = (await get(team.key, `/runs?limit=2&workflowId=${flowA}`)).body.nextCursor as string;
    const theirTeam = await newTeam();
    const invalid = { error: 'Invalid cursor: pass the nextCursor of this list back unchanged, with the same filters' };
    const refused = [
      [theirTeam.key, `/runs${query({ cursor })}`],
      [team.key, `/runs${query({ cursor, status: 'cancelled' })}`],
      [team.key, `/runs${query({ cursor, workflowId: flowA })}`],
      [team.key, `/runs${query({ cursor: filtered })}`],
      [team.key, `/runs${query({ cursor: filtered, workflowId: flowB })}`],
      [team.key, `/deferred-runs${query({ cursor })}`],
      [team.key, `/runs${query({ cursor: `${cursor.slice(0, -1)}${cursor.endsWith('A') ? 'B' : 'A'}` })}`],
      [team.key, `/runs${query({ cursor: `x${cursor}` })}`],
      [team.key, '/runs?cursor=garbage'],
      [team.key, '/runs?cursor='],
      [team.key, `/runs${query({ cursor: 'e30.e30' })}`],
    ] as const;
    for (const [key, path] of refused) {
      const answer = await get(key, path);
      expect({ path, status: answer.status, body: answer.body }).toEqual({ path, status: 400, body: invalid });
    }
    // The same cursor with its own filters still reads.
    expect((await get(team.key, `/runs${query({ cursor: filtered, workflowId: flowA, limit: 2 })}`)).status).toBe(200);
  });

  it('refuses a limit, status or workflowId it does not take with 400 naming it', async () => {
    const statuses = 'queued, processing, completed, failed, cancelled, stopped';
    const cases = [
      ['limit=0', 'limit must be a whole number from 1 to 100'],
      ['limit=101', 'limit must be a whole number from 1 to 100'],
      ['limit=1.5', 'limit must be a whole number from 1 to 100'],
      ['limit=-1', 'limit must be a whole number from 1 to 100'],
      ['limit=ten', 'limit must be a whole number from 1 to 100'],
      ['limit=', 'limit must be a whole number from 1 to 100'],
      ['limit=010', 'limit must be a whole number from 1 to 100'],
      ['status=claimed', `status must be one of ${statuses}`],
      ['status=waiting', `status must be one of ${statuses}`],
      ['status=COMPLETED', `status must be one of ${statuses}`],
      ['status=queued&status=failed', `status must be one of ${statuses}`],
      ['workflowId=not-a-uuid', 'workflowId must be a uuid'],
      ['workflowId=', 'workflowId must be a uuid'],
    ];
    for (const [search, problem] of cases) {
      const answer = await get(team.key, `/runs?${search}`);
      expect({ search, status: answer.status, body: answer.body }).toEqual({
        search,
        status: 400,
        body: { error: `Invalid query: ${problem}` },
      });
    }
    expect((await get(team.key, '/runs?limit=100&unknown=1')).status).toBe(200);
  });

  it('leaves out a run past its retention and a run item without the list attributes', async () => {
    const [, expired, unlisted] = started;
    // Past its ttl: DynamoDB deletes it days late; the list drops it at once, as every read does.
    await stack.deps.ddb.send(
      new UpdateCommand({
        TableName: stack.deps.tableName,
        Key: runKey(expired?.jobId ?? ''),
        UpdateExpression: 'SET #ttl = :past',
        ExpressionAttributeNames: { '#ttl': 'ttl' },
        ExpressionAttributeValues: { ':past': Math.floor(clockMs / 1000) - 1 },
      }),
    );
    // As a run written before the list existed.
    await stack.deps.ddb.send(
      new UpdateCommand({
        TableName: stack.deps.tableName,
        Key: runKey(unlisted?.jobId ?? ''),
        UpdateExpression: 'REMOVE GSI4PK, GSI4SK',
      }),
    );
    const listed = runsOf(await allPages(team.key, '/runs', { limit: 50 })).map((r) => r.jobId);
    expect(listed).toHaveLength(started.length - 2);
    expect(listed).not.toContain(expired?.jobId);
    expect(listed).not.toContain(unlisted?.jobId);
  });
});

describe('GET /deferred-runs', () => {
  it('pages through the team’s deferred runs, newest first, each as GET /deferred-runs/{id} reads it', async () => {
    const team = await newTeam();
    const flow = await createWorkflow(stack, team, pairSteps, 'Later');
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      clockMs += 1000;
      const deferred = await startRunCall(stack.baseUrl, team.key, flow, { defer: true, maxMultiplier: 0.5 });
      expect(deferred.status).toBe(202);
      ids.push(deferred.body.deferredJobId as string);
    }
    expect((await api(stack.baseUrl, 'DELETE', `/deferred-runs/${ids[1]}`, { key: team.key })).status).toBe(200);
    const other = await newTeam();
    await startRunCall(stack.baseUrl, other.key, await createWorkflow(stack, other, pairSteps), { defer: true });

    const pages = await allPages(team.key, '/deferred-runs', { limit: 2 });
    expect(pages.map((page) => (page.body.deferredRuns as unknown[]).length)).toEqual([2, 2, 1]);
    const listed = deferredOf(pages);
    expect(listed.map((d) => d.deferredJobId)).toEqual([...ids].reverse());
    for (const entry of listed) {
      expect(entry).toEqual((await get(team.key, `/deferred-runs/${entry.deferredJobId}`)).body);
    }
    const waiting = deferredOf(await allPages(team.key, '/deferred-runs', { status: 'waiting' }));
    expect(waiting.map((d) => d.deferredJobId)).toEqual(ids.filter((id) => id !== ids[1]).reverse());
    expect(deferredOf(await allPages(team.key, '/deferred-runs', { status: 'cancelled' }))).toEqual([
      expect.objectContaining({ deferredJobId: ids[1], status: 'cancelled' }),
    ]);
    const limited = await addKey(stack.deps, team.teamId, { ...fast, workflowIds: [other.teamId] });
    expect((await get(limited.key, '/deferred-runs')).body).toEqual({ deferredRuns: [], nextCursor: null });
    // By id too: another workflow's deferred run reads, and cancels, as a missing one.
    const missing = { status: 404, body: { error: 'Deferred run not found' } };
    expect(await get(limited.key, `/deferred-runs/${ids[0]}`)).toMatchObject(missing);
    expect(await api(stack.baseUrl, 'DELETE', `/deferred-runs/${ids[0]}`, { key: limited.key })).toMatchObject(missing);
    const allowed = await addKey(stack.deps, team.teamId, { ...fast, workflowIds: [flow] });
    expect((await get(allowed.key, `/deferred-runs/${ids[0]}`)).status).toBe(200);
    const refused = await get(team.key, '/deferred-runs?status=queued');
    expect(refused).toMatchObject({
      status: 400,
      body: { error: 'Invalid query: status must be one of waiting, dispatched, expired, cancelled' },
    });
  });

  it('the first list served on a new table creates the cursor signing key: 32 random bytes, kept', async () => {
    const fresh = await startTestStack({ now: () => new Date(clockMs) });
    try {
      const readKey = async () =>
        (await fresh.deps.ddb.send(new GetCommand({ TableName: fresh.deps.tableName, Key: cursorSigningKey() }))).Item;
      expect(await readKey()).toBeUndefined();
      const team = await seedTeam(fresh.deps, { key: fast });
      const answer = await api(fresh.baseUrl, 'GET', '/deferred-runs', { key: team.key });
      expect(answer.body).toEqual({ deferredRuns: [], nextCursor: null });
      const created = await readKey();
      expect(Buffer.from(String(created?.secret), 'base64')).toHaveLength(32);
      // Another table's key is another secret: a cursor of this one is refused there, and back.
      expect(created?.secret).not.toBe(
        (await stack.deps.ddb.send(new GetCommand({ TableName: stack.deps.tableName, Key: cursorSigningKey() }))).Item
          ?.secret,
      );
      await api(fresh.baseUrl, 'GET', '/runs', { key: team.key });
      expect(await readKey()).toEqual(created);
    } finally {
      await fresh.close();
    }
  });

  it('both lists need runs:read', async () => {
    const team = await newTeam();
    const writer = await addKey(stack.deps, team.teamId, { ...fast, scopes: ['runs:create', 'workflows:read'] });
    for (const path of ['/runs', '/deferred-runs']) {
      expect(await get(writer.key, path)).toMatchObject({
        status: 403,
        body: { error: 'Scope not permitted for this key' },
      });
    }
  });
});
