/**
 * Runs: run-start latency and calls, each step's orchestration (calls and latency against
 * a floor of the same bare calls), a 10-step chain end to end through the queue pollers, and 1,000
 * starts over 100 workflows with the ledger checked afterwards. See bench/README.md.
 */
import { randomUUID } from 'node:crypto';
import { CreateQueueCommand, GetQueueAttributesCommand, PurgeQueueCommand } from '@aws-sdk/client-sqs';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import type { SQSEvent } from 'aws-lambda';
import type { Deps } from '../functions/deps.ts';
import { hashApiKey } from '../functions/domain/api-key.ts';
import { toCredits } from '../functions/domain/credits.ts';
import { spendMonth } from '../functions/domain/monthly-cap.ts';
import type { NodeExecutor } from '../functions/nodes/executors/types.ts';
import { batchGet } from '../functions/store/batch.ts';
import {
  apiKeyKey,
  canvasKey,
  keyMonthKey,
  projectKey,
  runKey,
  stepKey,
  teamKey,
  workflowKey,
} from '../functions/store/keys.ts';
import { getTeam } from '../functions/store/tenancy.ts';
import { makeHandler } from '../functions/workers/step-executor.ts';
import { startQueuePoller, toRecord } from '../local/event-source.ts';
import { localDeps } from '../local/local-deps.ts';
import type { LocalResources } from '../local/provision.ts';
import { stepsQueue } from '../platform/definitions.ts';
import { type CallCounts, commandsText, countDynamoDbCalls, countSqsCalls, since, snapshot } from './counters.ts';
import { type LoopResult, runFloorOperations, runLoops, runTimes, seedRunFloorItems } from './floor.ts';
import { heading, latencyLine, line, note, ratio } from './report.ts';
import { type BenchTeam, createChainWorkflows, mapLimit, seedRunsTeam } from './seed.ts';
import type { ServerProcess } from './server-process.ts';
import { median, ms, summarize, type Targets } from './stats.ts';

/** Steps of the chain every run-bench workflow is. */
export const chainLength = 10;
/** Workflows the run-start figure starts one run each of (the one-run-per-workflow lock). */
const startWorkflows = 200;
/** Of those runs, how many the bench drives step by step itself for the orchestration figures. */
const drivenRuns = 60;
const rounds = 5;
// 15, not 5: a median of 5 runs moved by ±0.2 between quiet sittings, too much to judge a 1.3 bound.
const endToEndRuns = 15;
/** A chain's server time against ten step floors. */
const endToEndRatio = 1.3;
const manyRounds = 10;
const manyWorkflows = 100;
const manyConcurrency = 20;
/** Queue pollers in this process while workers run (Lambda would run several instances). */
const pollerCount = 4;

const endedStatuses = new Set(['completed', 'failed', 'cancelled', 'stopped']);

export interface RunsBenchContext {
  deps: Deps;
  resources: LocalResources;
  server: ServerProcess;
  targets: Targets;
  cleanups: (() => Promise<void> | void)[];
}

export interface RunsBenchResult {
  team: Omit<BenchTeam, 'workflowIds'>;
  /** Chain workflows with no run in progress (usable by later sections). */
  freeWorkflowIds: string[];
}

type Job = { jobId: string; workflowId: string };

const postRun = async (baseUrl: string, key: string, workflowId: string, body: unknown = {}) => {
  const response = await fetch(`${baseUrl}/workflows/${workflowId}/runs`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const json = (await response.json()) as { jobId?: string; estimatedCredits?: number };
  return { status: response.status, jobId: json.jobId, estimatedCredits: json.estimatedCredits ?? 0, body: json };
};

const sleep = (milliseconds: number) => new Promise((resolve) => setTimeout(resolve, milliseconds));

/** Waits until every run has ended (strongly consistent BatchGets of the run items); statuses counted. */
const waitForRunsToEnd = async (deps: Deps, jobIds: readonly string[], timeoutMs: number) => {
  const deadline = Date.now() + timeoutMs;
  const statuses: Record<string, number> = {};
  let pending = [...jobIds];
  for (;;) {
    const items = await batchGet(
      deps,
      pending.map((jobId) => runKey(jobId)),
    );
    const still: string[] = [];
    for (const jobId of pending) {
      const key = runKey(jobId);
      const status = (items.get(`${key.PK}|${key.SK}`)?.status as string | undefined) ?? 'missing';
      if (endedStatuses.has(status)) statuses[status] = (statuses[status] ?? 0) + 1;
      else still.push(jobId);
    }
    pending = still;
    if (pending.length === 0 || Date.now() > deadline) {
      for (const _ of pending) statuses.unfinished = (statuses.unfinished ?? 0) + 1;
      return { ended: pending.length === 0, statuses };
    }
    await sleep(250);
  }
};

/** Waits until the team holds nothing (one strongly consistent GetItem every 100 ms). */
const waitForTeamHoldToEmpty = async (deps: Deps, teamId: string, timeoutMs: number) => {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const held = (await getTeam(deps, teamId))?.held;
    if (held === 0) return;
    await sleep(100);
  }
};

const statusesText = (statuses: Record<string | number, number>) =>
  Object.entries(statuses)
    .map(([status, count]) => `${status}×${count}`)
    .join(' ');

/** Waits until the queue holds no message, visible or in flight (duplicates drained). */
const waitForQueueToDrain = async (deps: Deps, queueUrl: string, timeoutMs: number) => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { Attributes = {} } = await deps.sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: queueUrl,
        AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
      }),
    );
    const left =
      Number(Attributes.ApproximateNumberOfMessages ?? 0) +
      Number(Attributes.ApproximateNumberOfMessagesNotVisible ?? 0);
    if (left === 0 || Date.now() > deadline) return left;
    await sleep(200);
  }
};

/** The real step executor behind `count` queue pollers, as `npm start` runs it (real node executors). */
const startPollers = (resources: LocalResources, count: number) => {
  const deps = localDeps(resources);
  const errors: string[] = [];
  const pollers = Array.from({ length: count }, () =>
    startQueuePoller({
      endpoint: resources.sqsS3Endpoint,
      queueUrl: resources.queueUrls.Steps,
      definition: stepsQueue,
      handler: makeHandler(deps),
      waitSeconds: 1,
      onError: (error) => errors.push((error as Error).message),
    }),
  );
  return {
    errors,
    stop: async () => {
      await Promise.all(pollers.map((p) => p.stop()));
      deps.ddb.destroy();
      deps.sqs.destroy();
      deps.s3.destroy();
    },
  };
};

const mean = (values: readonly number[]) => values.reduce((a, b) => a + b, 0) / Math.max(1, values.length);
const merge = (parts: LoopResult[]): LoopResult => ({
  latencies: parts.flatMap((p) => p.latencies),
  errors: parts.reduce((n, p) => n + p.errors, 0),
  elapsedMs: parts.reduce((n, p) => n + p.elapsedMs, 0),
});

export const benchRuns = async (ctx: RunsBenchContext): Promise<RunsBenchResult> => {
  const { deps, resources, server } = ctx;
  heading(`Runs: setup (a team, ${startWorkflows} workflows of a ${chainLength}-step chain)`);
  const team = await seedRunsTeam(deps, 100_000);
  const setupStarted = performance.now();
  const workflowIds = await createChainWorkflows(deps, server.baseUrl, team, startWorkflows, chainLength);
  line('workflows created', `${workflowIds.length} in ${ms(performance.now() - setupStarted)}`);

  // The floors' items: the service's own items for the reads, fresh keys under BENCH#FLOOR for the writes.
  await seedRunFloorItems(deps);
  const floorQueueUrl = (await deps.sqs.send(new CreateQueueCommand({ QueueName: `${resources.prefix}-bench-floor` })))
    .QueueUrl;
  if (!floorQueueUrl) throw new Error('no floor queue');
  ctx.cleanups.push(() => deps.sqs.send(new PurgeQueueCommand({ QueueUrl: floorQueueUrl })).then(() => undefined));
  const firstWorkflow = workflowIds[0] as string;
  const month = spendMonth(new Date());
  const floorItems = {
    apiKeyPk: apiKeyKey(hashApiKey(team.key)).PK,
    workflowKeys: [workflowKey(team.teamId, firstWorkflow), canvasKey(firstWorkflow)],
    admissionKeys: [teamKey(team.teamId), projectKey(team.teamId, team.projectId), keyMonthKey(team.keyId, month)],
    queueUrl: floorQueueUrl,
  };

  // 1. Run starts.
  const starts = await benchStarts(ctx, team, workflowIds, floorItems);

  // 2. Orchestration per step, driven here on the first `drivenRuns` of those runs. The step floor
  // reads the first of them (run item and its first step), which the warm-up drives to the end.
  const firstJob = starts[0]?.jobId ?? '';
  const floor = runFloorOperations(deps, {
    ...floorItems,
    stepReadKeys: [runKey(firstJob), stepKey(firstJob, 's0')],
    runItem: {},
  });
  const stepFloor = await benchOrchestration(ctx, starts.slice(0, drivenRuns), floor);

  // The runs not driven are cancelled (POST /runs/{jobId}/cancel); the queue, holding their root
  // steps and the messages the driven runs sent, is purged before the pollers start.
  const cancels: Record<number, number> = {};
  await mapLimit(starts.slice(drivenRuns), 8, async (job) => {
    const response = await fetch(`${server.baseUrl}/runs/${job.jobId}/cancel`, {
      method: 'POST',
      headers: { authorization: `Bearer ${team.key}` },
    });
    await response.arrayBuffer();
    cancels[response.status] = (cancels[response.status] ?? 0) + 1;
  });
  await deps.sqs.send(new PurgeQueueCommand({ QueueUrl: resources.queueUrls.Steps }));
  const afterwards = await waitForRunsToEnd(
    deps,
    starts.map((s) => s.jobId),
    10_000,
  );
  line(
    `the ${startWorkflows} runs: ${drivenRuns} driven above, the others cancelled`,
    `cancel answers ${statusesText(cancels)}; runs ${statusesText(afterwards.statuses)}`,
  );

  heading(`Queue pollers: ${pollerCount} in this process, real step executor and node executors`);
  const pollers = startPollers(resources, pollerCount);
  ctx.cleanups.push(() => pollers.stop());

  // 3. End to end.
  const endToEndEstimates = await benchEndToEnd(ctx, team, workflowIds.slice(0, endToEndRuns), stepFloor);

  // 4. 1,000 starts over 100 workflows, then the ledger.
  // Only the driven runs were charged (the cancelled ones ended before any step).
  const startedEstimates = starts.slice(0, drivenRuns).reduce((n, s) => n + s.estimatedCredits, 0);
  await benchManyStarts(ctx, team, workflowIds.slice(0, manyWorkflows), startedEstimates + endToEndEstimates);
  if (pollers.errors.length > 0) {
    line('queue poller errors', `${pollers.errors.length}, first: ${pollers.errors[0]}`);
  }
  await pollers.stop();
  return { team, freeWorkflowIds: workflowIds.slice(manyWorkflows) };
};

const benchStarts = async (
  ctx: RunsBenchContext,
  team: Omit<BenchTeam, 'workflowIds'>,
  workflowIds: readonly string[],
  floorItems: Omit<Parameters<typeof runFloorOperations>[1], 'stepReadKeys' | 'runItem'>,
) => {
  const { deps, server, targets } = ctx;
  heading(
    `Run start: POST /workflows/{id}/runs, one per workflow over ${workflowIds.length} workflows, 1 connection, ${rounds} rounds interleaved with the floor`,
  );
  // A run item shaped and sized as the start writes it.
  const id = randomUUID();
  const now = new Date().toISOString();
  const floorRunItem = {
    type: 'Run',
    GSI1PK: 'BENCH#FLOOR#QUEUED',
    GSI1SK: `${now}#${id}`,
    jobId: id,
    teamId: team.teamId,
    keyId: team.keyId,
    workflowId: id,
    agentId: team.agentId,
    projectId: team.projectId,
    status: 'queued',
    mode: 'production',
    inputs: {},
    estimateHundredths: chainLength,
    heldHundredths: chainLength,
    chargedHundredths: 0,
    stepEstimates: Object.fromEntries(Array.from({ length: chainLength }, (_, i) => [`s${i}`, 1])),
    stepsTotal: chainLength,
    stepsCompleted: 0,
    spendMonth: spendMonth(new Date()),
    createdAt: now,
  };
  const floor = runFloorOperations(deps, { ...floorItems, stepReadKeys: [], runItem: floorRunItem });
  await runLoops(floor.start, { concurrency: 1, durationMs: 2000 });

  const jobs: (Job & { estimatedCredits: number })[] = [];
  const latencies: number[] = [];
  const statusCounts: Record<number, number> = {};
  const floorParts: LoopResult[] = [];
  let elapsedMs = 0;
  const before = await server.stats();
  const perRound = Math.ceil(workflowIds.length / rounds);
  for (let r = 0; r < rounds; r++) {
    const chunk = workflowIds.slice(r * perRound, (r + 1) * perRound);
    floorParts.push(await runTimes(floor.start, chunk.length));
    const roundStarted = performance.now();
    for (const workflowId of chunk) {
      const t = performance.now();
      const started = await postRun(server.baseUrl, team.key, workflowId);
      const took = performance.now() - t;
      statusCounts[started.status] = (statusCounts[started.status] ?? 0) + 1;
      if (started.status === 200 && started.jobId) {
        latencies.push(took);
        jobs.push({ jobId: started.jobId, workflowId, estimatedCredits: started.estimatedCredits });
      }
    }
    elapsedMs += performance.now() - roundStarted;
  }
  const after = await server.stats();
  const count = workflowIds.length;
  const floorRun = merge(floorParts);
  const floorSummary = summarize(floorRun.latencies, floorRun.elapsedMs);
  const startSummary = summarize(latencies, elapsedMs);
  latencyLine('floor: GetItem, UpdateItem, BatchGet ×2, TransactWrite(5), SQS', floorSummary);
  latencyLine('POST /workflows/{id}/runs', startSummary);
  line(
    'run starts not answered 200',
    targets.check('run start failures', count - (statusCounts[200] ?? 0), '==', 0, String),
  );
  if ((statusCounts[200] ?? 0) !== count) line('  statuses', statusesText(statusCounts));
  line(
    'ratio POST /runs p50 / floor p50 (no target; beside its floor)',
    ratio(startSummary.p50 / floorSummary.p50).padStart(12),
  );
  const ddbDelta = since(
    { total: before.ddbCalls, ms: before.ddbMs, byCommand: before.ddbByCommand },
    { total: after.ddbCalls, ms: after.ddbMs, byCommand: after.ddbByCommand },
  );
  const sqsDelta = since(
    { total: before.sqsCalls, ms: 0, byCommand: before.sqsByCommand },
    { total: after.sqsCalls, ms: 0, byCommand: after.sqsByCommand },
  );
  line(
    'DynamoDB calls per start (SDK middleware on the server client)',
    targets.check('DynamoDB calls per run start', ddbDelta.total / count, '<=', 6, ratio),
  );
  note(`over ${count} starts: ${commandsText(ddbDelta)}`);
  line(
    'TransactWriteItems per start',
    targets.check(
      'TransactWriteItems per run start',
      (ddbDelta.byCommand.TransactWriteItemsCommand ?? 0) / count,
      '==',
      1,
      ratio,
    ),
  );
  line(
    `SQS calls per start (${chainLength}-step chain: 1 root step)`,
    targets.check('SQS calls per run start', sqsDelta.total / count, '==', 1, ratio),
  );
  note(`over ${count} starts: ${commandsText(sqsDelta)}`);
  return jobs;
};

/** One SQS record for the step executor, as the event source mapping builds it. */
const stepEvent = (job: Job, nodeId: string): SQSEvent => ({
  Records: [
    toRecord(
      {
        MessageId: randomUUID(),
        ReceiptHandle: 'bench',
        Body: JSON.stringify({ jobId: job.jobId, workflowId: job.workflowId, nodeId }),
      },
      'arn:aws:sqs:us-east-1:000000000000:bench',
    ),
  ],
});

/** A node executor that returns at once, so only the orchestration around it is measured. */
const immediate: NodeExecutor = async (context) => ({
  outputs: Object.fromEntries(context.spec.outputs.map((handle) => [handle.name, 'x'])),
});

interface StepSample {
  ms: number;
  ddb: CallCounts;
  sqs: CallCounts;
}

const benchOrchestration = async (
  ctx: RunsBenchContext,
  jobs: readonly Job[],
  floor: ReturnType<typeof runFloorOperations>,
) => {
  const { resources, targets } = ctx;
  heading(
    `Step orchestration: step executor (makeHandler) driven here on ${jobs.length} ${chainLength}-step runs, node executor returns at once; ${rounds} rounds interleaved with the floor`,
  );
  const stepDeps = localDeps(resources);
  ctx.cleanups.push(() => {
    stepDeps.ddb.destroy();
    stepDeps.sqs.destroy();
    stepDeps.s3.destroy();
  });
  const ddb = countDynamoDbCalls(stepDeps.ddb);
  const sqs = countSqsCalls(stepDeps.sqs);
  const handler = makeHandler({ ...stepDeps, executors: () => immediate });
  const nodeIds = Array.from({ length: chainLength }, (_, i) => `s${i}`);
  const driveRun = async (job: Job, samples: StepSample[][] | null) => {
    for (const [index, nodeId] of nodeIds.entries()) {
      const ddb0 = snapshot(ddb);
      const sqs0 = snapshot(sqs);
      const t = performance.now();
      const result = await handler(stepEvent(job, nodeId));
      const took = performance.now() - t;
      if (result.batchItemFailures.length > 0) throw new Error(`step ${nodeId} of ${job.jobId} failed`);
      samples?.[index]?.push({ ms: took, ddb: since(ddb0, ddb), sqs: since(sqs0, sqs) });
    }
  };
  // Warm-up (not measured): one run, and the floors.
  const [warmup, ...measured] = jobs;
  if (warmup) await driveRun(warmup, null);
  await runTimes(floor.step, 50);
  await runTimes(floor.lastStep, 20);

  const samples: StepSample[][] = nodeIds.map(() => []);
  const floorParts: LoopResult[] = [];
  const lastFloorParts: LoopResult[] = [];
  const perRound = Math.ceil(measured.length / rounds);
  for (let r = 0; r < rounds; r++) {
    const chunk = measured.slice(r * perRound, (r + 1) * perRound);
    floorParts.push(await runTimes(floor.step, chunk.length * (chainLength - 1)));
    lastFloorParts.push(await runTimes(floor.lastStep, chunk.length));
    for (const job of chunk) await driveRun(job, samples);
  }
  const middle = samples.slice(0, -1).flat();
  const last = samples.at(-1) ?? [];
  const elapsed = (list: StepSample[]) => list.reduce((n, s) => n + s.ms, 0);
  const floorRun = merge(floorParts);
  const lastFloorRun = merge(lastFloorParts);
  const floorSummary = summarize(floorRun.latencies, floorRun.elapsedMs);
  const lastFloorSummary = summarize(lastFloorRun.latencies, lastFloorRun.elapsedMs);
  const middleSummary = summarize(
    middle.map((s) => s.ms),
    elapsed(middle),
  );
  const lastSummary = summarize(
    last.map((s) => s.ms),
    elapsed(last),
  );
  const total = (list: StepSample[], pick: (s: StepSample) => CallCounts) =>
    list.reduce<CallCounts>(
      (acc, s) => {
        const c = pick(s);
        acc.total += c.total;
        for (const [name, n] of Object.entries(c.byCommand)) acc.byCommand[name] = (acc.byCommand[name] ?? 0) + n;
        return acc;
      },
      { total: 0, ms: 0, byCommand: {} },
    );
  const maxOf = (list: StepSample[], pick: (s: StepSample) => CallCounts) =>
    Math.max(...list.map((s) => pick(s).total));
  const callsLine = (list: StepSample[], pick: (s: StepSample) => CallCounts) => {
    const sum = total(list, pick);
    const perStep = Object.fromEntries(
      Object.entries(sum.byCommand).map(([name, n]) => [name, Number((n / Math.max(1, list.length)).toFixed(2))]),
    );
    return `mean ${(sum.total / Math.max(1, list.length)).toFixed(2)} per step: ${commandsText({ total: 0, ms: 0, byCommand: perStep })}`;
  };
  const shownSteps = `steps 1-${chainLength - 1} of each chain (${middle.length})`;
  line(
    `DynamoDB calls per step, ${shownSteps}, max`,
    targets.check(
      'DynamoDB calls per step (max)',
      maxOf(middle, (s) => s.ddb),
      '<=',
      4,
      String,
    ),
  );
  note(callsLine(middle, (s) => s.ddb));
  line(
    `SQS calls per step, ${shownSteps}, max`,
    targets.check(
      'SQS calls per step (max)',
      maxOf(middle, (s) => s.sqs),
      '<=',
      2,
      String,
    ),
  );
  note(callsLine(middle, (s) => s.sqs));
  line(
    `DynamoDB calls, last step incl. the run's end (${last.length}), max`,
    targets.check(
      'DynamoDB calls, last step (max)',
      maxOf(last, (s) => s.ddb),
      '<=',
      4,
      String,
    ),
  );
  note(callsLine(last, (s) => s.ddb));
  line(
    `SQS calls, last step (no callbackUrl: no webhook), max`,
    targets.check(
      'SQS calls, last step (max)',
      maxOf(last, (s) => s.sqs),
      '<=',
      2,
      String,
    ),
  );
  latencyLine('floor: BatchGet, UpdateItem ×2, SQS', floorSummary);
  latencyLine(`step executor, ${shownSteps}`, middleSummary);
  line(
    'ratio step p50 / floor p50',
    targets.check('step orchestration p50 ratio to floor', middleSummary.p50 / floorSummary.p50, '<=', 1.5, ratio),
  );
  latencyLine('floor, last step: BatchGet, UpdateItem, TransactWrite(3)', lastFloorSummary);
  latencyLine(`step executor, last step (${last.length})`, lastSummary);
  line(
    'ratio last step p50 / its floor p50 (beside its floor)',
    ratio(lastSummary.p50 / lastFloorSummary.p50).padStart(12),
  );
  const sendsMs = mean(middle.map((s) => s.ddb.ms + s.sqs.ms));
  console.log('  where one step (1-9) spends its time (means):');
  line('    in the handler', ms(mean(middle.map((s) => s.ms))).padStart(12));
  line('      its DynamoDB and SQS sends', ms(sendsMs).padStart(12));
  line(
    '      the rest: batch processor, parsing, graph, logger',
    ms(mean(middle.map((s) => s.ms)) - sendsMs).padStart(12),
  );
  line('    for comparison: floor mean', ms(mean(floorRun.latencies)).padStart(12));
  return { p50: floorSummary.p50 };
};

const benchEndToEnd = async (
  ctx: RunsBenchContext,
  team: Omit<BenchTeam, 'workflowIds'>,
  workflowIds: readonly string[],
  stepFloor: { p50: number },
): Promise<number> => {
  const { deps, server } = ctx;
  heading(
    `End to end: a ${chainLength}-step chain started over HTTP, through the queue pollers, until GET /runs/{jobId} says completed (${workflowIds.length} runs, one at a time)`,
  );
  const client: number[] = [];
  const recorded: number[] = [];
  const statuses: Record<string, number> = {};
  let estimates = 0;
  for (const workflowId of workflowIds) {
    const t = performance.now();
    const started = await postRun(server.baseUrl, team.key, workflowId);
    if (started.status !== 200 || !started.jobId) throw new Error(`start answered ${started.status}`);
    estimates += started.estimatedCredits;
    let status = 'queued';
    const deadline = Date.now() + 30_000;
    while (!endedStatuses.has(status) && Date.now() < deadline) {
      await sleep(5);
      const response = await fetch(`${server.baseUrl}/runs/${started.jobId}`, {
        headers: { authorization: `Bearer ${team.key}` },
      });
      status = ((await response.json()) as { status?: string }).status ?? 'unknown';
    }
    client.push(performance.now() - t);
    statuses[status] = (statuses[status] ?? 0) + 1;
    const { Item } = await deps.ddb.send(
      new GetCommand({ TableName: deps.tableName, Key: runKey(started.jobId), ConsistentRead: true }),
    );
    if (Item?.createdAt && Item.endedAt) recorded.push(Date.parse(Item.endedAt) - Date.parse(Item.createdAt));
  }
  const floor = chainLength * stepFloor.p50;
  line('runs', statusesText(statuses));
  line('client: POST start → GET /runs says completed, median', ms(median(client)).padStart(12));
  note(`each: ${client.map((v) => v.toFixed(0)).join(', ')} ms (GET /runs polled every 5 ms)`);
  line('server: run createdAt → endedAt, median', ms(median(recorded)).padStart(12));
  line(`floor: ${chainLength} × the step floor p50`, ms(floor).padStart(12));
  line(
    'ratio server time / floor',
    ctx.targets.check('end to end, server time / floor', median(recorded) / floor, '<=', endToEndRatio, ratio),
  );
  note('The steps of a chain run one after another, so a chain cannot end sooner than 10 sequences of');
  note("the calls one step's orchestration cannot avoid. Not in the floor: the start itself, the run's");
  note('end transaction, and per step the SQS hop (the poller receives, and deletes after the handler).');
  return estimates;
};

const benchManyStarts = async (
  ctx: RunsBenchContext,
  team: Omit<BenchTeam, 'workflowIds'>,
  workflowIds: readonly string[],
  earlierEstimatesCredits: number,
) => {
  const { deps, server, targets } = ctx;
  const total = manyRounds * workflowIds.length;
  heading(
    `${total.toLocaleString('en')} run starts over ${workflowIds.length} workflows: ${manyRounds} rounds of one start per workflow (${manyConcurrency} at once), each round run to the end by the pollers`,
  );
  const statusCounts: Record<number, number> = {};
  const runStatuses: Record<string, number> = {};
  let estimates = 0;
  const started = performance.now();
  const roundMs: number[] = [];
  for (let r = 0; r < manyRounds; r++) {
    const roundStarted = performance.now();
    const results = await mapLimit(workflowIds, manyConcurrency, (workflowId) =>
      postRun(server.baseUrl, team.key, workflowId),
    );
    const jobIds: string[] = [];
    for (const result of results) {
      statusCounts[result.status] = (statusCounts[result.status] ?? 0) + 1;
      if (result.status === 200 && result.jobId) {
        jobIds.push(result.jobId);
        estimates += result.estimatedCredits;
      }
    }
    // Cheap to poll: the team's hold is back to 0 once every run of the round took its last charge.
    await waitForTeamHoldToEmpty(deps, team.teamId, 120_000);
    const { statuses } = await waitForRunsToEnd(deps, jobIds, 30_000);
    for (const [status, count] of Object.entries(statuses)) runStatuses[status] = (runStatuses[status] ?? 0) + count;
    roundMs.push(performance.now() - roundStarted);
  }
  await waitForQueueToDrain(deps, ctx.resources.queueUrls.Steps, 30_000);
  const wall = performance.now() - started;
  line('start answers', statusesText(statusCounts));
  line('starts accepted', targets.check('run starts accepted (of 1,000)', statusCounts[200] ?? 0, '==', total, String));
  line('runs completed', targets.check('runs completed (of 1,000)', runStatuses.completed ?? 0, '==', total, String));
  if ((runStatuses.completed ?? 0) !== total) line('  run statuses', statusesText(runStatuses));
  line('wall time, starts and runs', `${ms(wall)}   ${((total * 1000) / wall).toFixed(1)} runs/s`);
  note(
    `rounds (${workflowIds.length} starts, then their ${chainLength} steps each): ${roundMs.map((v) => (v / 1000).toFixed(1)).join(', ')} s`,
  );

  const teamItem = await getTeam(deps, team.teamId);
  const { balance, held, charged, granted } = teamItem ?? {
    balance: Number.NaN,
    held: Number.NaN,
    charged: Number.NaN,
    granted: Number.NaN,
  };
  const balanced = balance + held + charged === granted && held === 0;
  line(
    'ledger: balance + held + charged = granted and held = 0',
    targets.check('ledger after 1,000 runs', balanced ? 1 : 0, '==', 1, (v) => (v === 1 ? 'BALANCED' : 'NOT BALANCED')),
  );
  note(
    `balance ${toCredits(balance)} + held ${toCredits(held)} + charged ${toCredits(charged)} = ${toCredits(balance + held + charged)}; granted ${toCredits(granted)}`,
  );
  // Every run of this team ran every step, so it was charged exactly its estimate.
  const expected = Math.round((earlierEstimatesCredits + estimates) * 100);
  line(
    'charged − the estimates of every run the team completed',
    targets.check("ledger: charged minus completed runs' estimates", toCredits(charged - expected), '==', 0, String),
  );
};
