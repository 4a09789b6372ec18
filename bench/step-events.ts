/**
 * The step events' cost per run: what a run that chose `step.completed` pays for its
 * step events, beyond the end webhook every run with a callbackUrl already has, for a 5-step and a
 * 500-step (capped at 50 events) workflow, priced with the cost bench's prices (`awsPrices`).
 *
 * Measured here: the fan-out handler's time per record (`functions/workers/lifecycle-webhooks.ts`,
 * the real handler on the emulators, handed the records the table's stream gives). Counted from the
 * code path, per opened step event: one TransactWriteItems of two items under 1 KB (the delivery
 * item and the run's count: 2 write units each, as transactions are billed), one SQS send; then the
 * webhook worker's receive, delete and invocation, its reads (the run item and the delivery item,
 * strongly consistent; the run's partition for the body, `assumedStepItemBytes` a step; the canvas)
 * and its one attempt write. A step past the cap (the first 50 in the workflow's order may give
 * events) is never marked, so it invokes nothing and writes nothing. Stream reads by Lambda are not
 * billed (docs/decisions.md). The webhook worker's time is the receiver's: it is
 * priced at `assumedDeliveryMs`, not measured, since it is the receiver's answer time.
 */
import { randomUUID } from 'node:crypto';
import type { DynamoDBStreamEvent } from 'aws-lambda';
import { webhookBodyOf } from '../functions/app/lifecycle-webhook-body.ts';
import { readRun } from '../functions/app/read-run.ts';
import { makeHandler } from '../functions/workers/lifecycle-webhooks.ts';
import { startLocalApi } from '../local/api-gateway.ts';
import { localDeps } from '../local/local-deps.ts';
import type { LocalResources } from '../local/provision.ts';
import { functionMemoryMb } from '../platform/definitions.ts';
import { stepEventCap } from '../schemas/webhook-events.ts';
import { awsPrices, dollars } from './cost-meter.ts';
import { heading, line, note } from './report.ts';
import { endStepsThroughStore, seedCostTeam } from './seed.ts';

/** A step item's size as the webhook body's partition read meets it (a small text output). */
export const assumedStepItemBytes = 400;
/** The webhook worker's time per delivery: the receiver's answer, assumed (a fast receiver). */
export const assumedDeliveryMs = 150;
/** The run item, the canvas and the other items of a run's partition, in bytes, besides its steps. */
const otherPartitionBytes = 4096;

const gbSeconds = (ms: number) => (ms / 1000) * (functionMemoryMb / 1024);

/** The fan-out handler's mean time per record, on `records` step ends of one run (a fresh one each call). */
const measureFanOutMs = async (resources: LocalResources, records: number): Promise<number> => {
  const deps = localDeps(resources);
  const handler = makeHandler(deps);
  const jobId = randomUUID();
  const event = {
    Records: Array.from({ length: records }, (_, i) => ({
      eventName: 'INSERT',
      dynamodb: {
        SequenceNumber: String(i + 1),
        Keys: { PK: { S: `RUN#${jobId}` }, SK: { S: `STEP#s${i}` } },
        NewImage: {
          PK: { S: `RUN#${jobId}` },
          SK: { S: `STEP#s${i}` },
          nodeId: { S: `s${i}` },
          status: { S: 'completed' },
          notify: { BOOL: true },
          chargeHundredths: { N: '1' },
          ttl: { N: String(Math.floor(Date.now() / 1000) + 86_400) },
          v: { N: '1' },
        },
      },
    })),
  } as unknown as DynamoDBStreamEvent;
  const started = performance.now();
  // One record a call: the worst case, one invocation per event (no batching window).
  for (const record of event.Records) await handler({ Records: [record] }, {} as never);
  const ms = (performance.now() - started) / records;
  deps.ddb.destroy();
  return ms;
};

/** A run of `steps` steps that chose `step.completed`: its step events' cost, line by line. */
export const stepEventsCost = (steps: number, fanOutMs: number) => {
  const events = Math.min(steps, stepEventCap);
  const capped = steps - events;
  // Each delivery reads the run's partition as it stands then; on average half its steps have ended.
  const partitionBytes = otherPartitionBytes + (steps * assumedStepItemBytes) / 2;
  const queryUnits = Math.ceil(partitionBytes / 4096);
  const lines = [
    {
      what: `fan-out invocations (worst case one per event, ${fanOutMs.toFixed(1)} ms each)`,
      count: events,
      dollars: events * (awsPrices.lambdaRequest + gbSeconds(fanOutMs) * awsPrices.lambdaGbSecond),
    },
    {
      what: 'fan-out writes (delivery + count, one transaction: 4 WCU)',
      count: events * 4,
      dollars: events * 4 * awsPrices.dynamoDbWriteUnit,
    },
    { what: 'SQS send, receive, delete per event', count: events * 3, dollars: events * 3 * awsPrices.sqsRequest },
    {
      what: `webhook worker invocations (${assumedDeliveryMs} ms each, assumed)`,
      count: events,
      dollars: events * (awsPrices.lambdaRequest + gbSeconds(assumedDeliveryMs) * awsPrices.lambdaGbSecond),
    },
    {
      what: `webhook worker reads (run, delivery, canvas, partition of ~${Math.round(partitionBytes / 1024)} KB)`,
      count: events * (2.5 + queryUnits),
      dollars: events * (2.5 + queryUnits) * awsPrices.dynamoDbReadUnit,
    },
    { what: 'webhook worker attempt write', count: events, dollars: events * awsPrices.dynamoDbWriteUnit },
  ];
  return { events, capped, lines, total: lines.reduce((sum, l) => sum + l.dollars, 0) };
};

/**
 * The bytes of a run's lifecycle deliveries (each `step.completed`, then `run.completed`), one
 * attempt each, their bodies made by the webhook worker's own code (`webhookBodyOf`) after the run
 * ended: `steps` independent steps (each a final step, its output on the Run), each output
 * `outputBytes`. Before: every body as the end webhook's is, the Run with its page of outputs, as
 * step event bodies were before they carried their step alone.
 */
export const measureDeliveryBytes = async (resources: LocalResources, steps: number, outputBytes: number) => {
  const deps = localDeps(resources);
  const api = await startLocalApi({ deps, port: 0, host: '127.0.0.1' });
  try {
    const nodes = Array.from({ length: steps }, (_, i) => ({ key: `s${i}`, type: 'TextEntry', config: { text: 'b' } }));
    const { workflowId, headers } = await seedCostTeam(deps, api.baseUrl, steps, nodes);
    const started = await fetch(`${api.baseUrl}/workflows/${workflowId}/runs`, { method: 'POST', headers, body: '{}' });
    const { jobId } = (await started.json()) as { jobId: string };
    await endStepsThroughStore(deps, jobId, steps, outputBytes);
    const size = (body: unknown) => Buffer.byteLength(JSON.stringify(body));
    const end = size(await webhookBodyOf(deps, jobId, { event: 'run.completed' }));
    let after = end;
    for (let i = 0; i < steps; i++)
      after += size(await webhookBodyOf(deps, jobId, { event: 'step.completed', nodeId: `s${i}` }));
    const whole = size({ ...(await readRun(deps, null, jobId)), event: 'step.completed' });
    return { deliveries: steps + 1, before: end + steps * whole, after };
  } finally {
    await api.close();
    deps.ddb.destroy();
  }
};

export const benchStepEvents = async (options: { resources: LocalResources }) => {
  heading("Step events' cost per run (a run that chose step.completed), priced at us-east-1 on-demand rates");
  const fanOutMs = await measureFanOutMs(options.resources, 20);
  for (const steps of [5, 500]) {
    const cost = stepEventsCost(steps, fanOutMs);
    note(
      `${steps}-step workflow: ${cost.events} step events${cost.capped > 0 ? `; ${cost.capped} steps past the cap, never marked` : ''}`,
    );
    for (const l of cost.lines) line(`  ${l.what}: ${l.count}`, dollars(l.dollars).padStart(12));
    line(`  step events of a ${steps}-step run`, dollars(cost.total).padStart(12));
  }
  const bytes = await measureDeliveryBytes(options.resources, 20, 250_000);
  line(
    `run delivery bytes: before ${bytes.before.toLocaleString('en-US')} B, after ${bytes.after.toLocaleString('en-US')} B (a 20-step run, 20 outputs of 250 KB, ${bytes.deliveries} deliveries, one attempt each)`,
    '',
  );
  note(
    'Before: each step event carried the Run and its page of outputs; after: its own step (and result) and links.run.',
  );
  note(
    'Stream reads by Lambda are not billed; a run that chose no event invokes nothing (its writes carry no mark). ' +
      'Logs are left out: one line per invocation.',
  );
};
