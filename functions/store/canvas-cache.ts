import type { Canvas } from '../nodes/catalogue/canvas.ts';

/**
 * Canvases never change once stored, so a warm container keeps the ones it read. Bounded, oldest
 * read first out, so a container that sees many workflows does not grow without limit.
 */
const maxCanvases = 200;
const canvases = new Map<string, Canvas>();

export const cachedCanvas = (workflowId: string): Canvas | undefined => {
  const canvas = canvases.get(workflowId);
  if (canvas) {
    canvases.delete(workflowId);
    canvases.set(workflowId, canvas);
  }
  return canvas;
};

export const rememberCanvas = (workflowId: string, canvas: Canvas): void => {
  canvases.set(workflowId, canvas);
  const oldest = canvases.keys().next();
  if (canvases.size > maxCanvases && !oldest.done) canvases.delete(oldest.value);
};
