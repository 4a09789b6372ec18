/**
 * Where a canvas's steps stand in its graph: its first and final steps and an order with every
 * step after what it reads. Edges only: no node type's catalogue entry is read (a run's reads and
 * stream import this, not the workflow checks of functions/domain/workflow-graph.ts).
 */
import type { Canvas } from '../nodes/catalogue/canvas.ts';
import { orderTopologically } from './layout.ts';
import { predecessors } from './run-graph.ts';

/** Nodes nothing reads from: their results are the run's `output` (spec 2.3). In node order. */
export const terminalNodeIds = (canvas: Canvas): string[] => {
  const read = new Set(canvas.edges.map((e) => e.source));
  return canvas.nodes.filter((n) => !read.has(n.id)).map((n) => n.id);
};

/** Nodes that read from nothing: the steps a run starts with. In node order. */
export const rootNodeIds = (canvas: Canvas): string[] => {
  const fed = new Set(canvas.edges.map((e) => e.target));
  return canvas.nodes.filter((n) => !fed.has(n.id)).map((n) => n.id);
};

/**
 * Node ids with every edge's source before its target (ties: node order). For a validated canvas;
 * throws on a cycle.
 */
export const topologicalOrder = (canvas: Canvas): string[] => {
  const order = orderTopologically(
    canvas.nodes.map((n) => n.id),
    canvas.edges,
  );
  if (order === null) throw new Error('The canvas has a cycle; validate it first');
  return order;
};

/**
 * The steps of a run of `canvas` that are ready while `done` have finished and nothing else has:
 * not done themselves, and every step they read from done. A fresh run's are its roots.
 */
export const readyWhenDone = (canvas: Canvas, done: ReadonlySet<string>): string[] =>
  topologicalOrder(canvas).filter((id) => !done.has(id) && predecessors(canvas, id).every((p) => done.has(p)));
