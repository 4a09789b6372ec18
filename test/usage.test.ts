/**
 * The usage export's pure rules (functions/domain/usage.ts): what one run's settlement adds to its
 * cell and its models' rollups, and the rows of each grouping read from them (every hundredth of its
 * charge in exactly one row), the query's checks, and the CSV.
 */
import { describe, expect, it } from 'vitest';
import {
  cellNullModelRow,
  cellRow,
  maxModelRowsPerRun,
  modelChargeEntry,
  modelRow,
  parseUsageQuery,
  type SettledRun,
  settlementUsage,
  sumUsage,
  type UsageRow,
  usageCsv,
  usageDimensions,
} from '../functions/domain/usage.ts';

const run = (overrides: Partial<SettledRun> = {}): SettledRun => ({
  workflowId: 'wf',
  keyId: 'key',
  projectId: 'project',
  tags: ['customer-1', 'nightly'],
  steps: 4,
  chargedHundredths: 203,
  refundedHundredths: 7,
  modelCharges: [modelChargeEntry('llm', { provider: 'sandbox', model: 'text' }, 200)],
  ...overrides,
});

/** Each grouping's rows as a read makes them from what the runs' settlements added on `day`. */
const byDimension = (runs: readonly SettledRun[], day = '2026-12-07') => {
  const added = runs.map(settlementUsage);
  return Object.fromEntries(
    usageDimensions.map((d): [string, UsageRow[]] => [
      d,
      sumUsage(
        d === 'model'
          ? [
              ...added.flatMap(({ models }) => models.map(modelRow)),
              ...added.flatMap(({ cell }) => cellNullModelRow(cell) ?? []),
            ]
          : added.map(({ cell }) => cellRow(d, day, cell)),
      ),
    ]),
  );
};

describe('settlementUsage', () => {
  it('adds one cell and one rollup per charged model; every grouping puts the whole charge and release in its rows, under the first tag', () => {
    const added = settlementUsage(run());
    expect(added).toEqual({
      cell: {
        workflowId: 'wf',
        keyId: 'key',
        tag: 'customer-1',
        projectId: 'project',
        runs: 1,
        steps: 4,
        chargedHundredths: 203,
        refundedHundredths: 7,
        nullRuns: 1,
        nullSteps: 3,
        nullChargedHundredths: 3,
      },
      models: [{ model: 'sandbox/text', runs: 1, steps: 1, chargedHundredths: 200 }],
    });
    const rows = byDimension([run()]);
    for (const dimension of usageDimensions) {
      const sum = rows[dimension]?.reduce((total, row) => total + row.chargedHundredths, 0);
      expect(sum, dimension).toBe(203);
      expect(
        rows[dimension]?.reduce((total, row) => total + row.refundedHundredths, 0),
        dimension,
      ).toBe(7);
    }
    expect(rows.day?.map((row) => row.group)).toEqual(['2026-12-07']);
    expect(rows.tag).toEqual([
      { group: 'customer-1', runs: 1, steps: 4, chargedHundredths: 203, refundedHundredths: 7 },
    ]);
    expect(rows.model).toEqual([
      { group: '', runs: 1, steps: 3, chargedHundredths: 3, refundedHundredths: 7 },
      { group: 'sandbox/text', runs: 1, steps: 1, chargedHundredths: 200, refundedHundredths: 0 },
    ]);
  });

  it('counts a run without tags under no tag, a run charged only by models in no null model row, a run without models in it', () => {
    const onlyModels = run({ tags: undefined, chargedHundredths: 200, refundedHundredths: 0, steps: 1 });
    const rows = byDimension([onlyModels]);
    expect(rows.tag?.map((row) => row.group)).toEqual(['']);
    expect(rows.model?.map((row) => row.group)).toEqual(['sandbox/text']);
    expect(settlementUsage(onlyModels).cell).toMatchObject({ nullRuns: 0, nullSteps: 0, nullChargedHundredths: 0 });
    // A plain run: its cell alone, the whole of it in the null model row (even charged nothing).
    const plain = run({ modelCharges: [], chargedHundredths: 0, refundedHundredths: 0, steps: 2 });
    expect(settlementUsage(plain).models).toEqual([]);
    expect(byDimension([plain]).model).toEqual([
      { group: '', runs: 1, steps: 2, chargedHundredths: 0, refundedHundredths: 0 },
    ]);
    // Both in one cell: the null row counts only the run that added to it.
    expect(byDimension([onlyModels, { ...plain, tags: undefined }]).model).toEqual([
      { group: '', runs: 1, steps: 2, chargedHundredths: 0, refundedHundredths: 0 },
      { group: 'sandbox/text', runs: 1, steps: 1, chargedHundredths: 200, refundedHundredths: 0 },
    ]);
  });

  it('sums a model’s steps; past the most model rows a run adds, the rest goes under null, still exact', () => {
    const many = Array.from({ length: maxModelRowsPerRun + 5 }, (_, i) =>
      modelChargeEntry(`n${i}`, { provider: 'p', model: `m${String(i).padStart(2, '0')}` }, 10),
    );
    const twice = [...many, modelChargeEntry('again', { provider: 'p', model: 'm00' }, 5)];
    const charged = 10 * many.length + 5;
    const settled = run({ modelCharges: twice, chargedHundredths: charged, steps: twice.length });
    expect(settlementUsage(settled).models).toHaveLength(maxModelRowsPerRun);
    const model = byDimension([settled]).model ?? [];
    expect(model).toHaveLength(maxModelRowsPerRun + 1);
    expect(model[0]).toMatchObject({ group: '', steps: 5, chargedHundredths: 50 });
    expect(model[1]).toMatchObject({ group: 'p/m00', steps: 2, chargedHundredths: 15 });
    expect(model.reduce((total, row) => total + row.chargedHundredths, 0)).toBe(charged);
  });

  it('sums many runs of several cells to their charges in every grouping', () => {
    const runs = Array.from({ length: 30 }, (_, n) =>
      run({
        workflowId: `wf${n % 3}`,
        keyId: `key${n % 2}`,
        tags: n % 5 === 0 ? [] : [`t${n % 4}`],
        steps: 2 + (n % 3),
        chargedHundredths: n % 7 === 0 ? 150 : 151 + n,
        refundedHundredths: n % 4,
        modelCharges: n % 6 === 0 ? [] : [modelChargeEntry('llm', { provider: 'p', model: `m${n % 2}` }, 150)],
      }),
    );
    const charged = runs.reduce((sum, r) => sum + r.chargedHundredths, 0);
    const refunded = runs.reduce((sum, r) => sum + r.refundedHundredths, 0);
    const rows = byDimension(runs);
    for (const dimension of usageDimensions) {
      const of = (pick: (row: UsageRow) => number) => rows[dimension]?.reduce((sum, row) => sum + pick(row), 0);
      expect(
        of((row) => row.chargedHundredths),
        dimension,
      ).toBe(charged);
      expect(
        of((row) => row.refundedHundredths),
        dimension,
      ).toBe(refunded);
      if (dimension !== 'model')
        expect(
          of((row) => row.runs),
          dimension,
        ).toBe(runs.length);
    }
  });
});

describe('parseUsageQuery', () => {
  it('takes a period of UTC days, at most 366 with both ends, and defaults to json by day', () => {
    expect(parseUsageQuery({ from: '2024-01-01', to: '2024-12-31' })).toEqual({
      from: '2024-01-01',
      to: '2024-12-31',
      groupBy: 'day',
      format: 'json',
    });
    expect(parseUsageQuery({ from: '2026-12-07', to: '2026-12-07', groupBy: 'model', format: 'csv' })).toMatchObject({
      groupBy: 'model',
      format: 'csv',
    });
  });

  it.each([
    [{ to: '2026-01-01' }, 'from is required'],
    [{ from: '2026-01-01', to: '2026-1-2' }, 'to must be a UTC date'],
    [{ from: '2026-02-29', to: '2026-03-01' }, 'from must be a UTC date'],
    [{ from: '2026-01-02', to: '2026-01-01' }, 'from must not be after to'],
    [{ from: '2025-01-01', to: '2026-01-02' }, 'at most 366 days'],
    [{ from: '2026-01-01', to: '2026-01-01', groupBy: 'customer' }, 'groupBy must be one of'],
    [{ from: '2026-01-01', to: '2026-01-01', format: 'xlsx' }, 'format must be one of'],
    [{ from: '2026-01-01', to: '2026-01-01', limit: '5' }, 'unknown parameter limit'],
  ])('refuses %j (%s)', (query, detail) => {
    expect(() => parseUsageQuery(query)).toThrow(detail);
  });
});

describe('sumUsage and usageCsv', () => {
  it('sums each group over the days, in group order; the CSV has exact credits and quotes what it must', () => {
    const counts = { runs: 1, steps: 2, chargedHundredths: 105, refundedHundredths: 0 };
    const rows = sumUsage([
      { group: 'b', ...counts },
      { group: '', ...counts },
      { group: 'b', ...counts, chargedHundredths: 1 },
      { group: '=cmd,"x"', ...counts },
    ]);
    expect(rows.map((row) => [row.group, row.runs, row.chargedHundredths])).toEqual([
      ['', 1, 105],
      ['=cmd,"x"', 1, 105],
      ['b', 2, 106],
    ]);
    expect(usageCsv(rows)).toBe(
      'group,runs,steps,chargedCredits,refundedCredits\r\n' +
        ',1,2,1.05,0.00\r\n' +
        `"'=cmd,""x""",1,2,1.05,0.00\r\n` +
        'b,2,4,1.06,0.00\r\n',
    );
  });
});
