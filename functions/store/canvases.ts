import type { Deps } from '../deps.ts';
import type { Canvas } from '../nodes/catalogue/canvas.ts';
import { cachedCanvas, rememberCanvas } from './canvas-cache.ts';
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
