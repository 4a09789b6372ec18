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
import { startLocalApi } from '../local/api-gateway.ts';
import { invokedAs } from '../local/invocation.ts';
import { localDeps } from '../local/local-deps.ts';
import type { LocalResources } from '../local/provision.ts';
import { streamCapSeconds, streamFunctionMemoryMb, streamPollMs } from '../platform/run-stream.ts';
import { runEventsUrlEvent } from '../test/support/function-url-event.ts';
import { awsPrices, dollars, ingestedBytes, lambdaPlatformLines, meterDynamoDb, newMeter } from './cost-meter.ts';
import { heading, line, note } from './report.ts';
import { chainSteps, seedCostTeam } from './seed.ts';
import type { Targets } from './stats.ts';

/** CloudFront's data transfer out to the internet, United States (first 10 TB a month, per GB). */
const cloudFrontGb = 0.085;

/** One capped connection to a run in progress that does not move (the steady state): its reads and bytes. */
export const measureStreamConnection = async (resources: LocalResources, chainLength: number) => {
  const deps = localDeps(resources);
  const reader = localDeps(resources).ddb;
  const api = await startLocalApi({ deps, port: 0, host: '127.0.0.1' });
  try {
    const { team, workflowId, headers } = await seedCostTeam(deps, api.baseUrl, chainLength, chainSteps(chainLength));
    // No worker runs here: the run stays queued, every poll finds it unchanged.
    const started = await fetch(`${api.baseUrl}/workflows/${workflowId}/runs`, { method: 'POST', headers, body: '{}' });
    const { jobId } = (await started.json()) as { jobId: string };
    const meter = newMeter();
    meterDynamoDb(deps.ddb, meter, reader);
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
    return { meter, bytes, polls: sleeps };
  } finally {
    await api.close();
    deps.ddb.destroy();
    reader.destroy();
  }
};

export const benchStreamCost = async (options: {
  resources: LocalResources;
  targets: Targets;
  chainLength: number;
}) => {
  heading(
    `The run event stream's cost per connected minute (GET /runs/{jobId}/events: one ${streamCapSeconds} s connection measured, halved), us-east-1 on-demand`,
  );
  const { meter, bytes, polls } = await measureStreamConnection(options.resources, options.chainLength);
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
  note(
    `A run that moves adds one strongly consistent Query of its partition per change (and every ${streamTiming.fullReadMs / 1000} s);`,
  );
  note(
    `the steady state above reads the run item every ${streamPollMs / 1000} s and the partition every ${streamTiming.fullReadMs / 1000} s.`,
  );
  note("CloudFront's and AWS WAF's per-request fees apply to the connection (0.5 a minute) and are not priced here.");
  note(
    'For scale: a client polling GET /runs/{jobId} every 2 s pays 30 of those requests a minute (the poll is priced above).',
  );
};
