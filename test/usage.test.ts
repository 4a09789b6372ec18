/**
 * The usage export's pure rules (functions/domain/usage.ts): what one run's settlement adds to each
 * grouping (every hundredth of its charge in exactly one row), the query's checks, and the CSV.
 */
import { describe, expect, it } from 'vitest';
import {
  maxModelRowsPerRun,
  modelChargeEntry,
  parseUsageQuery,
  type SettledRun,
  sumUsage,
  usageCsv,
  usageDimensions,
  usageRollups,
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

const byDimension = (rows: ReturnType<typeof usageRollups>) =>
  Object.fromEntries(usageDimensions.map((d) => [d, rows.filter((row) => row.dimension === d)]));

describe('usageRollups', () => {
  it('puts the run’s whole charge and release in one row of each grouping, under its first tag', () => {
    const rows = byDimension(usageRollups(run(), '2026-12-07'));
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
      { dimension: 'tag', group: 'customer-1', runs: 1, steps: 4, chargedHundredths: 203, refundedHundredths: 7 },
    ]);
    expect(rows.model).toEqual([
      { dimension: 'model', group: 'sandbox/text', runs: 1, steps: 1, chargedHundredths: 200, refundedHundredths: 0 },
      { dimension: 'model', group: '', runs: 1, steps: 3, chargedHundredths: 3, refundedHundredths: 7 },
    ]);
  });

  it('counts a run without tags under no tag, and a run charged only by models with no null model row', () => {
    const rows = byDimension(
      usageRollups(run({ tags: undefined, chargedHundredths: 200, refundedHundredths: 0, steps: 1 }), '2026-12-07'),
    );
    expect(rows.tag?.map((row) => row.group)).toEqual(['']);
    expect(rows.model?.map((row) => row.group)).toEqual(['sandbox/text']);
  });

  it('sums a model’s steps; past the most model rows a run adds, the rest goes under null, still exact', () => {
    const many = Array.from({ length: maxModelRowsPerRun + 5 }, (_, i) =>
      modelChargeEntry(`n${i}`, { provider: 'p', model: `m${String(i).padStart(2, '0')}` }, 10),
    );
    const twice = [...many, modelChargeEntry('again', { provider: 'p', model: 'm00' }, 5)];
    const charged = 10 * many.length + 5;
    const rows = usageRollups(run({ modelCharges: twice, chargedHundredths: charged, steps: twice.length }), 'd');
    const model = rows.filter((row) => row.dimension === 'model');
    expect(model).toHaveLength(maxModelRowsPerRun + 1);
    expect(model[0]).toMatchObject({ group: 'p/m00', steps: 2, chargedHundredths: 15 });
    expect(model.at(-1)).toMatchObject({ group: '', steps: 5, chargedHundredths: 50 });
    expect(model.reduce((total, row) => total + row.chargedHundredths, 0)).toBe(charged);
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
