/**
 * Items of the previous shape, as the table holds them today: written before the shape version
 * existed, with no `v`. The current code must read them on every path (expand, then contract:
 * docs/architecture.md, "Changing stored items") and leave what it writes in the current shape; an
 * item of a version it does not know is refused, never misread.
 */
import { PutCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { itemVersion } from '../functions/store/items/item.ts';
import { runKey } from '../functions/store/keys.ts';
import {
  call,
  createWorkflow,
  type SeededTeam,
  seedTeam,
  startRunOk,
  startTestStack,
  startWorkers,
  type TestStack,
  waitForRun,
} from './support/stack.ts';

type Item = Record<string, unknown>;

let stack: TestStack;
let workers: { stop(): Promise<void> } | undefined;
beforeAll(async () => {
  // No step executor yet: the runs started below wait in the queue, their items as the old code left them.
  stack = await startTestStack();
});
afterAll(async () => {
  await workers?.stop();
  await stack.close();
});

const scanAll = async (): Promise<Item[]> => {
  const items: Item[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await stack.deps.ddb.send(
      new ScanCommand({ TableName: stack.resources.tableName, ExclusiveStartKey: start, ConsistentRead: true }),
    );
    items.push(...((page.Items ?? []) as Item[]));
    start = page.LastEvaluatedKey;
  } while (start);
  return items;
};

/** Rewrites every item as the code before the shape version wrote it: a raw PutItem of the same attributes, no `v`. */
const rewriteAsPreviousShape = async (): Promise<Item[]> => {
  const items = await scanAll();
  for (const { v: _version, ...previous } of items) {
    await stack.deps.ddb.send(new PutCommand({ TableName: stack.resources.tableName, Item: previous }));
  }
  return items;
};

describe('items written before the shape version', () => {
  let team: SeededTeam;
  let workflowId: string;
  let jobId: string;

  it('are what the writers did not write: today every write carries the current v', async () => {
    team = await seedTeam(stack.deps, { credits: 100 });
    workflowId = await createWorkflow(stack, team);
    jobId = await startRunOk(stack, team.key, workflowId, { inputs: { topic: 'badgers' } });
    const written = await rewriteAsPreviousShape();
    // Team, project, agent, key, workflow, canvas, lock, run, the key's month, the idempotency record…
    expect(written.length).toBeGreaterThanOrEqual(8);
    const rateCounter = (item: Item) => String(item.PK).startsWith('RATE#');
    expect(written.filter((item) => !rateCounter(item) && item.v !== itemVersion)).toEqual([]);
    expect((await scanAll()).filter((item) => item.v !== undefined)).toEqual([]);
  });

  it('are read by the current code: the run, the runs list, the workflows list and the key that reads them', async () => {
    const run = await call(stack.baseUrl, `/runs/${jobId}`, { key: team.key });
    expect(run.status, JSON.stringify(run.body)).toBe(200);
    expect(run.body).toMatchObject({ jobId, status: 'queued' });
    const runs = await call(stack.baseUrl, '/runs', { key: team.key });
    expect(runs.status, JSON.stringify(runs.body)).toBe(200);
    expect((runs.body.runs as { jobId: string }[]).map((r) => r.jobId)).toContain(jobId);
    const workflows = await call(stack.baseUrl, '/workflows', { key: team.key });
    expect(workflows.status, JSON.stringify(workflows.body)).toBe(200);
    expect(JSON.stringify(workflows.body)).toContain(workflowId);
  });

  it('are run on by the current step executor: the queued run is claimed, executed and charged to its end', async () => {
    workers = await startWorkers(stack);
    const ended = await waitForRun(stack, team.key, jobId);
    expect(ended.body.status, JSON.stringify(ended.body)).toBe('completed');
    expect(ended.body.progress).toBe(100);
    // And a second run starts on the old team, key, workflow and canvas items.
    const second = await startRunOk(stack, team.key, workflowId, { inputs: { topic: 'otters' } });
    expect((await waitForRun(stack, team.key, second)).body.status).toBe('completed');
  });

  it('are left in the current shape by the writes that touched them', async () => {
    const items = await scanAll();
    const run = items.find((item) => item.PK === runKey(jobId).PK && item.SK === 'RUN');
    expect(run?.v).toBe(itemVersion);
    const steps = items.filter((item) => item.PK === runKey(jobId).PK && String(item.SK).startsWith('STEP#'));
    expect(steps.length).toBeGreaterThan(0);
    expect(steps.map((step) => step.v)).toEqual(steps.map(() => itemVersion));
  });

  it('an item of a shape this code does not know is refused, never misread', async () => {
    const item = (await scanAll()).find((i) => i.PK === runKey(jobId).PK && i.SK === 'RUN');
    await stack.deps.ddb.send(
      new PutCommand({ TableName: stack.resources.tableName, Item: { ...item, v: itemVersion + 1 } }),
    );
    const run = await call(stack.baseUrl, `/runs/${jobId}`, { key: team.key });
    expect(run.status).toBe(500);
    expect(JSON.stringify(run.body)).not.toContain('badgers');
    // The same item at the current version reads again: the version alone was refused.
    await stack.deps.ddb.send(
      new PutCommand({ TableName: stack.resources.tableName, Item: { ...item, v: itemVersion } }),
    );
    expect((await call(stack.baseUrl, `/runs/${jobId}`, { key: team.key })).status).toBe(200);
  });
});
