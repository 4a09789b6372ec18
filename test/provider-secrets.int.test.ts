/**
 * A provider's key goes to its provider's Authorization header and nowhere else: not in a log line
 * (captured here at DEBUG, the level every other file silences), an API answer, a webhook answer, a
 * step's error or a stored item. Through the real path: runs started over HTTP on the local API,
 * the step executor's handler over the emulators, the webhook route, and the provider stand-ins
 * (Replicate's and fal's own protocols, an OpenAI-compatible server), with each adapter on the
 * stage's key and, where a team may bring one, on the team's own key (a connection). The failing
 * paths are the ones where a key could slip out: a 401 or 4xx whose words quote the key, a job that
 * fails with the key in its message, a 429 retried, a network error, a forged webhook, and a webhook
 * whose secret read is refused with the key quoted.
 */
import { once } from 'node:events';
import { createServer } from 'node:net';
import { format } from 'node:util';
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { SSMClient } from '@aws-sdk/client-ssm';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

import { encodePng, makeImage } from '../functions/nodes/media/png.ts';
import { secretPolicyFromEnv } from '../functions/nodes/providers/secret-refs.ts';
import { stageProvidersFromEnv } from '../functions/nodes/providers/stage.ts';
import { logger } from '../functions/observability/logger.ts';
import { setConnection } from '../functions/store/connections.ts';
import { createSecretStore } from '../functions/store/secrets.ts';
import { makeHandler } from '../functions/workers/step-executor.ts';
import { invokedAs } from '../local/invocation.ts';
import { type FalStandIn, startFalStandIn } from './stand-ins/fal.ts';
import { startFileServer, startJsonServer } from './stand-ins/http.ts';
import { type ReplicateStandIn, startReplicateStandIn } from './stand-ins/replicate.ts';
import { deliver, runParts, stepRecord, takeStepMessages } from './support/runs.ts';
import {
  call,
  createWorkflow,
  type SeededTeam,
  seedTeam,
  startTestStack,
  type TestStack,
  testExecutors,
} from './support/stack.ts';

// Hoisted above the imports, so before any module builds the logger: its level, and the one each
// API invocation resets it to, is DEBUG in this file (the suite's config says SILENT).
vi.hoisted(() => {
  process.env.POWERTOOLS_LOG_LEVEL = 'DEBUG';
});

/** Every key carries this mark: no captured text may hold it, whole or in part. */
const canary = 'SECRET-canary';
const keys = {
  replicate: `r8_${canary}-replicate-stage-4f1e9a`,
  replicateTeam: `r8_${canary}-replicate-team-8c2d71`,
  // fal keys are `id:secret`: each half is a secret too.
  fal: `${canary}-fal-id-5b7e:${canary}-fal-secret-0a93c4`,
  openai: `sk-${canary}-openai-stage-7d3f20`,
  openaiTeam: `sk-${canary}-openai-team-e61b58`,
};
/** The team keys' connections read them as `env:` references (the local default's secret store). */
const teamSecretEnv = {
  TEAM_REPLICATE_KEY: keys.replicateTeam,
  TEAM_OPENAI_KEY: keys.openaiTeam,
  // A key pasted with a line break inside it: no header may carry it, and the transport's refusal quotes it.
  TEAM_OPENAI_BROKEN_KEY: `${keys.openaiTeam}\nsk-${canary}-second-line`,
};

/** Every line written to stdout, stderr or the console while this file ran. */
const logLines: string[] = [];
/** Every answer the API gave this file (run reads, webhook answers), as text. */
const answered: string[] = [];

/**
 * An OpenAI-compatible server: chat completions for any of `apiKeys`, and OpenAI's own 401 body
 * otherwise, quoting what it was sent.
 */
const startOpenAiStandIn = (apiKeys: string[]) =>
  startJsonServer((request, url) => {
    const authorization = request.headers.authorization ?? '';
    if (!apiKeys.some((key) => authorization === `Bearer ${key}`))
      return {
        status: 401,
        body: {
          error: {
            message: `Incorrect API key provided: ${authorization}`,
            type: 'invalid_request_error',
            code: 'invalid_api_key',
          },
        },
      };
    if (url.pathname !== '/v1/chat/completions' || request.method !== 'POST')
      return { status: 404, body: { error: { message: 'Not found' } } };
    const { model } = JSON.parse(request.body) as { model: string };
    return { status: 200, body: { choices: [{ message: { role: 'assistant', content: `(${model}) otters` } }] } };
  });

let replicate: ReplicateStandIn;
let replicateTeam: ReplicateStandIn;
let fal: FalStandIn;
let openai: Awaited<ReturnType<typeof startOpenAiStandIn>>;
let files: Awaited<ReturnType<typeof startFileServer>>;
/** A loopback port nothing listens on: a network error. */
let deadUrl: string;
let stack: TestStack;

const settings = (overrides: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv => ({
  PROVIDER_REPLICATE_API_KEY: keys.replicate,
  PROVIDER_REPLICATE_BASE_URL: replicate.url,
  PROVIDER_FAL_API_KEY: keys.fal,
  PROVIDER_FAL_BASE_URL: fal.url,
  PROVIDER_FAL_JWKS_URL: fal.jwksUrl,
  OPENAI_COMPATIBLE_BASE_URL: `${openai.url}/v1`,
  OPENAI_COMPATIBLE_API_KEY: keys.openai,
  OPENAI_COMPATIBLE_TEXT_MODEL: 'chat-model',
  ALLOW_PRIVATE_CALLBACKS: '1',
  ...overrides,
});

/** The step executor as Lambda runs it, over the stack's resources, webhooks to the local API. */
const stepExecutor = (overrides: NodeJS.ProcessEnv = {}) => {
  const env = settings({ PUBLIC_BASE_URL: new URL(stack.baseUrl).origin, ...overrides });
  const deps = { ...stack.deps, executors: testExecutors(env), providers: stageProvidersFromEnv(env) };
  return invokedAs('StepExecutor', makeHandler(deps, { stepTimeoutMs: 20_000 }));
};
type StepHandler = ReturnType<typeof stepExecutor>;
let executor: StepHandler;
/** The first run this file started: its id must be on the log lines its steps wrote. */
let firstJobId: string | undefined;

beforeAll(async () => {
  const capture = (chunk: unknown) => {
    logLines.push(...String(chunk).split('\n').filter(Boolean));
    return true;
  };
  vi.spyOn(process.stdout, 'write').mockImplementation(capture);
  vi.spyOn(process.stderr, 'write').mockImplementation(capture);
  for (const method of ['log', 'info', 'warn', 'error', 'debug', 'trace'] as const) {
    vi.spyOn(console, method).mockImplementation((...args: unknown[]) => capture(format(...args)));
  }

  replicate = await startReplicateStandIn({ apiKey: keys.replicate });
  replicateTeam = await startReplicateStandIn({ apiKey: keys.replicateTeam });
  fal = await startFalStandIn({ apiKey: keys.fal });
  openai = await startOpenAiStandIn([keys.openai, keys.openaiTeam]);
  files = await startFileServer({
    '/out.png': { body: encodePng(makeImage(8, 8, () => [10, 120, 200, 255])), contentType: 'image/png' },
  });
  const dead = createServer().listen(0, '127.0.0.1');
  await once(dead, 'listening');
  deadUrl = `http://127.0.0.1:${(dead.address() as { port: number }).port}`;
  await new Promise((resolve) => dead.close(resolve));

  stack = await startTestStack({
    // The API's own wiring: its webhook route verifies deliveries with the stage's or the team's key.
    executors: testExecutors(settings()),
    providers: stageProvidersFromEnv(settings()),
    secrets: createSecretStore({
      policy: secretPolicyFromEnv({}),
      env: teamSecretEnv,
      secretsManager: new SecretsManagerClient({}),
      ssm: new SSMClient({}),
      now: () => new Date(),
    }),
  });
  executor = stepExecutor();
});

afterAll(async () => {
  await stack?.close();
  for (const standIn of [replicate, replicateTeam, fal, openai, files]) await standIn?.close();
  vi.restoreAllMocks();
});

const api = async (path: string, options: Parameters<typeof call>[2] = {}) => {
  const response = await call(stack.baseUrl, path, options);
  answered.push(JSON.stringify(response.body));
  return response;
};

/** Posts a delivery to a webhook URL as a provider does; the answer is kept with the others. */
const postWebhook = async (url: string, delivery: { headers: Record<string, string>; body: string }) => {
  const response = await fetch(url, { method: 'POST', headers: delivery.headers, body: delivery.body });
  answered.push(await response.text());
  return response.status;
};

/** Delivers every visible step message (delayed polls stay aside), until none is left. */
const drain = async (handler: StepHandler = executor) => {
  for (let round = 0; round < 20; round++) {
    const messages = (await takeStepMessages(stack.deps)).filter((m) => !('check' in m && m.check === 'poll'));
    if (messages.length === 0) return;
    for (const message of messages) expect(await deliver(handler, [stepRecord(message)])).toEqual([]);
  }
};

const prompt = { key: 'prompt', type: 'TextEntry', config: { text: 'otters at dusk' } };
const replicateSteps = [
  prompt,
  {
    key: 'image',
    type: 'ImageGen',
    inputs: ['prompt'],
    config: { provider: 'replicate', model: 'black-forest-labs/flux-schnell' },
  },
];
const falSteps = [
  prompt,
  { key: 'audio', type: 'AudioGen', inputs: ['prompt'], config: { provider: 'fal', model: 'fal-ai/stable-audio' } },
];
const openaiSteps = [
  prompt,
  { key: 'llm', type: 'LlmWorker', inputs: ['prompt'], config: { provider: 'openai-compatible' } },
];

interface Started {
  team: SeededTeam;
  jobId: string;
  workflowId: string;
}

/** A run of `steps` started over HTTP, its steps delivered until they wait or end. */
const startRun = async (steps: unknown[], team?: SeededTeam, handler: StepHandler = executor): Promise<Started> => {
  const owner = team ?? (await seedTeam(stack.deps, { credits: 100 }));
  const workflowId = await createWorkflow(stack, owner, steps);
  const started = await api(`/workflows/${workflowId}/runs`, { key: owner.key, method: 'POST', body: {} });
  expect(started.status, JSON.stringify(started.body)).toBe(200);
  const jobId = started.body.jobId as string;
  firstJobId ??= jobId;
  await drain(handler);
  return { team: owner, jobId, workflowId };
};

const runOf = async ({ team, jobId }: Started) => (await api(`/runs/${jobId}`, { key: team.key })).body;

/** The error of step `nodeId` in the run as GET /runs/{jobId} answers it. */
const stepError = async (started: Started, nodeId: string) => {
  const run = await runOf(started);
  return (run.steps as { node_id: string; status: string; error?: string }[]).find((s) => s.node_id === nodeId);
};

/** The job a stand-in holds for this run's step (found by its webhook URL, which names the run). */
const replicateJob = (standIn: ReplicateStandIn, jobId: string) => {
  const job = [...standIn.jobs.values()].find((j) => String(j.prediction.webhook ?? '').includes(jobId));
  if (!job) throw new Error(`no prediction for run ${jobId}`);
  return { id: job.prediction.id, webhook: String(job.prediction.webhook) };
};
const falJob = (jobId: string) => {
  const job = [...fal.jobs.values()].find((j) => String(j.webhook ?? '').includes(jobId));
  if (!job) throw new Error(`no fal request for run ${jobId}`);
  return { requestId: job.requestId, webhook: String(job.webhook) };
};

/** Delivers the step's message again at once, `times` times (each a busy provider's retry, without its wait). */
const retryNow = async ({ jobId, workflowId }: Started, nodeId: string, times: number, handler: StepHandler) => {
  for (let i = 0; i < times; i++)
    expect(await deliver(handler, [stepRecord({ jobId, workflowId, nodeId })])).toEqual([]);
};

/** Waits for a delayed retry (a 429's Retry-After and jitter, a few seconds) and delivers it. */
const awaitRetry = async (done: () => boolean) => {
  for (let waited = 0; !done() && waited < 15_000; waited += 250) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    await drain();
  }
  expect(done()).toBe(true);
};

/**
 * No text this file captured holds any part of a key: the log lines, the API's answers, and every
 * item in the table.
 */
const expectKeysKept = async () => {
  expect(logLines.filter((line) => line.includes(canary))).toEqual([]);
  expect(answered.filter((body) => body.includes(canary))).toEqual([]);
  const { Items = [] } = await stack.deps.ddb.send(new ScanCommand({ TableName: stack.deps.tableName }));
  expect(Items.filter((item) => JSON.stringify(item).includes(canary))).toEqual([]);
};

describe('Replicate on the stage key (Authorization: Bearer)', () => {
  it("refuses a webhook while the signing secret's read is refused with the key quoted; the error logged carries no key", async () => {
    // The first webhook of the file: the route's adapter has no secret yet and reads it now.
    replicate.failNextWith(401, undefined, `Invalid token in Authorization: Bearer ${keys.replicate}`, /secret$/);
    const url = `${stack.baseUrl}/provider-webhooks/replicate/${crypto.randomUUID()}/image/${'t'.repeat(32)}`;
    const before = logLines.length;
    const status = await postWebhook(url, {
      headers: {
        'content-type': 'application/json',
        'webhook-id': 'msg_1',
        'webhook-timestamp': String(Math.floor(Date.now() / 1000)),
        'webhook-signature': 'v1,AAAA',
      },
      body: '{"id":"x","status":"succeeded"}',
    });
    expect(status).toBe(500);
    const failure = logLines.slice(before).find((line) => line.includes('request failed'));
    // The provider's words reached the log, with the key cut out.
    expect(failure).toContain(
      'replicate answered 401 to the webhook secret: Invalid token in Authorization: Bearer [key]',
    );
    await expectKeysKept();
  });

  it('completes from the signed webhook, and refuses a forged one', async () => {
    const started = await startRun(replicateSteps);
    const prediction = replicateJob(replicate, started.jobId);
    expect(await postWebhook(prediction.webhook, replicate.delivery(prediction.id, { forge: true }))).toBe(401);
    expect((await replicate.complete(prediction.id, [`${files.url}/out.png`]))?.status).toBe(202);
    await drain();
    expect((await runOf(started)).status).toBe('completed');
    await expectKeysKept();
  });

  it('fails the step on a 401 that echoes the Authorization header, and on a 422 that quotes the key', async () => {
    replicate.failNextWith(401, undefined, `Invalid token: Authorization: Bearer ${keys.replicate}`, /predictions$/);
    const unauthorised = await startRun(replicateSteps);
    expect(await stepError(unauthorised, 'image')).toMatchObject({
      status: 'failed',
      error: 'ImageGen: replicate answered 401 to the prediction: Invalid token: Authorization: Bearer [key]',
    });
    replicate.failNextWith(
      422,
      undefined,
      `input.token: ${keys.replicate} is not an input of this model`,
      /predictions$/,
    );
    const refused = await stepError(await startRun(replicateSteps), 'image');
    expect(refused?.error).toBe(
      'ImageGen: replicate answered 422 to the prediction: input.token: [key] is not an input of this model',
    );
    await expectKeysKept();
  });

  it('fails the step when the prediction fails with the key in its error, announced by webhook', async () => {
    const started = await startRun(replicateSteps);
    const prediction = replicateJob(replicate, started.jobId);
    expect((await replicate.fail(prediction.id, `auth header was Bearer ${keys.replicate}`))?.status).toBe(202);
    await drain();
    expect((await stepError(started, 'image'))?.error).toBe('ImageGen: auth header was Bearer [key]');
    await expectKeysKept();
  });

  it('asks again after a 429 that quotes the key, and completes', async () => {
    const before = replicate.jobs.size;
    replicate.failNextWith(429, 1, `Rate limit for token ${keys.replicate}`, /predictions$/);
    const started = await startRun(replicateSteps);
    expect(replicate.jobs.size).toBe(before);
    await awaitRetry(() => replicate.jobs.size === before + 1);
    const prediction = replicateJob(replicate, started.jobId);
    expect((await replicate.complete(prediction.id, [`${files.url}/out.png`]))?.status).toBe(202);
    await drain();
    expect((await runOf(started)).status).toBe('completed');
    expect(logLines.some((line) => line.includes('provider busy') && line.includes(started.jobId))).toBe(true);
    await expectKeysKept();
  });

  it('fails the step after its tries when the provider cannot be reached', async () => {
    const unreachable = stepExecutor({ PROVIDER_REPLICATE_BASE_URL: deadUrl });
    const started = await startRun(replicateSteps, undefined, unreachable);
    await retryNow(started, 'image', 5, unreachable);
    expect((await stepError(started, 'image'))?.error).toMatch(
      /^ImageGen: replicate could not be reached: .+ \(after 6 tries\)$/,
    );
    await expectKeysKept();
  });
});

describe("Replicate on a team's own key (a connection)", () => {
  it('runs on the connection, and fails on its 401 that echoes the header', async () => {
    const team = await seedTeam(stack.deps, { credits: 100 });
    await setConnection(stack.deps, team.teamId, 'replicate', {
      secretRef: 'env:TEAM_REPLICATE_KEY',
      endpoint: replicateTeam.url,
    });
    const started = await startRun(replicateSteps, team);
    const prediction = replicateJob(replicateTeam, started.jobId);
    // Verified with the team's account secret, read with the team's key.
    expect(await postWebhook(prediction.webhook, replicateTeam.delivery(prediction.id, { forge: true }))).toBe(401);
    expect((await replicateTeam.complete(prediction.id, [`${files.url}/out.png`]))?.status).toBe(202);
    await drain();
    expect((await runOf(started)).status).toBe('completed');

    replicateTeam.failNextWith(401, undefined, `Invalid token: Bearer ${keys.replicateTeam}`, /predictions$/);
    const refused = await stepError(await startRun(replicateSteps, team), 'image');
    expect(refused?.error).toBe('ImageGen: replicate answered 401 to the prediction: Invalid token: Bearer [key]');
    expect(new Set(replicateTeam.requests.map((r) => r.headers.authorization))).toEqual(
      new Set([`Bearer ${keys.replicateTeam}`]),
    );
    await expectKeysKept();
  });
});

describe('fal on the stage key (Authorization: Key id:secret)', () => {
  it('fails the step on a 401 that echoes the Authorization header, or a 403 that quotes its secret half', async () => {
    fal.failNextWith(401, undefined, `Invalid Authorization header: Key ${keys.fal}`);
    expect((await stepError(await startRun(falSteps), 'audio'))?.error).toBe(
      'AudioGen: fal answered 401 to the submit: Invalid Authorization header: Key [key]',
    );
    // A provider quoting only the secret half: that half is cut out too.
    const [, secretHalf] = keys.fal.split(':');
    fal.failNextWith(403, undefined, `secret ${secretHalf} is revoked`);
    expect((await stepError(await startRun(falSteps), 'audio'))?.error).toBe(
      'AudioGen: fal answered 403 to the submit: secret [key] is revoked',
    );

    await expectKeysKept();
  });

  it('fails the step when the job fails with the key in its error, announced by webhook; a forged one is refused', async () => {
    const started = await startRun(falSteps);
    const request = falJob(started.jobId);
    expect((await fal.fail(request.requestId, `the header Key ${keys.fal} was logged`))?.status).toBe(202);
    expect(await postWebhook(request.webhook, fal.delivery(request.requestId, { forge: true }))).toBe(401);
    await drain();
    expect((await stepError(started, 'audio'))?.error).toMatch(/^AudioGen: .*the header Key \[key\] was logged/);
    await expectKeysKept();
  });

  it('asks again after a 429 that quotes the key', async () => {
    const before = fal.jobs.size;
    fal.failNextWith(429, 1, `Too many requests for ${keys.fal}`);
    const started = await startRun(falSteps);
    expect(fal.jobs.size).toBe(before);
    await awaitRetry(() => fal.jobs.size === before + 1);
    expect(falJob(started.jobId)).toBeDefined();
    await expectKeysKept();
  });
});

describe('an OpenAI-compatible server (Authorization: Bearer), on the stage key and a team key', () => {
  it('answers on the stage key; a 401 that quotes the header and a 400 that quotes the key fail the step', async () => {
    expect((await runOf(await startRun(openaiSteps))).status).toBe('completed');
    const wrongKey = stepExecutor({ OPENAI_COMPATIBLE_API_KEY: `${keys.openai}-revoked` });
    const unauthorised = await stepError(await startRun(openaiSteps, undefined, wrongKey), 'llm');
    expect(unauthorised?.error).toBe(
      'LlmWorker: openai-compatible answered 401: Incorrect API key provided: Bearer [key]',
    );
    openai.failNextWith(400, { error: { message: `Key ${keys.openai} may not use model chat-model` } });
    expect((await stepError(await startRun(openaiSteps), 'llm'))?.error).toBe(
      'LlmWorker: openai-compatible answered 400: Key [key] may not use model chat-model',
    );
    await expectKeysKept();
  });

  it('counts each failed step and its run by reason: a refused key is provider_auth, a 400 provider_4xx', async () => {
    // The reason's metric is its own EMF line, written when it is counted: on for this test only.
    const switched = process.env.POWERTOOLS_METRICS_DISABLED;
    process.env.POWERTOOLS_METRICS_DISABLED = 'false';
    try {
      const from = logLines.length;
      const wrongKey = stepExecutor({ OPENAI_COMPATIBLE_API_KEY: `${keys.openai}-revoked` });
      await stepError(await startRun(openaiSteps, undefined, wrongKey), 'llm');
      openai.failNextWith(400, { error: { message: 'no such model' } });
      await stepError(await startRun(openaiSteps), 'llm');
      const counted = logLines.slice(from).flatMap((line) => {
        const emf = line.startsWith('{') ? (JSON.parse(line) as Record<string, unknown>) : undefined;
        return emf?._aws ? [[emf.reason, emf.FailedSteps ? 'step' : 'run']] : [];
      });
      expect(counted).toEqual([
        ['provider_auth', 'step'],
        ['provider_auth', 'run'],
        ['provider_4xx', 'step'],
        ['provider_4xx', 'run'],
      ]);
    } finally {
      process.env.POWERTOOLS_METRICS_DISABLED = switched;
    }
  });

  it('asks again after a 429, and fails after its tries when the server cannot be reached', async () => {
    openai.failNextWith(429, { error: { message: `Rate limit reached for ${keys.openai}` } }, 1);
    const busy = await startRun(openaiSteps);
    expect((await runParts(stack.deps, busy.jobId)).steps.get('llm')).toMatchObject({ providerTries: 1 });
    await retryNow(busy, 'llm', 1, executor);
    expect((await runOf(busy)).status).toBe('completed');

    const unreachable = stepExecutor({ OPENAI_COMPATIBLE_BASE_URL: `${deadUrl}/v1` });
    const started = await startRun(openaiSteps, undefined, unreachable);
    await retryNow(started, 'llm', 5, unreachable);
    expect((await stepError(started, 'llm'))?.error).toMatch(
      /^LlmWorker: openai-compatible could not be reached: .+ \(after 6 tries\)$/,
    );
    await expectKeysKept();
  });

  it("runs on a team's own key (a connection), and fails on its 401 without quoting it", async () => {
    const team = await seedTeam(stack.deps, { credits: 100 });
    await setConnection(stack.deps, team.teamId, 'openai-compatible', {
      secretRef: 'env:TEAM_OPENAI_KEY',
      endpoint: `${openai.url}/v1`,
    });
    const calls = openai.requests.length;
    expect((await runOf(await startRun(openaiSteps, team))).status).toBe('completed');
    expect(openai.requests.slice(calls).map((r) => r.headers.authorization)).toEqual([`Bearer ${keys.openaiTeam}`]);
    openai.failNextWith(401, { error: { message: `Incorrect API key provided: Bearer ${keys.openaiTeam}` } });
    expect((await stepError(await startRun(openaiSteps, team), 'llm'))?.error).toBe(
      'LlmWorker: openai-compatible answered 401: Incorrect API key provided: Bearer [key]',
    );
    await expectKeysKept();
  });

  it('fails at once on a team key no header may carry, without quoting it', async () => {
    const team = await seedTeam(stack.deps, { credits: 100 });
    await setConnection(stack.deps, team.teamId, 'openai-compatible', {
      secretRef: 'env:TEAM_OPENAI_BROKEN_KEY',
      endpoint: `${openai.url}/v1`,
    });
    const calls = openai.requests.length;
    const started = await startRun(openaiSteps, team);
    expect((await stepError(started, 'llm'))?.error).toBe(
      'LlmWorker: openai-compatible is not configured: its API key cannot be sent in an HTTP header',
    );
    expect(openai.requests.length).toBe(calls);
    await expectKeysKept();
  });
});

describe('what was captured', () => {
  it('was written at DEBUG, names the runs, and the keys went to the providers', async () => {
    // Not vacuous: the capture saw the functions' lines, with the ids they carry.
    expect(logger.getLevelName()).toBe('DEBUG');
    expect(
      logLines.some((line) => line.includes('"provider job submitted"') && line.includes(String(firstJobId))),
    ).toBe(true);
    expect(logLines.some((line) => line.includes('"level":"ERROR"'))).toBe(true);
    expect(answered.some((body) => body.includes('[key]'))).toBe(true);
    const authorizations = [replicate, replicateTeam, fal, openai].flatMap((s) =>
      s.requests.map((r) => r.headers.authorization),
    );
    for (const header of [
      `Bearer ${keys.replicate}`,
      `Bearer ${keys.replicateTeam}`,
      `Key ${keys.fal}`,
      `Bearer ${keys.openai}`,
      `Bearer ${keys.openaiTeam}`,
    ])
      expect(authorizations).toContain(header);
    // …and nowhere else in what the providers were sent.
    const sent = [replicate, replicateTeam, fal, openai].flatMap((s) =>
      s.requests.map((r) => JSON.stringify({ ...r, headers: { ...r.headers, authorization: '' } })),
    );
    expect(sent.filter((request) => request.includes(canary))).toEqual([]);
    await expectKeysKept();
  });
});
