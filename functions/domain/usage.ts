/**
 * Usage export (GET /usage, our design): the rules of the rollups a run's settlement writes and of
 * the query that reads them. Pure: no I/O.
 *
 * A run's money reaches the team once, when the run is settled (its end, or later when a model step
 * was in flight: functions/store/run/ledger.ts). That settlement's own transaction adds the run to
 * one rollup row per grouping (`usageRollups`), under the UTC day it settled, so the rows of any
 * grouping over a period sum exactly to what the team was charged in it. Each grouping puts every
 * charged hundredth in exactly one row:
 * - `day`, `workflow`, `key`, `project`: the run's own value, one row.
 * - `tag`: the run's first tag (as its start gave them), `null` for a run without tags. A run with
 *   several tags is not counted under each: the rows would then sum to more than the bill.
 * - `model`: each charged model step's charge under its provider and model (`provider/model`), the
 *   rest of the run's charge (steps that are no model's, a failed step's provider job) under `null`,
 *   with its release; a run counts once in each row it charged in.
 */
import { InvalidQueryError } from '../errors/table.ts';

export const usageDimensions = ['day', 'workflow', 'key', 'tag', 'model', 'project'] as const;
export type UsageDimension = (typeof usageDimensions)[number];
export const usageFormats = ['json', 'csv'] as const;
export type UsageFormat = (typeof usageFormats)[number];

/** The longest period one read covers, in days, both ends included. */
export const maxUsageDays = 366;
/**
 * The most rollup items one read may take (one per day and group with a settled run in the period):
 * past it the read is refused before answering a part, since a part would not sum to the bill.
 */
export const maxUsageItems = 20_000;
/**
 * The most model rows one run adds to: with its other rows and the settlement's own items (at most
 * 5), far inside a transaction's 100 items. A run with more models puts the rest under `null`.
 */
export const maxModelRowsPerRun = 20;

/** One row's counts, in hundredths. */
export interface UsageCounts {
  runs: number;
  steps: number;
  chargedHundredths: number;
  refundedHundredths: number;
}

/** What one run adds to one row of one grouping; `group` '' is the row of no value (`null`). */
export interface UsageRollup extends UsageCounts {
  dimension: UsageDimension;
  group: string;
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

/** The rows of the `model` grouping one run adds to; their charges sum to the run's. */
const modelRollups = (run: SettledRun): UsageRollup[] => {
  const byModel = new Map<string, { steps: number; charged: number }>();
  for (const entry of run.modelCharges) {
    const charge = parseModelCharge(entry);
    if (!charge) continue;
    const row = byModel.get(charge.model) ?? { steps: 0, charged: 0 };
    byModel.set(charge.model, { steps: row.steps + 1, charged: row.charged + charge.charge });
  }
  const kept = [...byModel.entries()].sort(([a], [b]) => a.localeCompare(b)).slice(0, maxModelRowsPerRun);
  const rows = kept
    .filter(([, row]) => row.charged > 0)
    .map(([model, row]) => ({
      dimension: 'model' as const,
      group: model,
      runs: 1,
      steps: row.steps,
      chargedHundredths: row.charged,
      refundedHundredths: 0,
    }));
  const attributed = rows.reduce((sum, row) => sum + row.chargedHundredths, 0);
  const modelSteps = rows.reduce((sum, row) => sum + row.steps, 0);
  // Never more than the run charged: a step's entry is written only with its charge (same update).
  const rest = Math.max(0, run.chargedHundredths - attributed);
  if (rest > 0 || run.refundedHundredths > 0 || rows.length === 0) {
    rows.push({
      dimension: 'model',
      group: '',
      runs: 1,
      steps: Math.max(0, run.steps - modelSteps),
      chargedHundredths: rest,
      refundedHundredths: run.refundedHundredths,
    });
  }
  return rows;
};

/** Every row one run's settlement adds to: one per grouping, the model's one or more. */
export const usageRollups = (run: SettledRun, day: string): UsageRollup[] => {
  const counts = {
    runs: 1,
    steps: run.steps,
    chargedHundredths: run.chargedHundredths,
    refundedHundredths: run.refundedHundredths,
  };
  const one = (dimension: UsageDimension, group: string): UsageRollup => ({ dimension, group, ...counts });
  return [
    one('day', day),
    one('workflow', run.workflowId),
    one('key', run.keyId),
    one('project', run.projectId),
    one('tag', run.tags?.[0] ?? ''),
    ...modelRollups(run),
  ];
};

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
