/**
 * The run the cost model prices: a `chainLength`-step chain started over HTTP with a callbackUrl,
 * executed by the real step executor from the steps queue, ended by its signed webhook delivered
 * by the real webhook worker to an https receiver on loopback. Everything runs on the emulators
 * through the same handlers `npm start` serves, metered by bench/cost-meter.ts; the lines the
 * invocations log are counted by bench/cost-logs.ts. The operator events' path runs too, as on the
 * stage: the table's stream read with the Streams API and filtered as the deployed mapping filters
 * it (local/stream-source.ts), the real EventPublisher handler putting each event with the
 * EventBridge SDK on an emulator of its own (local/eventbridge-emulator.ts), metered.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { operatorDetailTypes } from '../functions/domain/operator-events.ts';
import { runPartition } from '../functions/store/keys.ts';
import { eventBridgeSender } from '../functions/store/operator-event-bus.ts';
import { makeHandler as makeEventPublisher } from '../functions/workers/operator-events.ts';
import { makeHandler as makeStepExecutor } from '../functions/workers/step-executor.ts';
import { makeHandler as makeWebhookDelivery } from '../functions/workers/webhook-delivery.ts';
import { startLocalApi } from '../local/api-gateway.ts';
import { localAwsConfig } from '../local/emulators.ts';
import { startQueuePoller } from '../local/event-source.ts';
import { operatorEventBusName, readDeliveredEvents, startEventBridge } from '../local/eventbridge-emulator.ts';
import { localDeps } from '../local/local-deps.ts';
import { ensureTableStream, type LocalResources } from '../local/provision.ts';
import { startStreamPoller } from '../local/stream-source.ts';
import { dataTable, stepsQueue, webhooksQueue } from '../platform/definitions.ts';
import { basePath, routes } from '../platform/routes.ts';
import { receiverCa, startReceiver } from '../test/support/webhook-receiver.ts';
import { captureLogs } from './cost-logs.ts';
import {
  accessLogLine,
  invocationsSettled,
  type Meter,
  meterDynamoDb,
  meterEventBridge,
  meterInvocation,
  meterPublisherHandler,
  meterSqs,
  meterSqsHandler,
  newMeter,
  resetMeter,
} from './cost-meter.ts';
import { storedItemBytes } from './cost-retained.ts';
import { chainSteps, seedCostTeam } from './seed.ts';

export interface ChainRunCost {
  /** Counts over the measured runs (divide by `runs`). */
  meter: Meter;
  runs: number;
  chainLength: number;
  /** What one GET /runs/{jobId} of a finished run costs, measured the same way. */
  pollMeter: Meter;
  /**
   * What the measured runs left behind, summed (divide by `runs`): the bytes of their partitions'
   * items and index entries as DynamoDB bills storage, and of their objects in the bucket.
   */
  left: { tableBytes: number; indexBytes: number; items: number; s3Bytes: number; objects: number };
}

/** The user agent Node's fetch sends: the flow's client, as API Gateway's access log records it. */
const clientUserAgent = 'node';

/**
 * One HTTP API request of the flow: its route's invocation (`routeId`), the request itself and
 * the access log line API Gateway writes for it.
 */
const apiRequest = async (meter: Meter, routeId: string, url: string, init: RequestInit) => {
  const route = routes.find((r) => r.id === routeId);
  if (!route) throw new Error(`no route ${routeId}`);
  const started = performance.now();
  const response = await meterInvocation(meter, routeId, () => fetch(url, init));
  const text = await response.text();
  meter.api.requests++;
  meter.api.accessLogBytes += Buffer.byteLength(
    accessLogLine({
      method: route.method,
      path: new URL(url).pathname,
      routeKey: `${route.method} ${basePath}${route.path}`,
      status: response.status,
      responseLength: Buffer.byteLength(text),
      latencyMs: performance.now() - started,
      userAgent: clientUserAgent,
    }),
  );
  return { status: response.status, body: JSON.parse(text) as Record<string, unknown> };
};

/**
 * Starts `runs + 1` runs one after another (the first warms the caches a warm Lambda instance has,
 * and is not counted) and meters the rest from the start request to the webhook's arrival. `steps`
 * gives the workflow's steps (default: `chainSteps`, a TextEntry then TextConsoles).
 */
export const measureChainRunCost = async (
  resources: LocalResources,
  options: { runs: number; chainLength: number; steps?: (length: number) => unknown[] },
): Promise<ChainRunCost> => {
  const meter = newMeter();
  const deps = localDeps(resources);
  const reader = localDeps(resources).ddb;
  meterDynamoDb(deps.ddb, meter, reader);
  meterSqs(deps.sqs, meter);
  const api = await startLocalApi({ deps, port: 0, host: '127.0.0.1' });
  const waiting = new Map<string, () => void>();
  const arrived = new Set<string>();
  const receiver = await startReceiver([], ({ body }) => {
    const { jobId } = JSON.parse(body) as { jobId: string };
    arrived.add(jobId);
    waiting.get(jobId)?.();
  });
  const eventsDir = mkdtempSync(join(tmpdir(), 'cost-events-'));
  const eventBridge = await startEventBridge({ fileFor: (bus) => join(eventsDir, `${bus}.jsonl`) });
  const busName = operatorEventBusName(resources.prefix);
  const eventsFile = join(eventsDir, `${busName}.jsonl`);
  const events = new EventBridgeClient({ ...localAwsConfig, endpoint: eventBridge.endpoint });
  meterEventBridge(events, meter);
  const publisherFailures: unknown[] = [];
  // Only what is written from now on (LATEST): the bench's table may hold the runs and deferred runs
  // of earlier sections; the warm-up's events are put before the meter is zeroed.
  await ensureTableStream(resources.dynamoDbEndpoint, resources.tableName);
  const publisher = startStreamPoller({
    dynamoDbEndpoint: resources.dynamoDbEndpoint,
    tableName: resources.tableName,
    startingPosition: 'LATEST',
    handler: meterPublisherHandler(meter, makeEventPublisher({ putEntries: eventBridgeSender(events, busName) })),
    intervalMs: 50,
    onFailure: (failure) => publisherFailures.push(failure),
    onError: (error) => publisherFailures.push(error),
  });
  /** Waits until the bus received the Run Finished of `jobId` (runs one at a time: each run's events alone). */
  const eventsPut = async (jobId: string) => {
    const deadline = Date.now() + 60_000;
    while (
      !readDeliveredEvents(eventsFile).some(
        (e) => e.detail.jobId === jobId && e['detail-type'] === operatorDetailTypes.runFinished,
      )
    ) {
      if (publisherFailures.length > 0) throw new Error(`operator events failed: ${String(publisherFailures[0])}`);
      if (Date.now() > deadline) throw new Error(`no Run Finished event for run ${jobId} within 60 s`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await invocationsSettled();
  };
  const pollers = [
    startQueuePoller({
      endpoint: resources.sqsS3Endpoint,
      queueUrl: resources.queueUrls.Steps,
      definition: stepsQueue,
      handler: meterSqsHandler(meter, 'StepExecutor', makeStepExecutor(deps) as never),
      waitSeconds: 1,
    }),
    startQueuePoller({
      endpoint: resources.sqsS3Endpoint,
      queueUrl: resources.queueUrls.Webhooks,
      definition: webhooksQueue,
      handler: meterSqsHandler(
        meter,
        'WebhookDelivery',
        makeWebhookDelivery(deps, { fetchOptions: { allowLoopback: true, ca: receiverCa } }) as never,
      ),
      waitSeconds: 1,
    }),
  ];
  let stopCapture: (() => void) | undefined;
  try {
    const { team, workflowId, headers } = await seedCostTeam(
      deps,
      api.baseUrl,
      options.chainLength,
      (options.steps ?? chainSteps)(options.chainLength),
    );
    const runOnce = async () => {
      const started = await apiRequest(meter, 'RunWorkflow', `${api.baseUrl}/workflows/${workflowId}/runs`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ callbackUrl: receiver.url, callbackSecret: 'bench-secret' }),
      });
      const jobId = started.body.jobId;
      if (started.status !== 200 || typeof jobId !== 'string') throw new Error(`start answered ${started.status}`);
      await new Promise<void>((resolve, reject) => {
        if (arrived.has(jobId)) return resolve();
        const timer = setTimeout(() => reject(new Error(`no webhook for run ${jobId} within 30 s`)), 30_000);
        waiting.set(jobId, () => {
          clearTimeout(timer);
          resolve();
        });
      });
      await eventsPut(jobId);
      return jobId;
    };
    await runOnce();
    // The webhook worker's invocation ends after the receiver answered: let the warm-up's finish.
    await invocationsSettled();
    resetMeter(meter);
    stopCapture = captureLogs(meter.logs);
    let lastJobId = '';
    const measured = new Set<string>();
    for (let i = 0; i < options.runs; i++) {
      lastJobId = await runOnce();
      measured.add(lastJobId);
    }
    await invocationsSettled();
    stopCapture();
    meter.operatorEvents.delivered = readDeliveredEvents(eventsFile).filter((e) =>
      measured.has(e.detail.jobId as string),
    ).length;
    const counted = structuredClone(meter);
    const left = await leftBehind(deps, reader, team.teamId, measured);
    resetMeter(meter);
    stopCapture = captureLogs(meter.logs);
    await apiRequest(meter, 'GetRun', `${api.baseUrl}/runs/${lastJobId}`, { headers });
    stopCapture();
    stopCapture = undefined;
    return {
      meter: counted,
      runs: options.runs,
      chainLength: options.chainLength,
      pollMeter: structuredClone(meter),
      left,
    };
  } finally {
    stopCapture?.();
    for (const poller of pollers) await poller.stop();
    await publisher.stop();
    events.destroy();
    await eventBridge.stop();
    rmSync(eventsDir, { recursive: true, force: true });
    await receiver.close();
    await api.close();
    deps.ddb.destroy();
    reader.destroy();
  }
};

/**
 * What finished runs leave for the retention: every item of each run's partition (the run, its
 * steps, its webhook deliveries), read with an unmetered client, sized with their index entries;
 * and each run's objects (`teams/<team>/runs/<jobId>/`).
 */
const leftBehind = async (
  deps: ReturnType<typeof localDeps>,
  reader: ReturnType<typeof localDeps>['ddb'],
  teamId: string,
  jobIds: ReadonlySet<string>,
): Promise<ChainRunCost['left']> => {
  const left = { tableBytes: 0, indexBytes: 0, items: 0, s3Bytes: 0, objects: 0 };
  for (const jobId of jobIds) {
    let start: Record<string, unknown> | undefined;
    do {
      const page = await reader.send(
        new QueryCommand({
          TableName: deps.tableName,
          KeyConditionExpression: 'PK = :pk',
          ExpressionAttributeValues: { ':pk': runPartition(jobId) },
          ConsistentRead: true,
          ExclusiveStartKey: start,
        }),
      );
      const items = page.Items ?? [];
      left.items += items.length;
      const stored = storedItemBytes(items, dataTable);
      left.tableBytes += stored.table;
      left.indexBytes += stored.indexes;
      start = page.LastEvaluatedKey;
    } while (start);
    let token: string | undefined;
    do {
      const page = await deps.s3.send(
        new ListObjectsV2Command({
          Bucket: deps.bucket,
          Prefix: `teams/${teamId}/runs/${jobId}/`,
          ContinuationToken: token,
        }),
      );
      for (const object of page.Contents ?? []) {
        left.objects++;
        left.s3Bytes += object.Size ?? 0;
      }
      token = page.NextContinuationToken;
    } while (token);
  }
  return left;
};
