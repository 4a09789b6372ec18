/**
 * A run's `metadata` and `tags` through the real path: run starts over HTTP on the
 * local API, the real step executor and webhook worker polling their queues, the operator events'
 * publisher on the table's stream, a loopback receiver verifying with the `standardwebhooks`
 * library, the deferred dispatcher's real handler. Every answer is checked against the OpenAPI
 * document. The clock runs a second ahead per start (near real time, so webhook timestamps verify),
 * which gives each run its own place in the list.
 */
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countDynamoDbCalls, newCallCounts, since, snapshot } from '../bench/counters.ts';
import { retentionExpiry } from '../functions/domain/retention.ts';
import { runTagPartition } from '../functions/store/keys.ts';
import { setLiveMultiplier } from '../functions/store/price-multiplier.ts';
import type { DeliveredEvent } from '../local/eventbridge-emulator.ts';
import {
  api,
  dispatcherHandler,
  pairSteps,
  startStepWorkers,
  startWebhookWorkers,
  waitForEnd,
} from './support/runs.ts';
import {
  addKey,
  createWorkflow,
  type SeededTeam,
  seedTeam,
  startOperatorEventsFor,
  startTestStack,
  type TestStack,
} from './support/stack.ts';
import { type Received, startReceiver } from './support/webhook-receiver.ts';

let stack: TestStack;
let events: Awaited<ReturnType<typeof startOperatorEventsFor>>;
const pollers: { stop: () => Promise<void> | void }[] = [];
/** Added to the real time: a second more at each start, so the runs' order is known. */
let aheadMs = 0;
const advance = () => {
  aheadMs += 1000;
};

beforeAll(async () => {
  stack = await startTestStack({ now: () => new Date(Date.now() + aheadMs) });
  countDynamoDbCalls(stack.deps.ddb, calls);
  events = await startOperatorEventsFor(stack);
  pollers.push(startStepWorkers(stack));
  pollers.push(startWebhookWorkers(stack));
}, 120_000);
afterAll(async () => {
  for (const poller of pollers) await poller.stop();
  await events?.stop();
  await stack?.close();
});

const calls = newCallCounts();
const fast = { rateLimitPerMinute: 100_000 };
const newTeam = () => seedTeam(stack.deps, { credits: 1000, key: fast });

type Answer = Awaited<ReturnType<typeof api>>;
const start = (team: SeededTeam, workflowId: string, body: unknown, headers?: Record<string, string>) => {
  advance();
  return api(stack.baseUrl, 'POST', `/workflows/${workflowId}/runs`, { key: team.key, body, headers });
};
const startOk = async (team: SeededTeam, workflowId: string, body: unknown) => {
  const started = await start(team, workflowId, body);
  expect(started.status, JSON.stringify(started.body)).toBe(200);
  return started.body.jobId as string;
};
const get = (key: string, path: string) => api(stack.baseUrl, 'GET', path, { key });

/** Every page of GET /runs with `params`, following `nextCursor`: the pages and their runs in order. */
const allPages = async (key: string, params: Record<string, string>) => {
  const pages: Answer[] = [];
  let cursor: string | undefined;
  do {
    const search = new URLSearchParams({ ...params, ...(cursor ? { cursor } : {}) });
    const page = await get(key, `/runs?${search}`);
    expect(page.status, JSON.stringify(page.body)).toBe(200);
    pages.push(page);
    cursor = (page.body.nextCursor as string | null) ?? undefined;
    expect(pages.length).toBeLessThan(50);
  } while (cursor);
  return { pages, runs: pages.flatMap((page) => page.body.runs as Record<string, unknown>[]) };
};

const eventually = async <T>(read: () => T | undefined | Promise<T | undefined>, what: string, timeoutMs = 60_000) => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = await read();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`${what}: not there in time`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
};

const labels = { metadata: { orderId: 'A-1042', userId: 'u_77', note: '' }, tags: ['order:A-1042', 'vip'] };

describe('metadata and tags are echoed wherever the run is shown', () => {
  it('in the Run, its summary, the signed webhook body and both operator events', async () => {
    const receiver = await startReceiver();
    try {
      const team = await newTeam();
      const workflowId = await createWorkflow(stack, team, pairSteps, 'Echo');
      const secret = 's3cret';
      const jobId = await startOk(team, workflowId, { ...labels, callbackUrl: receiver.url, callbackSecret: secret });
      const ended = await waitForEnd(stack.baseUrl, team.key, jobId);
      expect(ended.body).toMatchObject({ status: 'completed', ...labels });

      const list = await get(team.key, '/runs');
      expect((list.body.runs as Record<string, unknown>[]).find((r) => r.jobId === jobId)).toMatchObject(labels);

      const [delivery] = await eventually(
        () => (receiver.received.length > 0 ? (receiver.received as Received[]) : undefined),
        'the webhook',
      );
      const headers = Object.fromEntries(
        ['webhook-id', 'webhook-timestamp', 'webhook-signature'].map((name) => [name, String(delivery?.headers[name])]),
      );
      // The Standard Webhooks reference verifier, the secret's UTF-8 bytes as the key.
      const verified = new Webhook(new TextEncoder().encode(secret), { format: 'raw' }).verify(
        delivery?.body ?? '',
        headers,
      );
      expect(verified).toMatchObject({ event: 'run.completed', jobId, ...labels });

      const runEvents = await eventually(() => {
        const mine = events.read().filter((e: DeliveredEvent) => e.detail.jobId === jobId);
        return mine.length >= 2 ? mine : undefined;
      }, 'the operator events');
      expect(runEvents.map((e) => e['detail-type']).sort()).toEqual(['Run Finished', 'Run Started']);
      for (const event of runEvents) expect(event.detail).toMatchObject(labels);
    } finally {
      await receiver.close();
    }
  }, 120_000);

  it('a run started without them (or with {} and []) has neither field; its operator events have them empty', async () => {
    const team = await newTeam();
    const workflowId = await createWorkflow(stack, team, pairSteps, 'Plain');
    const plain = await startOk(team, workflowId, {});
    await waitForEnd(stack.baseUrl, team.key, plain);
    const empty = await startOk(team, workflowId, { metadata: {}, tags: [] });
    for (const jobId of [plain, empty]) {
      const run = await waitForEnd(stack.baseUrl, team.key, jobId);
      expect(Object.keys(run.body).sort()).toEqual([
        'jobId',
        'links',
        'output',
        'progress',
        'status',
        'steps',
        'workflowVersion',
      ]);
    }
    const list = await get(team.key, '/runs');
    for (const summary of list.body.runs as Record<string, unknown>[]) {
      expect(summary).not.toHaveProperty('metadata');
      expect(summary).not.toHaveProperty('tags');
    }
    const started = await eventually(
      () => events.read().find((e) => e.detail.jobId === plain && e['detail-type'] === 'Run Started'),
      'Run Started',
    );
    expect(started.detail).toMatchObject({ metadata: {}, tags: [] });
  }, 120_000);
});

const keyCharacters = 'a metadata key holds only letters, digits and _ - . : @ /';
const valueCharacters = 'a metadata value holds no control character (U+0000 to U+001F, U+007F to U+009F)';

describe('a body past a limit is a 400 naming the field and the limit, and starts nothing', () => {
  const cases: [string, unknown, string][] = [
    ['six tags', { tags: ['a', 'b', 'c', 'd', 'e', 'f'] }, 'tags: at most 5 tags'],
    ['a tag twice', { tags: ['vip', 'vip'] }, 'tags: a tag is given at most once'],
    ['a tag of 65 characters', { tags: ['x'.repeat(65)] }, 'tags[0]: a tag is 1 to 64 characters'],
    ['an empty tag', { tags: ['ok', ''] }, 'tags[1]: a tag is 1 to 64 characters'],
    ['a tag with a space', { tags: ['my tag'] }, 'tags[0]: a tag holds only letters, digits and _ - . : @ /'],
    [
      '17 metadata pairs',
      { metadata: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v'])) },
      'metadata: at most 16 metadata pairs',
    ],
    [
      'a metadata key of 65 characters',
      { metadata: { ['k'.repeat(65)]: 'v' } },
      `metadata.${'k'.repeat(65)}: a metadata key is 1 to 64 characters`,
    ],
    ['an empty metadata key', { metadata: { '': 'v' } }, 'metadata.: a metadata key is 1 to 64 characters'],
    [
      'a metadata value of 513 characters',
      { metadata: { orderId: 'v'.repeat(513) } },
      'metadata.orderId: a metadata value is at most 512 characters',
    ],
    [
      'a number as a metadata value',
      { metadata: { n: 1 } },
      'metadata.n: Invalid type: Expected string but received 1',
    ],
    ['metadata as an array', { metadata: ['a'] }, 'metadata: Invalid type: Expected Object but received Array'],
    // A key follows a tag's character set; a value holds no control character (C0, DEL, C1).
    ['a metadata key with a space', { metadata: { 'order id': 'v' } }, `metadata.order id: ${keyCharacters}`],
    ['a metadata key with a line feed', { metadata: { 'a\nb': 'v' } }, `metadata.a\nb: ${keyCharacters}`],
    ['a metadata key with an accent', { metadata: { clé: 'v' } }, `metadata.clé: ${keyCharacters}`],
    ['a NUL in a metadata value', { metadata: { note: 'a\u0000b' } }, `metadata.note: ${valueCharacters}`],
    [
      'CR LF in a metadata value (a forged header line)',
      { metadata: { note: 'ok\r\nX-Injected: 1' } },
      `metadata.note: ${valueCharacters}`,
    ],
    ['a tab in a metadata value', { metadata: { note: 'a\tb' } }, `metadata.note: ${valueCharacters}`],
    ['DEL in a metadata value', { metadata: { note: 'a\u007fb' } }, `metadata.note: ${valueCharacters}`],
    ['a C1 control (NEL) in a metadata value', { metadata: { note: 'a\u0085b' } }, `metadata.note: ${valueCharacters}`],
  ];

  let team: SeededTeam;
  let workflowId: string;
  beforeAll(async () => {
    team = await newTeam();
    workflowId = await createWorkflow(stack, team, pairSteps, 'Limits');
  });

  it.each(cases)('%s', async (_name, body, message) => {
    const refused = await start(team, workflowId, body);
    expect(refused.status).toBe(400);
    expect(refused.body).toEqual({ error: `Invalid request body: ${message}` });
  });

  it('the limits themselves are taken: 16 pairs of 64-character keys and 512-character values, 5 tags of 64', async () => {
    const metadata = Object.fromEntries(
      Array.from({ length: 16 }, (_, i) => [`${i}`.padStart(64, 'k'), 'v'.repeat(512)]),
    );
    const tags = Array.from({ length: 5 }, (_, i) => `${i}`.padStart(64, 'T'));
    const jobId = await startOk(team, workflowId, { metadata, tags });
    const run = await waitForEnd(stack.baseUrl, team.key, jobId);
    expect(run.body).toMatchObject({ metadata, tags });
    // Keys of every tag character; a value of any printable text, beyond ASCII too.
    const printable = { 'order_id-2.b:c@d/e': 'Zoë — “quoted” 🚀 \u00a0 終わり', empty: '' };
    const other = await startOk(team, workflowId, { metadata: printable });
    expect((await waitForEnd(stack.baseUrl, team.key, other)).body).toMatchObject({ metadata: printable });
    // No run of the refused bodies was started: these two are the team's only runs.
    expect(((await get(team.key, '/runs')).body.runs as unknown[]).length).toBe(2);
  }, 60_000);
});

describe('GET /runs?tag=', () => {
  let team: SeededTeam;
  let other: SeededTeam;
  let flowA: string;
  let flowB: string;
  /** Oldest first: the team's runs tagged `batch-7`, and their workflows. */
  const tagged: { jobId: string; workflowId: string }[] = [];

  beforeAll(async () => {
    team = await newTeam();
    other = await newTeam();
    flowA = await createWorkflow(stack, team, pairSteps, 'A');
    flowB = await createWorkflow(stack, team, pairSteps, 'B');
    const theirs = await createWorkflow(stack, other, pairSteps, 'Theirs');
    for (let i = 0; i < 7; i++) {
      const workflowId = i % 2 === 0 ? flowA : flowB;
      const jobId = await startOk(team, workflowId, { tags: ['batch-7', `n${i}`] });
      tagged.push({ jobId, workflowId });
      await waitForEnd(stack.baseUrl, team.key, jobId);
      // Runs without the tag between them, and another team's run with it: none may show.
      await waitForEnd(stack.baseUrl, team.key, await startOk(team, workflowId, { tags: ['batch-8'] }));
      await waitForEnd(stack.baseUrl, other.key, await startOk(other, theirs, { tags: ['batch-7'] }));
    }
  }, 240_000);

  it("pages through the tag's runs, newest first, one Query a page, and only this team's", async () => {
    const { pages, runs } = await allPages(team.key, { tag: 'batch-7', limit: '3' });
    expect(pages.length).toBeGreaterThanOrEqual(3);
    expect(runs.map((r) => r.jobId)).toEqual(tagged.map((r) => r.jobId).reverse());
    for (const run of runs) expect(run).toMatchObject({ status: 'completed', endedAt: expect.any(String) });
    expect(runs[0]?.tags).toEqual(['batch-7', 'n6']);
    // A page: the key's reads and rate count, the cursor key, one Query of the tag, one BatchGet of its runs.
    const before = snapshot(calls);
    const cursor = pages[0]?.body.nextCursor as string;
    expect((await get(team.key, `/runs?tag=batch-7&limit=3&cursor=${cursor}`)).body.runs).toHaveLength(3);
    const page = since(before, snapshot(calls)).byCommand;
    expect([page.QueryCommand, page.BatchGetItemCommand ?? page.BatchGetCommand]).toEqual([1, 1]);
    // The other team sees its own runs under the same tag, never these.
    const theirs = await allPages(other.key, { tag: 'batch-7' });
    expect(theirs.runs).toHaveLength(7);
    expect(theirs.runs.filter((r) => tagged.some((t) => t.jobId === r.jobId))).toEqual([]);
  });

  it('combines with workflowId and status, and with a key limited to workflows', async () => {
    const onB = await allPages(team.key, { tag: 'batch-7', workflowId: flowB, limit: '2' });
    expect(onB.runs.map((r) => r.jobId)).toEqual(
      tagged
        .filter((r) => r.workflowId === flowB)
        .map((r) => r.jobId)
        .reverse(),
    );
    expect((await allPages(team.key, { tag: 'batch-7', status: 'completed' })).runs).toHaveLength(7);
    expect((await allPages(team.key, { tag: 'batch-7', status: 'failed' })).runs).toEqual([]);
    const limited = await addKey(stack.deps, team.teamId, { workflowIds: [flowA], ...fast });
    const seen = await allPages(limited.key, { tag: 'batch-7', limit: '2' });
    expect(seen.runs.map((r) => r.workflowId)).toEqual(Array(4).fill(flowA));
  });

  it('refuses a cursor of another tag or of the whole list, and a tag a run start would refuse', async () => {
    const first = await get(team.key, '/runs?tag=batch-7&limit=1');
    const cursor = first.body.nextCursor as string;
    expect(cursor).toEqual(expect.any(String));
    for (const path of [`/runs?tag=batch-8&cursor=${cursor}`, `/runs?cursor=${cursor}`]) {
      expect((await get(team.key, path)).body).toEqual({
        error: 'Invalid cursor: pass the nextCursor of this list back unchanged, with the same filters',
      });
    }
    const unfiltered = (await get(team.key, '/runs?limit=1')).body.nextCursor as string;
    expect((await get(team.key, `/runs?tag=batch-7&cursor=${unfiltered}`)).status).toBe(400);
    const bad = await get(team.key, `/runs?tag=${encodeURIComponent('has space')}`);
    expect(bad).toMatchObject({
      status: 400,
      body: { error: 'Invalid query: tag must be 1 to 64 characters: letters, digits and _ - . : @ /' },
    });
    expect((await get(team.key, '/runs?tag=Batch-7')).body.runs).toEqual([]);
  });

  it('writes one item per tag beside the run, kept as long as the run', async () => {
    const [firstRun] = tagged;
    const { Items = [] } = await stack.deps.ddb.send(
      new QueryCommand({
        TableName: stack.deps.tableName,
        KeyConditionExpression: 'PK = :pk',
        ExpressionAttributeValues: { ':pk': runTagPartition(team.teamId, 'n0') },
      }),
    );
    expect(Items).toHaveLength(1);
    const run = await get(team.key, `/runs?tag=n0`);
    const [summary] = run.body.runs as { createdAt: string }[];
    expect(Items[0]).toMatchObject({
      jobId: firstRun?.jobId,
      workflowId: flowA,
      ttl: retentionExpiry(summary?.createdAt ?? '', stack.deps.retentionDays),
    });
  });
});

describe('the Idempotency-Key fingerprint holds metadata and tags', () => {
  it('the same key with other metadata or tags is a 422; in another order, the same request', async () => {
    const team = await newTeam();
    const workflowId = await createWorkflow(stack, team, pairSteps, 'Idem');
    const headers = { 'Idempotency-Key': 'order-A-1042' };
    const first = await start(team, workflowId, labels, headers);
    expect(first.status).toBe(200);
    const reordered = {
      tags: [...labels.tags].reverse(),
      metadata: Object.fromEntries(Object.entries(labels.metadata).reverse()),
    };
    const again = await start(team, workflowId, reordered, headers);
    expect(again).toMatchObject({ status: 200, body: first.body });
    const mismatch = { status: 422, body: { error: 'Idempotency-Key reused with a different request' } };
    expect(await start(team, workflowId, { ...labels, tags: ['vip'] }, headers)).toMatchObject(mismatch);
    expect(
      await start(team, workflowId, { ...labels, metadata: { ...labels.metadata, userId: 'u_78' } }, headers),
    ).toMatchObject(mismatch);
    expect(await start(team, workflowId, {}, headers)).toMatchObject(mismatch);
    await waitForEnd(stack.baseUrl, team.key, first.body.jobId as string);
  }, 60_000);
});

describe('a deferred run carries them over', () => {
  it('kept with the deferral, then the run it became has them, in its Run, the list and under its tag', async () => {
    const team = await newTeam();
    const workflowId = await createWorkflow(stack, team, pairSteps, 'Later');
    await setLiveMultiplier(stack.deps, 2);
    const deferred = await start(team, workflowId, { defer: true, maxMultiplier: 0.5, ...labels, tags: ['later'] });
    expect(deferred.status, JSON.stringify(deferred.body)).toBe(202);
    await setLiveMultiplier(stack.deps, 0.5);
    await dispatcherHandler(stack.deps)();
    const read = await get(team.key, `/deferred-runs/${deferred.body.deferredJobId}`);
    expect(read.body.status).toBe('dispatched');
    const jobId = read.body.jobId as string;
    const run = await waitForEnd(stack.baseUrl, team.key, jobId);
    expect(run.body).toMatchObject({ metadata: labels.metadata, tags: ['later'] });
    const byTag = await get(team.key, '/runs?tag=later');
    expect(byTag.body.runs).toEqual([
      expect.objectContaining({ jobId, deferredJobId: deferred.body.deferredJobId, tags: ['later'] }),
    ]);
    await setLiveMultiplier(stack.deps, null);
  }, 60_000);
});

describe('the CLI', () => {
  it('starts a run with --meta and --tag, and lists by --tag', async () => {
    const { runCli } = await import('./support/cli.ts');
    const team = await newTeam();
    const workflowId = await createWorkflow(stack, team, pairSteps, 'Cli');
    const cli = (args: string[]) => runCli({ baseUrl: stack.baseUrl, key: team.key }, args);
    const started = await cli([
      'run',
      workflowId,
      '--meta',
      'orderId=A-1042',
      '--meta',
      'query=a=b',
      '--tag',
      'cli',
      '--tag',
      'vip',
      '--watch',
      '--json',
    ]);
    expect(started.code, started.stderr).toBe(0);
    const run = JSON.parse(started.stdout) as { jobId: string; metadata: unknown; tags: unknown };
    expect(run).toMatchObject({ metadata: { orderId: 'A-1042', query: 'a=b' }, tags: ['cli', 'vip'] });
    const listed = await cli(['runs', 'list', '--tag', 'cli', '--json']);
    expect(listed.code, listed.stderr).toBe(0);
    expect((JSON.parse(listed.stdout) as { runs: { jobId: string }[] }).runs.map((r) => r.jobId)).toEqual([run.jobId]);
    const table = await cli(['runs', 'list', '--tag', 'vip']);
    expect(table.stdout.split('\n')[1]).toMatch(new RegExp(`^${run.jobId}\\s+completed\\s+.*\\s+cli,vip$`));
    const refused = await cli(['run', workflowId, '--tag', 'a b']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('tags[0]: a tag holds only letters, digits and _ - . : @ /');
    const twoTags = await cli(['runs', 'list', '--tag', 'a', '--tag', 'b']);
    expect(twoTags).toMatchObject({ code: 2 });
    expect(twoTags.stderr).toContain('--tag filters by one tag');
  }, 120_000);
});
