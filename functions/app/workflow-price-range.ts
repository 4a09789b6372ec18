/**
 * What runs of a workflow cost at the least and the most (GET /workflows/{id}'s `price`): each
 * point a start's own estimate (functions/app/start-estimate.ts). Reads the price settings only.
 */
import { type RunMode, RunModeSchema } from '../../schemas/run-words.ts';
import type { Deps } from '../deps.ts';
import { currentMultiplier, nextHourMultipliers } from '../domain/price-multiplier.ts';
import { getPriceSettings } from '../store/price-multiplier.ts';
import type { RunnableWorkflow } from '../store/run/workflow-loads.ts';
import { startEstimate, startNowMultiplier } from './start-estimate.ts';

/** What runs of a workflow cost at the least and at the most: each mode, at each multiplier a start could meet. */
export interface PriceRange {
  minHundredths: number;
  maxHundredths: number;
  /** Each mode's estimate for a run started now (at 1). */
  modes: { mode: RunMode; totalHundredths: number }[];
  /** The least and the most multiplier: 1 for a start now, the operator's for the next 24 UTC hours for a deferred one. */
  multipliers: { min: number; max: number };
}

/**
 * The range of a run's estimate over the run modes and the multipliers a start could be priced at
 * as the settings stand now (a start now at 1; a deferred one at an hour's, `nextHourMultipliers`),
 * each point the start's own estimate (`startEstimate`). Read only.
 */
export const workflowPriceRange = async (deps: Deps, workflow: RunnableWorkflow): Promise<PriceRange> => {
  const now = deps.now();
  const settings = await getPriceSettings(deps);
  const multipliers = [
    startNowMultiplier,
    currentMultiplier(settings, now),
    ...nextHourMultipliers(settings, now).map((hour) => hour.multiplier),
  ];
  const min = Math.min(...multipliers);
  const max = Math.max(...multipliers);
  const total = (mode: RunMode, multiplier: number) =>
    startEstimate(deps, workflow, { mode }, multiplier).totalHundredths;
  const modes = RunModeSchema.options;
  return {
    minHundredths: Math.min(...modes.map((mode) => total(mode, min))),
    maxHundredths: Math.max(...modes.map((mode) => total(mode, max))),
    modes: modes.map((mode) => ({ mode, totalHundredths: total(mode, startNowMultiplier) })),
    multipliers: { min, max },
  };
};
