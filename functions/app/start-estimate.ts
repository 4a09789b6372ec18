/**
 * What a start holds: its estimate at a multiplier (the start, the estimates and a workflow's price
 * range all price a run by this one rule), and the multiplier a start now is priced at.
 */
import type { RunRequest } from '../../schemas/run-request.ts';
import type { Deps } from '../deps.ts';
import { estimateRun, type RunEstimate } from '../domain/pricing.ts';
import type { RunnableWorkflow } from '../store/run/workflow-loads.ts';

/** What a start of `workflow` with `request` holds at `multiplier`: its steps at the stage's prices in its mode. */
export const startEstimate = (
  deps: Deps,
  workflow: RunnableWorkflow,
  request: Pick<RunRequest, 'mode'>,
  multiplier: number,
): RunEstimate => estimateRun(workflow.canvas, request.mode, multiplier, deps.providers);

/** A run started at once is priced at 1: the price multiplier is only what deferred runs wait for. */
export const startNowMultiplier = 1;
