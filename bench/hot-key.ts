/**
 * The hot-key section (`BENCH_SECTIONS=hotkey`): as many requests as this machine can send at ONE
 * key, over loopback, against the API server in its own process, with DynamoDB's per-item write
 * limit simulated on the server's client (`bench/item-write-limit.ts`: DynamoDB Local never
 * throttles). Beside it, the floor: the same load on GET /openapi.json, which does no DynamoDB work.
 *
 * - A key at its limit (60 a minute): the first 60 are accepted, then every instance refuses from
 *   its view of the counter without writing (functions/store/rate-counter.ts), so the counter item
 *   sees about one write per accepted request and almost none per refused one.
 * - A key within its limit (1,000,000 a minute): every request is a counter write, so the one item
 *   meets its write limit; the writes DynamoDB throttles answer 429 with Retry-After 1, never 500.
 *
 * Printed: requests/s (all answers), the share of answers by status, counter writes per request
 * and per second. Env: BENCH_HOTKEY_SECONDS (5 per phase), BENCH_HOTKEY_CONNECTIONS (20),
 * BENCH_ITEM_WRITES_PER_SECOND (1,000, DynamoDB's per-item limit).
 */
import type { Deps } from '../functions/deps.ts';
import { createApiKey } from '../functions/store/api-keys.ts';
import type { LocalResources } from '../local/provision.ts';
import type { ServerStats } from './api-server.ts';
import { type LoadResult, runLoad } from './load.ts';
import { heading, line, note, ratio } from './report.ts';
import { seedBenchTeam } from './seed.ts';
import { startServerProcess } from './server-process.ts';
import { ms, perSecond, summarize, type Targets } from './stats.ts';

const setting = (name: string, fallback: number) => {
  const value = Number(process.env[name]);
  return Number.isFinite(value) && value > 0 ? value : fallback;
};

export interface HotKeyBenchOptions {
  deps: Deps;
  resources: LocalResources;
  targets: Targets;
  cleanups: (() => Promise<void> | void)[];
}

interface Phase {
  run: LoadResult;
  answers: number;
  counterWrites: number;
}

const answersOf = (run: LoadResult) => Object.values(run.statusCounts).reduce((a, b) => a + b, 0);
const share = (run: LoadResult) => {
  const total = answersOf(run);
  return Object.entries(run.statusCounts)
    .sort(([a], [b]) => Number(a) - Number(b))
    .map(([status, count]) => `${status} ${((100 * count) / Math.max(1, total)).toFixed(1)} % (${count})`)
    .join(', ');
};
/** Answers that are neither 200 nor 429 (a 5xx above all), and connection errors. */
const unexpected = (run: LoadResult) =>
  run.errors +
  Object.entries(run.statusCounts)
    .filter(([status]) => status !== '200' && status !== '429')
    .reduce((sum, [, count]) => sum + count, 0);

/** The API server alone in its process, with DynamoDB's per-item write limit simulated at `perSecond`. */
const startHotKeyServer = async (resources: LocalResources, perSecond: number) => {
  // The child takes its environment from this process when it starts: the item limit, and no
  // warning per throttled write (the counts say how many there were).
  const childEnv = { BENCH_ITEM_WRITES_PER_SECOND: String(perSecond), POWERTOOLS_LOG_LEVEL: 'ERROR' };
  const previous = Object.fromEntries(Object.keys(childEnv).map((name) => [name, process.env[name]]));
  Object.assign(process.env, childEnv);
  return startServerProcess(resources).finally(() => {
    for (const [name, value] of Object.entries(previous)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });
};

export const benchHotKey = async ({ deps, resources, targets, cleanups }: HotKeyBenchOptions) => {
  const seconds = setting('BENCH_HOTKEY_SECONDS', 5);
  const connections = Math.round(setting('BENCH_HOTKEY_CONNECTIONS', 20));
  const itemWritesPerSecond = Math.round(setting('BENCH_ITEM_WRITES_PER_SECOND', 1000));
  heading(
    `Hot key: ${connections} connections at one key for ${seconds} s per phase; DynamoDB's limit of ${itemWritesPerSecond} writes/s per item simulated`,
  );

  const team = await seedBenchTeam(deps, 5);
  const newKey = (rateLimitPerMinute?: number) =>
    createApiKey(deps, { teamId: team.teamId, ...(rateLimitPerMinute ? { rateLimitPerMinute } : {}) });
  const auth = (key: string) => ({ authorization: `Bearer ${key}` });

  let server = await startHotKeyServer(resources, itemWritesPerSecond);
  cleanups.push(() => server.stop());
  const warmUp = async () => {
    // Not measured: JIT in the server and in DynamoDB Local.
    await runLoad({ url: `${server.baseUrl}/openapi.json`, connections, duration: 1 });
    const { key } = await newKey(1_000_000);
    await runLoad({ url: `${server.baseUrl}/workflows`, connections: 2, duration: 2, headers: auth(key) });
  };
  await warmUp();

  const measure = async (path: string, headers?: Record<string, string>): Promise<Phase> => {
    const before: ServerStats = await server.stats();
    const run = await runLoad({
      url: `${server.baseUrl}${path}`,
      connections,
      duration: seconds,
      ...(headers ? { headers } : {}),
    });
    const after = await server.stats();
    const updates = (s: ServerStats) => s.ddbByCommand.UpdateItemCommand ?? 0;
    return { run, answers: answersOf(run), counterWrites: updates(after) - updates(before) };
  };
  const rate = (phase: Phase) => (phase.answers * 1000) / phase.run.elapsedMs;

  const floor = await measure('/openapi.json');
  line('floor: GET /openapi.json (no DynamoDB)', `${perSecond(rate(floor)).padStart(12)}   ${share(floor.run)}`);
  const versusFloor = (phase: Phase) =>
    `${perSecond(rate(phase)).padStart(12)}   ${ratio(rate(phase) / rate(floor))} × the floor`;

  const limited = await measure('/workflows', auth((await newKey()).key)); // the default 60 a minute
  const limitedAccepted = limited.run.statusCounts[200] ?? 0;
  console.log('  a key at its limit (60 a minute), GET /workflows:');
  line('    answers/s, all statuses', versusFloor(limited));
  line('    answers by status', share(limited.run));
  line(
    '    accepted (exactly the limit)',
    targets.check('hot key at its limit: accepted', limitedAccepted, '==', 60, String),
  );
  line(
    '    answers other than 200 and 429 (5xx), errors',
    targets.check('hot key at its limit: not 200/429', unexpected(limited.run), '==', 0, String),
  );
  line('    counter writes per request', ratio(limited.counterWrites / Math.max(1, limited.answers)).padStart(12));
  line(
    '    refused requests that wrote (in flight as it filled)',
    targets.check(
      'hot key at its limit: refused requests written',
      Math.max(0, limited.counterWrites - limitedAccepted),
      '<=',
      connections,
      String,
    ),
  );

  const openPhase = async (label: string, perSecondLimit: number) => {
    const open = await measure('/workflows', auth((await newKey(1_000_000)).key));
    const openAccepted = open.run.statusCounts[200] ?? 0;
    const openSeconds = open.run.elapsedMs / 1000;
    console.log(`  a key within its limit (1,000,000 a minute), GET /workflows, ${label}:`);
    line('    answers/s, all statuses', versusFloor(open));
    line('    answers by status', share(open.run));
    line(
      '    answers other than 200 and 429 (5xx), errors',
      targets.check(`hot key, item limit ${perSecondLimit}/s: not 200/429`, unexpected(open.run), '==', 0, String),
    );
    line('    counter writes per request', ratio(open.counterWrites / Math.max(1, open.answers)).padStart(12));
    line(
      '    counter writes/s (throttled ones included), accepted/s',
      `${(open.counterWrites / openSeconds).toFixed(0).padStart(12)}   ${(openAccepted / openSeconds).toFixed(0)} accepted/s`,
    );
    const accepted = summarize(open.run.latencies, open.run.elapsedMs);
    line('    latency of the accepted', `p50 ${ms(accepted.p50)}   p99 ${ms(accepted.p99)}`);
    return rate(open);
  };
  const achieved = await openPhase(`item limit ${itemWritesPerSecond} writes/s`, itemWritesPerSecond);
  await server.stop();

  if (achieved < itemWritesPerSecond) {
    // This machine cannot send enough to one key to meet the limit: scale the limit down so it does.
    const scaled = Math.max(10, Math.floor(achieved / 2));
    note(
      `fewer than ${itemWritesPerSecond} requests/s reached the key: again with the item limit scaled down to ${scaled} writes/s`,
    );
    server = await startHotKeyServer(resources, scaled);
    await warmUp();
    await openPhase(`item limit scaled down to ${scaled} writes/s`, scaled);
    await server.stop();
  }
};
