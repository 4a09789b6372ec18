/**
 * What a run costs, in hundredths of a credit. A run is estimated step by step when it starts, at
 * the prices of its mode (functions/domain/run-modes.ts) times the price multiplier in force
 * (1 for a run started at once; for a deferred run the multiplier it starts at, see
 * functions/domain/price-multiplier.ts), each charge rounded up to whole hundredths so the hold
 * always covers it. The whole estimate is held from the team balance at the start; each step is
 * charged its own estimate when it completes (`stepCharge`), a skipped or failed step nothing;
 * what was not charged is released when the run ends.
 */

import { getNodeSpec } from '../nodes/catalogue/index.ts';
import { priceInMode, type RunMode } from './run-modes.ts';
import type { Canvas } from './workflow-graph.ts';

/** A run's estimate: each step's charge and their sum. */
export interface RunEstimate {
  steps: { nodeId: string; type: string; hundredths: number }[];
  totalHundredths: number;
}

/** A price times a multiplier, rounded up; multipliers carry at most 4 decimals, so integer arithmetic on ten-thousandths is exact. */
export const applyMultiplier = (hundredths: number, multiplier: number): number =>
  Math.ceil((hundredths * Math.round(multiplier * 10_000)) / 10_000);

/** The estimate of a run of `canvas` in `mode` at `multiplier`. */
export const estimateRun = (canvas: Canvas, mode: RunMode, multiplier = 1): RunEstimate => {
  const steps = canvas.nodes.map((node) => {
    const spec = getNodeSpec(node.type);
    if (!spec) throw new Error(`No catalogue entry for ${node.type}`);
    return { nodeId: node.id, type: node.type, hundredths: applyMultiplier(priceInMode(spec.price, mode), multiplier) };
  });
  return { steps, totalHundredths: steps.reduce((sum, s) => sum + s.hundredths, 0) };
};

/** What a step is charged when it ends: its estimate (from the run's `stepEstimates`) when it completed, else nothing. */
export const stepCharge = (
  stepEstimates: Readonly<Record<string, number>> | undefined,
  nodeId: string,
  status: 'completed' | 'skipped' | 'failed',
): number => (status === 'completed' ? (stepEstimates?.[nodeId] ?? 0) : 0);
