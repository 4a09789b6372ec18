import { shippedModelStep } from '../../platform/model-defaults.ts';
import { StepStatus, type StoredRunStatus, type StoredStepStatus } from '../../platform/run-statuses.ts';
import type { LicenceModel } from '../../schemas/run-words.ts';
import type { GeneratedBy, Run, RunOutput, RunResult, RunStep } from '../../schemas/runs.ts';
import type { Canvas } from '../nodes/catalogue/canvas.ts';
import type { ModelUse } from '../nodes/executors/types.ts';
import { terminalNodeIds, topologicalOrder } from './canvas-order.ts';
import { combineLicences, stampLicenceModel } from './licence.ts';
import { ancestry } from './run-graph.ts';
import { isCompleted, progress, runViewStatus, stepViewStatus } from './run-lifecycle.ts';
import { shownStepError } from './run-view-size.ts';

/**
 * The Run a caller reads (spec 2.3), derived from the run item, its step items and the canvas.
 *
 * Statuses the spec leaves open, as this service uses them:
 * - run `claimed`: queued, and a worker has taken one of its steps, but none has finished yet;
 * - step `queued`: not started yet (no worker has taken it);
 * - step `unknown`: it was in flight when the run ended (failed elsewhere, cancelled or stopped),
 *   so whether its work finished is not known; it is never charged, and nothing it produced is
 *   shown (a step item `completed` that its run never counted reads `unknown` too: its count, made
 *   only while the run is in progress, is what publishes an output);
 * - step `skipped`: it will never run: nothing reached it (a branch not taken), or the run ended
 *   before it started.
 */

export interface RunRecord {
  jobId: string;
  status: StoredRunStatus;
  stepsTotal: number;
  /** The steps counted on the run: only their outputs are the run's. */
  doneSteps: ReadonlySet<string>;
}

export interface StepRecord {
  status: StoredStepStatus;
  error?: string;
  outputs?: Record<string, unknown>;
  model?: ModelUse | null;
  /** The model's licence as it stood when the step ran (stamped by the executor). */
  licence?: LicenceModel | null;
  startedAt?: string;
}

const stepStatus = (run: RunRecord, nodeId: string, step: StepRecord | undefined): RunStep['status'] =>
  stepViewStatus(run.status, run.doneSteps.has(nodeId), step);

/** The step's result: its single output's value, or the value per output handle. */
export const resultOf = (outputs: Record<string, unknown>): RunResult => {
  const values = Object.values(outputs);
  // Step outputs are JSON (the step item stores them as such): a RunResult once its files are linked.
  return (values.length === 1 ? values[0] : outputs) as RunResult;
};

/**
 * Model use of a step: recorded by the executor, else the catalogue default of a model node.
 */
const modelOf = (canvas: Canvas, nodeId: string, step: StepRecord | undefined): ModelUse | undefined => {
  if (step?.model) return step.model;
  const node = canvas.nodes.find((n) => n.id === nodeId);
  const model = node ? shippedModelStep(node.type)?.model : undefined;
  if (!model || !isCompleted(step?.status)) return undefined;
  const provider = typeof node?.config.provider === 'string' ? node.config.provider : model.provider;
  const name = typeof node?.config.model === 'string' ? node.config.model : model.model;
  return { provider, model: name };
};

/** The step type of a node missing from the catalogue. */
const unknownType = 'unknown'; // lifecycle-ok: a step type, not a status

export interface ModelLineage extends ModelUse {
  nodeId: string;
  stampedAt: string;
}

/**
 * The outputs of `output` (in the workflow's order of its final steps, as `runView` gives them)
 * from the final step `nodeId` on: where a page that a cursor names starts. Undefined when
 * `nodeId` is no final step of `canvas`. The order never changes (a canvas never does), so a
 * page's start is a place in it, not an index into the outputs, which grow while a run is under way.
 */
export const outputsFrom = (canvas: Canvas, output: readonly RunOutput[], nodeId: string): RunOutput[] | undefined => {
  const terminals = terminalNodeIds(canvas);
  const start = terminals.indexOf(nodeId);
  if (start === -1) return undefined;
  const place = new Map(terminals.map((id, i) => [id, i]));
  return output.filter((o) => (place.get(o.node_id) ?? -1) >= start);
};

export const runView = (run: RunRecord, steps: ReadonlyMap<string, StepRecord>, canvas: Canvas): Run => {
  const order = topologicalOrder(canvas);
  const typeOf = new Map(canvas.nodes.map((n) => [n.id, n.type]));
  const stepsView: RunStep[] = order.map((nodeId) => {
    const step = steps.get(nodeId);
    const status = stepStatus(run, nodeId, step);
    return {
      node_id: nodeId,
      step_type: typeOf.get(nodeId) ?? unknownType,
      status,
      ...(status === StepStatus.failed ? { error: shownStepError(step?.error ?? 'Step failed') } : {}),
    };
  });
  const completed = stepsView.filter((s) => isCompleted(s.status)).length;
  const anyClaimed = [...steps.values()].some((s) => s.status === StepStatus.processing);
  const output: RunOutput[] = [];
  for (const nodeId of terminalNodeIds(canvas)) {
    const step = steps.get(nodeId);
    if (!isCompleted(step?.status) || !run.doneSteps.has(nodeId)) continue;
    const lineage: ModelLineage[] = ancestry(canvas, nodeId).flatMap((id) => {
      const model = modelOf(canvas, id, steps.get(id));
      return model ? [{ nodeId: id, ...model, stampedAt: steps.get(id)?.startedAt ?? new Date(0).toISOString() }] : [];
    });
    const licence = combineLicences(
      lineage.map(
        (m) =>
          steps.get(m.nodeId)?.licence ??
          stampLicenceModel({ nodeId: m.nodeId, provider: m.provider, model: m.model, stampedAt: m.stampedAt }),
      ),
    );
    const generatedBy: GeneratedBy[] = lineage.map((m) => ({
      node_id: m.nodeId,
      provider: m.provider,
      model: m.model,
    }));
    output.push({
      node_id: nodeId,
      step_type: typeOf.get(nodeId) ?? unknownType,
      result: resultOf(step.outputs ?? {}),
      ...(licence ? { licence } : {}),
      ai_generated: lineage.length > 0,
      ...(generatedBy.length > 0 ? { generated_by: generatedBy } : {}),
    });
  }
  return {
    jobId: run.jobId,
    status: runViewStatus(run.status, anyClaimed),
    progress: progress(completed, run.stepsTotal),
    steps: stepsView,
    output,
  };
};
