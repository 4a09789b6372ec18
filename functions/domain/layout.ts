/**
 * Layered left-to-right layout of a workflow graph, and the topological order it rests on.
 * Pure and deterministic: the same nodes and edges, in the same order, give the same positions.
 *
 * - Layer of a node = length of the longest path reaching it from a root, so every edge goes from
 *   a lower layer to a higher one: `x = layer * columnWidth` puts every target right of its source.
 * - Within a layer, nodes start in the order given and are then reordered by a few barycentre
 *   sweeps (each node moves towards the mean row of its neighbours), which removes most crossings.
 * - `y = row within layer * rowHeight`: one node per (layer, row), so no two nodes overlap.
 */

import type { Position } from '../nodes/catalogue/canvas.ts';

export const columnWidth = 320;
export const rowHeight = 160;
/** Down and up sweeps of the barycentre pass; a few are enough for the graphs a team draws. */
const sweeps = 4;

export interface LayoutEdge {
  source: string;
  target: string;
}

interface Adjacency {
  index: Map<string, number>;
  predecessors: number[][];
  successors: number[][];
}

const adjacency = (nodeIds: readonly string[], edges: readonly LayoutEdge[]): Adjacency => {
  const index = new Map<string, number>();
  nodeIds.forEach((id, i) => {
    if (!index.has(id)) index.set(id, i);
  });
  const predecessors = nodeIds.map((): number[] => []);
  const successors = nodeIds.map((): number[] => []);
  for (const edge of edges) {
    const from = index.get(edge.source);
    const to = index.get(edge.target);
    // Edges naming no node are the validator's business, not the layout's.
    if (from === undefined || to === undefined) continue;
    successors[from]!.push(to);
    predecessors[to]!.push(from);
  }
  return { index, predecessors, successors };
};

/**
 * The node ids in an order where every edge's source comes before its target; among nodes that
 * are ready together, the one given first goes first. Null when the edges form a cycle.
 */
export const orderTopologically = (nodeIds: readonly string[], edges: readonly LayoutEdge[]): string[] | null => {
  const { predecessors, successors } = adjacency(nodeIds, edges);
  const waiting = predecessors.map((p) => p.length);
  // Ready nodes, kept sorted by position in `nodeIds` (a few hundred nodes: a sorted array will do).
  const ready = waiting.flatMap((count, i) => (count === 0 ? [i] : []));
  const order: string[] = [];
  while (ready.length > 0) {
    const next = ready.shift()!;
    order.push(nodeIds[next]!);
    for (const successor of successors[next]!) {
      waiting[successor]! -= 1;
      if (waiting[successor] === 0) {
        const at = ready.findIndex((i) => i > successor);
        ready.splice(at === -1 ? ready.length : at, 0, successor);
      }
    }
  }
  return order.length === nodeIds.length ? order : null;
};

/** Sorts `layer` by each node's barycentre over `neighbours` (ties and lone nodes keep their row). */
const reorder = (layer: number[], neighbours: number[][], row: number[]): void => {
  const barycentre = new Map<number, number>();
  for (const node of layer) {
    const around = neighbours[node]!;
    barycentre.set(
      node,
      around.length === 0 ? row[node]! : around.reduce((sum, n) => sum + row[n]!, 0) / around.length,
    );
  }
  layer.sort((a, b) => barycentre.get(a)! - barycentre.get(b)! || row[a]! - row[b]!);
  layer.forEach((node, i) => {
    row[node] = i;
  });
};

/**
 * Positions of the nodes of a directed acyclic graph (ids must be unique), keyed by id.
 * Throws on a cycle: validate the graph first.
 */
export const layeredLayout = (nodeIds: readonly string[], edges: readonly LayoutEdge[]): Map<string, Position> => {
  const { index, predecessors, successors } = adjacency(nodeIds, edges);
  const order = orderTopologically(nodeIds, edges);
  if (order === null) throw new Error('Cannot lay out a graph with a cycle');

  const layerOf = nodeIds.map(() => 0);
  for (const id of order) {
    const node = index.get(id)!;
    for (const p of predecessors[node]!) layerOf[node] = Math.max(layerOf[node]!, layerOf[p]! + 1);
  }
  const layers: number[][] = [];
  nodeIds.forEach((_, node) => {
    const layer = layerOf[node]!;
    while (layers.length <= layer) layers.push([]);
    layers[layer]!.push(node);
  });
  const row = nodeIds.map(() => 0);
  for (const layer of layers) {
    layer.forEach((node, i) => {
      row[node] = i;
    });
  }

  for (let sweep = 0; sweep < sweeps; sweep++) {
    if (sweep % 2 === 0) {
      for (let l = 1; l < layers.length; l++) reorder(layers[l]!, predecessors, row);
    } else {
      for (let l = layers.length - 2; l >= 0; l--) reorder(layers[l]!, successors, row);
    }
  }

  return new Map(nodeIds.map((id, node) => [id, { x: layerOf[node]! * columnWidth, y: row[node]! * rowHeight }]));
};
