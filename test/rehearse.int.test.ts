/**
 * The deploy rehearsal's flow, the one `npm run rehearse` runs: the app synthesized with bundling,
 * each function's bundle run from the assembly in its own Node process with the template's handler,
 * settings and environment, and every function invoked through those processes (a key, workflows,
 * runs with their steps, webhooks, redelivery and file, deferred runs dispatched by the rule's tick).
 */
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { pythonRunner, workers } from '../lib/workers.ts';
import { operatorEventBusName, readDeliveredEvents } from '../local/eventbridge-emulator.ts';
import { tableOnlyDeps } from '../local/local-deps.ts';
import { type LocalResources, provision } from '../local/provision.ts';
import { type Assembly, readAssembly, templateResolver, triggeredFunctions } from '../local/rehearse/assembly.ts';
import { type BundleStack, startBundleStack } from '../local/rehearse/bundle-stack.ts';
import { runFlow } from '../local/rehearse/flow.ts';
import {
  falParameter,
  type RehearsalProviders,
  rehearsalContext,
  replicateParameter,
  startRehearsalProviders,
} from '../local/rehearse/providers.ts';
import { type Synthesized, synthesize } from '../local/rehearse/synth.ts';
import { queues } from '../platform/definitions.ts';
import { catalogueDefaults } from '../platform/model-defaults.ts';
import { routes } from '../platform/routes.ts';
import { seedTeam } from './support/stack.ts';
import { sdkTries, startThrottlingProxy } from './support/throttled-dynamo.ts';

let synthesized: Synthesized | undefined;
let assembly: Assembly;
let resources: LocalResources;
let stack: BundleStack | undefined;
let providers: RehearsalProviders | undefined;

beforeAll(async () => {
  synthesized = await synthesize({ context: rehearsalContext });
  assembly = readAssembly(synthesized.dir);
  resources = await provision({ prefix: `r${randomUUID().slice(0, 8)}`, ...inject('emulators') });
  providers = await startRehearsalProviders();
  stack = await startBundleStack({
    assembly,
    resources,
    eventBridgeEndpoint: inject('eventBridge').endpoint,
    port: providers.port,
    localEnvironment: {
      ALLOW_PRIVATE_CALLBACKS: '1',
      WEBHOOK_CA_FILE: fileURLToPath(new URL('./fixtures/receiver-cert.pem', import.meta.url)),
      ...providers.environment,
    },
  });
}, 120_000);

afterAll(async () => {
  await stack?.close();
  await providers?.close();
  synthesized?.remove();
});

describe('the synthesized assembly', () => {
  it('has a bundle, handler and settings for every route and worker', () => {
    const functions = triggeredFunctions(assembly);
    // The PythonRunner too: the step executor invokes it by the name its environment holds.
    expect(functions.map((f) => f.id).sort()).toEqual(
      [...routes.map((r) => r.id), ...workers.map((w) => w.id), pythonRunner.id].sort(),
    );
    for (const fn of functions) {
      expect(fn.handler).toBe('index.handler');
      expect(existsSync(join(fn.codeDir, 'index.mjs')), fn.id).toBe(true);
      expect(fn.runtime).toBe('nodejs24.x');
    }
    // And the CORS preflight (OPTIONS) of each route that accepts a run token, on the HTTP API or the function URL.
    expect(assembly.routes).toHaveLength(routes.length + routes.filter((r) => r.runToken).length);
    expect(assembly.schedules.map((s) => s.intervalSeconds)).toEqual([60]);
  });

  it('maps each queue with its batch size and partial batch failures', () => {
    expect(assembly.queueMappings).toHaveLength(queues.length);
    for (const mapping of assembly.queueMappings) {
      expect(mapping).toMatchObject({ batchSize: 10, maximumBatchingWindowSeconds: 0, reportBatchItemFailures: true });
    }
  });

  it("resolves every function's environment to the local table, queues and bucket", () => {
    const resolver = templateResolver(assembly, resources);
    for (const fn of triggeredFunctions(assembly)) {
      // The Python runner is told none of the stage's resources (on Lambda its network wall is the isolated VPC).
      if (fn.id === pythonRunner.id) {
        expect(resolver.environmentOf(fn)).toEqual({
          NODE_OPTIONS: '--enable-source-maps',
          PYTHON_NETWORK_NAMESPACE: 'optional',
        });
        continue;
      }
      expect(resolver.environmentOf(fn)).toMatchObject({
        TABLE_NAME: resources.tableName,
        STEPS_QUEUE_URL: resources.queueUrls.Steps,
        WEBHOOKS_QUEUE_URL: resources.queueUrls.Webhooks,
        LIBRARY_BUCKET: resources.bucket,
        SERVICE_STAGE: 'dev',
      });
    }
    expect(() => resolver.resolve('WorkflowRunApi-dev-Api', { Ref: 'NoSuchResource' })).toThrow(/no such resource/);
  });
});

describe('the whole flow through the bundles', () => {
  it('invokes every function of the assembly, through the routes, the mappings and the rule, none failing', async () => {
    if (!stack) throw new Error('the bundles did not start');
    const steps = await runFlow({
      stack,
      resources,
      adminDeps: tableOnlyDeps(resources.dynamoDbEndpoint, resources.tableName),
      ...(providers ? { providers } : {}),
    });
    const failed = steps.filter((s) => !s.ok);
    const logs = failed.length
      ? [...stack.logs].map(([id, lines]) => `--- ${id}\n${lines.slice(-10).join('\n')}`).join('\n')
      : '';
    expect(failed, logs).toEqual([]);
    // Past Lambda's loop guard (16 hops along one trace), provider polls among the hops: the chain
    // step reports what it counted on the mapping (docs/operations.md, "Long runs and Lambda's loop guard").
    const chain = steps.find((s) => s.name.includes('more than 16 queued hops with provider polls'));
    const [, hops, polls] = /^(\d+) queued hops, one at a time, (\d+) of them polls/.exec(chain?.detail ?? '') ?? [];
    expect(Number(hops)).toBeGreaterThan(16);
    expect(Number(polls)).toBeGreaterThan(0);
    // The flow's last step checks that every function of the assembly was invoked: a function added
    // to the stack fails this test until the flow exercises it.
    expect(steps.at(-1)?.name).toBe('every function was invoked, none failed unexpectedly');
    // The runner's own first invocation (loading Pyodide), the flow's PythonSandbox step, the smoke's python check.
    expect(stack.functions.get(pythonRunner.id)?.invocations.map((i) => i.outcome.ok)).toEqual([true, true, true]);
    // Replicate and fal ran on the stage's own credentials, as deployed: the template's
    // PROVIDER_SECRETS names their SSM parameters, and the bundles read them decrypted from the
    // emulated SSM (the step executor's container, and the webhook route's for the signing keys).
    const environment = stack.functions.get('StepExecutor')?.options.environment;
    expect(environment?.PROVIDER_SECRETS).toBe(
      JSON.stringify({ replicate: `ssm:${replicateParameter}`, fal: `ssm:${falParameter}` }),
    );
    expect(environment?.PROVIDER_REPLICATE_API_KEY).toBeUndefined();
    expect(environment?.PROVIDER_FAL_API_KEY).toBeUndefined();
    const reads = providers?.secretStore.requests.filter((r) => r.target === 'AmazonSSM.GetParameter') ?? [];
    expect(new Set(reads.map((r) => r.name))).toEqual(new Set([replicateParameter, falParameter]));
    expect(reads.every((r) => r.withDecryption === true)).toBe(true);
    // The smoke step ran each model type's catalogue default on its provider's stand-in: Bedrock on the
    // role (the template's BEDROCK_MODELS grant, no secret), each InvokeModel SigV4-signed for bedrock;
    // fal's queue API with the stage's key.
    const defaults = (provider: string) =>
      new Set(Object.values(catalogueDefaults).flatMap((d) => (d.provider === provider ? [d.model] : [])));
    expect(environment?.BEDROCK_MODELS?.split(',').sort()).toEqual([...defaults('bedrock')].sort());
    const invoked = new Set(providers?.bedrock.requests.map((r) => r.modelId));
    for (const model of defaults('bedrock')) expect(invoked, model).toContain(model);
    expect(
      providers?.bedrock.requests.every((r) => /\/bedrock\/aws4_request/.test(String(r.headers.authorization))),
    ).toBe(true);
    const submitted = new Set([...(providers?.fal.jobs.values() ?? [])].map((j) => j.appId));
    expect(submitted).toEqual(defaults('fal'));
  }, 480_000);

  it("keeps a step's code in its box in the PythonRunner's bundle too: the review's escapes get nothing", async () => {
    const runner = stack?.functions.get(pythonRunner.id);
    if (!runner) throw new Error('no PythonRunner in the assembly');
    // The function's process holds the (emulators') AWS credentials, as Lambda's would.
    expect(runner.options.environment.AWS_SECRET_ACCESS_KEY).toBeTruthy();
    const python = async (code: string) => {
      const outcome = await runner.invoke({ code, inputs: [], timeoutMs: 10_000 });
      if (!outcome.ok) throw new Error(JSON.stringify(outcome.error));
      return outcome.result as { ok: boolean; result?: unknown; error?: string };
    };
    const escapes = [
      'import sys\nresult = str(sys.modules["pyodide_js._api"].tests.Function("return JSON.stringify(process.env)")())',
      'import sys\nfor name in ["pyodide_js", "pyodide_js._api"]:\n    del sys.modules[name]\nimport pyodide_js._api as api\nresult = str(api.config.constructor)',
      'from pyodide.ffi import to_js\nresult = str(to_js({}).constructor.constructor("return import(\'node:fs\')")())',
      'result = open("/proc/self/environ").read()',
    ];
    for (const code of escapes) expect(await python(code), code).toMatchObject({ ok: false, error: 'exception' });
    const environment = await python('import os\nresult = dict(os.environ)');
    expect(environment.ok).toBe(true);
    expect(JSON.stringify(environment.result)).not.toMatch(/AWS_|LAMBDA|_HANDLER/);
    expect(JSON.stringify(environment.result)).not.toContain(runner.options.environment.AWS_SECRET_ACCESS_KEY);
  }, 180_000);

  it("puts the runs' operator events through the stream mapping and the EventPublisher's bundle", async () => {
    const file = join(inject('eventBridge').eventsDir, `${operatorEventBusName(resources.prefix)}.jsonl`);
    const deadline = Date.now() + 60_000;
    let types: string[] = [];
    while (Date.now() < deadline) {
      types = readDeliveredEvents(file).map((e) => e['detail-type']);
      if (types.includes('Run Finished') && types.includes('Deferred Run Dispatched')) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(types).toEqual(expect.arrayContaining(['Run Started', 'Run Finished', 'Deferred Run Dispatched']));
    expect(stack?.functions.get('EventPublisher')?.invocations.every((i) => i.outcome.ok)).toBe(true);
  }, 180_000);
});

describe('limits through the bundles', () => {
  const post = (baseUrl: string, path: string, key: string, body: string) =>
    fetch(`${baseUrl}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body,
    });
  const padded = (size: number) => `{"name":"${'x'.repeat(size - 11)}"}`;

  it('an oversized body answers the documented 413 from the bundle; past Lambda’s 6 MB, API Gateway’s own answer', async () => {
    if (!stack) throw new Error('the bundles did not start');
    const { key } = await seedTeam(tableOnlyDeps(resources.dynamoDbEndpoint, resources.tableName), { credits: 1 });
    const over = await post(stack.baseUrl, '/workflows', key, padded(256 * 1024 + 1));
    expect([over.status, await over.json()]).toEqual([
      413,
      { error: `Request body too large: at most ${256 * 1024} bytes` },
    ]);
    const invocations = () => stack?.functions.get('CreateWorkflow')?.invocations.length;
    const before = invocations();
    const refused = await post(stack.baseUrl, '/workflows', key, padded(6 * 1024 * 1024 + 1));
    expect([refused.status, await refused.text()]).toEqual([500, '{"message":"Internal Server Error"}']);
    // Refused before the function: the bundle never saw it.
    expect(invocations()).toBe(before);
  }, 60_000);

  it('a throttled key read answers 503 with Retry-After from the bundle, never 500 or 401', async () => {
    if (!stack || !providers) throw new Error('the bundles did not start');
    const proxy = await startThrottlingProxy(
      resources.dynamoDbEndpoint,
      'ThrottlingException',
      (operation, body) => operation === 'GetItem' && body.includes('"APIKEY#'),
    );
    const busy = await startBundleStack({
      assembly,
      resources,
      port: 0,
      localEnvironment: { AWS_ENDPOINT_URL_DYNAMODB: proxy.endpoint, ...providers.environment },
    });
    try {
      const { key } = await seedTeam(tableOnlyDeps(resources.dynamoDbEndpoint, resources.tableName), { credits: 1 });
      for (const path of ['/workflows', '/runs']) {
        const answer = await fetch(`${busy.baseUrl}${path}`, { headers: { authorization: `Bearer ${key}` } });
        expect([answer.status, await answer.json()], path).toEqual([503, { error: 'Service busy; try again shortly' }]);
        expect(answer.headers.get('retry-after')).toBe('1');
      }
      // The bundle's own SDK tried each read, and the service added no tries of its own.
      expect(proxy.state.sent).toBe(2 * (await sdkTries()));
    } finally {
      await busy.close();
      await proxy.close();
    }
  }, 120_000);
});
