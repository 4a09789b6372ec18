/**
 * Providers and team connections from a secret store, through the real handlers: the API (run
 * starts, 422s), the step executor (drained by hand) and the deferred dispatcher, on deps built as
 * a deployed stage builds them (its providers, its policy, its secret store) with the store's SDK
 * clients pointed at a secret-store emulator (local/secret-store.ts) and an
 * OpenAI-compatible fake provider that records the key it was called with.
 */
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Deps } from '../functions/deps.ts';
import { createExecutorRegistry, executorDeps } from '../functions/nodes/executors/index.ts';
import { secretPolicyFromEnv } from '../functions/nodes/providers/secret-refs.ts';
import { stageProvidersFromEnv } from '../functions/nodes/providers/stage.ts';
import { logger } from '../functions/observability/logger.ts';
import { removeConnection, setConnection } from '../functions/store/connections.ts';
import { runKey, workflowLockKey } from '../functions/store/keys.ts';
import { createSecretStore, secretCacheMs } from '../functions/store/secrets.ts';
import { activateWorkflow } from '../functions/store/workflows.ts';
import { runAdmin } from '../local/admin.ts';
import { withAwsCommandLog } from '../local/aws-command-log.ts';
import { type SecretStoreEmulator, startSecretStore } from '../local/secret-store.ts';
import { messages } from '../schemas/error-messages.ts';
import { dispatcherHandler, drainSteps, ledgerOf, realStepHandler } from './support/runs.ts';
import { call, createWorkflow, type SeededTeam, seedTeam, startTestStack, type TestStack } from './support/stack.ts';

// Values that must never leave the secret store except towards the provider.
const stageKey = 'sk-stage-7f3a9c51e0';
const teamKey = 'sk-team-2b8e41d77c';
const teamSsmKey = 'sk-team-ssm-5d1c0e93';
const teamEnvKey = 'sk-team-env-9a0b3f26';
const allKeys = [stageKey, teamKey, teamSsmKey, teamEnvKey];

const providerSecret = 'workflow-run-api/prod/providers/openai-compatible';
const prodPrefix = 'workflow-run-api/prod/connections/';

let store: SecretStoreEmulator;
let fake: Server;
let baseUrl: string;
/** The key of each call the fake provider got (the Authorization header's bearer). */
const providerCalls: string[] = [];
/** The secret store's clock: TTL expiry is driven by moving it, never by waiting. */
let clockMs = Date.parse('2026-05-04T10:00:00.000Z');

/** Everything the API answered in this file, to check no secret is ever in a response. */
const answered: string[] = [];
const api = async (stack: TestStack, path: string, options: Parameters<typeof call>[2] = {}) => {
  const response = await call(stack.baseUrl, path, options);
  answered.push(JSON.stringify(response.body));
  return response;
};

/** Every log line the functions wrote in this file, at DEBUG. */
const logLines: string[] = [];

beforeAll(async () => {
  store = await startSecretStore();
  fake = createServer((req, res) => {
    let raw = '';
    req.on('data', (chunk: Buffer) => {
      raw += chunk.toString();
    });
    req.on('end', () => {
      providerCalls.push(String(req.headers.authorization ?? '').replace(/^Bearer /, ''));
      const body = JSON.parse(raw || '{}') as { model?: string; messages?: { content: unknown }[] };
      const prompt = String(body.messages?.at(-1)?.content ?? '');
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ choices: [{ message: { role: 'assistant', content: `(${body.model}) ${prompt}` } }] }));
    });
  });
  fake.listen(0, '127.0.0.1');
  await once(fake, 'listening');
  baseUrl = `http://127.0.0.1:${(fake.address() as AddressInfo).port}/v1`;
  store.secrets.set(providerSecret, JSON.stringify({ apiKey: stageKey, baseUrl }));

  const capture = (chunk: unknown) => {
    logLines.push(String(chunk));
    return true;
  };
  vi.spyOn(process.stdout, 'write').mockImplementation(capture);
  vi.spyOn(process.stderr, 'write').mockImplementation(capture);
  logger.setLogLevel('DEBUG');
});

afterAll(async () => {
  logger.setLogLevel('SILENT');
  vi.restoreAllMocks();
  fake.closeAllConnections();
  fake.close();
  await store.close();
});

/**
 * A test stack whose deps are those of a deployed stage with `env` (SERVICE_STAGE, PROVIDER_SECRETS,
 * SANDBOX_PROVIDERS, CONNECTION_SECRET_PREFIX): its providers, its policy, and a secret store over
 * the emulator on the test's clock. The ids it makes are kept, to look for items a refusal left.
 */
const startStage = async (env: Record<string, string>) => {
  const clients = store.clients();
  const secrets = createSecretStore({
    policy: secretPolicyFromEnv(env),
    // A function's environment that holds a key: a deployed stage still must not read it.
    env: { TEAM_ENV_KEY: teamEnvKey },
    ...clients,
    now: () => new Date(clockMs),
  });
  const ids: string[] = [];
  const stack = await startTestStack({
    providers: stageProvidersFromEnv(env),
    secrets,
    executors: createExecutorRegistry(
      executorDeps({
        env: { ...env, OPENAI_COMPATIBLE_TEXT_MODEL: 'chat-model' },
        providerSecret: secrets.providerSecret,
      }),
    ),
    newId: () => {
      const id = randomUUID();
      ids.push(id);
      return id;
    },
  });
  // The least-privilege audit records the secret reads too, as the step executor's.
  withAwsCommandLog(clients, stack.resources);
  const steps = realStepHandler(stack.deps);
  /** Starts a run of `workflowId` and runs its steps to the end with the real step executor. */
  const runToEnd = async (team: SeededTeam, workflowId: string) => {
    const started = await api(stack, `/workflows/${workflowId}/runs`, { key: team.key, method: 'POST' });
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    // Each API invocation puts the logger back to its configured level (SILENT in tests): the steps
    // that read the secrets log at DEBUG, where this file captures them.
    logger.setLogLevel('DEBUG');
    await drainSteps(stack.deps, steps);
    return api(stack, `/runs/${started.body.jobId}`, { key: team.key });
  };
  return { stack, ids, runToEnd };
};

const prodEnv = {
  SERVICE_STAGE: 'prod',
  CONNECTION_SECRET_PREFIX: prodPrefix,
  PROVIDER_SECRETS: JSON.stringify({ 'openai-compatible': providerSecret }),
  SANDBOX_PROVIDERS: 'false',
};

/** TextEntry → LlmWorker → LlmWorker, both on `openai-compatible`: two model steps in one run. */
const twoModelSteps = [
  { key: 'topic', type: 'TextEntry', config: { text: 'otters' } },
  { key: 'draft', type: 'LlmWorker', config: { provider: 'openai-compatible' }, inputs: ['topic'] },
  { key: 'final', type: 'LlmWorker', config: { provider: 'openai-compatible' }, inputs: ['draft'] },
];
const oneModelStep = twoModelSteps.slice(0, 2);

const readsOf = (name: string) => store.requests.filter((r) => r.name === name).length;

/** Whether an item exists, read as the tests' own (unlogged) command. */
const exists = async (deps: Deps, key: Record<string, string>) =>
  (await deps.ddb.send(new GetCommand({ TableName: deps.tableName, Key: key, ConsistentRead: true }))).Item !==
  undefined;

describe('a deployed stage with a provider secret (prod)', () => {
  let stage: Awaited<ReturnType<typeof startStage>>;
  beforeAll(async () => {
    stage = await startStage(prodEnv);
  });
  afterAll(() => stage.stack.close());

  it("reads the provider's secret on first use, calls the provider with its apiKey, and rereads it only after the cache's lifetime", async () => {
    clockMs += secretCacheMs + 1; // whatever an earlier read cached has expired
    const team = await seedTeam(stage.stack.deps);
    const workflowId = await createWorkflow(stage.stack, team, twoModelSteps);
    const before = readsOf(providerSecret);
    const calls = providerCalls.length;

    const first = await stage.runToEnd(team, workflowId);
    expect(first.body.status).toBe('completed');
    expect(readsOf(providerSecret) - before).toBe(1); // two model steps, one read
    expect(providerCalls.slice(calls)).toEqual([stageKey, stageKey]);
    expect((first.body.output as { generated_by: unknown[] }[])[0]?.generated_by).toEqual(
      expect.arrayContaining([
        { node_id: 'draft', provider: 'openai-compatible', model: 'chat-model' },
        { node_id: 'final', provider: 'openai-compatible', model: 'chat-model' },
      ]),
    );

    clockMs += secretCacheMs - 1000; // still within the lifetime of the first read
    expect((await stage.runToEnd(team, workflowId)).body.status).toBe('completed');
    expect(readsOf(providerSecret) - before).toBe(1);

    clockMs += 2000; // past it: the next step reads the secret again, once
    expect((await stage.runToEnd(team, workflowId)).body.status).toBe('completed');
    expect(readsOf(providerSecret) - before).toBe(2);
    expect(providerCalls.slice(calls)).toEqual(Array(6).fill(stageKey));
  });

  it("runs on the team's own key when its connection names a secret (Secrets Manager or SSM), over the stage's", async () => {
    const viaSecretsManager = await seedTeam(stage.stack.deps);
    const secretName = `${prodPrefix}${viaSecretsManager.teamId}/openai-compatible`;
    store.secrets.set(secretName, JSON.stringify({ apiKey: teamKey }));
    const set = await runAdmin(
      [
        'connection',
        'set',
        '--team',
        viaSecretsManager.teamId,
        '--key',
        'openai-compatible',
        '--secret-ref',
        `secretsmanager:${secretName}`,
      ],
      stage.stack.deps,
    );
    expect(set.exitCode, set.output).toBe(0);
    let calls = providerCalls.length;
    const run = await stage.runToEnd(
      viaSecretsManager,
      await createWorkflow(stage.stack, viaSecretsManager, oneModelStep),
    );
    expect(run.body.status).toBe('completed');
    expect(providerCalls.slice(calls)).toEqual([teamKey]);
    expect(readsOf(secretName)).toBe(1);

    const viaSsm = await seedTeam(stage.stack.deps);
    const parameter = `/${prodPrefix}${viaSsm.teamId}/openai-compatible`;
    store.parameters.set(parameter, teamSsmKey); // a bare key; the connection names the endpoint
    const ssmSet = await runAdmin(
      [
        'connection',
        'set',
        '--team',
        viaSsm.teamId,
        '--key',
        'openai-compatible',
        '--secret-ref',
        `ssm:${parameter}`,
        '--endpoint',
        baseUrl,
      ],
      stage.stack.deps,
    );
    expect(ssmSet.exitCode, ssmSet.output).toBe(0);
    calls = providerCalls.length;
    const ssmRun = await stage.runToEnd(viaSsm, await createWorkflow(stage.stack, viaSsm, oneModelStep));
    expect(ssmRun.body.status).toBe('completed');
    expect(providerCalls.slice(calls)).toEqual([teamSsmKey]);
    expect(store.requests.filter((r) => r.name === parameter)).toEqual([
      { target: 'AmazonSSM.GetParameter', name: parameter, withDecryption: true },
    ]);
  });

  it('refuses env: references and names outside the connection prefix, in the CLI and when a step reads one', async () => {
    const team = await seedTeam(stage.stack.deps);
    const attempt = (ref: string) =>
      runAdmin(
        ['connection', 'set', '--team', team.teamId, '--key', 'openai-compatible', '--secret-ref', ref],
        stage.stack.deps,
      );
    const env = await attempt('env:TEAM_ENV_KEY');
    expect(env.exitCode).toBe(2);
    expect(env.output).toMatch(/^--secret-ref: env: references are for the local default only/);
    const outside = await attempt('secretsmanager:workflow-run-api/dev/connections/x');
    expect(outside.exitCode).toBe(2);
    expect(outside.output).toMatch(/must be named under workflow-run-api\/prod\/connections\//);
    expect((await attempt('ssm:/elsewhere/x')).output).toMatch(/under \/workflow-run-api\/prod\/connections\//);
    expect((await attempt('vault:x')).exitCode).toBe(2);

    // A reference stored some other way (an older item) is refused when a step reads it.
    await setConnection(stage.stack.deps, team.teamId, 'openai-compatible', { secretRef: 'env:TEAM_ENV_KEY' });
    const calls = providerCalls.length;
    const requests = store.requests.length;
    const run = await stage.runToEnd(team, await createWorkflow(stage.stack, team, oneModelStep));
    expect(run.body.status).toBe('failed');
    expect((run.body.steps as { node_id: string; error?: string }[]).find((s) => s.node_id === 'draft')?.error).toBe(
      'LlmWorker: the team connection "openai-compatible" could not be read: env: references are for the local default only; a deployed stage refuses them',
    );
    expect(providerCalls.length).toBe(calls);
    expect(store.requests.length).toBe(requests);
    // Nothing charged for the failed step: the hold went back.
    expect((await ledgerOf(stage.stack.deps, team.teamId)).held).toBe(0);
  });

  it('refuses a run whose model step runs on no provider of the stage with the provider 422, before anything is held', async () => {
    const team = await seedTeam(stage.stack.deps);
    const before = await ledgerOf(stage.stack.deps, team.teamId);
    // The catalogue's default provider is Bedrock, which this stage did not turn on (no team's key runs it).
    const steps = [
      { key: 'topic', type: 'TextEntry', config: { text: 'otters' } },
      { key: 'llm', type: 'LlmWorker', inputs: ['topic'] },
    ];
    const workflowId = await createWorkflow(stage.stack, team, steps);
    await activateWorkflow(stage.stack.deps, team.teamId, team.agentId, workflowId);
    const refusal = {
      error: messages.providerNotAvailable('LlmWorker', ['bedrock']),
      providers: ['bedrock'],
      level: 'not_allowed',
    };
    const idsBefore = stage.ids.length;
    for (const [path, body] of [
      [`/workflows/${workflowId}/runs`, {}],
      [`/workflows/${workflowId}/runs`, { defer: true }],
      [`/agents/${team.agentId}/runs`, {}],
    ] as const) {
      const refused = await api(stage.stack, path, { key: team.key, method: 'POST', body });
      expect(refused.status, path).toBe(422);
      expect(refused.body).toEqual(refusal);
    }
    expect(await ledgerOf(stage.stack.deps, team.teamId)).toEqual(before);
    expect(await exists(stage.stack.deps, workflowLockKey(workflowId))).toBe(false);
    for (const id of stage.ids.slice(idsBefore)) expect(await exists(stage.stack.deps, runKey(id))).toBe(false);
  });
});

describe('a deployed stage with no provider (prod, none given)', () => {
  let stage: Awaited<ReturnType<typeof startStage>>;
  beforeAll(async () => {
    stage = await startStage({ ...prodEnv, PROVIDER_SECRETS: '{}' });
  });
  afterAll(() => stage.stack.close());

  it('refuses an openai-compatible step unless the team has its own key (byok_only), and the dispatcher expires a deferred run that lost it', async () => {
    const team = await seedTeam(stage.stack.deps);
    const before = await ledgerOf(stage.stack.deps, team.teamId);
    const workflowId = await createWorkflow(stage.stack, team, oneModelStep);
    const refused = await api(stage.stack, `/workflows/${workflowId}/runs`, { key: team.key, method: 'POST' });
    expect(refused.status).toBe(422);
    expect(refused.body).toEqual({
      error: messages.providerNotAvailable('LlmWorker', ['openai-compatible']),
      providers: ['openai-compatible'],
      level: 'byok_only',
    });

    // With its own key the team may defer the run; without it when its turn comes, the run expires unheld.
    const secretName = `${prodPrefix}${team.teamId}/openai-compatible`;
    store.secrets.set(secretName, JSON.stringify({ apiKey: teamKey, baseUrl }));
    await setConnection(stage.stack.deps, team.teamId, 'openai-compatible', {
      secretRef: `secretsmanager:${secretName}`,
    });
    const deferred = await api(stage.stack, `/workflows/${workflowId}/runs`, {
      key: team.key,
      method: 'POST',
      body: { defer: true, maxMultiplier: 10 }, // its turn comes at the next tick (no multiplier set: 1)
    });
    expect(deferred.status).toBe(202);
    await removeConnection(stage.stack.deps, team.teamId, 'openai-compatible');
    logger.setLogLevel('DEBUG');
    const tick = (await dispatcherHandler(stage.stack.deps)()) as { expired: string[] };
    expect(tick.expired).toContain(deferred.body.deferredJobId);
    expect(await ledgerOf(stage.stack.deps, team.teamId)).toEqual(before);

    // Given back, its key runs the step.
    await setConnection(stage.stack.deps, team.teamId, 'openai-compatible', {
      secretRef: `secretsmanager:${secretName}`,
    });
    const calls = providerCalls.length;
    const run = await stage.runToEnd(team, workflowId);
    expect(run.body.status).toBe('completed');
    expect(providerCalls.slice(calls)).toEqual([teamKey]);
  });
});

describe('a sandbox stage (dev)', () => {
  let stage: Awaited<ReturnType<typeof startStage>>;
  beforeAll(async () => {
    stage = await startStage({
      SERVICE_STAGE: 'dev',
      CONNECTION_SECRET_PREFIX: 'workflow-run-api/dev/connections/',
      PROVIDER_SECRETS: '{}',
      SANDBOX_PROVIDERS: 'true',
    });
  });
  afterAll(() => stage.stack.close());

  it('runs a step whose provider it has not configured on the sandbox, and its output says so', async () => {
    const team = await seedTeam(stage.stack.deps);
    const calls = providerCalls.length;
    const requests = store.requests.length;
    const run = await stage.runToEnd(team, await createWorkflow(stage.stack, team, oneModelStep));
    expect(run.body.status).toBe('completed');
    const [output] = run.body.output as { generated_by: unknown; licence: { models: unknown[] } }[];
    expect(output?.generated_by).toEqual([{ node_id: 'draft', provider: 'sandbox', model: 'sandbox-text-1' }]);
    expect(output?.licence.models).toMatchObject([{ node_id: 'draft', provider_key: 'sandbox', licence: 'CC0-1.0' }]);
    expect(providerCalls.length).toBe(calls);
    expect(store.requests.length).toBe(requests);
  });
});

describe('secrets stay secret', () => {
  it('no secret value is in any log line or API response of this file', () => {
    expect(logLines.length).toBeGreaterThan(0);
    expect(answered.length).toBeGreaterThan(0);
    for (const key of allKeys) {
      expect(logLines.filter((line) => line.includes(key))).toEqual([]);
      expect(answered.filter((body) => body.includes(key))).toEqual([]);
    }
    // They were used: the provider got each stored key.
    expect(new Set(providerCalls)).toEqual(new Set([stageKey, teamKey, teamSsmKey]));
  });
});
