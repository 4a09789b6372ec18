import type { RunMode } from '../../schemas/runs.ts';
import { getNodeSpec } from '../nodes/catalogue/index.ts';
import type { Canvas } from './workflow-graph.ts';

/**
 * What a run is expected to cost, step by step, in hundredths of a credit. `preview` is priced as
 * `production`; `draft` uses the catalogue's draft price (equal for models priced per run). A
 * deferred run is priced at the multiplier in force when it starts; charges round up to whole
 * hundredths so the hold always covers them.
 */
export interface RunEstimate {
  steps: { nodeId: string; type: string; hundredths: number }[];
  totalHundredths: number;
}

/** Multipliers carry at most 4 decimals, so integer arithmetic on ten-thousandths is exact. */
export const applyMultiplier = (hundredths: number, multiplier: number): number =>
  Math.ceil((hundredths * Math.round(multiplier * 10_000)) / 10_000);

export const estimateRun = (canvas: Canvas, mode: RunMode, multiplier = 1): RunEstimate => {
  const steps = canvas.nodes.map((node) => {
    const spec = getNodeSpec(node.type);
    if (!spec) throw new Error(`No catalogue entry for ${node.type}`);
    const base = mode === 'draft' ? spec.price.draft : spec.price.production;
    return { nodeId: node.id, type: node.type, hundredths: applyMultiplier(base, multiplier) };
  });
  return { steps, totalHundredths: steps.reduce((sum, s) => sum + s.hundredths, 0) };
};

/** The calendar month (UTC) a key's spend is counted in, e.g. `2026-11`. */
export const spendMonth = (now: Date): string => now.toISOString().slice(0, 7);

/** The first instant (UTC) of the month after `now`'s: when a key's month spend starts again from 0. */
export const nextSpendMonthStart = (now: Date): Date =>
  new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
