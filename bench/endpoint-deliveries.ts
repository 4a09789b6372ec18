/**
 * What a team webhook endpoint adds per run: `runs` runs of a `chainLength`-step chain started over
 * HTTP and run by the real step executor, the table's stream fed to the real lifecycle consumer
 * (local/stream-source.ts) and the endpoints' messages to the real webhook worker, which POSTs them
 * to a local receiver; metered by bench/cost-meter.ts (DynamoDB capacity units, SQS requests).
 * First the team has no endpoint, then one hearing `run.started` and `run.completed`; what the
 * endpoint adds is the second phase's cost less the first's, per run. Each phase ends with one run of
 * a sentinel team whose own endpoint's delivery is awaited, so the stream has been read past every
 * run of the phase (both phases pay the sentinel once). Lambda is priced from the code path: the
 * webhook worker once per delivery at `assumedDeliveryMs` (the receiver's answer time); the
 * consumer's invocations are batched (up to 50 records) and are paid with or without endpoints.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PurgeQueueCommand } from '@aws-sdk/client-sqs';
import type { Deps } from '../functions/deps.ts';
import { isEndStatus } from '../functions/domain/run-lifecycle.ts';
import type { NodeExecutor } from '../functions/nodes/executors/types.ts';
import { readRunItem } from '../functions/store/run/index.ts';
import { putEndpoint } from '../functions/store/webhook-endpoints.ts';
import { makeHandler as makeStepExecutor } from '../functions/workers/step-executor.ts';
import { makeHandler as makeWebhookWorker } from '../functions/workers/webhook-delivery.ts';
import { startLocalApi } from '../local/api-gateway.ts';
import { startQueuePoller } from '../local/event-source.ts';
import { localDeps } from '../local/local-deps.ts';
import type { LocalResources } from '../local/provision.ts';
import { startLifecycleEvents } from '../local/stream-source.ts';
import { functionMemoryMb, stepsQueue, webhooksQueue } from '../platform/definitions.ts';
import { awsPrices, dollars, type Meter, meterDynamoDb, meterSqs, newMeter, resetMeter } from './cost-meter.ts';
import { heading, line, note } from './report.ts';
import { chainSteps, seedCostTeam } from './seed.ts';
import { assumedDeliveryMs } from './step-events.ts';

/** A node executor that answers at once: only the orchestration and the deliveries are measured. */
const instant: NodeExecutor = async (context) => {
  const [first] = context.spec.outputs;
  return { outputs: first ? { [first.name]: `${context.node.id}` } : {} };
};

const tallyOf = (meter: Meter) => ({
  readUnits: meter.dynamoDb.readUnits,
  writeUnits: meter.dynamoDb.writeUnits + meter.dynamoDb.refusedWriteUnits,
  dynamoDbCalls: meter.dynamoDb.calls.total,
  sqsRequests: meter.sqs.total,
});
type Tally = ReturnType<typeof tallyOf>;

const perRun = (a: Tally, b: Tally, n: number): Tally => ({
  readUnits: (a.readUnits - b.readUnits) / n,
  writeUnits: (a.writeUnits - b.writeUnits) / n,
  dynamoDbCalls: (a.dynamoDbCalls - b.dynamoDbCalls) / n,
  sqsRequests: (a.sqsRequests - b.sqsRequests) / n,
});

const priced = (t: Tally) =>
  t.readUnits * awsPrices.dynamoDbReadUnit +
  t.writeUnits * awsPrices.dynamoDbWriteUnit +
  t.sqsRequests * awsPrices.sqsRequest;

/** A local receiver answering 204, counting what it received by path. */
const startReceiver = async () => {
  const received = new Map<string, number>();
  const server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      received.set(request.url ?? '', (received.get(request.url ?? '') ?? 0) + 1);
      response.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, received, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
};

const anEndpoint = (teamId: string, url: string, events: string[], n: number) => {
  const at = new Date().toISOString();
  return {
    endpointId: `5e000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
    teamId,
    url,
    events,
    secret: `whsec_${Buffer.alloc(32, n).toString('base64')}`,
    disabled: false,
    createdAt: at,
    updatedAt: at,
  };
};

export const benchEndpointDeliveries = async (options: {
  resources: LocalResources;
  chainLength: number;
  runs?: number;
}) => {
  const runs = options.runs ?? 10;
  heading(`What a team webhook endpoint adds per run (a ${options.chainLength}-step run, us-east-1 on-demand rates)`);
  const meter = newMeter();
  const deps: Deps = { ...localDeps(options.resources), executors: () => instant };
  meterDynamoDb(deps.ddb, meter, localDeps(options.resources).ddb);
  meterSqs(deps.sqs, meter);
  const reader = localDeps(options.resources);
  const api = await startLocalApi({ deps, port: 0, host: '127.0.0.1' });
  const receiver = await startReceiver();
  const pollers: { stop: () => Promise<void> }[] = [];
  try {
    const measured = await seedCostTeam(deps, api.baseUrl, options.chainLength, chainSteps(options.chainLength));
    const sentinel = await seedCostTeam(deps, api.baseUrl, 1, chainSteps(1));
    await putEndpoint(deps, anEndpoint(sentinel.team.teamId, `${receiver.url}/sentinel`, ['run.completed'], 1), 20);
    const start = async (team: typeof measured) => {
      const response = await fetch(`${api.baseUrl}/workflows/${team.workflowId}/runs`, {
        method: 'POST',
        headers: team.headers,
        body: '{}',
      });
      const answer = (await response.json()) as { jobId: string };
      if (response.status !== 200) throw new Error(`start answered ${response.status}: ${JSON.stringify(answer)}`);
      return answer.jobId;
    };
    const until = async (what: string, done: () => Promise<boolean> | boolean) => {
      const deadline = Date.now() + 60_000;
      while (!(await done())) {
        if (Date.now() > deadline) throw new Error(`${what} did not happen within 60 s`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    };
    const ended = (jobId: string) =>
      until(`run ${jobId}'s end`, async () => isEndStatus((await readRunItem(reader, jobId))?.status));
    const sentinelRun = async () => {
      const before = receiver.received.get('/sentinel') ?? 0;
      await ended(await start(sentinel));
      await until('the sentinel delivery', () => (receiver.received.get('/sentinel') ?? 0) > before);
    };
    // Earlier sections' messages would be run, and metered, here: both queues start empty.
    for (const queueUrl of [options.resources.queueUrls.Steps, options.resources.queueUrls.Webhooks]) {
      await reader.sqs.send(new PurgeQueueCommand({ QueueUrl: queueUrl }));
    }
    pollers.push(
      startQueuePoller({
        endpoint: options.resources.sqsS3Endpoint,
        queueUrl: options.resources.queueUrls.Steps,
        definition: stepsQueue,
        handler: makeStepExecutor(deps) as never,
        waitSeconds: 1,
      }),
      startQueuePoller({
        endpoint: options.resources.sqsS3Endpoint,
        queueUrl: options.resources.queueUrls.Webhooks,
        definition: webhooksQueue,
        handler: makeWebhookWorker(deps, { fetchOptions: { allowLoopback: true } }) as never,
        waitSeconds: 1,
      }),
      // The stream is read from its oldest record: the warm-up below waits until it has caught up.
      await startLifecycleEvents({ dynamoDbEndpoint: options.resources.dynamoDbEndpoint, deps, intervalMs: 50 }),
    );
    await sentinelRun();

    resetMeter(meter);
    for (let i = 0; i < runs; i++) await ended(await start(measured));
    await sentinelRun();
    const without = tallyOf(meter);

    await putEndpoint(
      deps,
      anEndpoint(measured.team.teamId, `${receiver.url}/measured`, ['run.started', 'run.completed'], 2),
      20,
    );
    resetMeter(meter);
    for (let i = 0; i < runs; i++) await ended(await start(measured));
    await until('every delivery', () => (receiver.received.get('/measured') ?? 0) >= 2 * runs);
    await sentinelRun();
    const withEndpoint = tallyOf(meter);
    const delivered = receiver.received.get('/measured') ?? 0;
    if (delivered !== 2 * runs) throw new Error(`expected ${2 * runs} deliveries, received ${delivered}`);

    const added = perRun(withEndpoint, without, runs);
    const lambda =
      2 * (awsPrices.lambdaRequest + (assumedDeliveryMs / 1000) * (functionMemoryMb / 1024) * awsPrices.lambdaGbSecond);
    line(
      `  added per run by one endpoint (2 deliveries): ${added.readUnits.toFixed(1)} RRU, ${added.writeUnits.toFixed(1)} WRU, ${added.dynamoDbCalls.toFixed(1)} DynamoDB calls, ${added.sqsRequests.toFixed(1)} SQS requests`,
      dollars(priced(added)).padStart(12),
    );
    line(`  webhook worker invocations: 2 at ${assumedDeliveryMs} ms (assumed)`, dollars(lambda).padStart(12));
    // The meter counts the service's own SQS calls; the event source's receive and delete are billed too.
    const eventSource = 2 * 2 * awsPrices.sqsRequest;
    line('  SQS receive and delete by the event source: 4', dollars(eventSource).padStart(12));
    const allIn = priced(added) + lambda + eventSource;
    line('  one endpoint, per run, all in', dollars(allIn).padStart(12));
    line('  per delivery, all in', dollars(allIn / 2).padStart(12));
    note(
      'Each delivery: its conditional Put in the endpoint log, an SQS send (and receive, delete), the worker reading ' +
        'the endpoint, the delivery and the run, and its attempt written. A run whose team has no endpoint pays ' +
        "the consumer's read of the team's endpoints only, once per team per stream batch, in both phases.",
    );
  } finally {
    for (const poller of pollers) await poller.stop();
    await receiver.close();
    await api.close();
  }
};
