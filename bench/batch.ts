/**
 * What a batch item adds per run (POST /runs/batch), beside a single start: `items` starts of
 * `items` fresh workflows (so none meets a busy one) one request each, then the same number as one
 * batch, each metered by bench/cost-meter.ts (DynamoDB capacity units, transactions priced from their
 * items' sizes, refused writes as DynamoDB bills them; the SQS sends). Only the starts are measured:
 * the steps they send are the same either way and are not run. Per run, a batch item writes one more
 * item in its start transaction (its `RUNBATCH#` entry, under 1 KB: 2 write units, as transactions
 * are billed) and `batchId` on the run; it saves the per-request work a single start repeats (its
 * HTTP API request, its Lambda request, its key's read and its rate count). Priced at us-east-1
 * on-demand rates (`awsPrices`).
 */
import { PurgeQueueCommand } from '@aws-sdk/client-sqs';
import { startLocalApi } from '../local/api-gateway.ts';
import { localDeps } from '../local/local-deps.ts';
import type { LocalResources } from '../local/provision.ts';
import { maxBatchItems } from '../schemas/batch-request.ts';
import { awsPrices, dollars, type Meter, meterDynamoDb, meterSqs, newMeter, resetMeter } from './cost-meter.ts';
import { heading, line, note } from './report.ts';
import { chainSteps, createChainWorkflows, seedRunsTeam } from './seed.ts';

interface Tally {
  readUnits: number;
  writeUnits: number;
  dynamoDbCalls: number;
  sqsRequests: number;
  /** HTTP API requests, and as many Lambda requests. */
  requests: number;
  /** Wall time in the local API, per run (one process: a measure of the work, not of Lambda's bill). */
  ms: number;
}

const tallyOf = (meter: Meter, requests: number, ms: number, runs: number): Tally => ({
  readUnits: meter.dynamoDb.readUnits / runs,
  writeUnits: (meter.dynamoDb.writeUnits + meter.dynamoDb.refusedWriteUnits) / runs,
  dynamoDbCalls: meter.dynamoDb.calls.total / runs,
  sqsRequests: meter.sqs.total / runs,
  requests: requests / runs,
  ms: ms / runs,
});

const priced = (t: Tally) =>
  t.readUnits * awsPrices.dynamoDbReadUnit +
  t.writeUnits * awsPrices.dynamoDbWriteUnit +
  t.sqsRequests * awsPrices.sqsRequest +
  t.requests * (awsPrices.httpApiRequest + awsPrices.lambdaRequest);

export const benchBatch = async (options: { resources: LocalResources; items?: number }) => {
  const items = Math.min(maxBatchItems, Math.max(2, options.items ?? maxBatchItems));
  const stepsPerRun = 2;
  heading(`What a batch item adds per run (POST /runs/batch, ${items} items), beside a single start`);
  const meter = newMeter();
  const deps = localDeps(options.resources);
  meterDynamoDb(deps.ddb, meter, localDeps(options.resources).ddb);
  meterSqs(deps.sqs, meter);
  const api = await startLocalApi({ deps, port: 0, host: '127.0.0.1' });
  try {
    const team = await seedRunsTeam(deps, 100_000);
    const headers = { authorization: `Bearer ${team.key}`, 'content-type': 'application/json' };
    const workflows = (count: number) =>
      createChainWorkflows(deps, api.baseUrl, team, count, stepsPerRun, chainSteps(stepsPerRun));
    const post = async (path: string, body: object) => {
      const response = await fetch(`${api.baseUrl}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
      const answer = (await response.json()) as Record<string, unknown>;
      if (response.status !== 200) throw new Error(`${path} answered ${response.status}: ${JSON.stringify(answer)}`);
      return answer;
    };
    const singles = await workflows(items);
    const batched = await workflows(items);
    // A warm-up of each route, unmetered.
    const [warmSingle, warmBatch] = await workflows(2);
    await post(`/workflows/${warmSingle}/runs`, {});
    await post('/runs/batch', { runs: [{ workflowId: warmBatch }] });

    resetMeter(meter);
    let started = performance.now();
    for (const workflowId of singles) await post(`/workflows/${workflowId}/runs`, {});
    const single = tallyOf(meter, items, performance.now() - started, items);

    resetMeter(meter);
    started = performance.now();
    const answer = await post('/runs/batch', { runs: batched.map((workflowId) => ({ workflowId })) });
    const ms = performance.now() - started;
    const refused = (answer.results as { status: number }[]).filter((r) => r.status !== 200);
    if (refused.length > 0) throw new Error(`${refused.length} batch items refused`);
    const batch = tallyOf(meter, 1, ms, items);
    const added: Tally = {
      readUnits: batch.readUnits - single.readUnits,
      writeUnits: batch.writeUnits - single.writeUnits,
      dynamoDbCalls: batch.dynamoDbCalls - single.dynamoDbCalls,
      sqsRequests: batch.sqsRequests - single.sqsRequests,
      requests: batch.requests - single.requests,
      ms: batch.ms - single.ms,
    };
    const row = (label: string, t: Tally) =>
      line(
        `  ${label}: ${t.readUnits.toFixed(2)} RRU, ${t.writeUnits.toFixed(2)} WRU, ${t.dynamoDbCalls.toFixed(2)} DynamoDB calls, ` +
          `${t.sqsRequests.toFixed(2)} SQS, ${t.requests.toFixed(2)} requests, ${t.ms.toFixed(1)} ms`,
        dollars(priced(t)).padStart(12),
      );
    row('a single start, per run', single);
    row('a batch item, per run', batch);
    row('added by a batch item (negative: saved)', added);
    note(
      "Added per run: the batch entry's Put in the start transaction (2 WRU) and `batchId` on the run item. Saved " +
        "per run: the HTTP API and Lambda requests, the key's read and its rate count (1 WRU), which a batch makes once. " +
        'The ms are this process (one DynamoDB Local), items five at a time: a measure of the work, not a latency.',
    );
    // The steps these starts queued are not this section's: left for no later section to run.
    await deps.sqs.send(new PurgeQueueCommand({ QueueUrl: options.resources.queueUrls.Steps }));
  } finally {
    await api.close();
  }
};
