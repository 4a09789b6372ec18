/**
 * Usage export (GET /usage, our design): the rules of the rollups a run's settlement writes and of
 * the query that reads them. Pure: no I/O.
 *
 * A run's money reaches the team once, when the run is settled (its end, or later when a model step
 * was in flight: functions/store/run/ledger.ts). That settlement's own transaction adds the run to
 * one "cell" (`settlementUsage`): the team's counts for one UTC day and one combination of workflow,
 * key, first tag and project. Every grouping but `model` is a sum of the cells by one of those values
 * (or the day), so each puts every charged hundredth in exactly one row:
 * - `day`, `workflow`, `key`, `project`: the run's own value.
 * - `tag`: the run's first tag (as its start gave them), `null` for a run without tags. A run with
 *   several tags is not counted under each: the rows would then sum to more than the bill.
 * - `model`: each charged model step's charge under its provider and model (`provider/model`, one
 *   more rollup per model that charged), the rest of the run's charge (steps that are no model's, a
 *   failed step's provider job) under `null`, with its release; the `null` row's counts are kept in
 *   the cell (`nullRuns`, `nullSteps`, `nullChargedHundredths`). A run counts once in each row it
 *   charged in.
 */
import { InvalidQueryError } from '../errors/table.ts';

export const usageDimensions = ['day', 'workflow', 'key', 'tag', 'model', 'project'] as const;
export type UsageDimension = (typeof usageDimensions)[number];
export const usageFormats = ['json', 'csv'] as const;
export type UsageFormat = (typeof usageFormats)[number];

/** The longest period one read covers, in days, both ends included. */
export const maxUsageDays = 366;
/**
 * The most rollup items one read may take (one per day and combination of workflow, key, first tag and
 * project with a settled run in the period; for `model`, those and one per day and charged model):
 * past it the read is refused before answering a part, since a part would not sum to the bill.
 */
export const maxUsageItems = 20_000;
/**
 * The most model rows one run adds to: with its cell and the settlement's own items (at most 5), far
 * inside a transaction's 100 items. A run with more models puts the rest under `null`.
 */
export const maxModelRowsPerRun = 20;

/** One row's counts, in hundredths. */
export interface UsageCounts {
  runs: number;
  steps: number;
  chargedHundredths: number;
  refundedHundredths: number;
}

/** The groupings a cell holds the value of; `model` is read from the model rollups and the cells. */
export type CellDimension = Exclude<UsageDimension, 'model'>;

/**
 * A team's counts for one UTC day and one combination (workflow, key, first tag or '' for none,
 * project), and the part of them the `model` grouping's `null` row holds.
 */
export interface UsageCell extends UsageCounts {
  workflowId: string;
  keyId: string;
  tag: string;
  projectId: string;
  /** Runs that add to the `null` model row (a charge no model took, a release, or no model charged). */
  nullRuns: number;
  /** Their steps that no charged model took. */
  nullSteps: number;
  /** Their charge no model took. */
  nullChargedHundredths: number;
}

/** What one run adds to one model's rollup of the day (a model that charged). */
export interface UsageModelRollup {
  model: string;
  runs: number;
  steps: number;
  chargedHundredths: number;
}

/** A charged model step's entry in its run's `modelCharges` set (one per step: a set member is unique). */
export const modelChargeEntry = (nodeId: string, model: { provider: string; model: string }, charge: number) =>
  JSON.stringify([nodeId, `${model.provider}/${model.model}`, charge]);

const parseModelCharge = (entry: string): { model: string; charge: number } | undefined => {
  const parsed: unknown = JSON.parse(entry);
  if (!Array.isArray(parsed) || typeof parsed[1] !== 'string' || typeof parsed[2] !== 'number') return undefined;
  return { model: parsed[1], charge: parsed[2] };
};

/** What a run's settlement knows of it. */
export interface SettledRun {
  workflowId: string;
  keyId: string;
  projectId: string;
  tags?: readonly string[] | undefined;
  /** Its steps counted in all (completed and skipped) by the settlement's end. */
  steps: number;
  chargedHundredths: number;
  /** What its start held beyond its charge, given back to the balance at its settlement. */
  refundedHundredths: number;
  /** Its charged model steps' entries (`modelChargeEntry`). */
  modelCharges: Iterable<string>;
}

/**
 * What one run's settlement adds: to its cell, and to one rollup per model that charged (at most
 * `maxModelRowsPerRun`, the rest under `null`). The models' charges and the cell's `null` part sum
 * to the run's charge.
 */
export const settlementUsage = (run: SettledRun): { cell: UsageCell; models: UsageModelRollup[] } => {
  const byModel = new Map<string, { steps: number; charged: number }>();
  for (const entry of run.modelCharges) {
    const charge = parseModelCharge(entry);
    if (!charge) continue;
    const row = byModel.get(charge.model) ?? { steps: 0, charged: 0 };
    byModel.set(charge.model, { steps: row.steps + 1, charged: row.charged + charge.charge });
  }
  const models = [...byModel.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .slice(0, maxModelRowsPerRun)
    .filter(([, row]) => row.charged > 0)
    .map(([model, row]) => ({ model, runs: 1, steps: row.steps, chargedHundredths: row.charged }));
  const attributed = models.reduce((sum, row) => sum + row.chargedHundredths, 0);
  const modelSteps = models.reduce((sum, row) => sum + row.steps, 0);
  // Never more than the run charged: a step's entry is written only with its charge (same update).
  const rest = Math.max(0, run.chargedHundredths - attributed);
  const inNull = rest > 0 || run.refundedHundredths > 0 || models.length === 0;
  return {
    cell: {
      workflowId: run.workflowId,
      keyId: run.keyId,
      tag: run.tags?.[0] ?? '',
      projectId: run.projectId,
      runs: 1,
      steps: run.steps,
      chargedHundredths: run.chargedHundredths,
      refundedHundredths: run.refundedHundredths,
      nullRuns: inNull ? 1 : 0,
      nullSteps: inNull ? Math.max(0, run.steps - modelSteps) : 0,
      nullChargedHundredths: rest,
    },
    models,
  };
};

const countsOf = (counts: UsageCounts): UsageCounts => ({
  runs: counts.runs,
  steps: counts.steps,
  chargedHundredths: counts.chargedHundredths,
  refundedHundredths: counts.refundedHundredths,
});

/** A cell of `day` as a row of a grouping other than `model`: its value of that grouping, its counts. */
export const cellRow = (groupBy: CellDimension, day: string, cell: UsageCell): UsageRow => {
  const group = {
    day,
    workflow: cell.workflowId,
    key: cell.keyId,
    tag: cell.tag,
    project: cell.projectId,
  }[groupBy];
  return { group, ...countsOf(cell) };
};

/** A cell's part of the `model` grouping's `null` row; none when no run of it added to that row. */
export const cellNullModelRow = (cell: UsageCell): UsageRow | undefined =>
  cell.nullRuns > 0
    ? {
        group: '',
        runs: cell.nullRuns,
        steps: cell.nullSteps,
        chargedHundredths: cell.nullChargedHundredths,
        refundedHundredths: cell.refundedHundredths,
      }
    : undefined;

/** A model rollup of the day as a row of the `model` grouping. */
export const modelRow = (rollup: UsageModelRollup): UsageRow => ({
  group: rollup.model,
  runs: rollup.runs,
  steps: rollup.steps,
  chargedHundredths: rollup.chargedHundredths,
  refundedHundredths: 0,
});

/** The UTC day of an instant, `yyyy-mm-dd`: the day a settlement counts under. */
export const usageDay = (at: Date): string => at.toISOString().slice(0, 10);

/** A read's question, checked. */
export interface UsageQuery {
  from: string;
  to: string;
  groupBy: UsageDimension;
  format: UsageFormat;
}

const dayPattern = /^\d{4}-\d{2}-\d{2}$/;
const dayNumber = (day: string) => Date.parse(`${day}T00:00:00Z`) / 86_400_000;

const readDay = (name: string, value: string | undefined): string => {
  if (value === undefined || value === '') throw new InvalidQueryError(`${name} is required (a UTC date, yyyy-mm-dd)`);
  if (!dayPattern.test(value) || usageDay(new Date(`${value}T00:00:00Z`)) !== value) {
    throw new InvalidQueryError(`${name} must be a UTC date, yyyy-mm-dd`);
  }
  return value;
};

const oneOf = <T extends string>(name: string, value: string | undefined, allowed: readonly T[], fallback?: T): T => {
  if ((value === undefined || value === '') && fallback !== undefined) return fallback;
  if (value !== undefined && (allowed as readonly string[]).includes(value)) return value as T;
  throw new InvalidQueryError(`${name} must be one of ${allowed.join(', ')}`);
};

/**
 * The query string of GET /usage: `from` and `to` UTC dates (both included, `from` ≤ `to`, at most
 * `maxUsageDays` days), `groupBy` one of the groupings (default `day`), `format` json or csv
 * (default json). Any other parameter is refused, as a typo would silently widen the answer.
 */
export const parseUsageQuery = (query: Record<string, string | undefined>): UsageQuery => {
  const allowed = ['from', 'to', 'groupBy', 'format'];
  const unknown = Object.keys(query).find((name) => !allowed.includes(name));
  if (unknown !== undefined) throw new InvalidQueryError(`unknown parameter ${unknown} (takes ${allowed.join(', ')})`);
  const from = readDay('from', query.from);
  const to = readDay('to', query.to);
  const days = dayNumber(to) - dayNumber(from) + 1;
  if (days < 1) throw new InvalidQueryError('from must not be after to');
  if (days > maxUsageDays)
    throw new InvalidQueryError(`the period is at most ${maxUsageDays} days, both ends included`);
  return {
    from,
    to,
    groupBy: oneOf('groupBy', query.groupBy, usageDimensions, 'day'),
    format: oneOf('format', query.format, usageFormats, 'json'),
  };
};

/** A row of the answer: a group's sums over the period, in hundredths; `group` '' is none. */
export interface UsageRow extends UsageCounts {
  group: string;
}

/** The rollup items of a period, by day and group, summed per group, in the groups' order. */
export const sumUsage = (items: readonly UsageRow[]): UsageRow[] => {
  const byGroup = new Map<string, UsageRow>();
  for (const item of items) {
    const row = byGroup.get(item.group) ?? {
      group: item.group,
      runs: 0,
      steps: 0,
      chargedHundredths: 0,
      refundedHundredths: 0,
    };
    row.runs += item.runs;
    row.steps += item.steps;
    row.chargedHundredths += item.chargedHundredths;
    row.refundedHundredths += item.refundedHundredths;
    byGroup.set(item.group, row);
  }
  return [...byGroup.values()].sort((a, b) => (a.group < b.group ? -1 : a.group > b.group ? 1 : 0));
};

/** A CSV field, quoted when it must be (RFC 4180); a leading formula character is neutralised for spreadsheets. */
const csvField = (value: string | number): string => {
  const text = typeof value === 'number' ? String(value) : /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
};

/** Hundredths as the credits the API shows, two decimals in CSV (exact: an integer of hundredths). */
const csvCredits = (hundredths: number) => {
  const sign = hundredths < 0 ? '-' : '';
  const abs = Math.abs(hundredths);
  return `${sign}${Math.floor(abs / 100)}.${String(abs % 100).padStart(2, '0')}`;
};

/** The rows as CSV: a header line, then one line per row; no group is an empty field. */
export const usageCsv = (rows: readonly UsageRow[]): string =>
  [
    'group,runs,steps,chargedCredits,refundedCredits',
    ...rows.map((row) =>
      [
        csvField(row.group),
        row.runs,
        row.steps,
        csvCredits(row.chargedHundredths),
        csvCredits(row.refundedHundredths),
      ].join(','),
    ),
    '',
  ].join('\r\n');

/** How long a rollup is kept after its day: a whole period of `maxUsageDays` ago stays readable, with a margin. */
export const usageKeptDays = 400;
