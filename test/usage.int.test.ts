/**
 * GET /usage (our design): the team's charges by day, workflow, key, tag, model and project, kept
 * as rollups written by each run's settlement transaction. Runs go through the real path: started
 * over HTTP, their steps run by the real step executor (the sandbox provider standing in for the
 * model's), so every charge reaches the rollups as it reaches the team's ledger.
 */

import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BatchWriteCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { ledgerRunStart } from '../bench/seed.ts';
import { buildOpenApiDocument } from '../functions/docs/openapi.ts';
import { maxUsageItems, sumUsage, usageDay } from '../functions/domain/usage.ts';
import { InvalidQueryError } from '../functions/errors/table.ts';
import { itemVersion } from '../functions/store/items/item.ts';
import { usageKey } from '../functions/store/keys.ts';
import { countStep, readRunItem, settleEndedRun, startRun } from '../functions/store/run/index.ts';
import { createAgent, createProject } from '../functions/store/tenancy.ts';
import { readUsageItems } from '../functions/store/usage.ts';
import { createClient } from '../packages/client/src/client.ts';
import { RunStatus, StepStatus } from '../platform/run-statuses.ts';
import { runCli } from './support/cli.ts';
import { expectValidResponse } from './support/openapi-validator.ts';
import {
  deliver,
  ledgerOf,
  realStepHandler,
  type StepHandler,
  type StepMessage,
  stepRecord,
  takeStepMessages,
} from './support/runs.ts';
import { addKey, call, createWorkflow, type SeededTeam, seedUnthrottledTeam, stackPerFile } from './support/stack.ts';

const { stack } = stackPerFile();
const doc = buildOpenApiDocument();
const groupings = ['day', 'workflow', 'key', 'tag', 'model', 'project'] as const;

interface Row {
  group: string | null;
  runs: number;
  steps: number;
  chargedCredits: number;
  refundedCredits: number;
}

const usage = async (key: string, query: string) => {
  const answer = await call(stack.baseUrl, `/usage?${query}`, { key });
  if (!String(answer.headers.get('content-type')).startsWith('text/csv')) {
    expectValidResponse(doc, { method: 'GET', path: '/usage', status: answer.status, body: answer.body });
  }
  return answer;
};

const hundredths = (credits: number) => Math.round(credits * 100);
const sumOf = (rows: Row[], pick: (row: Row) => number) => rows.reduce((sum, row) => sum + pick(row), 0);

/**
 * Plays the steps queue's event source mapping until it stays empty, delivering the messages of a
 * round at once (as Lambda's concurrent pollers do); a delivery that fails (contention on every
 * try) is delivered again, as SQS would.
 */
const drainConcurrently = async (handler: StepHandler) => {
  let pending: StepMessage[] = await takeStepMessages(stack.deps);
  for (let round = 0; round < 200; round++) {
    if (pending.length === 0) return;
    const failed: StepMessage[] = [];
    await Promise.all(
      pending.map(async (message) => {
        if ((await deliver(handler, [stepRecord(message)])).length > 0) failed.push(message);
      }),
    );
    pending = [...failed, ...(await takeStepMessages(stack.deps))];
  }
  throw new Error('the steps queue never emptied');
};

const startOk = async (team: SeededTeam, key: string, workflowId: string, tags?: string[]) => {
  const started = await call(stack.baseUrl, `/workflows/${workflowId}/runs`, {
    key,
    method: 'POST',
    body: tags ? { tags } : {},
  });
  expect(started.status, JSON.stringify(started.body)).toBe(200);
  return { teamId: team.teamId, jobId: started.body.jobId as string };
};

describe('GET /usage', () => {
  it('after 100 tagged runs started over HTTP and run by the step executor, every grouping’s rows sum exactly to the team’s charges; a redelivered step changes no rollup', {
    timeout: 900_000,
  }, async () => {
    const team = await seedUnthrottledTeam(stack.deps, 10_000);
    const second = await addKey(stack.deps, team.teamId, { rateLimitPerMinute: 100_000 });
    const { projectId } = await createProject(stack.deps, {
      teamId: team.teamId,
      name: 'Other',
      hardCapHundredths: null,
    });
    const { agentId } = await createAgent(stack.deps, { teamId: team.teamId, projectId, name: 'Other agent' });
    // One run in progress per workflow: 50 workflows, a run on each at once, in two projects.
    const workflows = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        createWorkflow(stack, i % 2 ? { ...team, agentId } : team, undefined, `W${i}`),
      ),
    );
    const handler = realStepHandler(stack.deps);
    const runs = 100;
    const started: string[] = [];
    for (let round = 0; started.length < runs; round++) {
      const batch = await Promise.all(
        workflows.map((workflowId, i) => {
          const n = round * workflows.length + i;
          // Every run tagged: one tag, or a customer first and a second tag after it.
          const tags = n % 3 === 0 ? [`customer-${n % 7}`] : [`customer-${n % 7}`, `env-${n % 2}`];
          return startOk(team, n % 4 === 0 ? second.key : team.key, workflowId, tags);
        }),
      );
      started.push(...batch.map((run) => run.jobId));
      await drainConcurrently(handler);
    }

    const ledger = await ledgerOf(stack.deps, team.teamId);
    expect(ledger.held).toBe(0);
    expect(ledger.charged).toBe(runs * 203);
    const today = usageDay(new Date());
    const answers = new Map<string, Row[]>();
    for (const groupBy of groupings) {
      const answer = await usage(team.key, `from=${today}&to=${today}&groupBy=${groupBy}`);
      expect(answer.status).toBe(200);
      const rows = answer.body.rows as Row[];
      answers.set(groupBy, rows);
      expect(
        sumOf(rows, (row) => hundredths(row.chargedCredits)),
        groupBy,
      ).toBe(ledger.charged);
      expect(hundredths(answer.body.chargedCredits as number), groupBy).toBe(ledger.charged);
      if (groupBy !== 'model')
        expect(
          sumOf(rows, (row) => row.runs),
          groupBy,
        ).toBe(runs);
    }
    expect(answers.get('day')).toEqual([
      { group: today, runs, steps: runs * 4, chargedCredits: (runs * 203) / 100, refundedCredits: 0 },
    ]);
    expect(answers.get('workflow')).toHaveLength(50);
    expect(answers.get('project')?.map((row) => row.runs)).toEqual([runs / 2, runs / 2]);
    expect(new Map(answers.get('key')?.map((row) => [row.group, row.runs]))).toEqual(
      new Map([
        [team.keyId, (runs * 3) / 4],
        [second.keyId, runs / 4],
      ]),
    );
    // Under its first tag only: the seven customers, no `env-` row, no untagged row.
    expect(answers.get('tag')?.map((row) => row.group)).toEqual(Array.from({ length: 7 }, (_, i) => `customer-${i}`));
    // The chain's model step (2 credits) under its model; the rest of each run's charge under null.
    const model = answers.get('model') ?? [];
    expect(model).toHaveLength(2);
    expect(model.find((row) => row.group === null)).toMatchObject({
      runs,
      steps: runs * 3,
      chargedCredits: (runs * 3) / 100,
    });
    expect(model.find((row) => row.group !== null)).toMatchObject({ runs, steps: runs, chargedCredits: runs * 2 });
    expect(model.find((row) => row.group !== null)?.group).toMatch(/^sandbox\//);

    // CSV: the same rows, exact credits with two decimals.
    const csv = await usage(team.key, `from=${today}&to=${today}&groupBy=tag&format=csv`);
    expect(csv.status).toBe(200);
    expect(csv.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(csv.headers.get('content-disposition')).toBe(`attachment; filename="usage-tag-${today}-${today}.csv"`);
    const lines = String(csv.body).trimEnd().split('\r\n');
    expect(lines[0]).toBe('group,runs,steps,chargedCredits,refundedCredits');
    expect(lines).toHaveLength(8);
    expect(
      sumOf(
        lines.slice(1).map((line) => ({ chargedCredits: Number(line.split(',')[3]) }) as Row),
        (row) => hundredths(row.chargedCredits),
      ),
    ).toBe(ledger.charged);

    // Redelivered: a run's last step again, and its settlement again: refused by the run item's
    // conditions, and the rollups with them.
    const jobId = started[0] as string;
    const failed = await deliver(handler, [stepRecord({ jobId, workflowId: workflows[0] as string, nodeId: 'show' })]);
    expect(failed).toEqual([]);
    await drainConcurrently(handler);
    expect(await settleEndedRun(stack.deps, jobId)).toBe(false);
    expect((await ledgerOf(stack.deps, team.teamId)).charged).toBe(ledger.charged);
    for (const groupBy of groupings) {
      const again = await usage(team.key, `from=${today}&to=${today}&groupBy=${groupBy}`);
      expect(again.body.rows, groupBy).toEqual(answers.get(groupBy));
    }
  });

  it('after 1,000 tagged runs through the ledger’s writers, groupBy=tag sums exactly to the team’s charged credits; charges applied again change nothing', {
    timeout: 900_000,
  }, async () => {
    // The start's transaction, each step's count (a model step, then the last, which ends the run in
    // its settlement's transaction), as the step executor calls them; no queue, no node runs.
    const team = await seedUnthrottledTeam(stack.deps, 10_000);
    const model = { provider: 'sandbox', model: 'sandbox-text-1' };
    const oneRun = async (n: number) => {
      const jobId = randomUUID();
      const tags = n % 2 ? [`customer-${n % 9}`, 'batch'] : [`customer-${n % 9}`];
      const run = ledgerRunStart(team, { jobId, llmHundredths: 200, showHundredths: 10, tags });
      await startRun(stack.deps, run);
      const started = await readRunItem(stack.deps, jobId);
      if (!started) throw new Error('the run was not written');
      // A model step charged less than its estimate (its work), then the last step.
      const first = await countStep(stack.deps, started, 'llm', {
        status: StepStatus.completed,
        chargeHundredths: 150 + (n % 50),
        model,
      });
      if (!first.counted || first.ended) throw new Error('the first count did not count');
      const last = await countStep(stack.deps, first.run, 'show', {
        status: StepStatus.completed,
        chargeHundredths: 1,
      });
      expect(last).toMatchObject({ counted: true, ended: true });
      expect((await readRunItem(stack.deps, jobId))?.status).toBe(RunStatus.completed);
      // Every tenth run's charges applied again from the same reads, as a redelivered message would:
      // refused by the run item's conditions, the settlement's rollups with them (the sums below hold).
      if (n % 10 === 0) {
        const again = { status: StepStatus.completed, chargeHundredths: 1 } as const;
        expect(await countStep(stack.deps, first.run, 'show', again)).toMatchObject({ counted: false });
        expect(
          await countStep(stack.deps, started, 'llm', { status: StepStatus.completed, chargeHundredths: 150, model }),
        ).toMatchObject({ counted: false });
        expect(await settleEndedRun(stack.deps, jobId)).toBe(false);
      }
    };
    const runs = 1000;
    // One at a time: every run's transactions touch the one team item, so runs side by side only
    // conflict and back off (20 at once took minutes).
    for (let n = 0; n < runs; n++) await oneRun(n);

    const ledger = await ledgerOf(stack.deps, team.teamId);
    expect(ledger.held).toBe(0);
    const today = usageDay(new Date());
    const tag = await usage(team.key, `from=${today}&to=${today}&groupBy=tag`);
    const rows = tag.body.rows as Row[];
    expect(rows.map((row) => row.group)).toEqual(Array.from({ length: 9 }, (_, i) => `customer-${i}`));
    expect(sumOf(rows, (row) => hundredths(row.chargedCredits))).toBe(ledger.charged);
    expect(sumOf(rows, (row) => row.runs)).toBe(runs);
    // And the released holds, to the hundredth: each run held 210 and charged 151 + n % 50.
    expect(sumOf(rows, (row) => hundredths(row.refundedCredits))).toBe(runs * 210 - ledger.charged);
    for (const groupBy of groupings) {
      const answer = await usage(team.key, `from=${today}&to=${today}&groupBy=${groupBy}`);
      expect(
        sumOf(answer.body.rows as Row[], (row) => hundredths(row.chargedCredits)),
        groupBy,
      ).toBe(ledger.charged);
    }
  });

  it('counts a cancelled run’s released hold as refunded, charged nothing; an empty period answers no rows', async () => {
    const team = await seedUnthrottledTeam(stack.deps, 100);
    const workflowId = await createWorkflow(stack, team);
    const { jobId } = await startOk(team, team.key, workflowId, ['order-1']);
    const cancelled = await call(stack.baseUrl, `/runs/${jobId}/cancel`, { key: team.key, method: 'POST' });
    expect(cancelled.status).toBe(200);
    const today = usageDay(new Date());
    const answer = await usage(team.key, `from=${today}&to=${today}&groupBy=tag`);
    expect(answer.body).toEqual({
      from: today,
      to: today,
      groupBy: 'tag',
      rows: [{ group: 'order-1', runs: 1, steps: 0, chargedCredits: 0, refundedCredits: 2.03 }],
      chargedCredits: 0,
      refundedCredits: 2.03,
    });
    // The typed client and the CLI read the same rows; the CLI writes the CSV to a file.
    const client = createClient({ baseUrl: stack.baseUrl, apiKey: team.key });
    expect(await client.getUsage({ from: today, to: today, groupBy: 'tag' })).toEqual(answer.body);
    const csv = await client.getUsageCsv({ from: today, to: today, groupBy: 'tag' });
    expect(csv).toBe('group,runs,steps,chargedCredits,refundedCredits\r\norder-1,1,0,0.00,2.03\r\n');
    const printed = await runCli({ baseUrl: stack.baseUrl, key: team.key }, [
      'usage',
      '--from',
      today,
      '--to',
      today,
      '--group-by',
      'tag',
    ]);
    expect(printed.code, printed.stderr).toBe(0);
    expect(printed.stdout.split('\n').map((line) => line.split(/\s+/).filter(Boolean))).toEqual([
      [today, 'to', today, 'by', 'tag'],
      ['group', 'runs', 'steps', 'charged', 'refunded'],
      ['order-1', '1', '0', '0.00', '2.03'],
      ['total', '0.00', '2.03'],
      [],
    ]);
    const file = join(await mkdtemp(join(tmpdir(), 'usage-')), 'usage.csv');
    const written = await runCli({ baseUrl: stack.baseUrl, key: team.key }, [
      'usage',
      '--from',
      today,
      '--to',
      today,
      '--group-by',
      'tag',
      '--csv',
      file,
    ]);
    expect(written.code, written.stderr).toBe(0);
    expect(await readFile(file, 'utf8')).toBe(csv);

    // The default grouping is by day; a period without runs answers none.
    const before = await usage(team.key, 'from=2026-01-01&to=2026-01-31');
    expect(before.body).toEqual({
      from: '2026-01-01',
      to: '2026-01-31',
      groupBy: 'day',
      rows: [],
      chargedCredits: 0,
      refundedCredits: 0,
    });
  });

  it('answers 400 naming the parameter for a bad query, and 403 to a key without usage:read or limited to workflows', async () => {
    const team = await seedUnthrottledTeam(stack.deps, 10);
    const cases: [string, string][] = [
      ['to=2026-01-01', 'Invalid query: from is required (a UTC date, yyyy-mm-dd)'],
      ['from=2026-01-01', 'Invalid query: to is required (a UTC date, yyyy-mm-dd)'],
      ['from=2026-02-30&to=2026-03-01', 'Invalid query: from must be a UTC date, yyyy-mm-dd'],
      ['from=2026-03-02&to=2026-03-01', 'Invalid query: from must not be after to'],
      ['from=2025-01-01&to=2026-01-02', 'Invalid query: the period is at most 366 days, both ends included'],
      [
        'from=2026-01-01&to=2026-01-02&groupBy=customer',
        'Invalid query: groupBy must be one of day, workflow, key, tag, model, project',
      ],
      ['from=2026-01-01&to=2026-01-02&format=xml', 'Invalid query: format must be one of json, csv'],
      ['from=2026-01-01&to=2026-01-02&tag=a', 'Invalid query: unknown parameter tag (takes from, to, groupBy, format)'],
    ];
    for (const [query, error] of cases) {
      const answer = await usage(team.key, query);
      expect([answer.status, answer.body], query).toEqual([400, { error }]);
    }
    // A leap year's whole 366 days is a period.
    expect((await usage(team.key, 'from=2024-01-01&to=2024-12-31')).status).toBe(200);

    const noScope = await addKey(stack.deps, team.teamId, { scopes: ['credits:read'] });
    const refused = await usage(noScope.key, 'from=2026-01-01&to=2026-01-02');
    expect([refused.status, refused.body]).toEqual([403, { error: 'Scope not permitted for this key' }]);
    const workflowId = await createWorkflow(stack, team);
    const limited = await addKey(stack.deps, team.teamId, { workflowIds: [workflowId] });
    const partial = await usage(limited.key, 'from=2026-01-01&to=2026-01-02');
    expect([partial.status, partial.body]).toEqual([
      403,
      { error: 'This key is limited to certain workflows; usage covers the whole team' },
    ]);
    const scoped = await addKey(stack.deps, team.teamId, { scopes: ['usage:read'] });
    expect((await usage(scoped.key, 'from=2026-01-01&to=2026-01-02')).status).toBe(200);
  });

  it('reads at most its bound of rollups a period (20,000 on the route): cells for every grouping, cells and model items for model; past it a 400', async () => {
    const team = await seedUnthrottledTeam(stack.deps, 100);
    // The route's bound is `maxUsageItems`; the read is the same code with a small one (writing
    // 20,000 items would take minutes of the suite): `bound` cells as settlements over a year leave them.
    const bound = 40;
    expect(maxUsageItems).toBe(20_000);
    const ttl = Math.floor(Date.now() / 1000) + 86_400;
    const day = (i: number) => new Date(Date.UTC(2025, 0, 1 + ((i * 9) % 365))).toISOString().slice(0, 10);
    const cell = (i: number) => ({
      ...usageKey(team.teamId, 'cell', day(i), `c${i}`),
      v: itemVersion,
      ttl,
      workflowId: 'wf',
      keyId: 'key',
      tag: `t${i % 3}`,
      projectId: 'project',
      runs: 1,
      steps: 2,
      chargedHundredths: 1,
      refundedHundredths: 0,
      nullRuns: 1,
      nullSteps: 2,
      nullChargedHundredths: 1,
    });
    const put = (items: Record<string, unknown>[]) =>
      stack.deps.ddb.send(
        new BatchWriteCommand({
          RequestItems: { [stack.deps.tableName]: items.map((Item) => ({ PutRequest: { Item } })) },
        }),
      );
    for (let b = 0; b < bound; b += 20) await put(Array.from({ length: 20 }, (_, i) => cell(b + i)));
    const read = (groupBy: (typeof groupings)[number], from = '2025-01-01', to = '2025-12-31') =>
      readUsageItems(stack.deps, team.teamId, groupBy, from, to, bound).then(sumUsage);
    const byTag = await read('tag');
    expect(byTag.map((row) => row.group)).toEqual(['t0', 't1', 't2']);
    expect(byTag.reduce((sum, row) => sum + row.chargedHundredths, 0)).toBe(bound);
    expect(await read('model')).toEqual([
      { group: '', runs: bound, steps: 2 * bound, chargedHundredths: bound, refundedHundredths: 0 },
    ]);
    // One model item more: the model grouping reads it and every cell, past the bound; the others do not.
    await put([
      {
        ...usageKey(team.teamId, 'model', '2025-06-01', 'sandbox/text'),
        v: itemVersion,
        ttl,
        model: 'sandbox/text',
        runs: 1,
        steps: 1,
        chargedHundredths: 5,
      },
    ]);
    await expect(read('model')).rejects.toThrow(`more than ${bound} usage rollups`);
    await expect(read('day')).resolves.toHaveLength(new Set(Array.from({ length: bound }, (_, i) => day(i))).size);
    // One cell more: every grouping is past it; a shorter period is not.
    await put([cell(bound)]);
    for (const groupBy of groupings) await expect(read(groupBy), groupBy).rejects.toThrow(InvalidQueryError);
    await expect(read('project', '2025-01-01', '2025-06-30')).resolves.toHaveLength(1);
  });
});
