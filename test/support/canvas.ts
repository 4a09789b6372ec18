import type { CanvasNode } from '../../functions/nodes/catalogue/canvas.ts';
import type { NodeType } from '../../schemas/workflow-words.ts';

/** A canvas node labelled by its id, at the origin: what the pure rules read of one. */
export const canvasNode = (id: string, type: NodeType, config: Record<string, unknown> = {}): CanvasNode => ({
  id,
  type,
  label: id,
  config,
  position: { x: 0, y: 0 },
});
