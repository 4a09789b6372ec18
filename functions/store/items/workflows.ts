/**
 * Workflows: the summary in the team partition, the canvas in WORKFLOW#<id>, and its versions. One
 * family of the stored items: see item.ts for how every item is read and written.
 */
import * as v from 'valibot';
import { WorkflowStatusSchema } from '../../../schemas/workflow-words.ts';
import type { WorkflowStep } from '../../../schemas/workflows.ts';
import { isRecord } from '../../is-record.ts';
import type { Canvas } from '../../nodes/catalogue/canvas.ts';
import { storedItem } from './item.ts';

/** A workflow's summary item (functions/store/workflows.ts `workflowItems`). */
export const WorkflowItemSchema = v.object({
  workflowId: v.string(),
  agentId: v.string(),
  projectId: v.string(),
  name: v.string(),
  description: v.nullish(v.string(), null),
  status: v.nullish(WorkflowStatusSchema, null),
  createdAt: v.string(),
  updatedAt: v.nullish(v.string(), null),
  /** Its latest version; a workflow stored before versions has none and reads as version 1. */
  version: v.optional(v.number(), 1),
});
export type WorkflowItem = v.InferOutput<typeof WorkflowItemSchema>;
/** The summary, with its team (read from its id entry, `IdEntrySchema`) and its step count, for operators. */
export const storedWorkflow = storedItem(WorkflowItemSchema, ['teamId', 'stepsCount']);

/** The canvas is checked for its two lists only: it was validated when the workflow was created. */
const CanvasSchema = v.custom<Canvas>(
  (value) => isRecord(value) && Array.isArray(value.nodes) && Array.isArray(value.edges),
  'not a canvas',
);

/** The latest version's canvas (`version`: a canvas stored before versions reads as version 1). */
export const CanvasItemSchema = v.object({
  teamId: v.string(),
  canvas: CanvasSchema,
  version: v.optional(v.number(), 1),
});
export const storedCanvas = storedItem(CanvasItemSchema, ['workflowId']);

/**
 * One version of a workflow (WORKFLOW#<id>, VERSION#<n>), never changed once written: its canvas,
 * for runs pinned to it, and the steps that made it, for reads. `steps` was validated by the create's
 * schema when it was written; absent for version 1 of a workflow stored before versions.
 */
export const WorkflowVersionItemSchema = v.object({
  teamId: v.string(),
  workflowId: v.string(),
  version: v.number(),
  name: v.string(),
  stepsCount: v.number(),
  createdAt: v.string(),
  canvas: CanvasSchema,
  steps: v.optional(v.array(v.custom<WorkflowStep>(isRecord, 'not a step'))),
});
export type WorkflowVersionItem = v.InferOutput<typeof WorkflowVersionItemSchema>;
export const storedWorkflowVersion = storedItem(WorkflowVersionItemSchema);
/** A version as its list reads it (no canvas, no steps). */
export const ListedWorkflowVersionSchema = v.pick(WorkflowVersionItemSchema, [
  'version',
  'name',
  'stepsCount',
  'createdAt',
]);
