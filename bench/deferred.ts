/**
 * The deferred-run dispatcher: one tick with 100,000 runs waiting of which 10 can go,
 * beside a tick with only those 10 waiting on a fresh table, measured in the same run.
 */
import { randomUUID } from 'node:crypto';
import { BatchWriteCommand, GetCommand } from '@aws-sdk/lib-dynamodb';
import * as v from 'valibot';
import { dispatchDeferredRuns, type TickReport } from '../functions/app/dispatch-deferred.ts';
import type { Deps } from '../functions/deps.ts';
import { deferredExpiresAt } from '../functions/domain/deferred-run-lifetime.ts';
import { findApiKeyById } from '../functions/store/api-keys.ts';
import { createDeferredRun } from '../functions/store/deferred-runs.ts';
import type { ApiKeyItem } from '../functions/store/items/api-keys.ts';
import { canvasKey, deferredRunKey, waitingIndexes } from '../functions/store/keys.ts';
import { setLiveMultiplier } from '../functions/store/price-multiplier.ts';
import { putWorkflow } from '../functions/store/workflows.ts';
import { localDeps } from '../local/local-deps.ts';
import { type LocalResources, provision } from '../local/provision.ts';
import { RunRequestSchema } from '../schemas/run-request.ts';
import { type CallCounts, commandsText, countDynamoDbCalls, countSqsCalls, since, snapshot } from './counters.ts';
import { heading, line, note, ratio } from './report.ts';
import { type BenchTeam, mapLimit, seedRunsTeam } from './seed.ts';
import { ms, type Targets } from './stats.ts';

/** Ticks measured on each table, alternating, each with 10 fresh runs that can go. */
const ticks = 3;
const canGo = 10;
const waitingMultiplier = 0.5;
const goingMultiplier = 0.9;
const liveMultiplier = 0.8;
const batchWriteSize = 25;
const seedConcurrency = 8;

export interface DeferredBenchContext {
  deps: Deps;
  resources: LocalResources;
  targets: Targets;
  cleanups: (() => Promise<void> | void)[];
  /** A team with credits and a key, and chain workflows with no run in progress (at least ticks × 10). */
  team: Omit<BenchTeam, 'workflowIds'>;
  workflowIds: readonly string[];
  /** Deferred runs waiting on the big table, the 10 that can go included. */
  waitingCount: number;
}

/** Writes `count` waiting deferred runs that cannot go (maxMultiplier 0.5) with BatchWriteItem. */
const seedWaiting = async (deps: Deps, team: { teamId: string; keyId: string }, count: number) => {
  const now = new Date();
  const createdAt = now.toISOString();
  const expiresAt = deferredExpiresAt(now).toISOString();
  const dummyWorkflowId = randomUUID();
  const request = v.parse(RunRequestSchema, { defer: true, maxMultiplier: waitingMultiplier });
  const item = (deferredJobId: string) => ({
    ...deferredRunKey(deferredJobId),
    ...waitingIndexes(deferredJobId, waitingMultiplier, createdAt, expiresAt),
    type: 'DeferredRun',
    deferredJobId,
    teamId: team.teamId,
    keyId: team.keyId,
    workflowId: dummyWorkflowId,
    status: 'waiting',
    maxMultiplier: waitingMultiplier,
    createdAt,
    expiresAt,
    request,
  });
  const batches = Array.from({ length: Math.ceil(count / batchWriteSize) }, (_, b) =>
    Math.min(batchWriteSize, count - b * batchWriteSize),
  );
  await mapLimit(batches, seedConcurrency, async (size) => {
    let pending: Record<string, unknown>[] = Array.from({ length: size }, () => ({
      PutRequest: { Item: item(randomUUID()) },
    }));
    for (let attempt = 0; pending.length > 0; attempt++) {
      if (attempt > 10) throw new Error('DynamoDB left items unprocessed after 10 retries');
      if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, 25 * 2 ** attempt));
      const { UnprocessedItems } = await deps.ddb.send(
        new BatchWriteCommand({ RequestItems: { [deps.tableName]: pending as never } }),
      );
      pending = (UnprocessedItems?.[deps.tableName] as Record<string, unknown>[] | undefined) ?? [];
    }
  });
};

/** `canGo` waiting runs (maxMultiplier 0.9) of real workflows, stored as a deferred start stores them. */
const addRunsThatCanGo = async (deps: Deps, key: ApiKeyItem, workflowIds: readonly string[]) => {
  const request = v.parse(RunRequestSchema, { defer: true, maxMultiplier: goingMultiplier });
  for (const workflowId of workflowIds) {
    await createDeferredRun(deps, { deferredJobId: randomUUID(), key, workflowId, request, idempotency: null });
  }
};

interface Tick {
  ms: number;
  report: TickReport;
  ddb: CallCounts;
  sqs: CallCounts;
}

/** One table's side: its deps (with counters on the clients the tick uses), key and free workflows. */
const side = (resources: LocalResources, cleanups: DeferredBenchContext['cleanups']) => {
  const deps = localDeps(resources);
  cleanups.push(() => {
    deps.ddb.destroy();
    deps.sqs.destroy();
    deps.s3.destroy();
  });
  const ddb = countDynamoDbCalls(deps.ddb);
  const sqs = countSqsCalls(deps.sqs);
  const tick = async (): Promise<Tick> => {
    const ddb0 = snapshot(ddb);
    const sqs0 = snapshot(sqs);
    const t = performance.now();
    const report = await dispatchDeferredRuns(deps);
    return { ms: performance.now() - t, report, ddb: since(ddb0, ddb), sqs: since(sqs0, sqs) };
  };
  return { deps, tick };
};

export const benchDispatcher = async (ctx: DeferredBenchContext) => {
  const { deps, resources, targets, team } = ctx;
  const count = ctx.waitingCount;
  heading(
    `Deferred dispatcher: one tick with ${count.toLocaleString('en')} waiting (maxMultiplier ${waitingMultiplier}, ${canGo} of them ${goingMultiplier}) at multiplier ${liveMultiplier}, beside a tick with ${canGo} waiting on a fresh table`,
  );
  if (ctx.workflowIds.length < ticks * canGo) throw new Error(`the dispatcher bench needs ${ticks * canGo} workflows`);

  // The fresh table: same emulators, its own prefix; a team, a key and workflows with the same canvas.
  const small = await provision({
    prefix: `benchd${randomUUID().slice(0, 8)}`,
    dynamoDbEndpoint: resources.dynamoDbEndpoint,
    sqsS3Endpoint: resources.sqsS3Endpoint,
    s3Endpoint: resources.s3Endpoint,
    // No table stream until a consumer attaches (local/provision.ts, `tableStream`).
    tableStream: false,
  });
  const smallSide = side(small, ctx.cleanups);
  const smallTeam = await seedRunsTeam(smallSide.deps, 100_000);
  const { Item: canvasItem } = await deps.ddb.send(
    new GetCommand({ TableName: deps.tableName, Key: canvasKey(ctx.workflowIds[0] as string), ConsistentRead: true }),
  );
  if (!canvasItem) throw new Error('no canvas to copy');
  const smallWorkflows: string[] = [];
  for (let i = 0; i < ticks * canGo; i++) {
    const { workflowId } = await putWorkflow(smallSide.deps, {
      teamId: smallTeam.teamId,
      agentId: smallTeam.agentId,
      projectId: smallTeam.projectId,
      name: `Bench deferred ${i + 1}`,
      description: null,
      status: 'draft',
      canvas: canvasItem.canvas,
      stepsCount: (canvasItem.canvas as { nodes: unknown[] }).nodes.length,
    });
    smallWorkflows.push(workflowId);
  }
  const smallKey = await findApiKeyById(smallSide.deps, smallTeam.keyId);
  const bigKey = await findApiKeyById(deps, team.keyId);
  if (!smallKey || !bigKey) throw new Error('bench keys not found');

  const bigSide = side(resources, ctx.cleanups);
  const seedStarted = performance.now();
  await seedWaiting(deps, team, count - canGo);
  line(
    `seeded ${(count - canGo).toLocaleString('en')} waiting runs (BatchWriteItem ×${batchWriteSize}, ${seedConcurrency} at once)`,
    ms(performance.now() - seedStarted).padStart(12),
  );
  await setLiveMultiplier(deps, liveMultiplier);
  await setLiveMultiplier(smallSide.deps, liveMultiplier);

  const smallTicks: Tick[] = [];
  const bigTicks: Tick[] = [];
  for (let t = 0; t < ticks; t++) {
    const slice = (ids: readonly string[]) => ids.slice(t * canGo, (t + 1) * canGo);
    await addRunsThatCanGo(smallSide.deps, smallKey, slice(smallWorkflows));
    smallTicks.push(await smallSide.tick());
    await addRunsThatCanGo(deps, bigKey, slice(ctx.workflowIds));
    bigTicks.push(await bigSide.tick());
  }
  const tickText = (tick: Tick) => {
    const r = tick.report;
    return `${ms(tick.ms)}: ${r.queryPages} query pages, dispatched ${r.dispatched.length}, expired ${r.expired.length}, cancelled ${r.cancelled.length}, kept ${r.keptWaiting.length}`;
  };
  for (const [i, tick] of bigTicks.entries()) {
    note(`tick ${i + 1}, ${count.toLocaleString('en')} waiting: ${tickText(tick)}`);
    const smallTick = smallTicks[i];
    if (smallTick) note(`tick ${i + 1}, ${canGo} waiting:      ${tickText(smallTick)}`);
  }
  const first = bigTicks[0];
  if (!first) throw new Error('no tick');
  line(
    `query pages read by the tick (${count.toLocaleString('en')} waiting)`,
    targets.check(
      'dispatcher tick query pages',
      Math.max(...bigTicks.map((t) => t.report.queryPages)),
      '<=',
      2,
      String,
    ),
  );
  line(
    'deferred runs dispatched by the tick (the 10 that can go)',
    targets.check(
      'dispatcher tick dispatched',
      Math.min(...bigTicks.map((t) => t.report.dispatched.length)),
      '==',
      canGo,
      String,
    ),
  );
  note(`DynamoDB calls per tick: ${commandsText(first.ddb)}; SQS: ${commandsText(first.sqs)}`);
  const medianMs = (list: Tick[]) => [...list.map((t) => t.ms)].sort((a, b) => a - b)[Math.floor(list.length / 2)] ?? 0;
  const bigMs = medianMs(bigTicks);
  const smallMs = medianMs(smallTicks);
  line(`tick wall time, ${count.toLocaleString('en')} waiting (median of ${ticks})`, ms(bigMs).padStart(12));
  line(`tick wall time, ${canGo} waiting (median of ${ticks})`, ms(smallMs).padStart(12));
  line(
    'ratio',
    targets.check(
      `dispatcher tick time ratio (${count.toLocaleString('en')} / ${canGo} waiting)`,
      bigMs / smallMs,
      '<=',
      2,
      ratio,
    ),
  );
  await setLiveMultiplier(deps, null);
};
