import { GetCommand } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../../deps.ts';
import type { StepState } from '../../domain/run-graph.ts';
import type { Canvas } from '../../nodes/catalogue/canvas.ts';
import { batchGet, itemFor } from '../batch.ts';
import { cachedCanvas, lastCachedCanvas, rememberCanvas } from '../canvas-cache.ts';
import { parseItem } from '../items/item.ts';
import { RunItemSchema, type StepItem, StepItemSchema } from '../items/runs.ts';
import { CanvasItemSchema } from '../items/workflows.ts';
import { canvasKey, runKey, stepKey } from '../keys.ts';
import { readVersionCanvas } from '../workflow-versions.ts';

/** The run and workflow a step message names. */
export interface RunRef {
  jobId: string;
  workflowId: string;
}

/**
 * What a step delivery reads before it acts: the run item, the canvas of the workflow version it
 * runs (unless cached) and the items of the steps `nodeIds` picks from that canvas, in one strongly
 * consistent BatchGet when this container last read the run's version (most runs run the latest),
 * two or three otherwise. `steps` holds those that have a step item; `stepItem` gives one of them
 * whole. Undefined when the run is gone: never written, deleted, or past its `ttl` (expired,
 * functions/domain/retention.ts): its messages have nothing left to do.
 *
 * `handedOn`: the step items this invocation wrote itself (a chain's step, for its next), taken as
 * written and not read again; with them, the rest is read eventually consistent (half a read unit an
 * item). Nothing the chain decides rests on that read alone: a cancel or an end a stale run hides is
 * met by the chain's next count, as one landing just after a strong read is; and a step found
 * unfinished that was finished meanwhile is refused by its finish's condition, which sends its
 * message for a strongly consistent delivery to count it (functions/app/step/run-step.ts).
 */
export const readRunAndSteps = async (
  deps: Deps,
  ref: RunRef,
  pick: (canvas: Canvas) => string[],
  handedOn?: ReadonlyMap<string, StepItem>,
) => {
  const nodeIds = (canvas: Canvas) => pick(canvas).filter((n) => !handedOn?.has(n));
  const read = { consistent: handedOn === undefined };
  const guess = lastCachedCanvas(ref.workflowId);
  const keys = [
    runKey(ref.jobId),
    ...(guess ? nodeIds(guess.canvas).map((n) => stepKey(ref.jobId, n)) : [canvasKey(ref.workflowId)]),
  ];
  let items = await batchGet(deps, keys, read);
  const run = itemFor(items, runKey(ref.jobId), RunItemSchema);
  if (!run) return undefined;
  let canvas = guess?.version === run.workflowVersion ? guess.canvas : undefined;
  if (!canvas) {
    // The pinned version, not the latest: a run keeps the version it started with.
    const latest = guess ? undefined : itemFor(items, canvasKey(ref.workflowId), CanvasItemSchema);
    canvas =
      latest?.version === run.workflowVersion
        ? latest.canvas
        : (cachedCanvas(ref.workflowId, run.workflowVersion) ??
          (await readVersionCanvas(deps, ref.workflowId, run.workflowVersion)));
    if (!canvas) throw new Error(`Canvas of workflow ${ref.workflowId} version ${run.workflowVersion} not found`);
    rememberCanvas(ref.workflowId, run.workflowVersion, canvas);
    const stepKeys = nodeIds(canvas).map((n) => stepKey(ref.jobId, n));
    if (stepKeys.length > 0) items = new Map([...items, ...(await batchGet(deps, stepKeys, read))]);
  }
  const stepItems = new Map<string, StepItem>();
  const steps = new Map<string, StepState>();
  for (const nodeId of pick(canvas)) {
    const step = handedOn?.get(nodeId) ?? itemFor(items, stepKey(ref.jobId, nodeId), StepItemSchema);
    if (!step) continue;
    stepItems.set(nodeId, step);
    steps.set(nodeId, step);
  }
  return { run, canvas, steps, stepItem: (nodeId: string) => stepItems.get(nodeId) };
};

/** One step item alone, strongly consistent (a provider's webhook names its step); undefined when there is none. */
export const readStepItem = async (deps: Deps, jobId: string, nodeId: string): Promise<StepItem | undefined> => {
  const { Item } = await deps.ddb.send(
    new GetCommand({ TableName: deps.tableName, Key: stepKey(jobId, nodeId), ConsistentRead: true }),
  );
  return Item && parseItem(StepItemSchema, Item, stepKey(jobId, nodeId));
};

/**
 * Some of a run's step items, eventually consistent (half the read units of a strong read), by
 * node id; a step without an item is left out. The run event stream's read: a stale answer is
 * found (a counted step's item not showing its end) and read again at its next look.
 */
export const readStepItemsEventually = async (
  deps: Deps,
  jobId: string,
  nodeIds: readonly string[],
): Promise<Map<string, StepItem>> => {
  const items = await batchGet(
    deps,
    nodeIds.map((n) => stepKey(jobId, n)),
    { consistent: false },
  );
  const found = new Map<string, StepItem>();
  for (const nodeId of nodeIds) {
    const step = itemFor(items, stepKey(jobId, nodeId), StepItemSchema);
    if (step) found.set(nodeId, step);
  }
  return found;
};
