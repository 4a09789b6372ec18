import { GetCommand } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../deps.ts';
import type { Canvas } from '../nodes/catalogue/canvas.ts';
import { cachedCanvas, rememberCanvas } from './canvas-cache.ts';
import { CanvasItemSchema, parseItem } from './items.ts';
import { canvasKey } from './keys.ts';

/** A workflow's canvas; canvases never change once stored, so each container keeps those it read. */
export const canvasOf = async (deps: Deps, workflowId: string): Promise<Canvas> => {
  const cached = cachedCanvas(workflowId);
  if (cached) return cached;
  const { Item } = await deps.ddb.send(new GetCommand({ TableName: deps.tableName, Key: canvasKey(workflowId) }));
  if (!Item) throw new Error(`Canvas of workflow ${workflowId} not found`);
  const { canvas } = parseItem(CanvasItemSchema, Item);
  rememberCanvas(workflowId, canvas);
  return canvas;
};
