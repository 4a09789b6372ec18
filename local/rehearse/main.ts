/**
 * `npm run rehearse`: the deploy rehearsal. Synthesizes the app with bundling (as `cdk synth`
 * does), starts DynamoDB Local and fauxqs with a fresh table, queues and bucket, runs every
 * function's bundle from the assembly in its own Node process with the template's settings, and
 * drives the whole flow through them (`flow.ts`), printing each step with pass or fail. Exits 1 on
 * any failure, after printing the failing functions' last log lines. Everything it starts is
 * stopped, on failure too.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startDynamoDb, startSqsS3 } from '../emulators.ts';
import { startEventBridge } from '../eventbridge-emulator.ts';
import { tableOnlyDeps } from '../local-deps.ts';
import { provision } from '../provision.ts';
import { readAssembly, triggeredFunctions } from './assembly.ts';
import { type BundleStack, startBundleStack } from './bundle-stack.ts';
import { type FlowStep, runFlow } from './flow.ts';
import { rehearsalContext, startRehearsalProviders } from './providers.ts';
import { synthesize } from './synth.ts';

const began = performance.now();
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const print = (ok: boolean, name: string, detail: string, ms?: number) =>
  console.log(
    `${ok ? 'PASS' : 'FAIL'}  ${name}${ms === undefined ? '' : ` (${ms} ms)`}\n      ${detail.replaceAll('\n', '\n      ')}`,
  );

const cleanups: (() => Promise<void> | void)[] = [];
const cleanup = async () => {
  for (const stop of cleanups.reverse()) {
    try {
      await stop();
    } catch (error) {
      console.error(`cleanup: ${(error as Error).message}`);
    }
  }
  cleanups.length = 0;
};
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => void cleanup().then(() => process.exit(130)));
}

let failed = false;
let stack: BundleStack | undefined;
let steps: FlowStep[] = [];
try {
  console.log('Deploy rehearsal: the bundles cdk synth builds, run as Lambda would, on the local emulators.\n');
  const synthesized = await synthesize({ context: rehearsalContext });
  cleanups.push(() => synthesized.remove());
  const assembly = readAssembly(synthesized.dir);
  const specs = triggeredFunctions(assembly);
  print(
    true,
    `cdk synth with bundling (stage dev, ${Object.entries(rehearsalContext)
      .map(([key, value]) => `-c ${key}=${value}`)
      .join(' ')})`,
    `${specs.length} functions, ${assembly.routes.length} routes, ${assembly.queueMappings.length} queue mappings, ` +
      `${assembly.schedules.length} schedule(s) in ${synthesized.dir}`,
    synthesized.ms,
  );

  const stateDir = mkdtempSync(join(tmpdir(), 'workflow-run-api-rehearsal-state-'));
  cleanups.push(() => rmSync(stateDir, { recursive: true, force: true }));
  const dynamo = await startDynamoDb({ stateDir });
  cleanups.push(() => dynamo.stop());
  const sqsS3 = await startSqsS3({});
  cleanups.push(() => sqsS3.stop());
  const eventBridge = await startEventBridge({ fileFor: (bus) => join(stateDir, `${bus}.jsonl`) });
  cleanups.push(() => eventBridge.stop());
  const resources = await provision({
    prefix: `rehearsal${randomUUID().slice(0, 8)}`,
    dynamoDbEndpoint: dynamo.endpoint,
    sqsS3Endpoint: sqsS3.endpoint,
    s3Endpoint: sqsS3.s3Endpoint,
  });
  print(true, 'emulators and a fresh table, queues and bucket', `${resources.tableName}, ${resources.bucket}`);

  const providers = await startRehearsalProviders();
  cleanups.push(() => providers.close());
  const startedAt = performance.now();
  stack = await startBundleStack({
    assembly,
    resources,
    eventBridgeEndpoint: eventBridge.endpoint,
    port: providers.port,
    // The documented local switches (never in the template): loopback receivers, the receiver's CA.
    localEnvironment: {
      ALLOW_PRIVATE_CALLBACKS: '1',
      WEBHOOK_CA_FILE: fileURLToPath(new URL('../../test/fixtures/receiver-cert.pem', import.meta.url)),
      // The providers' stand-ins (Bedrock's endpoint, fal's keys, the secret store), and where their webhooks reach the front.
      ...providers.environment,
    },
    onError: (error) => console.error(`  event source: ${(error as Error).message}`),
  });
  const started = stack;
  cleanups.push(() => started.close());
  const inits = [...stack.functions].map(([id, fn]) => `${id} ${fn.initMs} ms`);
  print(
    true,
    'every bundle imports in its own Node process (cold start)',
    inits.join(', '),
    Math.round(performance.now() - startedAt),
  );

  steps = await runFlow({
    stack,
    resources,
    adminDeps: tableOnlyDeps(dynamo.endpoint, resources.tableName),
    providers,
    onStep: (step) => print(step.ok, step.name, step.detail, step.ms),
  });
  failed = steps.some((step) => !step.ok);
} catch (error) {
  failed = true;
  print(false, 'the rehearsal', (error as Error).stack ?? String(error));
}

if (failed && stack) {
  console.log('\nLast lines of the functions that failed or logged an error:');
  for (const [id, fn] of stack.functions) {
    const lines = stack.logs.get(id) ?? [];
    if (fn.invocations.every((i) => i.outcome.ok) && !lines.some((l) => /"level":"(ERROR|CRITICAL)"/.test(l))) continue;
    console.log(`--- ${id}\n${lines.slice(-20).join('\n')}`);
  }
}
await cleanup();
const passed = steps.filter((s) => s.ok).length;
console.log(
  `\n${failed ? 'FAILED' : 'PASSED'}: ${passed} of ${steps.length} flow steps passed in ${seconds(performance.now() - began)}`,
);
process.exit(failed ? 1 : 0);
