import type { Canvas } from '../nodes/catalogue/canvas.ts';

/**
 * A version of a workflow never changes once stored, so a warm container keeps the canvases it
 * read, by workflow and version. Bounded, oldest read first out, so a container that sees many
 * workflows does not grow without limit.
 */
const maxCanvases = 200;
const canvases = new Map<string, Canvas>();
/** The version each workflow's last run read: a step delivery's guess before it reads its run. */
const lastVersions = new Map<string, number>();

const keyOf = (workflowId: string, version: number) => `${workflowId}#${version}`;

export const cachedCanvas = (workflowId: string, version: number): Canvas | undefined => {
  const key = keyOf(workflowId, version);
  const canvas = canvases.get(key);
  if (canvas) {
    canvases.delete(key);
    canvases.set(key, canvas);
  }
  return canvas;
};

export const rememberCanvas = (workflowId: string, version: number, canvas: Canvas): void => {
  canvases.set(keyOf(workflowId, version), canvas);
  lastVersions.set(workflowId, version);
  const oldest = canvases.keys().next();
  if (canvases.size > maxCanvases && !oldest.done) canvases.delete(oldest.value);
  if (lastVersions.size > maxCanvases) lastVersions.delete(lastVersions.keys().next().value as string);
};

/** The version of `workflowId` last read here and its canvas, when still kept. */
export const lastCachedCanvas = (workflowId: string): { version: number; canvas: Canvas } | undefined => {
  const version = lastVersions.get(workflowId);
  const canvas = version === undefined ? undefined : cachedCanvas(workflowId, version);
  return canvas && version !== undefined ? { version, canvas } : undefined;
};
