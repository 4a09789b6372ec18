/**
 * Resuming a run (POST /runs/{jobId}/resume): which of a failed or stopped run's steps a
 * new run takes over as they finished, and which it runs. Pure.
 *
 * - Only a run that ended `failed` or `stopped` is resumed (`isResumable`); a `completed` one has
 *   nothing left to run, a `cancelled` one ran nothing, and one in progress has not ended.
 * - A step is carried over when it completed and its run counted it (its output was the run's),
 *   and every step it reads from is carried over too. Every other step runs: failed, skipped,
 *   `unknown` and never started steps, and everything downstream of any of them, so no step runs
 *   on inputs that a step run again may change.
 * - The new run's `inputs` are the original's, with the resume's own given for steps that run; a
 *   value for a carried-over step is ignored (that step does not run again).
 */

import { RunStatus, type StoredRunStatus, type StoredStepStatus } from '../../platform/run-statuses.ts';
import type { Canvas } from '../nodes/catalogue/canvas.ts';
import { readyWhenDone, topologicalOrder } from './canvas-order.ts';
import type { RunEstimate } from './pricing.ts';
import { predecessors } from './run-graph.ts';
import { isCompleted } from './run-lifecycle.ts';
import { apiInputTargets } from './workflow-graph.ts';

/** The statuses a run may be resumed from. */
export const resumableStatuses: readonly StoredRunStatus[] = [RunStatus.failed, RunStatus.stopped];

export const isResumable = (status: StoredRunStatus): boolean => resumableStatuses.includes(status);

/** What a resume reads of the original run. */
export interface OriginalRun {
  /** The steps its run counted. */
  doneSteps: ReadonlySet<string>;
  /** Its step items' statuses, by node id (a step without an item never started). */
  steps: ReadonlyMap<string, { status: StoredStepStatus }>;
}

export interface ResumePlan {
  /** Steps taken over as they finished, in topological order. */
  carried: string[];
  /** Steps the new run runs, in topological order. */
  toRun: string[];
  /** The steps to run that are ready at once: every step they read from is carried over. */
  ready: string[];
}

/** Which steps a resume of `original` carries over and which it runs. */
export const resumePlan = (canvas: Canvas, original: OriginalRun): ResumePlan => {
  const carried = new Set<string>();
  for (const id of topologicalOrder(canvas)) {
    const kept = isCompleted(original.steps.get(id)?.status) && original.doneSteps.has(id);
    if (kept && predecessors(canvas, id).every((p) => carried.has(p))) carried.add(id);
  }
  const order = topologicalOrder(canvas);
  return {
    carried: order.filter((id) => carried.has(id)),
    toRun: order.filter((id) => !carried.has(id)),
    ready: readyWhenDone(canvas, carried),
  };
};

/** The estimate of the steps a resume runs: the whole run's, with the carried-over steps left out. */
export const estimateOfSteps = (estimate: RunEstimate, toRun: readonly string[]): RunEstimate => {
  const steps = estimate.steps.filter((s) => toRun.includes(s.nodeId));
  return { ...estimate, steps, totalHundredths: steps.reduce((sum, s) => sum + s.hundredths, 0) };
};

/**
 * The resumed run's `inputs`: the original's, and the resume's for the steps it runs (a value for a
 * carried-over step is left out: that step does not run again).
 */
export const resumedInputs = (
  canvas: Canvas,
  original: Readonly<Record<string, string>>,
  given: Readonly<Record<string, string>>,
  toRun: readonly string[],
): Record<string, string> => {
  const targets = apiInputTargets(canvas);
  // A Map, then own entries: an input key is the caller's (`__proto__` among them).
  const inputs = new Map(Object.entries(original));
  for (const [key, value] of Object.entries(given)) {
    const target = targets.get(key);
    if (target !== undefined && toRun.includes(target)) inputs.set(key, value);
  }
  return Object.fromEntries(inputs);
};
