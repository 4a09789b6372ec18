/**
 * The cost model, measured: a 10-step chain run priced from what it consumed (bench/cost-run.ts,
 * bench/cost-meter.ts), beside the floor it is judged against in the same run: what AWS Step
 * Functions Standard charges for the same run's state transitions alone. Target: a fifth of it.
 */
import type { LocalResources } from '../local/provision.ts';
import { awsPrices, dollars, priceRun, stepFunctionsFloor } from './cost-meter.ts';
import { measureChainRunCost } from './cost-run.ts';
import { heading, line, note, ratio } from './report.ts';
import type { Targets } from './stats.ts';

/** Runs measured after the warm-up run. */
const measuredRuns = 10;

export const benchCost = async (options: { resources: LocalResources; targets: Targets; chainLength: number }) => {
  const { targets, chainLength } = options;
  heading(
    `Cost of a ${chainLength}-step chain run with a webhook (${measuredRuns} runs one at a time, after one warm-up), priced at us-east-1 on-demand rates`,
  );
  const measured = await measureChainRunCost(options.resources, { runs: measuredRuns, chainLength });
  const { lines, total } = priceRun(measured.meter, measured.runs);
  for (const l of lines) line(`${l.what}: ${l.count}`, dollars(l.dollars).padStart(12));
  const per = (n: number) => (n / measured.runs).toFixed(1);
  const { dynamoDb, sqs, lambda } = measured.meter;
  note(
    `DynamoDB calls per run: ${per(dynamoDb.calls.total)} (${Object.entries(dynamoDb.calls.byCommand)
      .map(([c, n]) => `${c.replace(/Command$/, '')} ${per(n)}`)
      .join(', ')})`,
  );
  note(
    `SQS requests per run: ${Object.entries(sqs.byCommand)
      .map(([c, n]) => `${c.replace(/Command/, '')} ${per(n)}`)
      .join(', ')}`,
  );
  note(
    `Lambda invocations per run: ${Object.entries(lambda.byFunction)
      .map(([f, n]) => `${f} ${per(n)}`)
      .join(', ')}`,
  );
  const floor = stepFunctionsFloor(chainLength);
  line(
    `floor: Step Functions Standard, ${chainLength} state transitions × ${dollars(awsPrices.stepFunctionsTransition)}`,
    dollars(floor).padStart(12),
  );
  line('total per run', targets.check(`cost of a ${chainLength}-step run`, total, '<=', 0.00005, dollars));
  line('ratio total / floor', targets.check('cost / Step Functions floor', total / floor, '<=', 0.2, ratio));
  const poll = priceRun(measured.pollMeter);
  line('one GET /runs/{jobId} (polling instead of the webhook; not in the total)', dollars(poll.total).padStart(12));
  note('One run at a time is the dearest case: under load the event source batches up to 10 messages per');
  note('invocation, so receives, deletes and invocations per step fall. Compute is handler time on this');
  note('machine against the emulators. Idle cost is outside the run: see the cost model in docs/operations.md.');
};
