/**
 * Which step items the run event stream reads while its run is in progress, as pure rules. A step
 * item carries the step's outputs (up to hundreds of KB), and DynamoDB charges a read for the
 * whole item whatever it projects, so the stream reads the run item (its status, its counters and
 * the set of counted steps: small) and a step item only when it needs something only that item
 * has (docs/decisions/stream.md, "The event stream reads outputs only when it sends them"):
 * - a step that may have started (uncounted, every step it reads from counted): whether it is
 *   claimed, a window of `frontierWindow` of them a refresh;
 * - a counted step whose end the counters cannot tell (completed or skipped: a skip and a
 *   completion counted between two looks);
 * - a final step counted completed whose `output` event is due, and the model steps it descends
 *   from (their model and licence make the output's lineage).
 * A counted step the counters tell is shown from them: its item (and its outputs) is never read.
 */

import { StepStatus, type StoredStepStatus } from '../../platform/run-statuses.ts';
import type { Canvas } from '../nodes/catalogue/canvas.ts';
import { getNodeSpec } from '../nodes/catalogue/index.ts';
import { terminalNodeIds } from './canvas-order.ts';
import { ancestry, predecessors } from './run-graph.ts';
import { isCompleted } from './run-lifecycle.ts';
import { type SentState, StepSent } from './run-stream.ts';
import type { StepRecord } from './run-view.ts';

/** Most steps read a refresh to see whether they started: their reads cost at most this many half units. */
export const frontierWindow = 25;

/** What the run item says of the run's steps. */
export interface RunCounts {
  stepsCompleted: number;
  stepsSkipped: number;
  doneSteps: ReadonlySet<string>;
}

/** A step item's statuses past its work: `unknown` is an end too (it finished after its run ended). */
const stepItemEnds: readonly StoredStepStatus[] = [
  StepStatus.completed,
  StepStatus.skipped,
  StepStatus.failed,
  StepStatus.unknown,
];

/** Whether a step item shows the step's end (a counted step's item read before its end was written is stale). */
export const showsEnd = (step: { status: StoredStepStatus } | undefined): boolean =>
  step !== undefined && stepItemEnds.includes(step.status);

/**
 * The status of each counted step the counters tell without its item: every counted step is
 * completed or skipped, so once the known ones account for all the skipped (or all the completed),
 * the others are the other kind. Steps left out are ambiguous: their items must be read.
 */
export const countedStatuses = (
  run: RunCounts,
  known: ReadonlyMap<string, StepRecord>,
): Map<string, typeof StepStatus.completed | typeof StepStatus.skipped> => {
  const told = new Map<string, typeof StepStatus.completed | typeof StepStatus.skipped>();
  const unknown: string[] = [];
  let completed = 0;
  let skipped = 0;
  for (const nodeId of run.doneSteps) {
    const status = known.get(nodeId)?.status;
    if (status === StepStatus.completed) completed++;
    else if (status === StepStatus.skipped) skipped++;
    else unknown.push(nodeId);
  }
  const rest =
    skipped === run.stepsSkipped ? StepStatus.completed : completed === run.stepsCompleted ? StepStatus.skipped : null;
  if (rest !== null) for (const nodeId of unknown) told.set(nodeId, rest);
  return told;
};

/** The steps that may have started: uncounted, and every step they read from counted. In the run's step order. */
export const frontier = (canvas: Canvas, order: readonly string[], run: RunCounts): string[] =>
  order.filter(
    (nodeId) => !run.doneSteps.has(nodeId) && predecessors(canvas, nodeId).every((p) => run.doneSteps.has(p)),
  );

const isModelNode = (canvas: Canvas, nodeId: string): boolean => {
  const node = canvas.nodes.find((n) => n.id === nodeId);
  return Boolean(node && getNodeSpec(node.type)?.model);
};

export interface StreamReads {
  /** The step items to read, eventually consistent. */
  read: string[];
  /** Where the next refresh's window over the frontier starts. */
  nextWindow: number;
}

/**
 * The step items one refresh reads, for a run in progress. `known`: the items read so far (a
 * final step's outputs kept until its `output` went); `sent`: what the client has, by the run's
 * step `order`; `window`: where this refresh's window over the frontier starts (it turns, so a
 * wide run's every ready step is looked at in turn).
 */
export const stepsToRead = (input: {
  canvas: Canvas;
  order: readonly string[];
  run: RunCounts;
  known: ReadonlyMap<string, StepRecord>;
  sent: SentState;
  window: number;
}): StreamReads => {
  const { canvas, order, run, known, sent } = input;
  const read = new Set<string>();
  const ready = frontier(canvas, order, run).filter((nodeId) => !showsEnd(known.get(nodeId)));
  const start = ready.length === 0 ? 0 : input.window % ready.length;
  const window = [...ready, ...ready].slice(start, start + Math.min(frontierWindow, ready.length));
  for (const nodeId of window) read.add(nodeId);
  const told = countedStatuses(run, known);
  const statusOf = (nodeId: string) => (showsEnd(known.get(nodeId)) ? known.get(nodeId)?.status : told.get(nodeId));
  const sentOf = (nodeId: string) => sent.steps[order.indexOf(nodeId)] ?? StepSent.none;
  // An ambiguous count: its step's event, the progress and the run's status all need its end.
  for (const nodeId of run.doneSteps) if (statusOf(nodeId) === undefined) read.add(nodeId);
  for (const nodeId of terminalNodeIds(canvas)) {
    if (!run.doneSteps.has(nodeId) || sentOf(nodeId) === StepSent.output) continue;
    const status = statusOf(nodeId);
    if (status === StepStatus.skipped) continue;
    // Its output is due (or it may be: an ambiguous count): its item, with its outputs.
    if (known.get(nodeId)?.outputs === undefined) read.add(nodeId);
    for (const id of ancestry(canvas, nodeId)) {
      if (id === nodeId || !isModelNode(canvas, id) || known.get(id)?.status === StepStatus.completed) continue;
      if (statusOf(id) !== StepStatus.skipped) read.add(id);
    }
  }
  return { read: order.filter((nodeId) => read.has(nodeId)), nextWindow: start + window.length };
};

/**
 * The steps as `runView` reads them for a run in progress: each counted step's item, or its
 * status as the counters tell it; each uncounted step's item when one was read.
 */
export const streamSteps = (run: RunCounts, known: ReadonlyMap<string, StepRecord>): Map<string, StepRecord> => {
  const told = countedStatuses(run, known);
  const steps = new Map(known);
  for (const [nodeId, status] of told) if (!showsEnd(known.get(nodeId))) steps.set(nodeId, { status });
  return steps;
};

/** A completed step's record without its outputs: what the stream keeps once its outputs are not needed. */
export const withoutOutputs = (step: StepRecord): StepRecord => {
  const { outputs: _, ...rest } = step;
  return isCompleted(rest.status) ? rest : step;
};
