/**
 * Cold starts, per function, against floors measured in the same run (bench/README.md, "Cold
 * starts"). Each function's bundle is built as deployed (`lib/bundling.ts`); its floor is a bundle
 * built the same way that imports only the same AWS SDK packages, builds their clients and does
 * nothing else. Every sample is a fresh `node`: the import is timed, then the first invocation:
 * for the function, its real first request against the emulators; for the floor, the same AWS
 * commands that request sent (recorded by the AWS command log from a run of the function's source
 * in a fresh process: bench/first-request.ts), in the same order, bare. Function and floor take turns, round by round, so
 * drift and other load hit both alike. The same is done for the bundle built with the other SDK
 * source (bundled into the function or the runtime's), for the decision in docs/decisions.md.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { CreateQueueCommand, DeleteMessageBatchCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import type { APIGatewayProxyEventV2, SQSEvent } from 'aws-lambda';
import { fileLinkFor } from '../functions/app/file-links.ts';
import type { Deps } from '../functions/deps.ts';
import { assetVersion } from '../functions/docs/manifest.ts';
import { endpointDeliveryId } from '../functions/domain/webhook-endpoints.ts';
import { createExecutorRegistry, executorDeps } from '../functions/nodes/executors/index.ts';
import { encodePng, makeImage } from '../functions/nodes/media/png.ts';
import { stageProvidersFromEnv } from '../functions/nodes/providers/stage.ts';
import { putRunFile } from '../functions/store/files.ts';
import { failStep, readRunItem } from '../functions/store/run/index.ts';
import { createAgent } from '../functions/store/tenancy.ts';
import {
  abandonEndpointDelivery,
  openEndpointDelivery,
  readEndpointDelivery,
} from '../functions/store/webhook-endpoints.ts';
import { makeHandler as makeStepExecutor } from '../functions/workers/step-executor.ts';
import { makeHandler as makeWebhookWorker } from '../functions/workers/webhook-delivery.ts';
import { workers } from '../lib/workers.ts';
import { startLocalApi } from '../local/api-gateway.ts';
import type { AwsCommandShape } from '../local/aws-command-log.ts';
import { toRecord } from '../local/event-source.ts';
import { operatorEventBusName, startEventBridge } from '../local/eventbridge-emulator.ts';
import { invokedAs } from '../local/invocation.ts';
import { localDeps, localEnvironment } from '../local/local-deps.ts';
import type { LocalResources } from '../local/provision.ts';
import { emulatorSdkEnvironment } from '../local/rehearse/bundle-stack.ts';
import { basePath, type Route, type RouteId, routeById, routes } from '../platform/routes.ts';
import { startReplicateStandIn } from '../test/stand-ins/replicate.ts';
import { receiverCa, startReceiver } from '../test/support/webhook-receiver.ts';
import {
  type BuiltBundle,
  buildBundle,
  buildFloorBundle,
  type ColdStart,
  coldStart,
  deployedSdkSource,
  floorObjectKey,
  floorQueueVariable,
  otherSdkSource,
} from './bundles.ts';
import { heading, line, note } from './report.ts';
import { chainSteps, seedRunsTeam } from './seed.ts';
import { kb, median, ms, type Targets } from './stats.ts';

const execFileAsync = promisify(execFile);

/** The targets: against the floor of the same SDK packages, and the size of the bundle alone. */
export const coldStartTargets = { importRatio: 1.3, firstRequestRatio: 1.3, bundleBytes: 600 * 1024 } as const;

export interface ColdStartContext {
  repoRoot: string;
  /** Where bundles, floors and event files are written (inside the repository; removed afterwards). */
  outDir: string;
  resources: LocalResources;
  targets: Targets;
  cleanups: (() => Promise<void> | void)[];
  /** Fresh processes per function, floor and other-source bundle (the median of each is shown). */
  runs: number;
}

/** What one function's first request is: a fresh event for each cold start. */
interface Scenario {
  /** Builds the state the request needs (outside the timed process) and returns its event. */
  event: () => Promise<unknown>;
  /** Settings the function needs beside the stage's (a provider's stand-in). */
  environment?: Record<string, string>;
}

interface Samples {
  importMs: number[];
  importCpuMs: number[];
  firstMs: number[];
  firstCpuMs: number[];
}

const newSamples = (): Samples => ({ importMs: [], importCpuMs: [], firstMs: [], firstCpuMs: [] });

const record = (samples: Samples, sample: ColdStart) => {
  samples.importMs.push(sample.importMs);
  samples.importCpuMs.push(sample.importCpuMs);
  samples.firstMs.push(sample.firstMs ?? Number.NaN);
  samples.firstCpuMs.push(sample.firstCpuMs ?? Number.NaN);
};

type Medians = ReturnType<typeof medians>;

const medians = (samples: Samples) => ({
  importMs: median(samples.importMs),
  importCpuMs: median(samples.importCpuMs),
  firstMs: median(samples.firstMs),
  firstCpuMs: median(samples.firstCpuMs),
});

/** A first request that did not succeed measures an error path: the bench stops. A redirect (a file link's 302) succeeded. */
const checkOutcome = (what: string, sample: ColdStart) => {
  const { outcome } = sample;
  const failed =
    outcome.error !== undefined ||
    (outcome.statusCode !== undefined && (outcome.statusCode < 200 || outcome.statusCode >= 400)) ||
    (outcome.failures ?? 0) > 0;
  if (failed) throw new Error(`${what}: the first request failed: ${JSON.stringify(outcome)}`);
};

/** An API Gateway HTTP API payload 2.0 event for `route`, as `local/api-gateway.ts` builds one. */
const apiEvent = (
  route: Route,
  options: {
    pathParameters?: Record<string, string>;
    key?: string;
    body?: unknown;
    query?: Record<string, string>;
    headers?: Record<string, string>;
    /** A body as sent, byte for byte (a signed webhook's). */
    rawBody?: string;
  } = {},
): APIGatewayProxyEventV2 => {
  const path = `${basePath}${route.path.replace(/\{(\w+)\}/g, (_, name: string) => options.pathParameters?.[name] ?? '')}`;
  const rawQueryString = new URLSearchParams(options.query ?? {}).toString();
  const routeKey = `${route.method} ${basePath}${route.path}`;
  const headers: Record<string, string> = {
    host: 'bench.execute-api.us-east-1.amazonaws.com',
    'user-agent': 'bench',
    ...(options.key ? { authorization: `Bearer ${options.key}` } : {}),
    ...(options.body !== undefined ? { 'content-type': 'application/json' } : {}),
    ...options.headers,
  };
  const now = new Date();
  return {
    version: '2.0',
    routeKey,
    rawPath: path,
    rawQueryString,
    headers,
    ...(options.query ? { queryStringParameters: options.query } : {}),
    ...(options.pathParameters ? { pathParameters: options.pathParameters } : {}),
    requestContext: {
      accountId: '000000000000',
      apiId: 'bench',
      domainName: headers.host ?? '',
      domainPrefix: 'bench',
      http: { method: route.method, path, protocol: 'HTTP/1.1', sourceIp: '127.0.0.1', userAgent: 'bench' },
      requestId: randomUUID(),
      routeKey,
      stage: '$default',
      time: now.toUTCString(),
      timeEpoch: now.getTime(),
    },
    ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
    ...(options.rawBody !== undefined ? { body: options.rawBody } : {}),
    isBase64Encoded: false,
  };
};

/** Takes messages off the queue until one whose body names `jobId` (the others are dropped). */
const takeMessage = async (deps: Deps, queueUrl: string, jobId: string) => {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const { Messages = [] } = await deps.sqs.send(
      new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }),
    );
    if (Messages.length === 0) continue;
    await deps.sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: Messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle ?? '' })),
      }),
    );
    const found = Messages.find((m) => (JSON.parse(m.Body ?? '{}') as { jobId?: string }).jobId === jobId);
    if (found) return found;
  }
  throw new Error(`no message for ${jobId} on ${queueUrl}`);
};

/**
 * Each function's first request, and what it needs: a team with credits, an agent and a key;
 * fresh workflows, runs, deferred runs and queue messages where the request changes them (a run
 * start locks its workflow, a cancel ends its run, a step or a webhook is done once).
 */
const prepareScenarios = async (deps: Deps, resources: LocalResources, closers: ColdStartContext['cleanups']) => {
  const api = await startLocalApi({ deps, port: 0, host: '127.0.0.1' });
  closers.push(() => api.close());
  const receiver = await startReceiver();
  closers.push(() => receiver.close());
  const team = await seedRunsTeam(deps, 1_000_000);
  const { key } = team;
  // Each worker runs as its function (the least-privilege audit attributes what it sends).
  const stepExecutor = invokedAs('StepExecutor', makeStepExecutor(deps));
  /** The next message on `queue` naming `jobId`, as the queue's event source mapping hands it over. */
  const queueEvent = async (queue: 'Steps' | 'Webhooks', jobId: string): Promise<SQSEvent> => {
    const url = resources.queueUrls[queue];
    const arn = `arn:aws:sqs:us-east-1:000000000000:${url.split('/').pop()}`;
    return { Records: [toRecord(await takeMessage(deps, url, jobId), arn)] };
  };

  const call = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${api.baseUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const answer = (await response.json()) as Record<string, unknown>;
    if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(answer)}`);
    return answer;
  };
  const oneStep = [{ key: 's0', type: 'TextEntry', config: { text: 'bench' } }];
  const newWorkflow = async (agentId = team.agentId) =>
    String((await call('POST', '/workflows', { name: 'Cold start', agentId, steps: oneStep })).workflowId);
  const newRun = async (body: Record<string, unknown> = {}) => {
    const workflowId = await newWorkflow();
    const answer = await call('POST', `/workflows/${workflowId}/runs`, body);
    return { workflowId, jobId: String(answer.jobId), deferredJobId: String(answer.deferredJobId) };
  };
  const png = encodePng(makeImage(8, 8, () => [0, 0, 0, 255]));
  /** A webhook endpoint of a team of its own (a team keeps 20 at most; each sample makes one). */
  const newEndpoint = async () => {
    const owner = await seedRunsTeam(deps, 1);
    const response = await fetch(`${api.baseUrl}/webhook-endpoints`, {
      method: 'POST',
      headers: { authorization: `Bearer ${owner.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: 'https://hooks.example.com/cold', events: ['run.completed'] }),
    });
    if (response.status !== 201) throw new Error(`POST /webhook-endpoints: ${response.status}`);
    const { endpointId } = (await response.json()) as { endpointId: string };
    return { endpointId, teamId: owner.teamId, key: owner.key };
  };
  const endpointEvent = async (id: RouteId, body?: unknown) => {
    const endpoint = await newEndpoint();
    return apiEvent(routeById(id), {
      key: endpoint.key,
      pathParameters: { endpointId: endpoint.endpointId },
      ...(body !== undefined ? { body } : {}),
    });
  };
  const withCallback = () => ({ callbackUrl: receiver.url, callbackSecret: 'whsec_YmVuY2ggY29sZCBzdGFydA==' });

  for (let i = 0; i < 5; i++) await newWorkflow();
  const completed = await newRun();
  await stepExecutor(await queueEvent('Steps', completed.jobId));
  const waiting = await newRun({ defer: true, maxMultiplier: 0.1 });
  const hooked = await newRun(withCallback());
  const webhookWorker = invokedAs(
    'WebhookDelivery',
    makeWebhookWorker(deps, { fetchOptions: { allowLoopback: true, ca: receiverCa } }),
  );
  // A run whose step is a job at Replicate's stand-in, submitted by a step executor with Replicate on.
  const replicateKey = 'r8_cold_start';
  const replicate = await startReplicateStandIn({ apiKey: replicateKey });
  closers.push(() => replicate.close());
  const replicateEnvironment = {
    PROVIDER_REPLICATE_API_KEY: replicateKey,
    PROVIDER_REPLICATE_BASE_URL: replicate.url,
    ALLOW_PRIVATE_CALLBACKS: '1',
  };
  const jobEnv = { ...process.env, ...replicateEnvironment, PUBLIC_BASE_URL: 'http://127.0.0.1:9' };
  const jobExecutor = invokedAs(
    'StepExecutor',
    makeStepExecutor({
      ...deps,
      executors: createExecutorRegistry(executorDeps({ env: jobEnv })),
      providers: stageProvidersFromEnv(jobEnv),
    }),
  );
  const jobStep = [
    { key: 's0', type: 'TextEntry', config: { text: 'a lighthouse' } },
    {
      key: 's1',
      type: 'ImageGen',
      config: { provider: 'replicate', model: 'black-forest-labs/flux-schnell', width: 64, height: 64 },
      inputs: ['s0'],
    },
  ];
  const newJobRun = async () => {
    const created = await call('POST', '/workflows', { name: 'Cold start job', agentId: team.agentId, steps: jobStep });
    const answer = await call('POST', `/workflows/${String(created.workflowId)}/runs`, {});
    return { jobId: String(answer.jobId) };
  };

  const scenarios: Record<string, Scenario> = {
    GetOpenApi: { event: async () => apiEvent(routeById('GetOpenApi')) },
    GetDocs: { event: async () => apiEvent(routeById('GetDocs')) },
    GetDocsAsset: {
      // The largest asset, compressed as a browser asks for it.
      event: async () =>
        apiEvent(routeById('GetDocsAsset'), {
          pathParameters: { name: 'swagger-ui-bundle.js' },
          query: { v: assetVersion },
          headers: { 'accept-encoding': 'gzip, deflate, br, zstd' },
        }),
    },
    // The node-type reference: built from the catalogue on the first request.
    ListNodeTypes: { event: async () => apiEvent(routeById('ListNodeTypes')) },
    GetNodeType: { event: async () => apiEvent(routeById('GetNodeType'), { pathParameters: { type: 'ImageGen' } }) },
    CreateWorkflow: {
      event: async () =>
        apiEvent(routeById('CreateWorkflow'), {
          key,
          body: { name: 'Cold start chain', agentId: team.agentId, steps: chainSteps(10) },
        }),
    },
    RunWorkflow: {
      event: async () =>
        apiEvent(routeById('RunWorkflow'), { key, pathParameters: { id: await newWorkflow() }, body: {} }),
    },
    RunAgent: {
      event: async () => {
        const { agentId } = await createAgent(deps, { teamId: team.teamId, projectId: team.projectId, name: 'Cold' });
        await newWorkflow(agentId);
        return apiEvent(routeById('RunAgent'), { key, pathParameters: { id: agentId }, body: {} });
      },
    },
    GetRun: {
      event: async () => apiEvent(routeById('GetRun'), { key, pathParameters: { jobId: completed.jobId } }),
    },
    // The event stream of a run that has ended: its events and `done` at once, then the end (the
    // answer buffered: this process has no streaming runtime, functions/http/event-stream.ts).
    GetRunEvents: {
      event: async () => apiEvent(routeById('GetRunEvents'), { key, pathParameters: { jobId: completed.jobId } }),
    },
    // A run's file link: the links' key read from the table, a presign made, 302.
    GetFileLink: {
      event: async () => {
        const file = await putRunFile(
          deps,
          { teamId: team.teamId, jobId: completed.jobId, nodeId: 'image' },
          {
            name: 'cold.png',
            contentType: 'image/png',
            body: encodePng(makeImage(8, 8, () => [0, 0, 0, 255])),
            aiGenerated: true,
          },
        );
        const link = new URL((await fileLinkFor(deps, team.teamId, file.key)).url);
        return apiEvent(routeById('GetFileLink'), {
          pathParameters: { object: link.pathname.split('/').pop() ?? '' },
          query: Object.fromEntries(link.searchParams),
        });
      },
    },
    // A file declared: its item, and a presigned PUT for its bytes.
    CreateFile: {
      event: async () =>
        apiEvent(routeById('CreateFile'), {
          key,
          body: { name: 'cold.png', contentType: 'image/png', size: png.length },
        }),
    },
    // The first read of a file uploaded: it settles the upload (HeadObject, a ranged GetObject, the item's update).
    GetFile: {
      event: async () => {
        const declared = await call('POST', '/files', { name: 'cold.png', contentType: 'image/png', size: png.length });
        const upload = declared.upload as { method: string; url: string; headers: Record<string, string> };
        const { 'content-length': _, ...headers } = upload.headers;
        const sent = await fetch(upload.url, { method: upload.method, headers, body: png });
        if (!sent.ok) throw new Error(`the cold-start upload answered ${sent.status}`);
        return apiEvent(routeById('GetFile'), { key, pathParameters: { fileId: String(declared.fileId) } });
      },
    },
    CancelRun: {
      event: async () => apiEvent(routeById('CancelRun'), { key, pathParameters: { jobId: (await newRun()).jobId } }),
    },
    // A resume of a failed one-step run (its step failed, so it runs again): the original's partition
    // read, then a run start as RunWorkflow's.
    ResumeRun: {
      event: async () => {
        const { jobId } = await newRun();
        const run = await readRunItem(deps, jobId);
        if (!run || !(await failStep(deps, run, 's0', null, 'failed for the cold-start bench'))) {
          throw new Error(`run ${jobId} could not be failed`);
        }
        return apiEvent(routeById('ResumeRun'), { key, pathParameters: { jobId }, body: {} });
      },
    },
    // A page of the team's runs: the key, its rate count, the cursor signing key and one Query of GSI5.
    ListRuns: {
      event: async () => apiEvent(routeById('ListRuns'), { key, query: { limit: '20' } }),
    },
    // The team's stored bytes and quota (the files above count in it).
    ListDeferredRuns: {
      event: async () => apiEvent(routeById('ListDeferredRuns'), { key, query: { limit: '20' } }),
    },
    // The delivery log of a run with a callbackUrl (its run item and its delivery items).
    ListDeliveries: {
      event: async () => apiEvent(routeById('ListDeliveries'), { key, pathParameters: { jobId: hooked.jobId } }),
    },
    // One step's attempts and logs: the run item, its canvas and the step item (GetItem each).
    GetRunStep: {
      event: async () =>
        apiEvent(routeById('GetRunStep'), { key, pathParameters: { jobId: completed.jobId, nodeId: 's0' } }),
    },
    // A redelivery of a webhook delivered once: mark the delivery item, send one message.
    RedeliverWebhook: {
      event: async () => {
        const { jobId } = await newRun(withCallback());
        await stepExecutor(await queueEvent('Steps', jobId));
        await webhookWorker(await queueEvent('Webhooks', jobId));
        return apiEvent(routeById('RedeliverWebhook'), { key, pathParameters: { jobId } });
      },
    },
    // A run token for a browser: the key, the run item, and the tokens' signing key (made by this first one).
    CreateRunToken: {
      event: async () =>
        apiEvent(routeById('CreateRunToken'), {
          key,
          pathParameters: { jobId: completed.jobId },
          body: { expiresInSeconds: 600 },
        }),
    },
    GetDeferredRun: {
      event: async () => apiEvent(routeById('GetDeferredRun'), { key, pathParameters: { id: waiting.deferredJobId } }),
    },
    CancelDeferredRun: {
      event: async () =>
        apiEvent(routeById('CancelDeferredRun'), {
          key,
          pathParameters: { id: (await newRun({ defer: true, maxMultiplier: 0.1 })).deferredJobId },
        }),
    },
    // Replicate's signed webhook for a step that waits on its prediction: verified (the secret fetched
    // from the stand-in on the cold start), the step's look queued.
    ProviderWebhook: {
      environment: replicateEnvironment,
      event: async () => {
        const { jobId } = await newJobRun();
        // The prompt, then the image step, which submits its job.
        await jobExecutor(await queueEvent('Steps', jobId));
        await jobExecutor(await queueEvent('Steps', jobId));
        const prediction = [...replicate.jobs.values()].find((j) => String(j.prediction.webhook ?? '').includes(jobId));
        if (!prediction) throw new Error('the cold-start job was not submitted');
        const url = new URL(String(prediction.prediction.webhook));
        const [provider, runId, nodeId, token] = url.pathname.split('/').slice(-4);
        await replicate.complete(prediction.prediction.id, ['https://replicate.delivery/cold-start.png']);
        // Its own webhook went nowhere (port 9): the event is the signed delivery, and the message the look sends is taken.
        const delivery = replicate.delivery(prediction.prediction.id);
        return apiEvent(routeById('ProviderWebhook'), {
          pathParameters: { provider: provider ?? '', jobId: runId ?? '', nodeId: nodeId ?? '', token: token ?? '' },
          headers: delivery.headers,
          rawBody: delivery.body,
        });
      },
    },
    // A one-step run's only step: it runs the node, then ends the run and queues its webhook.
    // An estimate of a run of a new workflow: the start's reads (the workflow, the admission facts, the
    // lock, the storage quota) and the price settings, nothing written.
    EstimateWorkflowRun: {
      event: async () =>
        apiEvent(routeById('EstimateWorkflowRun'), { key, pathParameters: { id: await newWorkflow() }, body: {} }),
    },
    // An agent's first look: the tool list (the key's workflows, each one's canvas), a JSON-RPC
    // message as an MCP client sends it. A call would wait for its run, which no worker moves here.
    Mcp: {
      event: async () => {
        await newWorkflow();
        return apiEvent(routeById('Mcp'), {
          key,
          headers: { accept: 'application/json, text/event-stream' },
          body: { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} },
        });
      },
    },
    EstimateAgentRun: {
      event: async () => {
        const { agentId } = await createAgent(deps, { teamId: team.teamId, projectId: team.projectId, name: 'Priced' });
        await newWorkflow(agentId);
        return apiEvent(routeById('EstimateAgentRun'), { key, pathParameters: { id: agentId }, body: {} });
      },
    },
    StepExecutor: {
      event: async () => {
        const { jobId } = await newRun(withCallback());
        return await queueEvent('Steps', jobId);
      },
    },
    // The webhook of a run that ended: read the delivery, POST it to the https receiver, record it.
    WebhookDelivery: {
      event: async () => {
        const { jobId } = await newRun(withCallback());
        await stepExecutor(await queueEvent('Steps', jobId));
        return await queueEvent('Webhooks', jobId);
      },
    },
    // A run's start and end as the table's stream hands them over: one PutEvents of two entries.
    EventPublisher: {
      event: async () => {
        const { jobId, workflowId } = await newRun();
        const run = (status: string) => ({
          PK: { S: `RUN#${jobId}` },
          SK: { S: 'RUN' },
          jobId: { S: jobId },
          teamId: { S: team.teamId },
          projectId: { S: team.projectId },
          workflowId: { S: workflowId },
          status: { S: status },
          mode: { S: 'production' },
          stepsTotal: { N: '1' },
          estimateHundredths: { N: '1' },
          chargedHundredths: { N: status === 'queued' ? '0' : '1' },
          createdAt: { S: new Date().toISOString() },
        });
        const record = (sequence: string, eventName: 'INSERT' | 'MODIFY', oldImage?: object, newImage?: object) => ({
          eventID: sequence,
          eventName,
          eventVersion: '1.1',
          eventSource: 'aws:dynamodb',
          awsRegion: 'us-east-1',
          dynamodb: {
            Keys: { PK: { S: `RUN#${jobId}` }, SK: { S: 'RUN' } },
            ...(oldImage ? { OldImage: oldImage } : {}),
            NewImage: newImage,
            SequenceNumber: sequence,
            SizeBytes: 300,
            StreamViewType: 'NEW_AND_OLD_IMAGES',
          },
        });
        return {
          Records: [
            record('1', 'INSERT', undefined, run('queued')),
            record('2', 'MODIFY', run('queued'), run('completed')),
          ],
        };
      },
    },
    // A run that chose its start event, as the table's stream hands its insert over (the item as
    // stored, its own attribute values).
    RunEventWebhooks: {
      event: async () => {
        const { jobId } = await newRun({ ...withCallback(), webhookEvents: ['run.started', 'run.completed'] });
        const keys = { PK: { S: `RUN#${jobId}` }, SK: { S: 'RUN' } };
        const { Item } = await deps.ddb.send(
          new GetItemCommand({ TableName: deps.tableName, Key: keys, ConsistentRead: true }),
        );
        if (!Item) throw new Error(`run ${jobId} not stored`);
        return {
          Records: [
            {
              eventID: '1',
              eventName: 'INSERT',
              eventVersion: '1.1',
              eventSource: 'aws:dynamodb',
              awsRegion: 'us-east-1',
              dynamodb: {
                Keys: keys,
                NewImage: Item,
                SequenceNumber: '1',
                SizeBytes: 300,
                StreamViewType: 'NEW_AND_OLD_IMAGES',
              },
            },
          ],
        };
      },
    },
    DeferredDispatcher: {
      event: async () => ({
        version: '0',
        id: randomUUID(),
        'detail-type': 'Scheduled Event',
        source: 'aws.events',
        account: '000000000000',
        time: new Date().toISOString(),
        region: 'us-east-1',
        resources: ['arn:aws:events:us-east-1:000000000000:rule/bench'],
        detail: {},
      }),
    },
    // A team's webhook endpoint (a public URL: nothing is POSTed by these requests).
    CreateWebhookEndpoint: {
      event: async () =>
        apiEvent(routeById('CreateWebhookEndpoint'), {
          key: (await seedRunsTeam(deps, 1)).key,
          body: { url: 'https://hooks.example.com/cold', events: ['run.completed'] },
        }),
    },
    GetWebhookEndpoint: { event: async () => endpointEvent('GetWebhookEndpoint') },
    UpdateWebhookEndpoint: {
      event: async () => endpointEvent('UpdateWebhookEndpoint', { events: ['run.failed'], disabled: true }),
    },
    DeleteWebhookEndpoint: { event: async () => endpointEvent('DeleteWebhookEndpoint') },
    RotateWebhookEndpointSecret: { event: async () => endpointEvent('RotateWebhookEndpointSecret') },
    // A ping's delivery item written and its message sent.
    TestWebhookEndpoint: { event: async () => endpointEvent('TestWebhookEndpoint') },
    ListWebhookEndpointDeliveries: { event: async () => endpointEvent('ListWebhookEndpointDeliveries') },
    // One more attempt of a delivery of the log that failed.
    RedeliverWebhookEndpointDelivery: {
      event: async () => {
        const endpoint = await newEndpoint();
        const now = new Date();
        const deliveryId = endpointDeliveryId(now.getTime(), randomUUID());
        const opened = {
          deliveryId,
          endpointId: endpoint.endpointId,
          teamId: endpoint.teamId,
          event: 'ping',
          createdAt: now.toISOString(),
        };
        await openEndpointDelivery(deps, { ...opened, expiresAt: Math.floor(now.getTime() / 1000) + 3600 });
        const delivery = await readEndpointDelivery(deps, endpoint.endpointId, deliveryId);
        if (delivery) await abandonEndpointDelivery(deps, delivery);
        return apiEvent(routeById('RedeliverWebhookEndpointDelivery'), {
          key: endpoint.key,
          pathParameters: { endpointId: endpoint.endpointId, deliveryId },
        });
      },
    },
    // A new workflow described: its summary and canvas, the price settings; nothing written.
    GetWorkflow: {
      event: async () => apiEvent(routeById('GetWorkflow'), { key, pathParameters: { id: await newWorkflow() } }),
    },
    // The team's usage by workflow over the last 366 days: the key, its rate count and one Query of
    // the grouping's rollups, which the runs above settled (a period is required, so no bare GET).
    GetUsage: {
      event: async () => {
        const to = new Date().toISOString().slice(0, 10);
        const from = new Date(Date.now() - 365 * 86_400_000).toISOString().slice(0, 10);
        return apiEvent(routeById('GetUsage'), { key, query: { from, to, groupBy: 'workflow' } });
      },
    },
    // A workflow's next version: its summary and canvas read, one transaction of three items.
    UpdateWorkflow: {
      event: async () =>
        apiEvent(routeById('UpdateWorkflow'), {
          key,
          pathParameters: { id: await newWorkflow() },
          body: { name: 'Cold start chain', agentId: team.agentId, steps: chainSteps(10) },
        }),
    },
    SetWorkflowStatus: {
      event: async () =>
        apiEvent(routeById('SetWorkflowStatus'), {
          key,
          pathParameters: { id: await newWorkflow() },
          body: { status: 'archived' },
        }),
    },
    ListWorkflowVersions: {
      event: async () =>
        apiEvent(routeById('ListWorkflowVersions'), { key, pathParameters: { id: await newWorkflow() } }),
    },
    GetWorkflowVersion: {
      event: async () =>
        apiEvent(routeById('GetWorkflowVersion'), { key, pathParameters: { id: await newWorkflow(), version: '1' } }),
    },
    // A batch of two run starts, of two new workflows: each item a RunWorkflow's start.
    StartRunBatch: {
      event: async () =>
        apiEvent(routeById('StartRunBatch'), {
          key,
          body: { runs: [{ workflowId: await newWorkflow() }, { workflowId: await newWorkflow() }] },
        }),
    },
    // A batch's read: its entries' Query and its runs' BatchGetItem.
    GetBatch: {
      event: async () => {
        const started = await call('POST', '/runs/batch', { runs: [{ workflowId: await newWorkflow() }] });
        return apiEvent(routeById('GetBatch'), { key, pathParameters: { batchId: String(started.batchId) } });
      },
    },
    // A bulk cancel of one run: the action's item written and its first page's message sent.
    CancelRuns: {
      event: async () => apiEvent(routeById('CancelRuns'), { key, body: { jobIds: [(await newRun()).jobId] } }),
    },
    // A bulk action's progress: one read of its item.
    GetBulkAction: {
      event: async () => {
        const accepted = await call('POST', '/runs/cancel', { filter: { tag: 'cold-start' } });
        return apiEvent(routeById('GetBulkAction'), {
          key,
          pathParameters: { bulkActionId: String(accepted.bulkActionId) },
        });
      },
    },
  };
  // A keyed GET with no path parameter needs nothing set up: its first request is the key's (the
  // team's workflows, its stored bytes). A route of any other kind names its scenario above.
  for (const route of routes) {
    if (route.method === 'GET' && route.scope !== null && !route.path.includes('{'))
      scenarios[route.id] ??= { event: async () => apiEvent(route, { key }) };
  }
  return scenarios;
};

/** `GetItem, UpdateItem, TransactWriteItems(Put,Update), SendMessageBatch(1)`: a recorded first request. */
export const describeCommands = (commands: readonly AwsCommandShape[]) =>
  commands.length === 0
    ? 'none'
    : commands
        .map((c) => {
          const op = c.command.replace(/Command$/, '');
          const detail = c.items ? `(${c.items.join(',')})` : c.count !== undefined ? `(${c.count})` : '';
          return `${c.presigned ? 'presign ' : ''}${op}${c.index ? `[${c.index}]` : ''}${detail}`;
        })
        .join(', ');

/**
 * Runs `bench/first-request.ts` for `functionId` in a fresh `node` with the function's Lambda
 * environment: the commands its first request sent, in order. A request that failed stops the bench.
 */
const recordFirstRequest = async (
  functionId: string,
  resourcesFile: string,
  environment: Record<string, string>,
  eventFile: string,
): Promise<AwsCommandShape[]> => {
  const script = fileURLToPath(new URL('./first-request.ts', import.meta.url));
  const { stdout } = await execFileAsync(process.execPath, [script, functionId, resourcesFile, eventFile], {
    // NODE_OPTIONS of the bundles asks for source maps; the source runs as it is.
    env: { ...environment, NODE_OPTIONS: '' },
    timeout: 60_000,
    maxBuffer: 64 * 1024 * 1024,
  });
  const last = stdout.trimEnd().split('\n').pop() ?? '';
  const { commands, outcome } = JSON.parse(last) as { commands: AwsCommandShape[]; outcome: ColdStart['outcome'] };
  checkOutcome(`${functionId} (recording its commands)`, {
    importMs: 0,
    importCpuMs: 0,
    firstMs: 0,
    firstCpuMs: 0,
    outcome,
  });
  return commands;
};

/** The environment a function gets on Lambda, pointed at the emulators (the same for its floor). */
export const lambdaEnvironment = (
  resources: LocalResources,
  functionId: string,
  eventBridgeEndpoint: string,
): Record<string, string> => ({
  PATH: process.env.PATH ?? '',
  HOME: process.env.HOME ?? '',
  ...localEnvironment(resources),
  ...emulatorSdkEnvironment(resources),
  AWS_ENDPOINT_URL_EVENTBRIDGE: eventBridgeEndpoint,
  OPERATOR_EVENT_BUS: operatorEventBusName(resources.prefix),
  // The stack gives every function its public address (file links, providers' webhooks); nothing listens here.
  PUBLIC_BASE_URL: 'http://127.0.0.1:9',
  // The documented local switches: the webhook receiver is an https server on loopback.
  ALLOW_PRIVATE_CALLBACKS: '1',
  WEBHOOK_CA_FILE: fileURLToPath(new URL('../test/fixtures/receiver-cert.pem', import.meta.url)),
  NODE_OPTIONS: '--enable-source-maps',
  AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs24.x',
  AWS_LAMBDA_FUNCTION_NAME: functionId,
  AWS_LAMBDA_FUNCTION_VERSION: '$LATEST',
  AWS_LAMBDA_FUNCTION_MEMORY_SIZE: '1024',
  TZ: ':UTC',
});

const sdkShort = (packages: readonly string[]) =>
  packages.length === 0
    ? 'none'
    : packages
        .map((p) =>
          p
            .replace('@modelcontextprotocol/sdk', 'mcp')
            .replace('@aws-sdk/', '')
            .replace('client-', '')
            .replace('lib-dynamodb', 'doc')
            .replace('s3-request-presigner', 'presign'),
        )
        .join('+');

const x = (value: number) => `${value.toFixed(2)}×`;

/** Function over floor, in cpu time (what the targets judge) and in wall time. */
const ratiosOf = (row: { fn: Medians; base: Medians }) => ({
  importCpu: row.fn.importCpuMs / row.base.importCpuMs,
  firstCpu: row.fn.firstCpuMs / row.base.firstCpuMs,
  importWall: row.fn.importMs / row.base.importMs,
  firstWall: row.fn.firstMs / row.base.firstMs,
});

/** Every function the stack deploys, in the order the bench measures them. */
const functions = [...routes, ...workers].map((f) => ({ id: f.id, entry: f.entry }));

const scenarioOf = (scenarios: Record<string, Scenario>, id: string) => {
  const scenario = scenarios[id];
  if (!scenario) throw new Error(`no cold-start scenario for ${id}: add one to bench/cold-start.ts`);
  return scenario;
};

/**
 * What every function's first request needs: its scenario's state on the emulators, an operator
 * event bus, and the files a fresh process reads (the resources, each event). `close` stops what
 * was started (it is among `ctx.cleanups` too, for a section that fails).
 */
const openScenarios = async (ctx: Pick<ColdStartContext, 'outDir' | 'resources' | 'cleanups'>) => {
  const { outDir, resources } = ctx;
  rmSync(outDir, { recursive: true, force: true });
  ctx.cleanups.push(() => rmSync(outDir, { recursive: true, force: true }));
  const eventsDir = join(outDir, 'events');
  mkdirSync(eventsDir, { recursive: true });

  const deps = localDeps(resources);
  // What the section starts is stopped when it ends (or, if it fails, with the bench's cleanups).
  const closers: ColdStartContext['cleanups'] = [];
  const close = async () => {
    for (const stop of closers.splice(0).reverse()) await stop();
  };
  ctx.cleanups.push(close);
  closers.push(() => {
    deps.ddb.destroy();
    deps.sqs.destroy();
    deps.s3.destroy();
  });
  const scenarios = await prepareScenarios(deps, resources, closers);
  // The operator events' bus: the publisher's PutEvents and its floor's go to the emulator.
  const eventBridge = await startEventBridge({ fileFor: () => join(outDir, 'operator-events.jsonl') });
  closers.push(() => eventBridge.stop());

  const resourcesFile = join(outDir, 'resources.json');
  writeFileSync(resourcesFile, JSON.stringify(resources));
  let eventCount = 0;
  const eventFile = (event: unknown) => {
    const file = join(eventsDir, `${++eventCount}.json`);
    writeFileSync(file, JSON.stringify(event));
    return file;
  };

  /** The function's Lambda environment on the emulators, with its scenario's settings. */
  const environmentOf = (id: string, scenario: Scenario) => ({
    ...lambdaEnvironment(resources, id, eventBridge.endpoint),
    ...scenario.environment,
  });
  return { deps, scenarios, resourcesFile, eventFile, environmentOf, close };
};

/**
 * Every function's first request, from its source in a fresh process with its Lambda environment,
 * as the cold-start section records it before it measures anything: the commands each sent. Throws
 * on the first function without a scenario or whose first request did not succeed, naming it; the
 * suite runs this so the bench's bundles section keeps running whole (`test/bench-first-requests.int.test.ts`).
 */
export const checkFirstRequests = async (ctx: Pick<ColdStartContext, 'outDir' | 'resources' | 'cleanups'>) => {
  const opened = await openScenarios(ctx);
  const recorded: { id: string; commands: AwsCommandShape[] }[] = [];
  try {
    for (const fn of functions) {
      const scenario = scenarioOf(opened.scenarios, fn.id);
      const event = opened.eventFile(await scenario.event());
      const commands = await recordFirstRequest(
        fn.id,
        opened.resourcesFile,
        opened.environmentOf(fn.id, scenario),
        event,
      );
      recorded.push({ id: fn.id, commands });
    }
  } finally {
    await opened.close();
  }
  return recorded;
};

export const benchColdStarts = async (ctx: ColdStartContext) => {
  const { repoRoot, outDir, resources, targets, runs } = ctx;
  const deployed = deployedSdkSource;
  const other = otherSdkSource(deployed);
  heading(
    `Cold starts: each function against the floor of its SDK packages (SDK ${deployed === 'bundled' ? 'bundled into each function' : "from the runtime's copy"}, as lib/bundling.ts deploys); median of ${runs} fresh node each, interleaved`,
  );
  const opened = await openScenarios(ctx);
  const { deps, scenarios, resourcesFile, eventFile, close } = opened;
  // The floors' own queue and object: their bare sends and reads touch nothing of the service's.
  const { QueueUrl: createdQueueUrl } = await deps.sqs.send(
    new CreateQueueCommand({ QueueName: `${resources.prefix}-bench-floor` }),
  );
  if (!createdQueueUrl) throw new Error('the floor queue was not created');
  // fauxqs names its queues on a host that does not resolve: the same path on its endpoint (as local/provision.ts does).
  const floorQueueUrl = new URL(new URL(createdQueueUrl).pathname, resources.sqsS3Endpoint).href;
  await deps.s3.send(
    new PutObjectCommand({ Bucket: resources.bucket, Key: floorObjectKey, Body: 'floor', ContentType: 'text/plain' }),
  );

  interface Row {
    id: string;
    bundle: BuiltBundle;
    floor: BuiltBundle;
    commands: AwsCommandShape[];
    fn: ReturnType<typeof medians>;
    base: ReturnType<typeof medians>;
    otherBundle: BuiltBundle;
    otherFn: ReturnType<typeof medians>;
  }
  const rows: Row[] = [];
  for (const fn of functions) {
    const scenario = scenarioOf(scenarios, fn.id);
    const bundle = await buildBundle(repoRoot, outDir, fn, deployed);
    const environment = { ...opened.environmentOf(fn.id, scenario), [floorQueueVariable]: floorQueueUrl };
    // What its first request sends, recorded from its source in a fresh process: the floor sends the same, bare.
    const commands = await recordFirstRequest(fn.id, resourcesFile, environment, eventFile(await scenario.event()));
    const floor = await buildFloorBundle(repoRoot, outDir, `floor-${fn.id}`, bundle.sdkPackages, commands, deployed);
    const otherBundle = await buildBundle(repoRoot, outDir, fn, other);
    const floorEvent = eventFile({});
    const samples = { fn: newSamples(), base: newSamples(), other: newSamples() };
    const measure = async (which: keyof typeof samples) => {
      const file = which === 'fn' ? bundle.file : which === 'other' ? otherBundle.file : floor.file;
      const event = which === 'base' ? floorEvent : eventFile(await scenario.event());
      const sample = await coldStart(file, environment, event);
      checkOutcome(
        `${fn.id} (${which === 'base' ? 'floor' : which === 'other' ? `SDK ${other}` : 'function'})`,
        sample,
      );
      record(samples[which], sample);
    };
    for (let round = 0; round < runs; round++) {
      // Who goes first alternates, so neither always meets the machine just after the other.
      const order: (keyof typeof samples)[] = round % 2 === 0 ? ['fn', 'base', 'other'] : ['other', 'base', 'fn'];
      for (const which of order) await measure(which);
    }
    const row = {
      id: fn.id,
      bundle,
      floor,
      commands,
      fn: medians(samples.fn),
      base: medians(samples.base),
      otherBundle,
      otherFn: medians(samples.other),
    };
    rows.push(row);
    const ratios = ratiosOf(row);
    console.log(
      `  ${fn.id} (${fn.entry}): SDK ${sdkShort(bundle.sdkPackages)}${bundle.powertools ? ', Powertools' : ''}`,
    );
    line(
      '  bundle, minified, without source map',
      targets.check(`${fn.id} bundle size`, bundle.bytes, '<=', coldStartTargets.bundleBytes, kb),
    );
    if (bundle.sdkPackages.length === 0) {
      // Its floor is an empty module: no ratio can be met. Judged below, once every floor is measured.
      line(
        `  cold import, cpu ${ms(row.fn.importCpuMs)}, floor ${ms(row.base.importCpuMs)} (empty)`,
        x(ratios.importCpu),
      );
    } else {
      line(
        `  cold import, cpu ${ms(row.fn.importCpuMs)}, floor ${ms(row.base.importCpuMs)}`,
        targets.check(`${fn.id} cold import / floor (cpu)`, ratios.importCpu, '<=', coldStartTargets.importRatio, x),
      );
    }
    line(
      `  first request, cpu ${ms(row.fn.firstCpuMs)}, floor's first call ${ms(row.base.firstCpuMs)}`,
      targets.check(
        `${fn.id} first request / floor (cpu)`,
        ratios.firstCpu,
        '<=',
        coldStartTargets.firstRequestRatio,
        x,
      ),
    );
    note(
      `wall: import ${ms(row.fn.importMs)} (floor ${ms(row.base.importMs)}, ${x(ratios.importWall)}), ` +
        `first request ${ms(row.fn.firstMs)} (floor ${ms(row.base.firstMs)}, ${x(ratios.firstWall)}); ` +
        `source map ${kb(bundle.mapBytes)}${bundle.besideBytes ? `, files beside it ${kb(bundle.besideBytes)}` : ''}`,
    );
    note(`first request's commands (the floor sends them bare): ${describeCommands(commands)}`);
    note(`largest inputs: ${bundle.largestInputs.map((i) => `${i.path} ${kb(i.bytes)}`).join(', ')}`);
  }

  // A function with no SDK package is judged against the lightest SDK floor of this run: it must
  // import in less time than any function's SDK alone (its own floor, an empty module, cannot judge it).
  const sdkFloors = rows.filter((row) => row.bundle.sdkPackages.length > 0).map((row) => row.base.importCpuMs);
  const lightestFloor = Math.min(...sdkFloors);
  const sdkLess = rows.filter((row) => row.bundle.sdkPackages.length === 0);
  if (sdkLess.length > 0 && sdkFloors.length > 0) {
    heading(
      `Functions with no SDK package: cold import against the lightest SDK floor of this run (${ms(lightestFloor)} cpu)`,
    );
    for (const row of sdkLess)
      line(
        `  ${row.id}: cold import, cpu ${ms(row.fn.importCpuMs)}`,
        targets.check(
          `${row.id} cold import / lightest SDK floor (cpu)`,
          row.fn.importCpuMs / lightestFloor,
          '<=',
          1,
          x,
        ),
      );
  }

  heading(
    `Cold-start table: medians of ${runs}; ratios against the floor of the same SDK packages, judged on cpu time (wall beside it)`,
  );
  const columns = [
    ['function', 19],
    ['SDK', 26],
    ['bundle', 9],
    ['import', 9],
    ['floor', 9],
    ['ratio', 6],
    ['first', 9],
    ['floor', 9],
    ['ratio', 6],
    ['wall imp.', 10],
    ['wall 1st', 10],
    ['size', 5],
    ['import', 7],
    ['first', 5],
  ] as const;
  const cells = (values: readonly string[]) =>
    values.map((v, i) => (i < 2 ? v.padEnd(columns[i]?.[1] ?? 0) : v.padStart(columns[i]?.[1] ?? 0))).join(' ');
  console.log(`  ${cells(columns.map(([name]) => name))}`);
  const mark = (met: boolean) => (met ? 'ok' : 'MISS');
  const cpu = (value: number) => value.toFixed(1);
  for (const row of rows) {
    const ratios = ratiosOf(row);
    console.log(
      `  ${cells([
        row.id,
        sdkShort(row.bundle.sdkPackages),
        kb(row.bundle.bytes),
        cpu(row.fn.importCpuMs),
        cpu(row.base.importCpuMs),
        x(ratios.importCpu),
        cpu(row.fn.firstCpuMs),
        cpu(row.base.firstCpuMs),
        x(ratios.firstCpu),
        cpu(row.fn.importMs),
        cpu(row.fn.firstMs),
        mark(row.bundle.bytes <= coldStartTargets.bundleBytes),
        mark(
          row.bundle.sdkPackages.length === 0
            ? row.fn.importCpuMs <= lightestFloor
            : ratios.importCpu <= coldStartTargets.importRatio,
        ),
        mark(ratios.firstCpu <= coldStartTargets.firstRequestRatio),
      ])}`,
    );
  }
  note(
    'ms; "import" and "first" are cpu time (user + system) of the fresh process; "wall" the same spans in wall time',
  );

  heading(
    `SDK source: ${deployed} (deployed) against ${other}, the same functions (cpu ms, medians of ${runs}, interleaved)`,
  );
  console.log(
    `  ${'function'.padEnd(19)} ${`${deployed} KB`.padStart(12)} ${`${other} KB`.padStart(12)} ${`import ${deployed}`.padStart(15)} ${`import ${other}`.padStart(15)} ${`first ${deployed}`.padStart(15)} ${`first ${other}`.padStart(15)} ${'sum ratio'.padStart(10)}`,
  );
  const sums: number[] = [];
  for (const row of rows) {
    const sum = (m: ReturnType<typeof medians>) => m.importCpuMs + m.firstCpuMs;
    const sumRatio = sum(row.fn) / sum(row.otherFn);
    sums.push(sumRatio);
    console.log(
      `  ${row.id.padEnd(19)} ${kb(row.bundle.bytes).padStart(12)} ${kb(row.otherBundle.bytes).padStart(12)} ${cpu(row.fn.importCpuMs).padStart(15)} ${cpu(row.otherFn.importCpuMs).padStart(15)} ${cpu(row.fn.firstCpuMs).padStart(15)} ${cpu(row.otherFn.firstCpuMs).padStart(15)} ${x(sumRatio).padStart(10)}`,
    );
  }
  note(
    `import + first request, ${deployed} / ${other}: median ${x(median(sums))} over the functions (below 1: the deployed source is faster)`,
  );
  await close();
  return rows;
};
