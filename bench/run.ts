/**
 * `npm run bench`: performance figures of the local stack and the Lambda bundles, each printed
 * beside its target, then a summary table and the list of missed targets. Exits 0 once the figures
 * are printed, whether or not targets are met (non-zero only when the bench itself cannot run).
 * See bench/README.md.
 *
 * Env: BENCH_SECONDS (default 10) per measured load phase, BENCH_WARMUP_SECONDS (default 10),
 * BENCH_SOAK_SECONDS (default 60), BENCH_DEFERRED_COUNT (default 100,000 waiting deferred runs),
 * BENCH_SECTIONS (default all: bundles,python,http,links,soak,runs,deferred,cost,stepevents,queue,hotkey,saturation,usage; `python` alone starts
 * no emulators), BENCH_COLD_RUNS (default 5 fresh
 * processes per bundle in the cold-start section), BENCH_SATURATION_RATES (default 2,4,8,16 runs a second)
 * and BENCH_SATURATION_SECONDS (default 4 per rate) for the saturation section.
 */
import './env.ts';
import { randomUUID } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { hashApiKey } from '../functions/domain/api-key.ts';
import { apiKeyKey, teamPartition } from '../functions/store/keys.ts';
import { startDynamoDb, startSqsS3 } from '../local/emulators.ts';
import { localDeps } from '../local/local-deps.ts';
import { provision } from '../local/provision.ts';
import type { ServerStats } from './api-server.ts';
import { benchBatch } from './batch.ts';
import { benchColdStarts } from './cold-start.ts';
import { benchCost } from './cost.ts';
import { benchDispatcher } from './deferred.ts';
import { benchEndpointDeliveries } from './endpoint-deliveries.ts';
import { benchFileLinks } from './file-links.ts';
import { floorOperations, type LoopResult, runLoops } from './floor.ts';
import { benchHotKey } from './hot-key.ts';
import { measureIdleTick } from './idle-cost.ts';
import { type LoadResult, runLoad } from './load.ts';
import { benchPythonRunner } from './python-runner.ts';
import { benchQueuedRuns } from './queued-runs.ts';
import { heading, latencyLine, line, ratio } from './report.ts';
import { benchRuns, chainLength, type RunsBenchResult } from './runs.ts';
import { benchSaturation } from './saturation.ts';
import { createChainWorkflows, seedBenchTeam, seedRunsTeam } from './seed.ts';
import { type ServerProcess, startServerProcess } from './server-process.ts';
import { mb, ms, summarize, Targets } from './stats.ts';
import { benchStepEvents } from './step-events.ts';
import { benchUsage } from './usage.ts';

const seconds = (name: string, fallback: number) => {
  const value = Number(process.env[name]);
  return Number.isFinite(value) && value > 0 ? value : fallback;
};
const phaseSeconds = seconds('BENCH_SECONDS', 10);
const warmupSeconds = seconds('BENCH_WARMUP_SECONDS', 10);
const soakSeconds = seconds('BENCH_SOAK_SECONDS', 60);
const deferredCount = Math.max(20, Math.round(seconds('BENCH_DEFERRED_COUNT', 100_000)));
const allSections = [
  'bundles',
  'python',
  'http',
  'links',
  'soak',
  'runs',
  'deferred',
  'cost',
  'stepevents',
  'queue',
  'hotkey',
  'saturation',
  'endpoints',
  'usage',
  'batch',
];
const saturationRates = (process.env.BENCH_SATURATION_RATES ?? '2,4,8,16')
  .split(',')
  .map(Number)
  .filter((rate) => Number.isFinite(rate) && rate > 0);
const saturationSeconds = seconds('BENCH_SATURATION_SECONDS', 4);
const sections = new Set(
  (process.env.BENCH_SECTIONS ?? allSections.join(','))
    .split(',')
    .map((s) => s.trim())
    .filter((s) => allSections.includes(s)),
);
const connections = 10;
/** Each measured phase is split into this many rounds, floor and HTTP taking turns. */
const rounds = 5;
const workflowCount = 20;
const sequentialCountRequests = 50;
const coldImportRuns = Math.max(1, Math.round(seconds('BENCH_COLD_RUNS', 5)));
const soakRate = 50;

const repoRoot = resolve(import.meta.dirname, '..');
const outDir = join(repoRoot, 'bench', '.out');
const bundlesDir = join(outDir, 'bundles');
const pythonDir = join(outDir, 'python');
const stateDir = join(outDir, 'state');

const targets = new Targets();
const cleanups: (() => Promise<void> | void)[] = [];
const cleanUp = async () => {
  while (cleanups.length > 0) {
    try {
      await cleanups.pop()?.();
    } catch (error) {
      console.error('cleanup failed:', error);
    }
  }
};
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    console.error(`\n${signal}: cleaning up`);
    void cleanUp().finally(() => process.exit(130));
  });
}

const failures = (r: LoadResult) => r.errors + r.non2xx;
const statusText = (r: LoadResult) =>
  Object.entries(r.statusCounts)
    .map(([code, count]) => `${code}×${count}`)
    .join(' ');
const summarizeRun = (r: { latencies: number[]; elapsedMs: number }) => summarize(r.latencies, r.elapsedMs);

/** Accumulates the rounds of one measurement into one result. */
const merged = <T extends LoopResult | LoadResult>(parts: T[]): T => {
  const [first, ...rest] = parts;
  if (!first) throw new Error('no rounds');
  const out = structuredClone(first);
  for (const part of rest) {
    out.latencies.push(...part.latencies);
    out.errors += part.errors;
    out.elapsedMs += part.elapsedMs;
    if ('non2xx' in out && 'non2xx' in part) {
      out.non2xx += part.non2xx;
      for (const [code, count] of Object.entries(part.statusCounts)) {
        out.statusCounts[Number(code)] = (out.statusCounts[Number(code)] ?? 0) + count;
      }
    }
  }
  return out;
};

const benchHttp = async (server: ServerProcess, key: string, floor: ReturnType<typeof floorOperations>) => {
  const listUrl = `${server.baseUrl}/workflows`;
  const openApiUrl = `${server.baseUrl}/openapi.json`;
  const headers = { authorization: `Bearer ${key}` };
  const chunkSeconds = phaseSeconds / rounds;
  const chunkMs = chunkSeconds * 1000;

  heading(`Warm-up ${warmupSeconds} s (DynamoDB Local's JIT takes ~10 s to settle; not measured)`);
  const warmupChunk = (warmupSeconds * 1000) / 3;
  await runLoops(floor.threeCalls, { concurrency: connections, durationMs: warmupChunk });
  await runLoad({ url: listUrl, connections, duration: warmupChunk / 1000, headers });
  await runLoops(floor.getItem, { concurrency: 1, durationMs: warmupChunk / 2 });
  await runLoad({ url: openApiUrl, connections, duration: warmupChunk / 2000 });

  heading(`DynamoDB calls per authenticated GET /workflows (${sequentialCountRequests} sequential requests)`);
  const before = await server.stats();
  for (let i = 0; i < sequentialCountRequests; i++) {
    const response = await fetch(listUrl, { headers });
    await response.arrayBuffer();
    if (response.status !== 200) throw new Error(`GET /workflows answered ${response.status}`);
  }
  const after = await server.stats();
  const callsPerRequest = (after.ddbCalls - before.ddbCalls) / sequentialCountRequests;
  line(
    'calls per request (SDK middleware on the server client)',
    targets.check('DynamoDB calls per GET /workflows', callsPerRequest, '<=', 3, ratio),
  );

  heading(`Sequential: 1 connection vs 1 loop, ${phaseSeconds} s each in ${rounds} interleaved rounds`);
  const getItemParts: LoopResult[] = [];
  const floorParts: LoopResult[] = [];
  const listParts: LoadResult[] = [];
  const server0 = await server.stats();
  const inServer = { requests: 0, serverMs: 0, ddbMs: 0 };
  for (let r = 0; r < rounds; r++) {
    getItemParts.push(await runLoops(floor.getItem, { concurrency: 1, durationMs: chunkMs }));
    floorParts.push(await runLoops(floor.threeCalls, { concurrency: 1, durationMs: chunkMs }));
    const s0: ServerStats = r === 0 ? server0 : await server.stats();
    listParts.push(await runLoad({ url: listUrl, connections: 1, duration: chunkSeconds, headers }));
    const s1 = await server.stats();
    inServer.requests += s1.requests - s0.requests;
    inServer.serverMs += s1.serverMs - s0.serverMs;
    inServer.ddbMs += s1.ddbMs - s0.ddbMs;
  }
  const getItemSeq = summarizeRun(merged(getItemParts));
  const floorSeq = summarizeRun(merged(floorParts));
  const listSeqRun = merged(listParts);
  const listSeq = summarizeRun(listSeqRun);
  latencyLine('floor: bare GetItem', getItemSeq);
  latencyLine('floor: GetItem + UpdateItem ADD + Query, back to back', floorSeq);
  latencyLine('GET /workflows', listSeq);
  line(
    'GET /workflows errors + non-2xx',
    targets.check('GET /workflows failures (1 conn)', failures(listSeqRun), '==', 0, String),
  );
  if (failures(listSeqRun) > 0) line('  statuses', statusText(listSeqRun));
  line(
    'ratio GET /workflows p50 / floor p50',
    targets.check('p50 ratio to floor (1 conn)', listSeq.p50 / floorSeq.p50, '<=', 1.3, ratio),
  );
  const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / Math.max(1, values.length);
  const clientMean = mean(listSeqRun.latencies);
  const serverMean = inServer.serverMs / Math.max(1, inServer.requests);
  const ddbMean = inServer.ddbMs / Math.max(1, inServer.requests);
  console.log('  where one sequential GET /workflows spends its time (means):');
  line('    client-observed (autocannon)', ms(clientMean).padStart(12));
  line('    HTTP client + loopback + Node HTTP server', ms(clientMean - serverMean).padStart(12));
  line('    in the server, request → response finish', ms(serverMean).padStart(12));
  line('      the 3 DynamoDB sends (SDK + DynamoDB Local)', ms(ddbMean).padStart(12));
  line('      the rest: event mapping, middy, auth, sort, JSON, logger', ms(serverMean - ddbMean).padStart(12));
  line('    for comparison: floor mean of the 3 bare calls', ms(mean(merged(floorParts).latencies)).padStart(12));

  heading(
    `Concurrent: ${connections} connections vs ${connections} loops, ${phaseSeconds} s each in ${rounds} interleaved rounds`,
  );
  const floorConcParts: LoopResult[] = [];
  const listConcParts: LoadResult[] = [];
  for (let r = 0; r < rounds; r++) {
    floorConcParts.push(await runLoops(floor.threeCalls, { concurrency: connections, durationMs: chunkMs }));
    listConcParts.push(await runLoad({ url: listUrl, connections, duration: chunkSeconds, headers }));
  }
  const floorConc = summarizeRun(merged(floorConcParts));
  const listRun = merged(listConcParts);
  const list = summarizeRun(listRun);
  latencyLine('floor: GetItem + UpdateItem ADD + Query, back to back', floorConc);
  latencyLine('GET /workflows', list);
  line(
    'GET /workflows errors + non-2xx',
    targets.check(`GET /workflows failures (${connections} conns)`, failures(listRun), '==', 0, String),
  );
  if (failures(listRun) > 0) line('  statuses', statusText(listRun));
  line(
    'ratio GET /workflows p50 / floor p50',
    targets.check(`p50 ratio to floor (${connections} conns)`, list.p50 / floorConc.p50, '<=', 1.3, ratio),
  );
  const openApiRun = await runLoad({ url: openApiUrl, connections, duration: phaseSeconds });
  const openApi = summarizeRun(openApiRun);
  latencyLine('GET /openapi.json (no DynamoDB; one block)', openApi);
  line(
    'GET /openapi.json errors + non-2xx',
    targets.check(`GET /openapi.json failures (${connections} conns)`, failures(openApiRun), '==', 0, String),
  );
  if (failures(openApiRun) > 0) line('  statuses', statusText(openApiRun));
};

const benchSoak = async (server: ServerProcess, key: string) => {
  heading(`Soak: GET /workflows at ${soakRate} req/s for ${soakSeconds} s, fresh server alone in its own process`);
  let sampledPeak = 0;
  const sample = async () => {
    const rss = server.procMemory()?.rss ?? (await server.stats()).rss;
    sampledPeak = Math.max(sampledPeak, rss);
  };
  await sample();
  const memoryLine = (at: string, m: ServerStats) =>
    line(`  ${at}`, `rss ${mb(m.rss)}, heap used ${mb(m.heapUsed)} of ${mb(m.heapTotal)}, external ${mb(m.external)}`);
  const liveAtStart = (await server.stats({ gc: true })).heapUsed;
  console.log('  server memory over time:');
  memoryLine('start', await server.stats());
  const started = Date.now();
  const sampler = setInterval(() => void sample().catch(() => undefined), 500);
  const reporter = setInterval(
    () =>
      void server
        .stats()
        .then((m) => memoryLine(`${Math.round((Date.now() - started) / 1000)} s`, m))
        .catch(() => undefined),
    Math.max(5, soakSeconds / 6) * 1000,
  );
  const run = await runLoad({
    url: `${server.baseUrl}/workflows`,
    connections,
    duration: soakSeconds,
    overallRate: soakRate,
    headers: { authorization: `Bearer ${key}` },
  }).finally(() => {
    clearInterval(sampler);
    clearInterval(reporter);
  });
  await sample();
  memoryLine('end', await server.stats());
  const liveAtEnd = (await server.stats({ gc: true })).heapUsed;
  line('live heap after a full GC, start → end (growth = leak)', `${mb(liveAtStart)} → ${mb(liveAtEnd)}`);
  const peak = Math.max(sampledPeak, server.procMemory()?.peak ?? 0);
  const summary = summarizeRun(run);
  line('errors + non-2xx', targets.check('soak failures', failures(run), '==', 0, String));
  if (failures(run) > 0) line('  statuses', statusText(run));
  line('achieved rate (2xx responses / wall time)', `${summary.rps.toFixed(1).padStart(12)}   asked ${soakRate} req/s`);
  line('latency', `p50 ${ms(summary.p50)}   p99 ${ms(summary.p99)}`);
  line(
    'server peak RSS (VmHWM; else sampled every 0.5 s)',
    targets.check('soak peak server RSS', peak, '<', 300 * 1024 * 1024, mb),
  );
};

const main = async () => {
  console.log(`Workflow Run API bench: Node ${process.version}, ${new Date().toISOString()}, ${machineLoad()}`);
  console.log(`Sections: ${[...sections].join(', ')}`);
  mkdirSync(stateDir, { recursive: true });

  if (sections.has('python')) {
    rmSync(pythonDir, { recursive: true, force: true });
    cleanups.push(() => rmSync(pythonDir, { recursive: true, force: true }));
    await benchPythonRunner({ repoRoot, outDir: pythonDir, runs: coldImportRuns });
  }
  // The PythonRunner needs no emulator: asked alone, it is measured on an otherwise idle machine.
  if (sections.size === 1 && sections.has('python')) return;

  heading('Local stack: in-memory DynamoDB Local + fauxqs on free loopback ports');
  const dynamo = await startDynamoDb({ stateDir });
  cleanups.push(() => dynamo.stop());
  const sqsS3 = await startSqsS3({});
  cleanups.push(() => sqsS3.stop());
  const resources = await provision({
    prefix: `bench${randomUUID().slice(0, 8)}`,
    dynamoDbEndpoint: dynamo.endpoint,
    sqsS3Endpoint: sqsS3.endpoint,
    s3Endpoint: sqsS3.s3Endpoint,
    // No table stream until a consumer attaches (local/provision.ts, `tableStream`).
    tableStream: false,
  });
  const deps = localDeps(resources);
  cleanups.push(() => {
    deps.ddb.destroy();
    deps.sqs.destroy();
    deps.s3.destroy();
  });
  line('DynamoDB Local', dynamo.endpoint);

  if (sections.has('bundles')) {
    await benchColdStarts({ repoRoot, outDir: bundlesDir, resources, targets, cleanups, runs: coldImportRuns });
  }

  if (sections.has('http') || sections.has('soak')) {
    const team = await seedBenchTeam(deps, workflowCount);
    line('table', `${resources.tableName}: a team with ${workflowCount} workflows, key limit 1,000,000/min`);
    if (sections.has('http')) {
      const floor = floorOperations(deps, {
        apiKeyPk: apiKeyKey(hashApiKey(team.key)).PK,
        teamPk: teamPartition(team.teamId),
      });
      const server = await startServerProcess(resources);
      cleanups.push(() => server.stop());
      line('API server (child process)', `${server.baseUrl} pid ${server.pid}`);
      await benchHttp(server, team.key, floor);
      await server.stop();
    }
    if (sections.has('soak')) {
      // --expose-gc only lets the bench ask for a full collection before reading the live heap.
      const soakServer = await startServerProcess(resources, { exposeGc: true });
      cleanups.push(() => soakServer.stop());
      await benchSoak(soakServer, team.key);
      await soakServer.stop();
    }
  }

  if (sections.has('links')) {
    const server = await startServerProcess(resources);
    cleanups.push(() => server.stop());
    await benchFileLinks({ deps, server, targets, teamId: randomUUID(), seconds: phaseSeconds });
    await server.stop();
  }

  // The idle tick is timed on DynamoDB Local before the sections below load it with 100,000 deferred
  // runs: after them, every call on the emulator is slower (a tick took 204-334 ms instead of ~18),
  // which is the emulator's state, not what an idle stage's tick costs.
  const idleTick = sections.has('cost') ? await measureIdleTick(resources) : undefined;

  if (sections.has('runs') || sections.has('deferred')) {
    const server = await startServerProcess(resources);
    cleanups.push(() => server.stop());
    let runs: RunsBenchResult;
    if (sections.has('runs')) {
      runs = await benchRuns({ deps, resources, server, targets, cleanups });
    } else {
      // The dispatcher alone: its own team and free workflows.
      const team = await seedRunsTeam(deps, 100_000);
      runs = { team, freeWorkflowIds: await createChainWorkflows(deps, server.baseUrl, team, 30, chainLength) };
    }
    await server.stop();
    if (sections.has('deferred')) {
      await benchDispatcher({
        deps,
        resources,
        targets,
        cleanups,
        team: runs.team,
        workflowIds: runs.freeWorkflowIds,
        waitingCount: deferredCount,
      });
    }
  }

  if (sections.has('cost'))
    await benchCost({ resources, targets, chainLength, idleTick, repoRoot, outDir: join(outDir, 'init') });
  if (sections.has('stepevents')) await benchStepEvents({ resources });
  if (sections.has('queue')) await benchQueuedRuns({ resources, chainLength });
  if (sections.has('endpoints')) await benchEndpointDeliveries({ resources, chainLength });
  if (sections.has('hotkey')) await benchHotKey({ deps, resources, targets, cleanups });
  if (sections.has('usage')) await benchUsage({ resources });
  if (sections.has('batch')) await benchBatch({ resources, items: Number(process.env.BENCH_BATCH_ITEMS ?? 100) });
  if (sections.has('saturation')) {
    const server = await startServerProcess(resources);
    cleanups.push(() => server.stop());
    await benchSaturation({
      deps,
      resources,
      server,
      cleanups,
      rates: saturationRates,
      seconds: saturationSeconds,
      pollers: 4,
      chainLength,
    });
    await server.stop();
  }
};

/** Timings are only as good as the machine is quiet: print what else was running. */
const machineLoad = () =>
  `${availableParallelism()} CPUs, load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`;

const printSummary = () => {
  heading(`Summary (${machineLoad()} at the end)`);
  const width = Math.max(0, ...targets.results.map((r) => r.name.length));
  for (const r of targets.results) {
    console.log(
      `  ${r.name.padEnd(width)}  ${r.shown.padStart(12)}  ${r.target.padEnd(12)}  ${r.met ? 'ok' : 'MISSED'}`,
    );
  }
  const missed = targets.missed;
  if (missed.length === 0) console.log('\nAll targets met.');
  else {
    console.log(`\nMISSED ${missed.length} of ${targets.results.length} targets:`);
    for (const r of missed) console.log(`  MISSED  ${r.name}: ${r.shown} (target ${r.target})`);
  }
};

try {
  await main();
  printSummary();
} catch (error) {
  printSummary();
  console.error('\nbench failed:', error);
  process.exitCode = 1;
} finally {
  await cleanUp();
}
