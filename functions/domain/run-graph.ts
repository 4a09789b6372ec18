import { isModelNodeType } from '../../platform/model-defaults.ts';
import type { StoredStepStatus } from '../../platform/run-statuses.ts';
import { nodeTypes } from '../../schemas/workflow-words.ts';
import type { Canvas, CanvasEdge } from '../nodes/catalogue/canvas.ts';
import type { NodeSpec } from '../nodes/catalogue/node-spec.ts';
import { isCompleted, releasesSuccessors } from './run-lifecycle.ts';

/**
 * How a run moves through its canvas. A step is ready when every step it reads from has finished
 * (completed or skipped). A ready step is skipped instead of run when nothing reaches it: every
 * edge into it is dead, or a required input has only dead edges. An edge is dead when its source
 * was skipped or produced nothing on that handle (a ConditionalSwitch's branch not taken).
 */

/**
 * A step that has started: claimed (`processing`) or finished. `unknown`: it finished after its run
 * ended (its output dropped), so nothing that follows it runs.
 */
export interface StepState {
  status: StoredStepStatus;
  /** Values per output handle (completed steps). */
  outputs?: Record<string, unknown>;
}

const incomingEdges = (canvas: Canvas, nodeId: string): CanvasEdge[] => canvas.edges.filter((e) => e.target === nodeId);

export const predecessors = (canvas: Canvas, nodeId: string): string[] => [
  ...new Set(incomingEdges(canvas, nodeId).map((e) => e.source)),
];

export const successors = (canvas: Canvas, nodeId: string): string[] => [
  ...new Set(canvas.edges.filter((e) => e.source === nodeId).map((e) => e.target)),
];

/**
 * The step a chain hands on to: the only successor of `nodeId`, reading from it alone, and not a
 * model step (a model step keeps a message of its own: its claim, its lease and a whole node
 * timeout). The step executor may run it in the same invocation instead of sending its message
 * (functions/app/step/run-step.ts). Undefined when `nodeId` has no such successor.
 */
export const chainSuccessor = (canvas: Canvas, nodeId: string): string | undefined => {
  const next = successors(canvas, nodeId);
  const only = next.length === 1 ? next[0] : undefined;
  if (only === undefined || predecessors(canvas, only).some((p) => p !== nodeId)) return undefined;
  const node = canvas.nodes.find((n) => n.id === only);
  const known = node !== undefined && (nodeTypes as readonly string[]).includes(node.type);
  return known && !isModelNodeType(node.type) ? only : undefined;
};

const isFinished = (step: StepState | undefined) => releasesSuccessors(step?.status);

/** Successors of `nodeId` whose predecessors have all finished. */
export const readySuccessors = (canvas: Canvas, nodeId: string, steps: ReadonlyMap<string, StepState>): string[] =>
  successors(canvas, nodeId).filter((s) => predecessors(canvas, s).every((p) => isFinished(steps.get(p))));

const edgeValue = (edge: CanvasEdge, steps: ReadonlyMap<string, StepState>): { live: boolean; value?: unknown } => {
  const source = steps.get(edge.source);
  if (!isCompleted(source?.status) || !source.outputs || !Object.hasOwn(source.outputs, edge.sourceHandle)) {
    return { live: false };
  }
  return { live: true, value: source.outputs[edge.sourceHandle] };
};

export type StepPlan = { run: true; inputs: Record<string, unknown[]> } | { run: false };

/** Gathers a ready step's inputs per handle (`spec`: its node type's catalogue entry), or decides it is skipped. */
export const planStep = (
  canvas: Canvas,
  nodeId: string,
  spec: Pick<NodeSpec, 'inputs'>,
  steps: ReadonlyMap<string, StepState>,
): StepPlan => {
  if (!canvas.nodes.some((n) => n.id === nodeId)) throw new Error(`No node ${nodeId} in the canvas`);
  const edges = incomingEdges(canvas, nodeId);
  // Keyed by handle name; no prototype, so no name can reach Object.prototype.
  const inputs: Record<string, unknown[]> = Object.create(null);
  let live = 0;
  for (const edge of edges) {
    const { live: isLive, value } = edgeValue(edge, steps);
    if (!isLive) continue;
    live++;
    inputs[edge.targetHandle] ??= [];
    inputs[edge.targetHandle]?.push(value);
  }
  if (edges.length > 0 && live === 0) return { run: false };
  const starved = spec.inputs.some(
    (h) => h.required && edges.some((e) => e.targetHandle === h.name) && !inputs[h.name],
  );
  return starved ? { run: false } : { run: true, inputs };
};

/** The model steps a node's result comes from: itself and every ancestor. */
export const ancestry = (canvas: Canvas, nodeId: string): string[] => {
  const seen = new Set<string>();
  const stack = [nodeId];
  while (stack.length > 0) {
    const current = stack.pop() as string;
    if (seen.has(current)) continue;
    seen.add(current);
    stack.push(...predecessors(canvas, current));
  }
  return [...seen];
};
