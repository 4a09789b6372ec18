import './support/test-providers.ts';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultStorageQuotaBytes } from '../functions/domain/stored-bytes.ts';
import { revokeApiKey } from '../functions/store/api-keys.ts';
import { deferredRunKey } from '../functions/store/keys.ts';
import { putWorkflow } from '../functions/store/workflows.ts';
import { runAdmin } from '../local/admin.ts';
import { call, createWorkflow, seedTeam, startTestStack, type TestStack } from './support/stack.ts';

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack();
});
afterAll(() => stack.close());

const admin = async (...argv: string[]) => {
  const result = await runAdmin([...argv, '--json'], stack.deps);
  return {
    ...result,
    json: result.exitCode === 0 ? (JSON.parse(result.output) as Record<string, unknown>) : undefined,
  };
};

describe('operators’ CLI', () => {
  it('creates a team with credits, adds and shows credits exactly', async () => {
    const team = await admin('team', 'create', '--name', 'Acme', '--credits', '10.05', '--per-step-limit', '2');
    const teamId = team.json?.teamId as string;
    expect(teamId).toMatch(/^[0-9a-f-]{36}$/);
    expect((await admin('credits', 'add', '--team', teamId, '--amount', '0.1')).json).toEqual({ balance: 10.15 });
    expect((await admin('credits', 'show', '--team', teamId)).json).toEqual({
      balance: 10.15,
      held: 0,
      charged: 0,
      granted: 10.15,
    });
    expect((await admin('credits', 'add', '--team', teamId, '--amount=-20')).exitCode).toBe(1);
  });

  it('shows a team’s stored bytes and sets its storage quota, which the API then holds it to', async () => {
    const teamId = (await admin('team', 'create', '--name', 'Store')).json?.teamId as string;
    expect((await admin('storage', 'show', '--team', teamId)).json).toEqual({
      teamId,
      usedBytes: 0,
      quotaBytes: defaultStorageQuotaBytes,
    });
    expect((await admin('storage', 'quota', '--team', teamId, '--bytes', '100')).json).toEqual({
      teamId,
      usedBytes: 0,
      quotaBytes: 100,
    });
    const key = (await admin('key', 'create', '--team', teamId)).json?.key as string;
    const declared = await call(stack.baseUrl, '/files', {
      key,
      method: 'POST',
      body: { name: 'a.png', contentType: 'image/png', size: 101 },
    });
    expect(declared.status).toBe(409);
    expect((await admin('storage', 'quota', '--team', teamId, '--bytes', 'default')).json).toMatchObject({
      quotaBytes: defaultStorageQuotaBytes,
    });
    expect((await admin('storage', 'quota', '--team', teamId, '--bytes=-1')).exitCode).toBe(2);
  });

  it('creates a project and an agent, and a key that works against the API', async () => {
    const teamId = (await admin('team', 'create', '--name', 'Beta')).json?.teamId as string;
    const projectId = (await admin('project', 'create', '--team', teamId, '--name', 'P', '--hard-cap', '50')).json
      ?.projectId as string;
    const agentId = (await admin('agent', 'create', '--project', projectId, '--name', 'A')).json?.agentId as string;
    expect(agentId).toMatch(/^[0-9a-f-]{36}$/);
    const created = (await admin('key', 'create', '--team', teamId, '--scopes', 'workflows:read', '--rate-limit', '10'))
      .json;
    expect(created?.key).toMatch(/^wra_/);
    expect((await call(stack.baseUrl, '/workflows', { key: created?.key as string })).status).toBe(200);

    const listed = (await admin('key', 'list', '--team', teamId)).json?.keys as Record<string, unknown>[];
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({
      keyId: created?.keyId,
      scopes: ['workflows:read'],
      rateLimitPerMinute: 10,
      revokedAt: null,
    });
    expect(JSON.stringify(listed)).not.toContain(created?.key as string);

    expect((await admin('key', 'revoke', '--key', created?.keyId as string)).exitCode).toBe(0);
    expect((await call(stack.baseUrl, '/workflows', { key: created?.key as string })).status).toBe(401);
  });

  it('activates a workflow of an agent and sets workflow status', async () => {
    const teamId = (await admin('team', 'create', '--name', 'Gamma')).json?.teamId as string;
    const projectId = (await admin('project', 'create', '--team', teamId, '--name', 'P')).json?.projectId as string;
    const agentId = (await admin('agent', 'create', '--project', projectId, '--name', 'A')).json?.agentId as string;
    const { workflowId } = await putWorkflow(stack.deps, {
      teamId,
      agentId,
      projectId,
      name: 'W',
      description: null,
      status: 'draft',
      canvas: { nodes: [], edges: [] },
      stepsCount: 1,
    });
    expect((await admin('agent', 'activate', '--agent', agentId, '--workflow', workflowId)).json).toEqual({
      agentId,
      activeWorkflowId: workflowId,
    });
    expect((await admin('workflow', 'status', '--workflow', workflowId, '--status', 'archived')).json).toEqual({
      workflowId,
      status: 'archived',
    });
    expect((await admin('workflow', 'status', '--workflow', workflowId, '--status', 'gone')).exitCode).toBe(2);
  });

  it('sets a live price multiplier and an hourly schedule', async () => {
    expect((await admin('price', 'set', '--multiplier', '0.5')).json).toMatchObject({ current: 0.5, live: 0.5 });
    const file = join(mkdtempSync(join(tmpdir(), 'price-')), 'schedule.json');
    writeFileSync(file, JSON.stringify({ hours: { '0-11': 0.6, '12-23': 1 } }));
    await admin('price', 'set', '--multiplier', 'none');
    const shown = (await admin('price', 'schedule', '--file', file)).json;
    expect(shown?.hourly).toHaveLength(24);
    writeFileSync(file, JSON.stringify({ hours: { '0-10': 0.6 } }));
    const bad = await admin('price', 'schedule', '--file', file);
    expect(bad.exitCode).toBe(2);
    expect(bad.output).toContain('Hours without a multiplier: 11');
    expect((await admin('price', 'set', '--multiplier', '-1')).exitCode).toBe(2);
  });

  it('sets, lists and removes a team connection by reference, never by value', async () => {
    const teamId = (await admin('team', 'create', '--name', 'Gamma')).json?.teamId as string;
    const set = (ref: string, ...rest: string[]) =>
      admin('connection', 'set', '--team', teamId, '--key', 'byok-y', '--secret-ref', ref, ...rest);
    // The local default: env: references, and any well-formed secret or parameter name.
    expect((await set('env:BYOK_Y_KEY')).json).toEqual({ teamId, key: 'byok-y', secretRef: 'env:BYOK_Y_KEY' });
    expect((await set('ssm:/workflow-run-api/dev/connections/t/byok-y')).exitCode).toBe(0);
    const ref = 'secretsmanager:workflow-run-api/dev/connections/t/byok-y';
    expect((await set(ref, '--endpoint', 'https://api.byok-y.example/v1')).exitCode).toBe(0);
    expect((await admin('connection', 'list', '--team', teamId)).json).toEqual({
      connections: { 'byok-y': { secretRef: ref, endpoint: 'https://api.byok-y.example/v1' } },
    });
    for (const bad of ['sk-live-123', 'env:1BAD', 'vault:x', 'secretsmanager:has space', 'ssm:relative/name']) {
      const refused = await runAdmin(
        ['connection', 'set', '--team', teamId, '--key', 'byok-y', '--secret-ref', bad],
        stack.deps,
      );
      expect(refused.exitCode, bad).toBe(2);
      expect(refused.output).toMatch(/^--secret-ref: a secret reference is secretsmanager:<secret name>/);
    }
    expect((await admin('connection', 'remove', '--team', teamId, '--key', 'byok-y')).exitCode).toBe(0);
    expect((await admin('connection', 'list', '--team', teamId)).json).toEqual({ connections: {} });
  });

  it("against a deployed table, refuses env: and names outside SERVICE_STAGE's connection prefix", async () => {
    const teamId = (await admin('team', 'create', '--name', 'Delta')).json?.teamId as string;
    const run = (ref: string) =>
      spawnSync(
        process.execPath,
        ['local/admin-main.ts', 'connection', 'set', '--team', teamId, '--key', 'byok-y', '--secret-ref', ref],
        {
          encoding: 'utf8',
          env: {
            ...process.env,
            TABLE_NAME: stack.deps.tableName,
            SERVICE_STAGE: 'prod',
            AWS_ENDPOINT_URL_DYNAMODB: stack.resources.dynamoDbEndpoint,
            AWS_ACCESS_KEY_ID: 'local',
            AWS_SECRET_ACCESS_KEY: 'local',
          },
        },
      );
    const env = run('env:BYOK_Y_KEY');
    expect(env.status).toBe(2);
    expect(env.stderr).toContain('env: references are for the local default only');
    const dev = run('secretsmanager:workflow-run-api/dev/connections/x');
    expect(dev.status).toBe(2);
    expect(dev.stderr).toContain('must be named under workflow-run-api/prod/connections/');
    const prod = run(`secretsmanager:workflow-run-api/prod/connections/${teamId}/byok-y`);
    expect(prod.status, prod.stderr).toBe(0);
  });

  it("against a deployed table, a dispatch tick dates the deferred runs it moves with SERVICE_STAGE's retention", async () => {
    const team = await seedTeam(stack.deps);
    const workflowId = await createWorkflow(stack, team);
    const deferred = await call(stack.baseUrl, `/workflows/${workflowId}/runs`, {
      key: team.key,
      method: 'POST',
      body: { defer: true, maxMultiplier: 10 },
    });
    const id = deferred.body.deferredJobId as string;
    // Its key is revoked: the tick's turn for it cancels it.
    await revokeApiKey(stack.deps, team.keyId);
    const tick = spawnSync(process.execPath, ['local/admin-main.ts', 'dispatch', '--json'], {
      encoding: 'utf8',
      env: {
        ...process.env,
        TABLE_NAME: stack.deps.tableName,
        STEPS_QUEUE_URL: stack.deps.queueUrls.steps,
        SERVICE_STAGE: 'prod',
        RETENTION_DAYS: '',
        AWS_ENDPOINT_URL_DYNAMODB: stack.resources.dynamoDbEndpoint,
        AWS_ENDPOINT_URL_SQS: stack.resources.sqsS3Endpoint,
        AWS_ACCESS_KEY_ID: 'local',
        AWS_SECRET_ACCESS_KEY: 'local',
      },
    });
    expect(tick.status, tick.stderr).toBe(0);
    expect(JSON.parse(tick.stdout).cancelled).toEqual([id]);
    const { Item } = await stack.deps.ddb.send(
      new GetCommand({ TableName: stack.deps.tableName, Key: deferredRunKey(id), ConsistentRead: true }),
    );
    expect(Item?.status).toBe('cancelled');
    // prod's 365 days from the move, not the 30 a process without RETENTION_DAYS would use.
    expect(Item?.ttl).toBe(Math.floor(Date.parse(String(Item?.movedAt)) / 1000) + 365 * 86_400);
  });

  it('prints usage and exits non-zero for unknown commands, bad flags and missing flags', async () => {
    for (const argv of [
      ['bogus'],
      ['team', 'create'],
      ['team', 'create', '--name', 'x', '--nope'],
      ['key', 'create', '--team', 'x', '--scopes', 'everything'],
      [],
    ]) {
      const result = await runAdmin(argv, stack.deps);
      expect(result.exitCode, argv.join(' ')).toBe(2);
      expect(result.output).toContain('Usage: npm run admin');
    }
  });

  it('exits non-zero from the command line too', () => {
    const result = spawnSync(process.execPath, ['local/admin-main.ts', 'bogus'], {
      encoding: 'utf8',
      env: {
        ...process.env,
        TABLE_NAME: stack.deps.tableName,
        AWS_ENDPOINT_URL_DYNAMODB: stack.resources.dynamoDbEndpoint,
        AWS_ACCESS_KEY_ID: 'local',
        AWS_SECRET_ACCESS_KEY: 'local',
      },
    });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('Unknown command: bogus');
  });
});
