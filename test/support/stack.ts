import './test-providers.ts';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, inject } from 'vitest';
import { type StreamTiming, streamTiming } from '../../functions/app/run-stream.ts';
import type { Deps } from '../../functions/deps.ts';
import { toHundredths } from '../../functions/domain/credits.ts';
import { createExecutorRegistry, executorDepsFromEnv } from '../../functions/nodes/executors/index.ts';
import type { ProviderJobs } from '../../functions/nodes/executors/types.ts';
import type { StageProviders } from '../../functions/nodes/providers/stage.ts';
import { createApiKey, type NewApiKey } from '../../functions/store/api-keys.ts';
import { createAgent, createProject, createTeam } from '../../functions/store/tenancy.ts';
import { type LocalApi, startLocalApi } from '../../local/api-gateway.ts';
import { localDeps } from '../../local/local-deps.ts';
import { type LocalResources, provision } from '../../local/provision.ts';
import type { Scope } from '../../platform/routes.ts';
import { readThrough } from './read-through.ts';

export interface TestStack {
  resources: LocalResources;
  deps: Deps;
  api: LocalApi;
  baseUrl: string;
  close(): Promise<void>;
}

/** The real node executors over the given settings (providers, HTTP), never the shell's environment. */
export const testExecutors = (settings: NodeJS.ProcessEnv = {}) =>
  createExecutorRegistry(executorDepsFromEnv(settings));

/**
 * The time a test API gives each route's function. Lambda runs each invocation in its own
 * environment; here every request shares the test's one process and the suite's emulators on a
 * machine that may be loaded, so in a burst a request waits on the others' work: the template's
 * 10 s would fail it with a 500 no deployment would see.
 */
export const testRouteTimeoutMs = 120_000;

/**
 * The run event stream's timing on a test API: the platform's polls, a 5 s cap (not 120 s), so a
 * stream of a run no worker moves ends soon, with `retry:`, as at the cap.
 */
export const testStreamTiming: StreamTiming = { ...streamTiming, capMs: 5_000 };

/**
 * A fresh set of resources (own table, queues and bucket under a random prefix) on the suite's
 * emulators, and the local API server over them: the same path `npm start` serves.
 */
export const startTestStack = async (overrides: Partial<Deps> = {}): Promise<TestStack> => {
  const emulators = inject('emulators');
  // No table stream until a consumer attaches (local/provision.ts, `tableStream`).
  const resources = await provision({ prefix: `t${randomUUID().slice(0, 8)}`, ...emulators, tableStream: false });
  const deps = localDeps(resources, { executors: testExecutors(), ...overrides });
  const api = await startLocalApi({
    deps,
    port: 0,
    host: '127.0.0.1',
    timeoutMs: testRouteTimeoutMs,
    streamTiming: testStreamTiming,
  });
  return {
    resources,
    deps,
    api,
    baseUrl: api.baseUrl,
    close: async () => {
      await api.close();
      deps.ddb.destroy();
    },
  };
};

/**
 * One test stack for the file, started before its tests and closed after them, once `closers` (the
 * servers and pollers its tests started on it) have run, last first. `stack` reads through to the
 * started stack, so a file declares it once at its top.
 */
export const stackPerFile = (overrides: Partial<Deps> = {}) => {
  const closers: (() => Promise<void>)[] = [];
  let started: TestStack | undefined;
  beforeAll(async () => {
    started = await startTestStack(overrides);
  });
  afterAll(async () => {
    for (const close of closers.reverse()) await close();
    await started?.close();
  });
  return { stack: readThrough(() => started, 'the stack'), closers };
};

/**
 * `stackPerFile` for a file whose steps submit provider jobs: the API's webhook route verifies the
 * providers' deliveries with the real job wiring over `settings`, built on its first use (the file's
 * stand-ins listen by then, and `settings` names them).
 */
export const jobsStackPerFile = (settings: () => NodeJS.ProcessEnv, providers?: StageProviders) => {
  let jobs: ProviderJobs | undefined;
  const lazyJobs: ProviderJobs = {
    provider: (key, connection) => {
      jobs ??= testExecutors(settings()).jobs;
      return jobs?.provider(key, connection) ?? Promise.resolve(undefined);
    },
    outcome: () => Promise.reject(new Error('the API does not run steps')),
    publicBaseUrl: undefined,
  };
  return stackPerFile({
    executors: Object.assign(testExecutors(), { jobs: lazyJobs }),
    ...(providers && { providers }),
  });
};

export interface SeededTeam {
  teamId: string;
  projectId: string;
  agentId: string;
  key: string;
  keyId: string;
}

/** A team with credits, a project, an agent and a key (all scopes unless given). */
export const seedTeam = async (
  deps: Deps,
  options: { credits?: number; key?: Omit<NewApiKey, 'teamId'> } = {},
): Promise<SeededTeam> => {
  const { teamId } = await createTeam(deps, {
    name: 'Test team',
    creditsHundredths: toHundredths(options.credits ?? 100),
    perStepLimitHundredths: null,
  });
  const { projectId } = await createProject(deps, { teamId, name: 'Test project', hardCapHundredths: null });
  const { agentId } = await createAgent(deps, { teamId, projectId, name: 'Test agent' });
  const { key, keyId } = await createApiKey(deps, { teamId, ...options.key });
  return { teamId, projectId, agentId, key, keyId };
};

/** `seedTeam` whose key's rate limit no test's burst of calls reaches; `key` adds to that key's settings. */
export const seedUnthrottledTeam = (deps: Deps, credits = 100, key: Omit<NewApiKey, 'teamId'> = {}) =>
  seedTeam(deps, { credits, key: { rateLimitPerMinute: 100_000, ...key } });

export const addKey = (deps: Deps, teamId: string, options: Omit<NewApiKey, 'teamId'> = {}) =>
  createApiKey(deps, { teamId, ...options });

export type { Scope };

/** Fetch against the local API with the key as bearer token. */
export const call = async (
  baseUrl: string,
  path: string,
  options: { key?: string; method?: string; body?: unknown; headers?: Record<string, string> } = {},
) => {
  const response = await fetch(`${baseUrl}${path}`, {
    method: options.method ?? 'GET',
    headers: {
      ...(options.key ? { authorization: `Bearer ${options.key}` } : {}),
      ...(options.body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...options.headers,
    },
    body:
      options.body === undefined
        ? undefined
        : typeof options.body === 'string'
          ? options.body
          : JSON.stringify(options.body),
  });
  const text = await response.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = text;
  }
  return { status: response.status, headers: response.headers, body: body as Record<string, unknown> };
};

/** POST /workflows/{id}/runs with `body` on `key`; its 200 asserted (the answer in the message otherwise). Returns the jobId. */
export const startRunOk = async (stack: TestStack, key: string, workflowId: string, body: object = {}) => {
  const started = await call(stack.baseUrl, `/workflows/${workflowId}/runs`, { key, method: 'POST', body });
  expect(started.status, JSON.stringify(started.body)).toBe(200);
  return started.body.jobId as string;
};

/** Polls the stack's queues with the real worker handlers, as `npm start` does. */
export const startWorkers = async (stack: TestStack, options: { stepTimeoutMs?: number } = {}) => {
  const { startQueuePoller } = await import('../../local/event-source.ts');
  const { stepsQueue } = await import('../../platform/definitions.ts');
  const { makeHandler } = await import('../../functions/workers/step-executor.ts');
  const poller = startQueuePoller({
    endpoint: stack.resources.sqsS3Endpoint,
    queueUrl: stack.resources.queueUrls.Steps,
    definition: stepsQueue,
    handler: makeHandler(stack.deps, options) as never,
    waitSeconds: 1,
  });
  return { stop: () => poller.stop() };
};

/**
 * Opt-in: the operator events' publisher on the stack's table stream (the real handler and its
 * PutEvents call, to the suite's EventBridge emulator), and where the emulator writes its events.
 */
export const startOperatorEventsFor = async (stack: TestStack) => {
  const { startOperatorEvents } = await import('../../local/stream-source.ts');
  const { operatorEventBusName, readDeliveredEvents } = await import('../../local/eventbridge-emulator.ts');
  const { endpoint, eventsDir } = inject('eventBridge');
  const busName = operatorEventBusName(stack.resources.prefix);
  const failures: unknown[] = [];
  const poller = await startOperatorEvents({
    dynamoDbEndpoint: stack.resources.dynamoDbEndpoint,
    tableName: stack.resources.tableName,
    eventBridgeEndpoint: endpoint,
    busName,
    intervalMs: 100,
    onFailure: (failure) => failures.push(failure),
  });
  const file = `${eventsDir}/${busName}.jsonl`;
  return { busName, endpoint, file, failures, read: () => readDeliveredEvents(file), stop: () => poller.stop() };
};

/** A simple workflow created through the API: TextEntry → PromptBuilder → LlmWorker → TextConsole. */
export const chainSteps = [
  { key: 'topic', type: 'TextEntry', config: { text: 'otters', apiInputKey: 'topic' } },
  { key: 'prompt', type: 'PromptBuilder', config: { template: 'Write about {{0}}' }, inputs: ['topic'] },
  { key: 'llm', type: 'LlmWorker', inputs: ['prompt'] },
  { key: 'show', type: 'TextConsole', inputs: ['llm'] },
];

export const createWorkflow = async (
  stack: TestStack,
  team: SeededTeam,
  steps: unknown[] = chainSteps,
  name = 'Flow',
) => {
  const response = await call(stack.baseUrl, '/workflows', {
    key: team.key,
    method: 'POST',
    body: { name, steps, agentId: team.agentId },
  });
  if (response.status !== 201) throw new Error(`create workflow: ${response.status} ${JSON.stringify(response.body)}`);
  return response.body.workflowId as string;
};

/** Polls GET /runs/{jobId} until the run ends (or the deadline passes: generous, as on a loaded machine). */
export const waitForRun = async (stack: TestStack, key: string, jobId: string, timeoutMs = 60_000) => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const response = await call(stack.baseUrl, `/runs/${jobId}`, { key });
    const status = response.body.status as string;
    if (['completed', 'failed', 'cancelled', 'stopped'].includes(status)) return response;
    if (Date.now() > deadline) throw new Error(`run ${jobId} still ${status}: ${JSON.stringify(response.body)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
};

/** A test stack whose steps queue is polled by the real step executor; `close` stops both. */
export const startWorkingStack = async (overrides: Partial<Deps> = {}): Promise<TestStack> => {
  const stack = await startTestStack(overrides);
  const workers = await startWorkers(stack);
  return {
    ...stack,
    close: async () => {
      await workers.stop();
      await stack.close();
    },
  };
};
