/** Latency arithmetic and the target bookkeeping every section of the bench shares. */

/** Nearest-rank percentile (p in 0..100) of unsorted values; NaN when there are none. */
const percentile = (values: readonly number[], p: number): number => {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1] ?? Number.NaN;
};

export const median = (values: readonly number[]): number => percentile(values, 50);

export interface LatencySummary {
  count: number;
  /** Completed operations per second over the measured wall time. */
  rps: number;
  p50: number;
  p99: number;
}

export const summarize = (latenciesMs: readonly number[], elapsedMs: number): LatencySummary => ({
  count: latenciesMs.length,
  rps: elapsedMs > 0 ? (latenciesMs.length * 1000) / elapsedMs : 0,
  p50: percentile(latenciesMs, 50),
  p99: percentile(latenciesMs, 99),
});

export const ms = (value: number) => `${value.toFixed(2)} ms`;
export const perSecond = (value: number) => `${value.toFixed(0)} req/s`;
export const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`;
export const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

export interface TargetResult {
  name: string;
  /** The figure as printed, e.g. "3.10 ms". */
  shown: string;
  /** The target as printed, e.g. "≤ 250 KB". */
  target: string;
  met: boolean;
}

/** Collects every figure that has a target, so the run can end with a table and a MISSED list. */
export class Targets {
  readonly results: TargetResult[] = [];

  /** Records `value` against `limit` and returns the line to print beside the figure. */
  check(name: string, value: number, op: '<=' | '<' | '==', limit: number, format: (v: number) => string): string {
    const met = Number.isFinite(value) && (op === '<=' ? value <= limit : op === '<' ? value < limit : value === limit);
    const target = `${op === '<=' ? '≤' : op === '<' ? '<' : '='} ${format(limit)}`;
    const result = { name, shown: format(value), target, met };
    this.results.push(result);
    return `${result.shown.padStart(12)}   target ${target.padEnd(12)} ${met ? 'ok' : 'MISSED'}`;
  }

  get missed(): TargetResult[] {
    return this.results.filter((r) => !r.met);
  }
}
