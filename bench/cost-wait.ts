/**
 * What a request that waits for its run (`Prefer: wait=N`) adds, beside a plain run: GET
 * /runs/{jobId} with `Prefer: wait=N` on a run that does not end (the dearest case: the whole N
 * seconds), through the real handler on the emulators, metered like a run (bench/cost-meter.ts),
 * less a plain GET of the same run metered the same way. The handler's clock is the bench's (each
 * pause of the wait advances it at once), so the seconds take no wall time; the reads are counted,
 * never timed. A waiting run start makes the same looks and, when the run ends, the same last read.
 *
 * Priced: Lambda's duration (the function is billed for every second it waits) at the service's
 * memory, and the DynamoDB reads. The request, its invocation, its key check and its logs are a
 * plain request's, which the wait replaces (a polling client's GETs) rather than adds to.
 */

import { waitLookTimesMs } from '../functions/domain/prefer-wait.ts';
import { startLocalApi } from '../local/api-gateway.ts';
import { localDeps } from '../local/local-deps.ts';
import type { LocalResources } from '../local/provision.ts';
import { functionMemoryMb } from '../platform/definitions.ts';
import { maxWaitSeconds } from '../platform/run-wait.ts';
import { awsPrices, dollars, meterDynamoDb, newMeter, resetMeter } from './cost-meter.ts';
import { heading, line, note, ratio } from './report.ts';
import { chainSteps, seedCostTeam } from './seed.ts';
import type { Targets } from './stats.ts';

/** One request's DynamoDB work: its calls by command and the units DynamoDB reports. */
interface RequestWork {
  calls: Record<string, number>;
  readUnits: number;
  writeUnits: number;
}

/**
 * GET /runs/{jobId} of a run no worker moves (it stays queued), once plainly and once with
 * `Prefer: wait=seconds`: each request's DynamoDB work, and the wait's pauses.
 */
export const measureWaitingRequest = async (resources: LocalResources, seconds: number, steps = 5) => {
  const deps = localDeps(resources);
  const reader = localDeps(resources).ddb;
  let clock = Date.now();
  const pauses: number[] = [];
  const clocked = {
    ...deps,
    now: () => new Date(clock),
    sleep: async (ms: number) => {
      pauses.push(ms);
      clock += ms;
    },
  };
  const api = await startLocalApi({ deps: clocked, port: 0, host: '127.0.0.1' });
  try {
    const { workflowId, headers } = await seedCostTeam(deps, api.baseUrl, steps, chainSteps(steps));
    const started = await fetch(`${api.baseUrl}/workflows/${workflowId}/runs`, { method: 'POST', headers, body: '{}' });
    const { jobId } = (await started.json()) as { jobId: string };
    const meter = newMeter();
    meterDynamoDb(deps.ddb, meter, reader);
    const read = async (extra: Record<string, string>): Promise<RequestWork> => {
      resetMeter(meter);
      const answer = await fetch(`${api.baseUrl}/runs/${jobId}`, { headers: { ...headers, ...extra } });
      if (answer.status !== 200) throw new Error(`GET /runs/${jobId}: ${answer.status} ${await answer.text()}`);
      const { readUnits, writeUnits, calls } = meter.dynamoDb;
      return { calls: { ...calls.byCommand }, readUnits, writeUnits };
    };
    // The first read of a run in a process also reads its canvas (then cached): a warm-up.
    await read({});
    const plain = await read({});
    const waited = await read({ prefer: `wait=${seconds}` });
    return { plain, waited, pauses: [...pauses] };
  } finally {
    await api.close();
    deps.ddb.destroy();
    reader.destroy();
  }
};

export const benchWaitCost = async (options: {
  resources: LocalResources;
  targets: Targets;
  /** A plain run's cost, all in, and one plain GET /runs/{jobId}'s (bench/cost.ts). */
  plainRun: number;
  plainPoll: number;
}) => {
  const seconds = maxWaitSeconds;
  heading(
    `What a request that waits for its run adds (Prefer: wait=${seconds} on a run that does not end: the whole ${seconds} s, measured, the clock injected), us-east-1 on-demand`,
  );
  const { plain, waited, pauses } = await measureWaitingRequest(options.resources, seconds);
  const looks = pauses.length + 1;
  const reads = waited.readUnits - plain.readUnits;
  const gbSeconds = seconds * (functionMemoryMb / 1024);
  const lambda = gbSeconds * awsPrices.lambdaGbSecond;
  const dynamo = reads * awsPrices.dynamoDbReadUnit;
  const added = lambda + dynamo;
  line(
    `Lambda duration: ${functionMemoryMb} MB × ${seconds} s = ${gbSeconds.toFixed(1)} GB-s (billed while it waits)`,
    dollars(lambda).padStart(12),
  );
  line(
    `DynamoDB: ${reads.toFixed(1)} read units more than a plain GET (${looks} looks at the run item, eventually consistent, and the last read; ${JSON.stringify(waited.calls)} in all)`,
    dollars(dynamo).padStart(12),
  );
  line(
    `added by one ${seconds} s wait`,
    options.targets.check(`a ${seconds} s wait, added`, added, '<=', 0.0002, dollars),
  );
  line(
    'ratio wait / a plain run, all in',
    `${ratio(added / options.plainRun)} × (a plain run: ${dollars(options.plainRun).trim()})`,
  );
  const perSecond = (functionMemoryMb / 1024) * awsPrices.lambdaGbSecond;
  const shortLooks = waitLookTimesMs(3_000).length;
  const short = 3 * perSecond + shortLooks * 0.5 * awsPrices.dynamoDbReadUnit;
  line(
    `a run that ends after 3 s, waited for in its start: 3 s held, ${shortLooks} looks`,
    `${dollars(short).padStart(12)}   ${ratio(short / options.plainRun)} × a plain run`,
  );
  const polls = Math.ceil(seconds / 2);
  const polled = polls * options.plainPoll;
  line(
    `for scale: a client polling GET /runs/{jobId} every 2 s for the same ${seconds} s (${polls} plain GETs, all in)`,
    `${dollars(polled).padStart(12)}   the wait costs ${ratio(added / polled)} × that`,
  );
  note(
    `A wait looks at the run item (one eventually consistent GetItem, half a read unit for an item under 4 KB) at once, then after`,
  );
  note(
    `250 ms, 500 ms and every 1 s: ${waitLookTimesMs(seconds * 1000).length} looks in ${seconds} s; when the run ends, GET /runs/{jobId}'s read once more.`,
  );
  note('Nearly all of a wait is Lambda duration: the function is billed while it waits, so a wait costs more than');
  note('polling the same seconds, in one request and with the answer at most 1 s after the end. For a run longer');
  note('than a few seconds, the webhook or the event stream is cheaper. The rate limit counts the request once.');
};
