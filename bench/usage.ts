/**
 * What a usage rollup adds per run (GET /usage, docs/decisions/usage.md): a run's settlement
 * transaction writes its cell (team, day, workflow, key, first tag, project) and one item per model
 * that charged, and a charged model step's count adds one entry to the run item's `modelCharges`.
 *
 * Measured here, on the emulators: the settlement transaction's time with its rollups and without
 * them (the same transaction, `endRunItems` of functions/store/run/ledger.ts, its `USAGE#` items left
 * out), for runs started and counted through the store's own writers (a model step, then the last
 * step ended by the settlement). DynamoDB Local's times are no AWS latency; the difference is what
 * the rollup items (here 2: the cell and the one model's) cost to build, send and apply. Counted from the code: each rollup item is a
 * transactional write under 1 KB, 2 write units, priced with the cost bench's prices (`awsPrices`).
 */
import { randomUUID } from 'node:crypto';
import type { Deps } from '../functions/deps.ts';
import { createApiKey } from '../functions/store/api-keys.ts';
import { countStep, readRunItem, startRun } from '../functions/store/run/index.ts';
import { endRunItems } from '../functions/store/run/ledger.ts';
import { createAgent, createProject, createTeam } from '../functions/store/tenancy.ts';
import { transactWrite } from '../functions/store/write.ts';
import { localDeps } from '../local/local-deps.ts';
import type { LocalResources } from '../local/provision.ts';
import { RunStatus, StepStatus } from '../platform/run-statuses.ts';
import { awsPrices } from './cost-meter.ts';
import { heading, line, note } from './report.ts';
import { ledgerRunStart } from './seed.ts';
import { median, ms } from './stats.ts';

const runsPerVariant = Math.max(10, Number(process.env.BENCH_USAGE_RUNS ?? 100) || 100);

/** A run of two steps started and its model step counted, ready for its last count. */
const countedRun = async (deps: Deps, team: { teamId: string; keyId: string; agentId: string; projectId: string }) => {
  const jobId = randomUUID();
  const run = ledgerRunStart(team, { jobId, llmHundredths: 200, showHundredths: 1, tags: ['customer-1', 'nightly'] });
  await startRun(deps, run);
  const started = await readRunItem(deps, jobId);
  if (!started) throw new Error('the bench run was not written');
  const model = { provider: 'sandbox', model: 'sandbox-text-1' };
  const first = await countStep(deps, started, 'llm', { status: StepStatus.completed, chargeHundredths: 200, model });
  if (!first.counted || first.ended) throw new Error('the bench run’s first count failed');
  return first.run;
};

export const benchUsage = async ({ resources }: { resources: LocalResources }) => {
  const deps = localDeps(resources);
  const { teamId } = await createTeam(deps, {
    name: 'Usage bench',
    creditsHundredths: 10_000_000,
    perStepLimitHundredths: null,
  });
  const { projectId } = await createProject(deps, { teamId, name: 'P', hardCapHundredths: null });
  const { agentId } = await createAgent(deps, { teamId, projectId, name: 'A' });
  const { keyId } = await createApiKey(deps, { teamId });
  const team = { teamId, keyId, agentId, projectId };
  const times = { with: [] as number[], without: [] as number[] };
  let rollupItems = 0;
  let ledgerItems = 0;
  // Interleaved, so a slower moment of the machine falls on both.
  for (let i = 0; i < runsPerVariant * 2; i++) {
    const variant = i % 2 === 0 ? 'with' : 'without';
    const run = await countedRun(deps, team);
    const last = { nodeIds: ['show'], completed: 1, chargeHundredths: 1, completedBefore: 1, skippedBefore: 0 };
    const all = endRunItems(deps, run, RunStatus.completed, last);
    const isRollup = (item: (typeof all)[number]) => JSON.stringify(item.Update?.Key ?? {}).includes('USAGE#');
    rollupItems = all.filter(isRollup).length;
    ledgerItems = all.length - rollupItems;
    const items = variant === 'with' ? all : all.filter((item) => !isRollup(item));
    const started = performance.now();
    const written = await transactWrite(deps, items);
    times[variant].push(performance.now() - started);
    if (!written.written) throw new Error('a bench settlement was refused');
  }
  deps.ddb.destroy();

  const withMs = median(times.with);
  const withoutMs = median(times.without);
  const writeUnits = rollupItems * 2;
  const perRun = writeUnits * awsPrices.dynamoDbWriteUnit;
  heading(`Usage rollups: what a run's settlement adds (${runsPerVariant} runs each way, DynamoDB Local)`);
  line('settlement transaction items, without / with rollups', `${ledgerItems} / ${ledgerItems + rollupItems}`);
  line('settlement transaction, median without rollups', ms(withoutMs));
  line('settlement transaction, median with rollups', ms(withMs));
  line('added per run (median difference, emulator)', ms(withMs - withoutMs));
  line(`added write units per run (${rollupItems} items × 2, transactional)`, String(writeUnits));
  line('added per run, on-demand writes', `$${perRun.toExponential(2)}`);
  line('added per million runs', `$${(perRun * 1e6).toFixed(2)}`);
  note('A run without a charged model: its cell alone (2 write units). One more model that charged: one more item');
  note('(2). A charged model step adds ~60 bytes to its run item (`modelCharges`), written by the count it makes');
  note('anyway. A read is one Query of the cells of the period (~350 bytes each), two for `model`.');
  return { withMs, withoutMs, rollupItems, writeUnits, perRunDollars: perRun };
};
