import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { Context } from 'aws-lambda';
import type { Deps } from '../functions/deps.ts';
import { hashApiKey, isKeyUsable } from '../functions/domain/api-key.ts';
import { toHundredths } from '../functions/domain/credits.ts';
import { createApiKey, findApiKeyByHash, revokeApiKey } from '../functions/store/api-keys.ts';
import { createAgent, createProject, createTeam, getTeam } from '../functions/store/tenancy.ts';
import { stageDefaults } from '../lib/stages.ts';
import { pythonRunner, workers } from '../lib/workers.ts';
import { dispatcherSchedule, envNames, queues } from '../platform/definitions.ts';
import { startLocalApi } from './api-gateway.ts';
import { isPortFree, startDynamoDb, startSqsS3 } from './emulators.ts';
import { type SqsHandler, startQueuePoller, startSchedule } from './event-source.ts';
import { operatorEventBusName, operatorEventsFile, startEventBridge } from './eventbridge-emulator.ts';
import { startFilesEdge } from './files-edge.ts';
import { startLambdaEmulator } from './lambda-emulator.ts';
import { localTls } from './local-ca.ts';
import { localDeps, localEnvironment, pythonRunnerEnvironment } from './local-deps.ts';
import { provision } from './provision.ts';
import { startLocalPythonRunner } from './python-runner.ts';
import {
  demoFile,
  dynamoDbDataDir,
  fauxqsDataDir,
  localPrefix,
  portsFile,
  readRunningStack,
  savedS3Port,
  stackFile,
  stateDir,
  tlsDir,
} from './state.ts';
import { startLifecycleEvents, startOperatorEvents } from './stream-source.ts';

/**
 * `npm start`: the whole service on one machine. DynamoDB Local and fauxqs (SQS + S3) on loopback,
 * resources from the CDK definitions, the API on http://127.0.0.1:3000/api/v1, queue pollers in
 * place of event source mappings, the table's stream read for the operator events (appended to
 * `.local/events.jsonl` by a local EventBridge), and the dispatcher ticked like its EventBridge rule. With
 * `--bundles` the same, served by the bundles `cdk synth` builds instead of the source modules.
 */

const { values } = parseArgs({
  options: {
    reset: { type: 'boolean' },
    bundles: { type: 'boolean' },
    // A new demo key, the old one revoked (the key is otherwise kept across starts).
    'new-key': { type: 'boolean' },
    // Webhooks and HTTP nodes may reach loopback, and the webhook sender trusts the local CA.
    'private-callbacks': { type: 'boolean' },
  },
  strict: true,
});

const running = readRunningStack();
if (running) {
  console.error(
    `The local stack is already running (pid ${running.pid}) at ${running.baseUrl}.\n` +
      `Stop it with Ctrl-C in its terminal (or \`kill ${running.pid}\`) before starting another.`,
  );
  process.exit(1);
}
if (values.reset) rmSync(stateDir, { recursive: true, force: true });
mkdirSync(stateDir, { recursive: true });

const port = Number(process.env.PORT ?? 3000);
const host = process.env.HOST ?? '127.0.0.1';
const optionalPort = (name: string) => (process.env[name] ? Number(process.env[name]) : undefined);
/** How often the dispatcher ticks: DISPATCH_INTERVAL_SECONDS, else its rule's rate. */
const dispatchIntervalMs = (ruleSeconds: number) => Number(process.env.DISPATCH_INTERVAL_SECONDS ?? ruleSeconds) * 1000;

const dynamo = await startDynamoDb({ port: optionalPort('DYNAMODB_PORT'), dataDir: dynamoDbDataDir, stateDir });
// The S3 port of the last start, while it is free: upload URLs minted before a restart name it.
const lastS3Port = savedS3Port();
const s3Port =
  optionalPort('S3_PORT') ?? (lastS3Port !== undefined && (await isPortFree(lastS3Port)) ? lastS3Port : undefined);
if (lastS3Port !== undefined && s3Port !== lastS3Port && !process.env.S3_PORT)
  console.warn(`S3's port ${lastS3Port} is in use: upload URLs from before this start no longer work.`);
const sqsS3 = await startSqsS3({
  port: optionalPort('FAUXQS_PORT'),
  s3Port,
  dataDir: fauxqsDataDir,
});
writeFileSync(portsFile, JSON.stringify({ s3: Number(new URL(sqsS3.s3Endpoint).port) }, null, 2));
// Every bus's events go to one file: locally there is only the operator event bus.
const eventBridge = await startEventBridge({
  port: optionalPort('EVENTBRIDGE_PORT'),
  fileFor: () => operatorEventsFile,
});
const eventBusName = operatorEventBusName(localPrefix);
const resources = await provision({
  prefix: localPrefix,
  dynamoDbEndpoint: dynamo.endpoint,
  sqsS3Endpoint: sqsS3.endpoint,
  s3Endpoint: sqsS3.s3Endpoint,
});
// PythonSandbox steps: the PythonRunner handler behind a local Lambda Invoke API, as the step executor calls it.
// The handler is here, the Python is not: each run lives in a child process of its own, whose memory
// limit kills it alone (functions/python/box.ts), never this stack; several run at once (local/python-runner.ts).
const { handler: pythonRunnerHandler } = startLocalPythonRunner();
const lambda = await startLambdaEmulator({ [pythonRunner.id]: pythonRunnerHandler });
// Downloads as every stage serves them: through a files front that adds X-Content-Type-Options:
// nosniff over the bucket's answers (lib/edge-stack.ts, FilesDistribution; local/files-edge.ts).
const filesEdge = await startFilesEdge({ upstream: resources.s3Endpoint, port: optionalPort('FILES_PORT') });
Object.assign(process.env, localEnvironment(resources), pythonRunnerEnvironment(lambda.endpoint), {
  [envNames.filesBaseUrl]: filesEdge.url,
  // Refusals of a loopback address say how to allow it (functions/http-client/address-vet.ts); never on a deployed stage.
  LOCAL_STACK: '1',
  AWS_ENDPOINT_URL_EVENTBRIDGE: eventBridge.endpoint,
  [envNames.operatorEventBus]: eventBusName,
  // Where providers' webhooks reach this server: its own address unless PUBLIC_BASE_URL says otherwise.
  ...(process.env[envNames.publicBaseUrl] || port === 0 ? {} : { [envNames.publicBaseUrl]: `http://${host}:${port}` }),
  // The dev stage's cap on one team's steps in flight, as a deployed dev stage has it (docs/operations.md).
  [envNames.teamStepsInFlight]: process.env[envNames.teamStepsInFlight] ?? String(stageDefaults.dev.teamStepsInFlight),
});
// `--private-callbacks` (or ALLOW_PRIVATE_CALLBACKS=1 as before): loopback receivers, over https
// with a certificate of the local CA the webhook sender trusts (local/local-ca.ts).
const privateCallbacks = values['private-callbacks'] === true || process.env.ALLOW_PRIVATE_CALLBACKS === '1';
const tls = privateCallbacks ? await localTls(tlsDir) : undefined;
if (tls) {
  Object.assign(process.env, {
    ALLOW_PRIVATE_CALLBACKS: '1',
    WEBHOOK_CA_FILE: process.env.WEBHOOK_CA_FILE ?? tls.caFile,
  });
}
const deps = localDeps(resources);

/**
 * The demo tenancy is created once and kept, and so is its key (in `.local/demo.json`, this
 * machine's state only), so scripts keep working across restarts; `--new-key` replaces it (the old
 * one revoked), `--reset` starts everything afresh. A key that no longer works (revoked or expired
 * with the admin CLI) is replaced.
 */
const seedDemo = async (deps: Deps) => {
  let demo = existsSync(demoFile)
    ? (JSON.parse(readFileSync(demoFile, 'utf8')) as {
        teamId: string;
        projectId: string;
        agentId: string;
        keyId?: string;
        key?: string;
      })
    : undefined;
  if (!demo || !(await getTeam(deps, demo.teamId))) {
    const { teamId } = await createTeam(deps, {
      name: 'Demo team',
      creditsHundredths: toHundredths(1000),
      perStepLimitHundredths: null,
    });
    const { projectId } = await createProject(deps, { teamId, name: 'Demo project', hardCapHundredths: null });
    const { agentId } = await createAgent(deps, { teamId, projectId, name: 'Demo agent' });
    demo = { teamId, projectId, agentId };
  }
  if (demo.key && !values['new-key']) {
    const stored = await findApiKeyByHash(deps, hashApiKey(demo.key));
    if (stored && stored.teamId === demo.teamId && isKeyUsable(stored, new Date())) {
      return { ...demo, key: demo.key, kept: true };
    }
  }
  if (demo.keyId) await revokeApiKey(deps, demo.keyId);
  const { keyId, key } = await createApiKey(deps, { teamId: demo.teamId });
  writeFileSync(demoFile, JSON.stringify({ ...demo, keyId, key }, null, 2), { mode: 0o600 });
  return { ...demo, key, kept: false };
};

const stopAll: (() => Promise<void> | void)[] = [
  () => filesEdge.stop(),
  () => lambda.stop(),
  () => eventBridge.stop(),
  () => sqsS3.stop(),
  () => dynamo.stop(),
];
const shutdown = async (code: number) => {
  rmSync(stackFile, { force: true });
  for (const stop of stopAll) {
    try {
      await stop();
    } catch {
      // Keep stopping the rest: nothing may be left running.
    }
  }
  process.exit(code);
};
process.once('SIGINT', () => void shutdown(0));
process.once('SIGTERM', () => void shutdown(0));

/** The API server and the workers over the source handler modules, in this process. */
const startFromSource = async (): Promise<string> => {
  let api: Awaited<ReturnType<typeof startLocalApi>>;
  try {
    api = await startLocalApi({ deps, port, host });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') {
      throw new Error(`Port ${port} on ${host} is in use by another program: set PORT to another port.`);
    }
    throw error;
  }
  stopAll.unshift(() => api.close());
  const logError = (error: unknown) => console.error('worker error:', (error as Error).message);
  for (const worker of workers) {
    const module = (await import(new URL(`../${worker.entry}`, import.meta.url).href)) as {
      makeHandler?: (deps: Deps) => SqsHandler;
      handler: SqsHandler;
    };
    if (worker.trigger.kind === 'stream' && worker.trigger.mapping === 'LifecycleEvents') {
      // The lifecycle webhook events' consumer: its own mapping, its own checkpoints.
      const stream = await startLifecycleEvents({
        dynamoDbEndpoint: dynamo.endpoint,
        deps,
        checkpointFile: join(stateDir, 'lifecycle-stream-checkpoint.json'),
        onFailure: (failure) =>
          console.error('lifecycle events not opened after every retry:', JSON.stringify(failure)),
        onError: logError,
      });
      stopAll.unshift(() => stream.stop());
      continue;
    }
    if (worker.trigger.kind === 'stream') {
      // Where the stream was read to is kept, so a restart goes on from there (as the mapping does).
      const stream = await startOperatorEvents({
        dynamoDbEndpoint: dynamo.endpoint,
        tableName: resources.tableName,
        eventBridgeEndpoint: eventBridge.endpoint,
        busName: eventBusName,
        checkpointFile: join(stateDir, 'stream-checkpoint.json'),
        onFailure: (failure) => console.error('operator events not put after every retry:', JSON.stringify(failure)),
        onError: logError,
      });
      stopAll.unshift(() => stream.stop());
      continue;
    }
    const handler = module.makeHandler ? module.makeHandler(deps) : module.handler;
    if (worker.trigger.kind === 'queue') {
      const queueId = worker.trigger.queue;
      const definition = queues.find((q) => q.id === queueId);
      if (!definition) throw new Error(`No queue definition ${queueId}`);
      const poller = startQueuePoller({
        endpoint: sqsS3.endpoint,
        queueUrl: resources.queueUrls[queueId],
        definition,
        handler,
        onError: logError,
      });
      stopAll.unshift(() => poller.stop());
    } else {
      const schedule = startSchedule({
        intervalMs: dispatchIntervalMs(dispatcherSchedule.rateMinutes * 60),
        handler: handler as (e: unknown, c: Context) => Promise<unknown>,
        onError: logError,
      });
      stopAll.unshift(() => schedule.stop());
    }
  }
  return api.baseUrl;
};

/**
 * `--bundles`: what `cdk deploy` would upload, run as Lambda runs it (the deploy rehearsal's stack,
 * `local/rehearse/bundle-stack.ts`): synthesize with bundling, then each function's bundle in its
 * own Node process with the template's settings, behind the template's routes, event source
 * mappings and schedule.
 */
const startFromBundles = async (): Promise<string> => {
  const { synthesize } = await import('./rehearse/synth.ts');
  const { readAssembly } = await import('./rehearse/assembly.ts');
  const { localSwitches, startBundleStack } = await import('./rehearse/bundle-stack.ts');
  console.log('Synthesizing with bundling (cdk synth)…');
  const synthesized = await synthesize();
  stopAll.unshift(() => synthesized.remove());
  const assembly = readAssembly(synthesized.dir);
  const [schedule] = assembly.schedules;
  try {
    const stack = await startBundleStack({
      assembly,
      resources,
      localEnvironment: localSwitches(process.env),
      port,
      host,
      scheduleIntervalMs: schedule ? dispatchIntervalMs(schedule.intervalSeconds) : undefined,
      eventBridgeEndpoint: eventBridge.endpoint,
      onLog: (id, line) => console.log(`[${id}] ${line}`),
      onError: (error) => console.error('event source error:', (error as Error).message),
    });
    stopAll.unshift(() => stack.close());
    return stack.baseUrl;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') {
      throw new Error(`Port ${port} on ${host} is in use by another program: set PORT to another port.`);
    }
    throw error;
  }
};

try {
  const demo = await seedDemo(deps);
  const baseUrl = values.bundles ? await startFromBundles() : await startFromSource();
  writeFileSync(stackFile, JSON.stringify({ pid: process.pid, baseUrl, resources }, null, 2));
  console.log(
    [
      '',
      'Workflow Run API is running locally.',
      '',
      `  Base URL:      ${baseUrl}`,
      `  Demo API key:  ${demo.key}   (${demo.kept ? 'kept from the last start' : 'new'}; \`npm start -- --new-key\` replaces it)`,
      `  Demo team:     ${demo.teamId}`,
      `  Demo project:  ${demo.projectId}`,
      `  Demo agent:    ${demo.agentId}`,
      '',
      `  Try: curl -H "Authorization: Bearer ${demo.key}" ${baseUrl}/workflows`,
      `       curl ${baseUrl}/openapi.json`,
      '',
      ...(tls
        ? [
            '  Private callbacks: on. Webhooks and HTTP nodes may reach 127.0.0.1 and localhost; a local https',
            '  receiver serves this certificate and key, which the webhook sender trusts:',
            `    cert: ${tls.certFile}`,
            `    key:  ${tls.keyFile}`,
            `    CA:   ${process.env.WEBHOOK_CA_FILE}`,
          ]
        : [
            '  Private callbacks: off (webhooks and HTTP nodes reach public addresses only).',
            '  `npm start -- --private-callbacks` lets them reach a receiver on this machine.',
          ]),
      '',
      `Data persists in .local/ (npm start -- --reset wipes it). Ctrl-C stops everything.`,
      '',
    ].join('\n'),
  );
} catch (error) {
  console.error(`npm start failed: ${(error as Error).message}`);
  await shutdown(1);
}
