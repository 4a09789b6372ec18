/**
 * The run event stream's cost per connected minute: one whole capped connection of
 * GET /runs/{jobId}/events (its key check, its reads, its 120 s) run through the real handler on
 * the emulators, metered like a run (bench/cost-meter.ts), then halved: a client stays connected by
 * reconnecting every `streamCapSeconds`. The handler's clock is the bench's (each poll's wait
 * advances it at once), so the 120 s take no wall time; the reads are counted, never timed.
 *
 * Priced: Lambda's duration (a streaming function is billed for every second its handler runs, the
 * waits between polls included) at the stream function's memory, its invocations, the DynamoDB
 * reads, the log lines Lambda writes per invocation, and with the edge on, CloudFront's data
 * transfer out. Lambda bills streamed bytes only past 6 MB per response; a run's stream is far
 * below (measured).
 */
import { makeHandler } from '../functions/api/get-run-events.ts';
import { streamTiming } from '../functions/app/run-stream.ts';
import type { Deps } from '../functions/deps.ts';
import { readRunPartition, readRunProgress } from '../functions/store/run/index.ts';
import { startLocalApi } from '../local/api-gateway.ts';
import { invokedAs } from '../local/invocation.ts';
import { localDeps } from '../local/local-deps.ts';
import type { LocalResources } from '../local/provision.ts';
import { streamCapSeconds, streamFullReadMs, streamFunctionMemoryMb, streamPollMs } from '../platform/run-stream.ts';
import { runEventsUrlEvent } from '../test/support/function-url-event.ts';
import {
  awsPrices,
  dollars,
  ingestedBytes,
  lambdaPlatformLines,
  meterDynamoDb,
  newMeter,
  resetMeter,
} from './cost-meter.ts';
import { heading, line, note } from './report.ts';
import { chainSteps, endStepsThroughStore, seedCostTeam } from './seed.ts';
import type { Targets } from './stats.ts';

/** CloudFront's data transfer out to the internet, United States (first 10 TB a month, per GB). */
const cloudFrontGb = 0.085;

/**
 * One capped connection's reads as the stream made them before it read only the step items it
 * needs (replaced in this repository; the same store reads, metered the same way): the partition
 * in one strongly consistent Query at the open, the run item (eventually consistent) every poll
 * but the last, and the partition again every `streamFullReadMs` of an unchanged run.
 */
const formerReads = async (deps: Deps, jobId: string, polls: number) => {
  await readRunPartition(deps, jobId);
  for (let poll = 1; poll < polls; poll++) {
    await readRunProgress(deps, jobId);
    if ((poll * streamPollMs) % streamFullReadMs === 0) await readRunPartition(deps, jobId);
  }
};

/** A run a connection follows: `steps` long, its first `completed` steps ended with `outputBytes` each. */
export interface StreamedRun {
  steps: number;
  completed?: number;
  outputBytes?: number;
}

/**
 * One capped connection to a run in progress that does not move (the steady state): its reads and
 * bytes, and (`former`) the reads the stream's former pattern made of the same run.
 */
export const measureStreamConnection = async (resources: LocalResources, shape: StreamedRun) => {
  const deps = localDeps(resources);
  const reader = localDeps(resources).ddb;
  const api = await startLocalApi({ deps, port: 0, host: '127.0.0.1' });
  try {
    const { team, workflowId, headers } = await seedCostTeam(deps, api.baseUrl, shape.steps, chainSteps(shape.steps));
    // No worker runs here: the run stays queued (or as `advanceRun` left it), every poll finds it unchanged.
    const started = await fetch(`${api.baseUrl}/workflows/${workflowId}/runs`, { method: 'POST', headers, body: '{}' });
    const { jobId } = (await started.json()) as { jobId: string };
    if (shape.completed) await endStepsThroughStore(deps, jobId, shape.completed, shape.outputBytes ?? 0);
    const meter = newMeter();
    meterDynamoDb(deps.ddb, meter, reader);
    const largestRead = { units: 0 };
    deps.ddb.middlewareStack.add(
      (next) => async (args) => {
        const result = await next(args);
        const capacity = (
          result.output as { ConsumedCapacity?: { CapacityUnits?: number }[] | { CapacityUnits?: number } }
        ).ConsumedCapacity;
        for (const c of Array.isArray(capacity) ? capacity : capacity ? [capacity] : [])
          largestRead.units = Math.max(largestRead.units, c.CapacityUnits ?? 0);
        return result;
      },
      { step: 'initialize', name: 'largestRead', priority: 'low' },
    );
    let clock = Date.now();
    const clocked = {
      ...deps,
      now: () => new Date(clock),
      sleep: async (ms: number) => {
        clock += ms;
      },
    };
    let bytes = 0;
    let sleeps = 0;
    const counted = {
      ...clocked,
      sleep: async (ms: number) => {
        sleeps += 1;
        await clocked.sleep(ms);
      },
    };
    // As its function (the AWS command log of the least-privilege audit, when the tests set it).
    await invokedAs('GetRunEvents', makeHandler(counted, streamTiming))(
      runEventsUrlEvent(jobId, { authorization: `Bearer ${team.key}` }, 'bench'),
      () => ({
        write: (text) => {
          bytes += Buffer.byteLength(text);
        },
        end: () => undefined,
        closed: false,
      }),
    );
    const streamed = { ...meter.dynamoDb, calls: { ...meter.dynamoDb.calls } };
    const largest = largestRead.units;
    resetMeter(meter);
    await formerReads(deps, jobId, sleeps);
    return {
      meter: { dynamoDb: streamed },
      bytes,
      polls: sleeps,
      largestReadUnits: largest,
      formerReadUnits: meter.dynamoDb.readUnits,
    };
  } finally {
    await api.close();
    deps.ddb.destroy();
    reader.destroy();
  }
};

/** The run the stream's read units are stated for: 20 steps, each output 250 KB, the last at work. */
export const wideOutputsRun: StreamedRun = { steps: 20, completed: 19, outputBytes: 250_000 };

export const benchStreamCost = async (options: {
  resources: LocalResources;
  targets: Targets;
  chainLength: number;
}) => {
  heading(
    `The run event stream's cost per connected minute (GET /runs/{jobId}/events: one ${streamCapSeconds} s connection measured, halved), us-east-1 on-demand`,
  );
  const { meter, bytes, polls } = await measureStreamConnection(options.resources, { steps: options.chainLength });
  const perMinute = 60 / streamCapSeconds;
  const calls = meter.dynamoDb.calls;
  const reads = meter.dynamoDb.readUnits * perMinute;
  const gbSeconds = (streamFunctionMemoryMb / 1024) * 60;
  const lambda = gbSeconds * awsPrices.lambdaGbSecond;
  const invocations = perMinute * awsPrices.lambdaRequest;
  // The key's rate counter, and the stream's slot taken and given back (the per-key cap).
  const writes = meter.dynamoDb.writeUnits * perMinute;
  const dynamo = reads * awsPrices.dynamoDbReadUnit + writes * awsPrices.dynamoDbWriteUnit;
  const platform = lambdaPlatformLines(streamFunctionMemoryMb, streamCapSeconds * 1000);
  const logBytes = ingestedBytes(platform.length, platform.join('\n').length) * perMinute;
  const logs = (logBytes / 2 ** 30) * awsPrices.logsIngestedGb;
  const streamed = bytes * perMinute;
  const edge = (streamed / 2 ** 30) * cloudFrontGb;
  line(
    `Lambda duration: ${streamFunctionMemoryMb} MB × 60 s = ${gbSeconds.toFixed(1)} GB-s (billed while it waits)`,
    dollars(lambda).padStart(12),
  );
  line(
    `Lambda invocations: ${perMinute} a minute (one connection per ${streamCapSeconds} s)`,
    dollars(invocations).padStart(12),
  );
  line(
    `DynamoDB: ${reads.toFixed(1)} read units and ${writes.toFixed(1)} write units a minute (${JSON.stringify(calls.byCommand)} a connection, ${polls} polls)`,
    dollars(dynamo).padStart(12),
  );
  line(
    `CloudWatch Logs: Lambda's START/END/REPORT, ${(logBytes / 1024).toFixed(2)} KB a minute`,
    dollars(logs).padStart(12),
  );
  line(
    `streamed: ${(streamed / 1024).toFixed(2)} KB a minute (Lambda bills past 6 MB a response only)`,
    dollars(0).padStart(12),
  );
  const total = lambda + invocations + dynamo + logs;
  line(
    'total per connected minute, without the edge',
    options.targets.check('run event stream, per connected minute', total, '<=', 0.0003, dollars),
  );
  line(`with the edge: CloudFront data transfer out at $${cloudFrontGb}/GB`, dollars(total + edge).padStart(12));
  const heavy = await measureStreamConnection(options.resources, wideOutputsRun);
  const minute = (units: number) => (units * perMinute).toFixed(1);
  line(
    `stream minute RCU: before ${minute(heavy.formerReadUnits)}, after ${minute(heavy.meter.dynamoDb.readUnits)} (a ${wideOutputsRun.steps}-step run, ${wideOutputsRun.completed} outputs of ${(wideOutputsRun.outputBytes ?? 0) / 1000} KB, its last step at work; largest read ${heavy.largestReadUnits} RCU)`,
    '',
  );
  note(
    `The stream reads the run item every ${streamPollMs / 1000} s and, when it moved or every ${streamTiming.fullReadMs / 1000} s, the step items it still needs,`,
  );
  note(
    "eventually consistent: a step's outputs only when its output event is due; the ended run's partition once, strongly consistent.",
  );
  note(
    `"before": the same run read as the stream read it before (its partition, strongly consistent, at the open and every ${streamTiming.fullReadMs / 1000} s).`,
  );
  note("CloudFront's and AWS WAF's per-request fees apply to the connection (0.5 a minute) and are not priced here.");
  note(
    'For scale: a client polling GET /runs/{jobId} every 2 s pays 30 of those requests a minute (the poll is priced above).',
  );
};
