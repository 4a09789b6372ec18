/**
 * A workflow's versions and status (our design): PUT /workflows/{id} makes the next version from a
 * create's body, GET /workflows/{id}/versions and /versions/{version} read them, PATCH
 * /workflows/{id} sets the status. The version schemas, their components and operations.
 */
import * as v from 'valibot';
import { scopeOf } from '../platform/routes.ts';
import { DateTimeSchema, notArray, UuidSchema } from './common.ts';
import { jsonResponse, type OperationSpec, ref, uuidPath } from './openapi-parts.ts';
import { listPageLimits } from './run-words.ts';
import { WorkflowStatusSchema } from './workflow-words.ts';
import { createWorkflowExamples, WorkflowStepSchema } from './workflows.ts';

/** Our design: a workflow's version number, 1 for the version it was created with. */
export const WorkflowVersionNumberSchema = v.pipe(v.number(), v.integer(), v.minValue(1));

/** Our design: one version of a workflow, as its list shows it. */
export const WorkflowVersionSummarySchema = v.strictObject({
  version: WorkflowVersionNumberSchema,
  name: v.string(),
  stepsCount: v.pipe(v.number(), v.integer(), v.minValue(1)),
  createdAt: DateTimeSchema,
});

/**
 * Our design: one version of a workflow, whole: 200 of PUT /workflows/{id} (the version it made) and
 * of GET /workflows/{id}/versions/{n}. `steps` is the body that made it, as the create validated it;
 * null for a version made before versions kept their steps, or whose steps would not fit one stored item beside its canvas (it still runs).
 */
export const WorkflowVersionSchema = v.strictObject({
  workflowId: UuidSchema,
  ...WorkflowVersionSummarySchema.entries,
  steps: v.nullable(v.array(WorkflowStepSchema)),
});
export type WorkflowVersion = v.InferOutput<typeof WorkflowVersionSchema>;

/** Our design: 200 of GET /workflows/{id}/versions: newest first, a page at a time. */
export const ListWorkflowVersionsResponseSchema = v.strictObject({
  versions: v.array(WorkflowVersionSummarySchema),
  nextCursor: v.nullable(v.string()),
});
export type ListWorkflowVersionsResponse = v.InferOutput<typeof ListWorkflowVersionsResponseSchema>;

/** Our design: body of PATCH /workflows/{id}: the workflow's new status. */
export const SetWorkflowStatusRequestSchema = notArray(v.object({ status: WorkflowStatusSchema }));
export type SetWorkflowStatusRequest = v.InferOutput<typeof SetWorkflowStatusRequestSchema>;

/** The named schemas of the document this module holds. */
export const workflowVersionComponents = {
  WorkflowVersionSummary: WorkflowVersionSummarySchema,
  WorkflowVersion: WorkflowVersionSchema,
  ListWorkflowVersionsResponse: ListWorkflowVersionsResponseSchema,
  SetWorkflowStatusRequest: SetWorkflowStatusRequestSchema,
};

const workflowPath = uuidPath('id', 'The workflow (`id` in the workflow list, `workflowId` when it was created).');

/** The operations of the version routes, for the document (schemas/openapi.ts). */
export const workflowVersionOperations: OperationSpec[] = [
  {
    operationId: 'UpdateWorkflow',
    tag: 'Workflows',
    summary: 'Make a new version of a workflow',
    description:
      "Our design. Takes the body of Create a workflow, checked by the same rules, and makes it the workflow's next " +
      "version (its `name` becomes the workflow's); answers that version. Every earlier version is kept and " +
      'readable; a run in progress keeps the version it started with, and a run start may pin one (`version`). ' +
      "The body's `agentId` (or `projectId`) must be the workflow's own: a version does not move a workflow. Two " +
      'updates at once make two versions, each its own number.',
    parameters: [workflowPath],
    requestBody: {
      required: true,
      content: { 'application/json': { schema: ref('CreateWorkflowRequest'), examples: createWorkflowExamples } },
    },
    responses: {
      200: jsonResponse('The version made.', 'WorkflowVersion'),
      500: jsonResponse('Server failure.', 'ServerError'),
    },
    errorWords: {
      400:
        'Missing `name` or `steps`, not exactly one of `agentId` and `projectId`, or a body that is not JSON or ' +
        'has a field of the wrong type.',
      403: `The key lacks \`${scopeOf('UpdateWorkflow')}\`, or is limited to other workflows.`,
      404: 'No such workflow in the team.',
      413: 'The body is larger than 256 KiB, or the version would not fit one stored item.',
      422:
        'An unknown node type, or a graph failing validation (repeated step key, input naming no step, ...), or ' +
        "(`owner_changed`) an `agentId` or `projectId` that is not the workflow's own.",
    },
  },
  {
    operationId: 'SetWorkflowStatus',
    tag: 'Workflows',
    summary: "Set a workflow's status",
    description:
      "Our design. Sets the workflow's `status` (`draft`, `active` or `archived`) and answers its summary. An " +
      "archived workflow starts no run (the run start's 422 with the issue `workflow_archived`); its runs and " +
      'versions stay readable, and setting `draft` or `active` opens it again.',
    parameters: [workflowPath],
    requestBody: { required: true, content: { 'application/json': { schema: ref('SetWorkflowStatusRequest') } } },
    responses: {
      200: jsonResponse('The workflow, with its new status.', 'WorkflowSummary'),
      500: jsonResponse('Server failure.', 'ServerError'),
    },
    errorWords: {
      400: 'A body that is not JSON, or a `status` that is not `draft`, `active` or `archived`.',
      403: `The key lacks \`${scopeOf('SetWorkflowStatus')}\`, or is limited to other workflows.`,
      404: 'No such workflow in the team.',
      413: 'The body is larger than 1 KiB.',
    },
  },
  {
    operationId: 'ListWorkflowVersions',
    tag: 'Workflows',
    summary: "List a workflow's versions",
    description:
      "Our design. The workflow's versions, newest first, a page at a time (as the run lists): number, name, " +
      'step count and when each was made. A workflow made before versions has one, version 1.',
    parameters: [
      workflowPath,
      {
        name: 'limit',
        in: 'query',
        required: false,
        description: 'The most versions on the page.',
        schema: { type: 'integer', minimum: 1, maximum: listPageLimits.max, default: listPageLimits.default },
      },
      {
        name: 'cursor',
        in: 'query',
        required: false,
        description: 'The `nextCursor` of the previous page, unchanged.',
        schema: { type: 'string' },
      },
    ],
    responses: { 200: jsonResponse('A page of versions.', 'ListWorkflowVersionsResponse') },
    errorWords: {
      400: '`limit` is not a whole number from 1 to 100, or `cursor` is not a `nextCursor` of this list.',
      404: 'No such workflow in the team, or one outside the workflows the key is limited to.',
    },
  },
  {
    operationId: 'GetWorkflowVersion',
    tag: 'Workflows',
    summary: 'Get one version of a workflow',
    description:
      'Our design. One version, whole: its steps as the body that made it gave them (null for the version 1 of a ' +
      'workflow made before versions kept their steps, or for one whose steps would not fit beside its canvas).',
    parameters: [
      workflowPath,
      {
        name: 'version',
        in: 'path',
        required: true,
        description: 'The version number, from 1.',
        schema: { type: 'integer', minimum: 1 },
      },
    ],
    responses: { 200: jsonResponse('The version.', 'WorkflowVersion') },
    errorWords: {
      404: 'No such workflow in the team (or outside the workflows the key is limited to), or no such version.',
    },
  },
];
