/**
 * The cost model, measured: a 10-step chain run priced all in from what it consumed
 * (bench/cost-run.ts, bench/cost-meter.ts, bench/cost-logs.ts), beside the floor it is judged
 * against in the same run: what AWS Step Functions Standard charges for the same run's state
 * transitions alone. Target: a fifth of it, and at most $0.00003. A second run shape, with one
 * AI model step, shows what a provider's wait costs in compute.
 */

import { stageDefaults } from '../lib/stages.ts';
import { pythonRunner } from '../lib/workers.ts';
import type { LocalResources } from '../local/provision.ts';
import { functionMemoryMb, operatorEventsMapping } from '../platform/definitions.ts';
import { localStage, metricDimensions, metricNames, metricsNamespace } from '../platform/metric-names.ts';
import { measureInitMs } from './cost-init.ts';
import {
  awsPrices,
  dollars,
  logBreakdown,
  type Meter,
  operatorEventCost,
  type PriceOptions,
  priceRun,
  stepFunctionsFloor,
  xrayIfTraced,
} from './cost-meter.ts';
import {
  customMetricShare,
  customMetricsOf,
  dynamoDbPitrCost,
  dynamoDbStorageCost,
  initShare,
  picoDollars,
  retainedAssumptions,
  retainedPrices,
  s3EgressCost,
  s3StorageCost,
  toDollars,
} from './cost-retained.ts';
import { type ChainRunCost, measureChainRunCost } from './cost-run.ts';
import { benchStreamCost } from './cost-stream.ts';
import { benchWaitCost } from './cost-wait.ts';
import { idleCost, idleStages, measureIdleTick, type TickCost } from './idle-cost.ts';
import { measureJobRunCosts } from './provider-job-cost.ts';
import { heading, line, note, ratio } from './report.ts';
import { chainWithModelStep } from './seed.ts';
import type { Targets } from './stats.ts';

/** What a 10-step chain's requests may cost, all in. */
export const runCostTarget = 0.00003;

import { mb } from './stats.ts';
import { measureStepExecutorMemory } from './step-memory.ts';

/** Runs measured after the warm-up run. */
const measuredRuns = 10;
/** Polls of GET /runs/{jobId} a client that polls is assumed to make per run (besides the webhook). */
export const assumedPolls = 3;
/** Seconds the model step of the second run shape waits on its provider. */
export const providerWaitSeconds = 10;

const printLines = (meter: Meter, runs: number, options: PriceOptions) => {
  const priced = priceRun(meter, runs, options);
  for (const l of priced.lines) line(`${l.what}: ${l.count}`, dollars(l.dollars).padStart(12));
  return priced;
};

const printCounts = (meter: Meter, runs: number, options: PriceOptions) => {
  const per = (n: number) => (n / runs).toFixed(1);
  const { dynamoDb, sqs, lambda } = meter;
  note(
    `DynamoDB calls per run: ${per(dynamoDb.calls.total)} (${Object.entries(dynamoDb.calls.byCommand)
      .map(([c, n]) => `${c.replace(/Command$/, '')} ${per(n)}`)
      .join(', ')})`,
  );
  note(
    `DynamoDB write units per run, by what was written: ${Object.entries(dynamoDb.writeUnitsBy)
      .sort(([, a], [, b]) => b - a)
      .map(([what, n]) => `${what} ${per(n)}`)
      .join(', ')}${dynamoDb.refusedWriteUnits > 0 ? `, refused writes ${per(dynamoDb.refusedWriteUnits)}` : ''}`,
  );
  note(
    `DynamoDB read units per run, by what was read: ${Object.entries(dynamoDb.readUnitsBy)
      .sort(([, a], [, b]) => b - a)
      .map(([what, n]) => `${what} ${per(n)}`)
      .join(', ')}`,
  );
  note(
    `SQS requests per run: ${Object.entries(sqs.byCommand)
      .map(([c, n]) => `${c.replace(/Command/, '')} ${per(n)}`)
      .join(', ')}`,
  );
  note(
    `Lambda invocations per run: ${Object.entries(lambda.byFunction)
      .map(([f, n]) => `${f} ${per(n)}`)
      .join(', ')}; handler time ${(lambda.ms / runs).toFixed(0)} ms a run`,
  );
  const logs = logBreakdown(meter, runs, options);
  const part = (p: { events: number; bytes: number }) =>
    `${p.events.toFixed(1)} lines ${(p.bytes / 1024).toFixed(2)} KB`;
  note(
    `log ingestion per run: function lines at INFO ${part(logs.functionLines)}, EMF ${part(logs.emf)}, ` +
      `Lambda START/END/REPORT ${part(logs.platform)}, API access log ${part(logs.accessLog)} (26 bytes a line included)`,
  );
  const events = operatorEventCost(meter, runs, options.memoryMb);
  note(
    `operator events per run: ${events.entries.toFixed(1)} PutEvents entries in ${events.putCalls.toFixed(1)} calls ` +
      `(mean ${Math.round(events.meanEntryBytes)} bytes, largest ${events.largestEntryBytes}: ${events.chunks.toFixed(1)} chunks of 64 KB), ` +
      `${events.delivered.toFixed(1)} on the bus (the emulator's file); EventPublisher ${events.measuredInvocations.toFixed(1)} invocations ` +
      `here (local poller every 50 ms, no batching window), ${events.msPerInvocation.toFixed(1)} ms each; ` +
      `priced ${events.invocations.toFixed(1)}, ${events.platformLines.toFixed(0)} platform lines ${(events.platformBytes / 1024).toFixed(2)} KB`,
  );
};

export const benchCost = async (options: {
  resources: LocalResources;
  /** The repository, and where the INIT bundles are built (removed afterwards). */
  repoRoot: string;
  outDir: string;
  targets: Targets;
  chainLength: number;
  price?: PriceOptions;
  /** The idle tick, measured before other sections filled the emulator (else measured here). */
  idleTick?: TickCost;
}) => {
  const { targets, chainLength } = options;
  const price = options.price ?? {};
  heading(
    `Cost of a ${chainLength}-step chain run with a webhook, all in (${measuredRuns} runs one at a time, after one warm-up), priced at us-east-1 on-demand rates`,
  );
  const measured = await measureChainRunCost(options.resources, { runs: measuredRuns, chainLength });
  const { total } = printLines(measured.meter, measured.runs, price);
  printCounts(measured.meter, measured.runs, price);
  const xray = xrayIfTraced(measured.meter, measured.runs);
  line(
    `X-Ray: off by default (with -c tracing=true: ${xray.traces.toFixed(1)} traces × ${dollars(awsPrices.xrayTraceRecorded)})`,
    `${dollars(0).padStart(12)}   traced ${dollars(xray.dollars)}`,
  );
  line(
    `custom metrics: $${awsPrices.customMetricMonth} per metric and month, not per run (EMF lines counted above)`,
    dollars(0).padStart(12),
  );
  const floor = stepFunctionsFloor(chainLength);
  line(
    `floor: Step Functions Standard, ${chainLength} state transitions × ${dollars(awsPrices.stepFunctionsTransition)}`,
    dollars(floor).padStart(12),
  );
  line(
    'total per run, all in (the webhook tells the client)',
    targets.check(`cost of a ${chainLength}-step run, all in`, total, '<=', runCostTarget, dollars),
  );
  line('ratio total / floor', targets.check('cost / Step Functions floor', total / floor, '<=', 0.2, ratio));
  const poll = priceRun(measured.pollMeter, 1, price);
  line('one GET /runs/{jobId}, all in (request, invocation, read, logs)', dollars(poll.total).padStart(12));
  const polled = total + assumedPolls * poll.total;
  line(
    `with a polling client too: the run + ${assumedPolls} polls of GET /runs/{jobId}`,
    `${dollars(polled).padStart(12)}   ${ratio(polled / floor)} × floor`,
  );
  await printWholeBill(options, measured, total, price);
  note('One run at a time is the dearest case: under load the event source batches up to 10 messages per');
  note('invocation, so receives, deletes and invocations fall. Compute is handler time on this machine');
  note('against the emulators (a loaded 2-CPU machine: noisy). Idle cost: see the next section.');
  const { batchSize, maxBatchingWindowSeconds: window } = operatorEventsMapping;
  note("Operator events: the EventPublisher is priced at one invocation per event, a quiet stage's worst case;");
  note(
    `its mapping gathers up to ${batchSize} records for ${window} s, so a run shorter than the window is one invocation;`,
  );
  note(
    `at N runs a second, one invocation (per shard) carries ${window}×N runs' events; from ${batchSize / 2 / window} runs/s a full batch: ${(2 / batchSize).toFixed(2)} a run.`,
  );
  note("Reading the stream is free for Lambda, and its filters invoke the publisher for no step's writes. The");
  note('PutEvents to the emulator is on loopback, to EventBridge tens of ms: each 10 ms more in each of 2');
  note(
    `invocations is ${dollars(2 * 0.01 * (functionMemoryMb / 1024) * awsPrices.lambdaGbSecond)} a run at ${functionMemoryMb} MB. Not in this chain: a PythonSandbox step adds a PythonRunner`,
  );
  note(
    `invocation (${pythonRunner.memoryMb} MB; per step: docs/decisions/python.md, "Python runs on its own function").`,
  );

  heading(
    `A ${chainLength}-step run with one AI model step (LlmWorker) whose provider takes ${providerWaitSeconds} s (${measuredRuns / 2} runs, sandbox provider answering at once; the wait priced, not waited)`,
  );
  const model = await measureChainRunCost(options.resources, {
    runs: measuredRuns / 2,
    chainLength,
    steps: chainWithModelStep,
  });
  const modelPriced = printLines(model.meter, model.runs, price);
  printCounts(model.meter, model.runs, price);
  const memoryOf = price.memoryMb ?? (() => 512);
  const executorMb = memoryOf('StepExecutor');
  const waitCost = (mb: number) => providerWaitSeconds * (mb / 1024) * awsPrices.lambdaGbSecond;
  line(
    `the provider's ${providerWaitSeconds} s, held by the step executor (${executorMb} MB)`,
    dollars(waitCost(executorMb)).padStart(12),
  );
  line(
    'total per run with the wait',
    `${dollars(modelPriced.total + waitCost(executorMb)).padStart(12)}   ${ratio((modelPriced.total + waitCost(executorMb)) / floor)} × floor (not a target)`,
  );
  note(
    `the same wait at 128 / 256 / 512 / 1024 MB: ${[128, 256, 512, 1024].map((size) => dollars(waitCost(size))).join(' / ')}`,
  );

  heading(
    `The same ${chainLength}-step run, its model step a job at an asynchronous provider (Replicate's stand-in): 1 s against 60 s at the provider, waited for real (one run each, after a warm-up)`,
  );
  const [short, long] = await measureJobRunCosts(options.resources, { chainLength, jobSeconds: [1, 60] });
  if (!short || !long) throw new Error('the job runs were not measured');
  const shortTotal = priceRun(short.meter, 1, price).total;
  const longTotal = priceRun(long.meter, 1, price).total;
  line(
    `1 s at the provider: ${short.meter.lambda.invocations} invocations (${short.looks} looks at the job), ${short.meter.sqs.total} SQS requests`,
    dollars(shortTotal).padStart(12),
  );
  line(
    `60 s at the provider: ${long.meter.lambda.invocations} invocations (${long.looks} looks at the job), ${long.meter.sqs.total} SQS requests`,
    targets.check(`cost of a ${chainLength}-step run whose model step takes 60 s`, longTotal, '<=', 0.00006, dollars),
  );
  line('ratio 60 s / 1 s', targets.check('60 s job / 1 s job', longTotal / shortTotal, '<=', 1.2, ratio));
  const perStep = (meter: Meter, runs: number) => ({
    dynamoDb: meter.dynamoDb.calls.total / runs - measured.meter.dynamoDb.calls.total / measured.runs,
    sqs: meter.sqs.total / runs - measured.meter.sqs.total / measured.runs,
  });
  const syncStep = perStep(model.meter, model.runs);
  const jobStep = perStep(short.meter, 1);
  const jobStepLong = perStep(long.meter, 1);
  line(
    'calls a model step adds to the chain: synchronous (provider answers in the call)',
    `${syncStep.dynamoDb.toFixed(1)} DynamoDB, ${syncStep.sqs.toFixed(1)} SQS`,
  );
  line(
    '  asynchronous job, 1 s / 60 s at the provider',
    `${jobStep.dynamoDb.toFixed(1)} / ${jobStepLong.dynamoDb.toFixed(1)} DynamoDB, ${jobStep.sqs.toFixed(1)} / ${jobStepLong.sqs.toFixed(1)} SQS`,
  );
  note('The synchronous path holds the step executor for the whole wait (priced above at 10 s); a job holds');
  note('nothing: each poll (5 s, doubling to 2 minutes) is a short invocation, and the webhook ends the step.');

  heading(
    'Step executor memory: its source alone in a child process polling the steps queue, 10 runs started at once (one batch of 10 in parallel), peak resident memory',
  );
  for (const workload of await measureStepExecutorMemory(options.resources)) {
    line(
      `  ${workload.name}`,
      `${mb(workload.peakBytes).padStart(12)}${workload.seconds > 0 ? `   ${workload.seconds.toFixed(1)} s` : ''}`,
    );
  }
  note(`Lambda gives CPU in proportion to memory; the stage's step executor has ${executorMb} MB`);
  note('(-c stepExecutorMemoryMb=N). The source carries more modules than the bundle: read these as upper bounds.');

  heading(
    'Idle cost per stage and month: no traffic, us-east-1, without the free tier (the template, and an idle tick measured)',
  );
  const tick = options.idleTick ?? (await measureIdleTick(options.resources));
  for (const stage of idleStages) {
    console.log(`  ${stage.name}`);
    const items = idleCost(stage.context, tick);
    for (const item of items) line(`    ${item.what}`, `$${item.dollars.toFixed(2)}`.padStart(12));
    const total = items.reduce((sum, item) => sum + item.dollars, 0);
    const secretsManager = stage.name.includes('Secrets Manager');
    // dev ≤ $2 (test/cost.int.test.ts holds it at the $2.50 reached); prod is dev plus its rollback
    // alarms and web ACL, ≤ $15 (docs/deploy.md).
    const target = stage.name === 'dev' ? 2 : 15;
    line(
      `    total${secretsManager ? ' (a Secrets Manager secret: $0.40 more than SSM)' : ''}`,
      secretsManager
        ? `$${total.toFixed(2)}`.padStart(12)
        : targets.check(`idle cost a month, ${stage.name}`, total, '<=', target, (v) => `$${v.toFixed(2)}`),
    );
  }
  note('Optional: -c dashboard=true adds $3.00; -c perFunctionAlarms=true 2 alarms per route function ($0.20 each);');
  note('each team connection secret in Secrets Manager $0.40 (in SSM $0).');

  // What following a run live costs (bench/cost-stream.ts).
  await benchStreamCost({ resources: options.resources, targets, chainLength });
  // What waiting for the run in the request costs (bench/cost-wait.ts), beside a plain run.
  await benchWaitCost({ resources: options.resources, targets, plainRun: total, plainPoll: poll.total });
};

/**
 * The whole bill of one run: its requests (above), and what it leaves and shares, per stage
 * retention (bench/cost-retained.ts): its objects in S3 for the retention and downloaded once, the
 * bytes it leaves in the table for the retention and their PITR, its share of the custom metrics,
 * and its share of INIT time (each function it invokes, measured here).
 */
const printWholeBill = async (
  options: { resources: LocalResources; repoRoot: string; outDir: string },
  measured: ChainRunCost,
  requests: number,
  price: PriceOptions,
) => {
  const { left, runs, meter } = measured;
  const perRun = (n: number) => Math.round(n / runs);
  const tableBytes = perRun(left.tableBytes);
  const indexBytes = perRun(left.indexBytes);
  const s3Bytes = perRun(left.s3Bytes);
  const memoryOf = price.memoryMb ?? (() => functionMemoryMb);
  heading(
    `The whole bill of a ${measured.chainLength}-step run: its requests, and what it keeps for the retention and shares (exact, in picodollars; us-east-1, no free tier)`,
  );
  note(
    `left per run: ${(left.items / runs).toFixed(1)} items, ${tableBytes} bytes in the table and ${indexBytes} in its indexes (100 bytes of overhead an item and an entry); ${(left.objects / runs).toFixed(1)} objects, ${s3Bytes} bytes in S3`,
  );
  const metrics = customMetricsOf(
    { namespace: metricsNamespace, names: Object.values(metricNames), dimensions: metricDimensions(localStage) },
    meter.logs.emfMetrics,
  );
  note(
    `custom metrics: ${metrics.declared} declared (platform/metric-names.ts, one dimension set each); this run's EMF lines carried ${meter.logs.emfMetrics.length}` +
      (metrics.undeclared.length > 0 ? `, undeclared: ${metrics.undeclared.join(', ')}` : ', all declared'),
  );
  const invoked = { ...meter.lambda.byFunction, EventPublisher: 2 * runs };
  const init = await measureInitMs({
    repoRoot: options.repoRoot,
    outDir: options.outDir,
    resources: options.resources,
    functionIds: Object.keys(invoked),
  });
  note(
    `INIT per cold start (a bare node start ${init.nodeStartMs.toFixed(0)} ms + the bundle's import, wall, median of 3): ${Object.entries(
      init.byFunction,
    )
      .map(([fn, ms]) => `${fn} ${ms.toFixed(0)} ms`)
      .join(', ')}`,
  );
  const initFunctions = Object.entries(invoked).map(([fn, count]) => ({
    initMs: init.byFunction[fn] ?? 0,
    memoryMb: memoryOf(fn),
    invocations: perRun(count),
  }));
  const metricShare = customMetricShare(metrics.count, retainedAssumptions.runsPerMonth);
  const initTypical = initShare(initFunctions, retainedAssumptions.coldStartsTypical);
  const initQuiet = initShare(initFunctions, retainedAssumptions.coldStartsQuiet);
  const image = retainedAssumptions.exampleOutputBytes;
  for (const stage of ['dev', 'prod'] as const) {
    const days = stageDefaults[stage].retentionDays;
    const terms = [
      [`S3 Standard: ${s3Bytes} bytes of outputs × ${days} days`, s3StorageCost(s3Bytes, days)],
      [`S3 egress: those outputs downloaded ${retainedAssumptions.downloads} time`, s3EgressCost(s3Bytes)],
      [
        `DynamoDB storage: ${tableBytes + indexBytes} bytes (table and indexes) × ${days} days`,
        dynamoDbStorageCost(tableBytes + indexBytes, days),
      ],
      [`DynamoDB PITR: the table's ${tableBytes} bytes × ${days} days`, dynamoDbPitrCost(tableBytes, days)],
      [
        `custom metrics: ${metrics.count} × $0.30 a month over ${retainedAssumptions.runsPerMonth.toLocaleString('en-US')} runs a month`,
        metricShare,
      ],
      ['INIT: 1 cold start in 100 invocations (AWS: "under 1%")', initTypical],
    ] as const;
    console.log(`  ${stage} (retention ${days} days)`);
    for (const [what, value] of terms) line(`    ${what}`, picoDollars(value).padStart(12));
    const kept = terms.reduce((sum, [, value]) => sum + value, 0n);
    const all = requests + toDollars(kept);
    line(
      `    total per run, the whole bill (requests ${dollars(requests)} + the above)`,
      `${dollars(all).padStart(12)}   (not a target: the ${dollars(runCostTarget)} target judges the requests)`,
    );
    note(
      `a quiet stage, every invocation cold: INIT ${picoDollars(initQuiet)} a run instead (${dollars(all - toDollars(initTypical) + toDollars(initQuiet))} in all)`,
    );
    note(
      `each 1 MB image output adds ${picoDollars(s3StorageCost(image, days))} kept ${days} days + ${picoDollars(s3EgressCost(image))} downloaded once ` +
        `= ${picoDollars(s3StorageCost(image, days) + s3EgressCost(image))} (${(toDollars(s3StorageCost(image, days) + s3EgressCost(image)) / all).toFixed(1)} × this run)`,
    );
  }
  note(
    `prices: S3 Standard $${Number(retainedPrices.s3StandardGbMonth) / 1e12}/GB-month, egress $${Number(retainedPrices.s3EgressGb) / 1e12}/GB, ` +
      `DynamoDB $${Number(retainedPrices.dynamoDbStorageGbMonth) / 1e12}/GB-month, PITR $${Number(retainedPrices.dynamoDbPitrGbMonth) / 1e12}/GB-month (docs/operations.md, "Cost model")`,
  );
};
