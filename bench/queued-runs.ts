/**
 * What a queued run adds (`onConflict: "queue"`), beside a plain run: a `chainLength`-step chain
 * started over HTTP and run by the real step executor from the steps queue, metered by
 * bench/cost-meter.ts (DynamoDB capacity units, transactions priced from their items' sizes, refused
 * writes at what DynamoDB bills them; the service's SQS sends, not the event source's receives, the
 * same for both). First `runs` plain runs one at a time; then
 * `runs` pairs, each a plain run and a run queued behind it while it is in progress (the steps'
 * poller started only once both were accepted, so the second always waits), until the queued one
 * ended. A queued run's own cost is the pair's less a plain run; what it adds is that less a plain
 * run again. Priced at us-east-1 on-demand rates (`awsPrices`).
 */

import { PurgeQueueCommand } from '@aws-sdk/client-sqs';
import { isEndStatus } from '../functions/domain/run-lifecycle.ts';
import type { NodeExecutor } from '../functions/nodes/executors/types.ts';
import { readRunItem } from '../functions/store/run/index.ts';
import { makeHandler as makeStepExecutor } from '../functions/workers/step-executor.ts';
import { startLocalApi } from '../local/api-gateway.ts';
import { startQueuePoller } from '../local/event-source.ts';
import { localDeps } from '../local/local-deps.ts';
import type { LocalResources } from '../local/provision.ts';
import { stepsQueue } from '../platform/definitions.ts';
import { awsPrices, dollars, type Meter, meterDynamoDb, meterSqs, newMeter, resetMeter } from './cost-meter.ts';
import { heading, line, note } from './report.ts';
import { chainSteps, seedCostTeam } from './seed.ts';

/** A node executor that answers at once: only the orchestration and the queue are measured. */
const instant: NodeExecutor = async (context) => {
  const [first] = context.spec.outputs;
  return { outputs: first ? { [first.name]: `${context.node.id}` } : {} };
};

interface Tally {
  readUnits: number;
  writeUnits: number;
  dynamoDbCalls: number;
  sqsRequests: number;
}

const tallyOf = (meter: Meter): Tally => ({
  readUnits: meter.dynamoDb.readUnits,
  writeUnits: meter.dynamoDb.writeUnits + meter.dynamoDb.refusedWriteUnits,
  dynamoDbCalls: meter.dynamoDb.calls.total,
  sqsRequests: meter.sqs.total,
});

const per = (tally: Tally, n: number): Tally => ({
  readUnits: tally.readUnits / n,
  writeUnits: tally.writeUnits / n,
  dynamoDbCalls: tally.dynamoDbCalls / n,
  sqsRequests: tally.sqsRequests / n,
});

const minus = (a: Tally, b: Tally): Tally => ({
  readUnits: a.readUnits - b.readUnits,
  writeUnits: a.writeUnits - b.writeUnits,
  dynamoDbCalls: a.dynamoDbCalls - b.dynamoDbCalls,
  sqsRequests: a.sqsRequests - b.sqsRequests,
});

const priced = (t: Tally) =>
  t.readUnits * awsPrices.dynamoDbReadUnit +
  t.writeUnits * awsPrices.dynamoDbWriteUnit +
  t.sqsRequests * awsPrices.sqsRequest;

export const benchQueuedRuns = async (options: { resources: LocalResources; chainLength: number; runs?: number }) => {
  const runs = options.runs ?? 10;
  heading(`What a queued run adds (onConflict: "queue"), beside a plain ${options.chainLength}-step run`);
  const meter = newMeter();
  const deps = { ...localDeps(options.resources), executors: () => instant };
  meterDynamoDb(deps.ddb, meter, localDeps(options.resources).ddb);
  meterSqs(deps.sqs, meter);
  const reader = localDeps(options.resources);
  const api = await startLocalApi({ deps, port: 0, host: '127.0.0.1' });
  try {
    const { workflowId, headers } = await seedCostTeam(
      deps,
      api.baseUrl,
      options.chainLength,
      chainSteps(options.chainLength),
    );
    const start = async (body: object, expected: number) => {
      const response = await fetch(`${api.baseUrl}/workflows/${workflowId}/runs`, {
        method: 'POST',
        headers,
        body: JSON.stringify(body),
      });
      const answer = (await response.json()) as { jobId: string };
      if (response.status !== expected) throw new Error(`start answered ${response.status}: ${JSON.stringify(answer)}`);
      return answer.jobId;
    };
    const ended = async (jobId: string) => {
      const deadline = Date.now() + 60_000;
      while (!isEndStatus((await readRunItem(reader, jobId))?.status)) {
        if (Date.now() > deadline) throw new Error(`run ${jobId} did not end within 60 s`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    };
    const steps = () =>
      startQueuePoller({
        endpoint: options.resources.sqsS3Endpoint,
        queueUrl: options.resources.queueUrls.Steps,
        definition: stepsQueue,
        handler: makeStepExecutor(deps) as never,
        waitSeconds: 1,
      });
    // A warm-up pair, unmetered.
    // Step messages an earlier section left (a run it did not wait for, a check sent for later) would
    // be run, and metered, by this section's executor: the queue starts empty.
    await reader.sqs.send(new PurgeQueueCommand({ QueueUrl: options.resources.queueUrls.Steps }));
    const warm = steps();
    await ended(await start({}, 200));
    await warm.stop();
    resetMeter(meter);
    const plainPoller = steps();
    for (let i = 0; i < runs; i++) await ended(await start({}, 200));
    await plainPoller.stop();
    const plain = per(tallyOf(meter), runs);
    resetMeter(meter);
    for (let i = 0; i < runs; i++) {
      await start({}, 200);
      const queued = await start({ onConflict: 'queue' }, 202);
      const poller = steps();
      await ended(queued);
      await poller.stop();
    }
    const pair = per(tallyOf(meter), runs);
    const queuedRun = minus(pair, plain);
    const added = minus(queuedRun, plain);
    const row = (label: string, t: Tally) =>
      line(
        `  ${label}: ${t.readUnits.toFixed(1)} RRU, ${t.writeUnits.toFixed(1)} WRU, ${t.dynamoDbCalls.toFixed(1)} DynamoDB calls, ${t.sqsRequests.toFixed(1)} SQS requests`,
        dollars(priced(t)).padStart(12),
      );
    row('plain run', plain);
    row('queued run', queuedRun);
    row('added by queueing', added);
    line(
      '  queued run / plain run (DynamoDB and SQS, priced)',
      `${(priced(queuedRun) / priced(plain)).toFixed(2)}x`.padStart(12),
    );
    note(
      'Added: the queueing transaction (two more items: the lock and the queue entry), a read of the lock and of ' +
        'the queue; at its start the end of the run before it refused once (its lock counts it), the handover, ' +
        'a read of the lock, the queue and the run, the promotion transaction. A run nobody queues behind pays nothing.',
    );
  } finally {
    await api.close();
  }
};
