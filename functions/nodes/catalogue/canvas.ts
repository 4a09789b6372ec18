/**
 * A workflow as stored and run: its steps (nodes of the catalogue's types) and the connections
 * between their handles, each step at its place on the canvas. Built and checked by
 * functions/domain/workflow-graph.ts; read by the executors and the providers' routing.
 */
import type { NodeType } from '../../../schemas/workflow-words.ts';

/** A step's place on the canvas. */
export interface Position {
  x: number;
  y: number;
}

export interface CanvasNode {
  /** The step's `key`. */
  id: string;
  type: NodeType;
  label: string;
  /** The step's config as given (unknown settings kept). */
  config: Record<string, unknown>;
  position: Position;
}

export interface CanvasEdge {
  id: string;
  source: string;
  target: string;
  sourceHandle: string;
  targetHandle: string;
}

export interface Canvas {
  nodes: CanvasNode[];
  edges: CanvasEdge[];
}
