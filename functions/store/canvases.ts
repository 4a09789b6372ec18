import type { Deps } from '../deps.ts';
import type { Canvas } from '../nodes/catalogue/canvas.ts';
import { batchGet, itemFor } from './batch.ts';
import { cachedCanvas, rememberCanvas } from './canvas-cache.ts';
import { CanvasItemSchema } from './items/workflows.ts';
import { canvasKey } from './keys.ts';
import { readVersionCanvas } from './workflow-versions.ts';

/**
 * The canvas of version `version` of a workflow (a run's `workflowVersion`); a version never
 * changes once stored, so each container keeps those it read.
 */
export const canvasOf = async (deps: Deps, workflowId: string, version: number): Promise<Canvas> => {
  const cached = cachedCanvas(workflowId, version);
  if (cached) return cached;
  const canvas = await readVersionCanvas(deps, workflowId, version);
  if (!canvas) throw new Error(`Canvas of workflow ${workflowId} version ${version} not found`);
  rememberCanvas(workflowId, version, canvas);
  return canvas;
};

/**
 * The latest canvas of each of the team's workflows named, by workflow id: one BatchGet a hundred
 * (the summaries are read already). One missing, or of another team, is left out.
 */
export const latestCanvases = async (
  deps: Deps,
  teamId: string,
  workflowIds: readonly string[],
): Promise<Map<string, Canvas>> => {
  const items = await batchGet(deps, workflowIds.map(canvasKey));
  return new Map(
    workflowIds.flatMap((workflowId) => {
      const latest = itemFor(items, canvasKey(workflowId), CanvasItemSchema);
      // The canvas partition is keyed by workflow id alone, so its team is checked too.
      return latest && latest.teamId === teamId ? [[workflowId, latest.canvas] as const] : [];
    }),
  );
};
