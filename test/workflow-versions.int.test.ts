import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DeleteCommand, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canvasKey, workflowKey, workflowVersionKey } from '../functions/store/keys.ts';
import { createClient } from '../packages/client/src/index.ts';
import { runCli } from './support/cli.ts';
import { api } from './support/runs.ts';
import {
  addKey,
  createWorkflow,
  type SeededTeam,
  seedTeam,
  startTestStack,
  startWorkers,
  type TestStack,
  waitForRun,
} from './support/stack.ts';

const manyRequests = { rateLimitPerMinute: 10_000 };

let stack: TestStack;
let team: SeededTeam;
let other: SeededTeam;
beforeAll(async () => {
  stack = await startTestStack();
  team = await seedTeam(stack.deps, { credits: 1000, key: manyRequests });
  other = await seedTeam(stack.deps, { key: manyRequests });
});
afterAll(() => stack.close());

/** A one-step workflow whose step key and text say which version it is. */
const textSteps = (key: string, text: string) => [{ key, type: 'TextEntry', config: { text } }];

const put = (workflowId: string, body: unknown, key = team.key) =>
  api(stack.baseUrl, 'PUT', `/workflows/${workflowId}`, { key, body });
const update = async (workflowId: string, key: string, text: string, name = 'Flow') => {
  const answer = await put(workflowId, { name, agentId: team.agentId, steps: textSteps(key, text) });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return answer.body;
};
const start = (workflowId: string, body: object = {}, key = team.key) =>
  api(stack.baseUrl, 'POST', `/workflows/${workflowId}/runs`, { key, body });

/** Runs every step message on the queue with the real step executor until the run ends. */
const runToEnd = async (jobId: string) => {
  const workers = await startWorkers(stack);
  try {
    return await waitForRun(stack, team.key, jobId);
  } finally {
    await workers.stop();
  }
};

describe('PUT /workflows/{id}: versions', () => {
  it('makes version n+1 with the create body, keeps every version readable, newest first in pages', async () => {
    const workflowId = await createWorkflow(stack, team, textSteps('a', 'one'), 'First');
    const second = await update(workflowId, 'b', 'two', 'Second');
    expect(second).toMatchObject({ workflowId, version: 2, name: 'Second', stepsCount: 1 });
    expect(second.steps).toEqual(textSteps('b', 'two'));
    await update(workflowId, 'c', 'three', 'Third');

    const one = await api(stack.baseUrl, 'GET', `/workflows/${workflowId}/versions/1`, { key: team.key });
    expect(one.status, JSON.stringify(one.body)).toBe(200);
    expect(one.body).toMatchObject({ version: 1, name: 'First', steps: textSteps('a', 'one') });

    const page1 = await api(stack.baseUrl, 'GET', `/workflows/${workflowId}/versions?limit=2`, { key: team.key });
    expect(page1.status).toBe(200);
    expect((page1.body.versions as { version: number }[]).map((v) => v.version)).toEqual([3, 2]);
    expect(page1.body.nextCursor).toEqual(expect.any(String));
    const page2 = await api(
      stack.baseUrl,
      'GET',
      `/workflows/${workflowId}/versions?limit=2&cursor=${encodeURIComponent(String(page1.body.nextCursor))}`,
      { key: team.key },
    );
    expect((page2.body.versions as { version: number }[]).map((v) => v.version)).toEqual([1]);
    expect(page2.body.nextCursor).toBeNull();

    // The summary says the latest: its name, and the list shows it.
    const listed = await api(stack.baseUrl, 'GET', '/workflows', { key: team.key });
    expect((listed.body.workflows as { id: string; name: string }[]).find((w) => w.id === workflowId)?.name).toBe(
      'Third',
    );
  });

  it('checks the body with the create rules, and keeps the workflow with its agent', async () => {
    const workflowId = await createWorkflow(stack, team, textSteps('a', 'one'));
    const unknown = await put(workflowId, { name: 'x', agentId: team.agentId, steps: [{ key: 'a', type: 'Nope' }] });
    expect(unknown.status).toBe(422);
    expect(String(unknown.body.error)).toMatch(/^Unknown node type/);
    const noName = await put(workflowId, { agentId: team.agentId, steps: textSteps('a', 'x') });
    expect(noName).toMatchObject({ status: 400, body: { error: 'name is required' } });
    const moved = await put(workflowId, { name: 'x', agentId: other.agentId, steps: textSteps('a', 'x') });
    expect(moved.status).toBe(422);
    expect(moved.body.errors).toEqual([expect.objectContaining({ code: 'owner_changed', path: 'agentId' })]);
    const versions = await api(stack.baseUrl, 'GET', `/workflows/${workflowId}/versions`, { key: team.key });
    expect((versions.body.versions as unknown[]).length).toBe(1);
  });

  it("another team's workflow reads as none; a key limited to other workflows may not write it", async () => {
    const workflowId = await createWorkflow(stack, team, textSteps('a', 'one'));
    const foreign = await put(workflowId, { name: 'x', agentId: other.agentId, steps: textSteps('a', 'x') }, other.key);
    expect(foreign).toMatchObject({ status: 404, body: { error: 'Workflow not found' } });
    const read = await api(stack.baseUrl, 'GET', `/workflows/${workflowId}/versions/1`, { key: other.key });
    expect(read).toMatchObject({ status: 404, body: { error: 'Workflow not found' } });
    const limited = await addKey(stack.deps, team.teamId, { workflowIds: [crypto.randomUUID()], ...manyRequests });
    const refused = await put(
      workflowId,
      { name: 'x', agentId: team.agentId, steps: textSteps('a', 'x') },
      limited.key,
    );
    expect(refused).toMatchObject({ status: 403, body: { error: 'Workflow not permitted for this key' } });
    const missing = await api(stack.baseUrl, 'GET', `/workflows/${workflowId}/versions/2`, { key: team.key });
    expect(missing).toMatchObject({ status: 404, body: { error: 'Workflow version not found' } });
  });

  it('concurrent updates each make a version of their own: none lost, no number twice', async () => {
    const workflowId = await createWorkflow(stack, team, textSteps('a', 'zero'));
    const texts = ['p', 'q', 'r', 's', 't'];
    const answers = await Promise.all(
      texts.map((text) => put(workflowId, { name: text, agentId: team.agentId, steps: textSteps('a', text) })),
    );
    expect(answers.map((a) => a.status)).toEqual(texts.map(() => 200));
    expect(answers.map((a) => a.body.version as number).sort()).toEqual([2, 3, 4, 5, 6]);
    const listed = await api(stack.baseUrl, 'GET', `/workflows/${workflowId}/versions`, { key: team.key });
    const versions = listed.body.versions as { version: number; name: string }[];
    expect(versions.map((v) => v.version)).toEqual([6, 5, 4, 3, 2, 1]);
    // Each answer's version holds that request's steps.
    for (const answer of answers) {
      expect(versions.find((v) => v.version === answer.body.version)?.name).toBe(answer.body.name);
    }
  });

  it('a workflow stored before versions reads as version 1, and its first update keeps that version', async () => {
    const workflowId = await createWorkflow(stack, team, textSteps('a', 'legacy'));
    // As stored before versions: no version on the summary or canvas, no version item.
    const { ddb, tableName } = stack.deps;
    await ddb.send(new DeleteCommand({ TableName: tableName, Key: workflowVersionKey(workflowId, 1) }));
    await ddb.send(
      new UpdateCommand({ TableName: tableName, Key: canvasKey(workflowId), UpdateExpression: 'REMOVE version' }),
    );
    await ddb.send(
      new UpdateCommand({
        TableName: tableName,
        Key: workflowKey(team.teamId, workflowId),
        UpdateExpression: 'REMOVE version',
      }),
    );
    const before = await api(stack.baseUrl, 'GET', `/workflows/${workflowId}/versions`, { key: team.key });
    expect(before.body.versions).toEqual([expect.objectContaining({ version: 1, stepsCount: 1 })]);
    const legacyRun = await start(workflowId);
    expect(legacyRun.status).toBe(200);
    expect((await runToEnd(legacyRun.body.jobId as string)).body).toMatchObject({ workflowVersion: 1 });

    expect((await update(workflowId, 'b', 'new')).version).toBe(2);
    const one = await api(stack.baseUrl, 'GET', `/workflows/${workflowId}/versions/1`, { key: team.key });
    expect(one.body).toMatchObject({ version: 1, steps: null });
    const pinned = await start(workflowId, { version: 1 });
    expect(pinned.status).toBe(200);
    const ran = await runToEnd(pinned.body.jobId as string);
    expect(ran.body).toMatchObject({ status: 'completed', workflowVersion: 1 });
    expect((ran.body.steps as { node_id: string }[]).map((s) => s.node_id)).toEqual(['a']);
  });
});

describe('runs and versions', () => {
  it('a run pinned to version 1 after version 2 exists runs version 1 steps, and says so', async () => {
    const workflowId = await createWorkflow(stack, team, textSteps('a', 'one'));
    await update(workflowId, 'b', 'two');
    const pinned = await start(workflowId, { version: 1 });
    expect(pinned.status, JSON.stringify(pinned.body)).toBe(200);
    const ran = await runToEnd(pinned.body.jobId as string);
    expect(ran.body).toMatchObject({ status: 'completed', workflowVersion: 1 });
    expect((ran.body.steps as { node_id: string }[]).map((s) => s.node_id)).toEqual(['a']);
    expect(JSON.stringify(ran.body.output)).toContain('one');

    const latest = await start(workflowId);
    const ranLatest = await runToEnd(latest.body.jobId as string);
    expect(ranLatest.body).toMatchObject({ status: 'completed', workflowVersion: 2 });
    expect((ranLatest.body.steps as { node_id: string }[]).map((s) => s.node_id)).toEqual(['b']);

    const none = await start(workflowId, { version: 3 });
    expect(none).toMatchObject({ status: 404, body: { error: 'Workflow version not found' } });
  });

  it('a run in progress keeps its version when a new one is made, and the lock spans versions', async () => {
    const workflowId = await createWorkflow(stack, team, textSteps('a', 'one'));
    // Started on version 1 with no worker running: its step waits on the queue.
    const started = await start(workflowId);
    expect(started.status).toBe(200);
    await update(workflowId, 'b', 'two');
    // One run in progress per workflow, whatever version another start pins.
    const busy = await start(workflowId, { version: 2 });
    expect(busy).toMatchObject({ status: 409, body: { activeJobId: started.body.jobId } });
    const ran = await runToEnd(started.body.jobId as string);
    expect(ran.body).toMatchObject({ status: 'completed', workflowVersion: 1 });
    expect((ran.body.steps as { node_id: string }[]).map((s) => s.node_id)).toEqual(['a']);
    expect(JSON.stringify(ran.body.output)).toContain('one');
  });

  it('a queued start pinned to a version runs that version when its turn comes', async () => {
    const workflowId = await createWorkflow(stack, team, textSteps('a', 'one'));
    await update(workflowId, 'b', 'two');
    const first = await start(workflowId);
    const queued = await start(workflowId, { version: 1, onConflict: 'queue' });
    expect(queued.status, JSON.stringify(queued.body)).toBe(202);
    await runToEnd(first.body.jobId as string);
    const ran = await runToEnd(queued.body.jobId as string);
    expect(ran.body).toMatchObject({ status: 'completed', workflowVersion: 1 });
    expect((ran.body.steps as { node_id: string }[]).map((s) => s.node_id)).toEqual(['a']);
  });
});

describe('PATCH /workflows/{id}: status', () => {
  it('an archived workflow refuses new runs with the start validation 422 and keeps its runs readable', async () => {
    const workflowId = await createWorkflow(stack, team, textSteps('a', 'one'));
    const before = await start(workflowId);
    await runToEnd(before.body.jobId as string);
    const archived = await api(stack.baseUrl, 'PATCH', `/workflows/${workflowId}`, {
      key: team.key,
      body: { status: 'archived' },
    });
    expect(archived).toMatchObject({ status: 200, body: { id: workflowId, status: 'archived' } });
    const refused = await start(workflowId);
    expect(refused.status).toBe(422);
    expect(refused.body).toEqual({
      success: false,
      errors: [expect.objectContaining({ code: 'workflow_archived', key: null })],
    });
    const estimate = await api(stack.baseUrl, 'POST', `/workflows/${workflowId}/estimate`, { key: team.key, body: {} });
    // The estimate tells the start's refusal as it would answer it.
    expect(estimate.body.refusal).toMatchObject({ status: 422, body: { success: false } });
    const read = await api(stack.baseUrl, 'GET', `/runs/${before.body.jobId}`, { key: team.key });
    expect(read).toMatchObject({ status: 200, body: { status: 'completed' } });
    const versions = await api(stack.baseUrl, 'GET', `/workflows/${workflowId}/versions`, { key: team.key });
    expect(versions.status).toBe(200);

    const reopened = await api(stack.baseUrl, 'PATCH', `/workflows/${workflowId}`, {
      key: team.key,
      body: { status: 'active' },
    });
    expect(reopened.body.status).toBe('active');
    expect((await start(workflowId)).status).toBe(200);
  });

  it('refuses a status that is none of the three', async () => {
    const workflowId = await createWorkflow(stack, team, textSteps('a', 'one'));
    const bad = await api(stack.baseUrl, 'PATCH', `/workflows/${workflowId}`, {
      key: team.key,
      body: { status: 'deleted' },
    });
    expect(bad.status).toBe(400);
    const { Item } = await stack.deps.ddb.send(
      new GetCommand({
        TableName: stack.deps.tableName,
        Key: workflowKey(team.teamId, workflowId),
        ConsistentRead: true,
      }),
    );
    expect(Item?.status).toBe('draft');
  });
});

describe('the typed client and the CLI', () => {
  it('client: updateWorkflow, workflowVersions, getWorkflowVersion, setWorkflowStatus; a start pinning version', async () => {
    const client = createClient({ baseUrl: stack.baseUrl, apiKey: team.key });
    const workflowId = await createWorkflow(stack, team, textSteps('a', 'one'));
    const made = await client.updateWorkflow(workflowId, {
      name: 'Two',
      agentId: team.agentId,
      steps: [{ key: 'b', type: 'TextEntry', config: { text: 'two' } }],
    });
    expect(made).toMatchObject({ workflowId, version: 2, name: 'Two' });
    const versions: number[] = [];
    for await (const version of client.workflowVersions(workflowId)) versions.push(version.version);
    expect(versions).toEqual([2, 1]);
    expect(await client.getWorkflowVersion(workflowId, 1)).toMatchObject({ version: 1, stepsCount: 1 });
    const started = await client.runWorkflow(workflowId, { version: 1 });
    const run = await runToEnd(started.jobId);
    expect(run.body).toMatchObject({ workflowVersion: 1 });
    expect(await client.setWorkflowStatus(workflowId, 'archived')).toMatchObject({
      id: workflowId,
      status: 'archived',
    });
  });

  it('CLI: workflows update, versions, status, and run --version', async () => {
    const cli = (args: string[]) => runCli({ baseUrl: stack.baseUrl, key: team.key }, args);
    const workflowId = await createWorkflow(stack, team, textSteps('a', 'one'));
    const dir = await mkdtemp(join(tmpdir(), 'workflow-run-cli-'));
    try {
      const file = join(dir, 'v2.json');
      await writeFile(file, JSON.stringify({ name: 'Two', steps: textSteps('b', 'two') }));
      const updated = await cli(['workflows', 'update', workflowId, '--file', file, '--agent', team.agentId, '--json']);
      expect(updated.code, updated.stderr).toBe(0);
      expect(JSON.parse(updated.stdout)).toMatchObject({ version: 2, name: 'Two' });
      const listed = await cli(['workflows', 'versions', workflowId, '--all', '--json']);
      expect(listed.code, listed.stderr).toBe(0);
      expect((JSON.parse(listed.stdout).versions as { version: number }[]).map((v) => v.version)).toEqual([2, 1]);
      const ran = await cli(['run', workflowId, '--version', '1', '--json']);
      expect(ran.code, ran.stderr).toBe(0);
      const jobId = JSON.parse(ran.stdout).jobId as string;
      expect((await runToEnd(jobId)).body).toMatchObject({ workflowVersion: 1 });
      const archived = await cli(['workflows', 'status', workflowId, '--status', 'archived']);
      expect(archived.code, archived.stderr).toBe(0);
      expect(archived.stdout).toContain('status: archived');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
