/**
 * Workflows (spec sections 2.1, 2.2, 4.1, 4.2): the list, the create request and its answers.
 * Requests use `v.object` (unknown fields are ignored and stripped), never taking an array for
 * one (`notArray`), and no string that names something may be empty (`NameStringSchema`);
 * responses use `v.strictObject` (exactly the documented fields).
 */
import * as v from 'valibot';
import { scopeOf } from '../platform/routes.ts';
import { DateTimeSchema, NameStringSchema, notArray, UuidSchema } from './common.ts';
import { messages } from './error-messages.ts';
import { jsonResponse, type OperationSpec, ref } from './openapi-parts.ts';
import { nodeTypes, stepKeyPattern, stepKeyRule, WorkflowStatusSchema } from './workflow-words.ts';

/** Element of the workflow list (spec 2.1): every field present, some null. */
export const WorkflowSummarySchema = v.strictObject({
  /** Passed to Run a workflow. */
  id: UuidSchema,
  name: v.string(),
  description: v.nullable(v.string()),
  status: v.nullable(WorkflowStatusSchema),
  updated_at: v.nullable(DateTimeSchema),
});
export type WorkflowSummary = v.InferOutput<typeof WorkflowSummarySchema>;

/** 200 of GET /workflows: all of them, newest change first, no pagination. */
export const ListWorkflowsResponseSchema = v.strictObject({ workflows: v.array(WorkflowSummarySchema) });
export type ListWorkflowsResponse = v.InferOutput<typeof ListWorkflowsResponseSchema>;

/** The pattern, for the document only (see `stepKeyPattern`). */
const documentedKey = (description: string) =>
  v.pipe(NameStringSchema, v.metadata({ pattern: stepKeyPattern.source, description }));

/** A connection into a step; a handle left out means the node's first one. */
export const WorkflowStepInputSchema = notArray(
  v.object({
    /** The `key` of the step to connect from. */
    from: NameStringSchema,
    /** Output handle on that step. */
    sourceHandle: v.optional(NameStringSchema),
    /** Input handle on this step. */
    targetHandle: v.optional(NameStringSchema),
  }),
);
export type WorkflowStepInput = v.InferOutput<typeof WorkflowStepInputSchema>;

/**
 * The node's settings: free-form, since its fields depend on the node type. A loose object so
 * every setting is kept, not stripped.
 */
export const WorkflowStepConfigSchema = notArray(
  v.looseObject({
    apiInputKey: v.optional(
      documentedKey(
        `On a TextEntry or PromptBuilder step: the \`inputs\` key a run uses to replace the step's value; on an ImageLoader, FileUploader, RigImporter or JsonLoader step: the \`inputs\` key whose \`fileId\` or https URL the step reads (${stepKeyRule}).`,
      ),
    ),
  }),
);
export type WorkflowStepConfig = v.InferOutput<typeof WorkflowStepConfigSchema>;

/**
 * Element of `steps` in Create a workflow (spec 2.2). `type` is any string here, so that an
 * unknown one reaches the handler and gets the spec's 422 `Unknown node type: <type>`; the
 * OpenAPI document still lists the values.
 */
export const WorkflowStepSchema = notArray(
  v.object({
    key: documentedKey(`Unique within the request; other steps refer to it in \`inputs\` (${stepKeyRule}).`),
    type: v.pipe(
      v.string(),
      v.minLength(1),
      v.metadata({ description: 'Node type; one of the values listed.', enum: [...nodeTypes] }),
    ),
    /** Name shown on the canvas; defaults to the node type's name. */
    label: v.optional(NameStringSchema),
    config: v.optional(WorkflowStepConfigSchema),
    /** A string is a step key: it connects that step's first output to this step's first input. */
    inputs: v.optional(v.array(v.union([NameStringSchema, WorkflowStepInputSchema]))),
  }),
);
export type WorkflowStep = v.InferOutput<typeof WorkflowStepSchema>;

/**
 * Body of POST /workflows. The messages of missing `name`, missing `steps` and the
 * agentId/projectId rule are the spec's 400 messages, so the first issue's message is the body.
 */
const missingFieldMessages: Record<string, string> = {
  name: messages.nameRequired,
  steps: messages.stepsRequired,
};

export const CreateWorkflowRequestSchema = v.pipe(
  notArray(
    v.object(
      {
        name: v.pipe(v.string(messages.nameRequired), v.nonEmpty(messages.nameRequired)),
        steps: v.pipe(v.array(WorkflowStepSchema, messages.stepsRequired), v.minLength(1, messages.stepsRequired)),
        /** Add the workflow to this agent. */
        agentId: v.optional(UuidSchema),
        /** Create a new agent in this project and add the workflow to it. */
        projectId: v.optional(UuidSchema),
        /** Name of the new agent when `projectId` is passed; defaults to `name`. */
        agentName: v.optional(NameStringSchema),
      },
      // A missing key is reported by the object itself, so its message is chosen here.
      (issue) => missingFieldMessages[String(issue.path?.[0]?.key)] ?? issue.message,
    ),
  ),
  v.check(
    (body) => (body.agentId === undefined) !== (body.projectId === undefined),
    messages.exactlyOneOfAgentOrProject,
  ),
  // The check above, for the OpenAPI document: each branch requires its id and forbids the other
  // (`false`), so a client generated from the document types both and neither as errors.
  v.metadata({
    oneOf: [
      { required: ['agentId'], properties: { agentId: true, projectId: false } },
      { required: ['projectId'], properties: { projectId: true, agentId: false } },
    ],
  }),
);
export type CreateWorkflowRequest = v.InferOutput<typeof CreateWorkflowRequestSchema>;

/** 201 of POST /workflows. */
export const CreateWorkflowResponseSchema = v.strictObject({
  workflowId: UuidSchema,
  agentId: UuidSchema,
  projectId: UuidSchema,
  stepsCount: v.pipe(v.number(), v.integer(), v.minValue(1)),
});
export type CreateWorkflowResponse = v.InferOutput<typeof CreateWorkflowResponseSchema>;

/** Codes of a validation issue (our design: the spec leaves the issue shape "not shown"). */
const validationIssueCodes = [
  'invalid_key',
  'duplicate_key',
  'unknown_input',
  'cycle',
  'unknown_handle',
  'incompatible_kinds',
  'missing_required_input',
  'too_many_connections',
  'invalid_config',
  'api_input_key_not_allowed',
  'duplicate_api_input_key',
  'too_many_steps',
  'workflow_archived',
  'owner_changed',
] as const;
const ValidationIssueCodeSchema = v.picklist(validationIssueCodes);
export type ValidationIssueCode = v.InferOutput<typeof ValidationIssueCodeSchema>;

/** One reason a workflow failed validation (element of `errors` in both validation failures). */
export const ValidationIssueSchema = v.strictObject({
  code: ValidationIssueCodeSchema,
  /** The step concerned, or null when the issue is about the whole workflow. */
  key: v.nullable(v.string()),
  /** The handle concerned, when there is one. */
  handle: v.optional(v.string()),
  /** Where in the step, e.g. `config.apiInputKey` or `inputs[1]`. */
  path: v.optional(v.string()),
  message: v.string(),
});
export type ValidationIssue = v.InferOutput<typeof ValidationIssueSchema>;

/** 422 of POST /workflows when the graph fails validation. */
export const WorkflowValidationFailedSchema = v.strictObject({
  error: v.literal(messages.workflowValidationFailed),
  errors: v.pipe(v.array(ValidationIssueSchema), v.minLength(1)),
});
export type WorkflowValidationFailed = v.InferOutput<typeof WorkflowValidationFailedSchema>;

/** The named schemas of the document this module holds; the key is the name under `#/components/schemas/`. */
export const workflowComponents = {
  WorkflowSummary: WorkflowSummarySchema,
  ListWorkflowsResponse: ListWorkflowsResponseSchema,
  WorkflowStepInput: WorkflowStepInputSchema,
  /** Replaced in the document by a `oneOf` of the node types' steps (schemas/openapi.ts). */
  WorkflowStep: WorkflowStepSchema,
  CreateWorkflowRequest: CreateWorkflowRequestSchema,
  CreateWorkflowResponse: CreateWorkflowResponseSchema,
  ValidationIssue: ValidationIssueSchema,
  WorkflowValidationFailed: WorkflowValidationFailedSchema,
};

/** The agent id of the document's examples: the reader puts one of their own (GET /workflows lists them). */
export const exampleAgentId = '7d0c5a8e-3f4b-4c2a-9e1d-6b5a4c3d2e1f';

/**
 * Small, valid workflows as the document's examples of POST /workflows (the reference page fills
 * its form with the first); test/node-types.int.test.ts posts each. Every node type's own step is
 * in GET /node-types.
 */
export const createWorkflowExamples = {
  textChain: {
    summary: 'A run input, a prompt template and an LLM',
    value: {
      name: 'Otter facts',
      agentId: exampleAgentId,
      steps: [
        { key: 'topic', type: 'TextEntry', config: { text: 'otters', apiInputKey: 'topic' } },
        {
          key: 'prompt',
          type: 'PromptBuilder',
          config: { template: 'Write three facts about {{0}}.' },
          inputs: ['topic'],
        },
        { key: 'answer', type: 'LlmWorker', config: { maxTokens: 300 }, inputs: ['prompt'] },
        { key: 'show', type: 'TextConsole', inputs: ['answer'] },
      ],
    },
  },
  python: {
    summary: 'JSON into a Python step',
    value: {
      name: 'Sum in Python',
      agentId: exampleAgentId,
      steps: [
        { key: 'numbers', type: 'JsonLoader', config: { data: [1, 2, 3] } },
        { key: 'sum', type: 'PythonSandbox', config: { code: 'result = sum(inputs[0])' }, inputs: ['numbers'] },
      ],
    },
  },
  image: {
    summary: 'An image from a prompt, cut out',
    value: {
      name: 'Sticker',
      agentId: exampleAgentId,
      steps: [
        { key: 'prompt', type: 'TextEntry', config: { text: 'a red fox, flat colours', apiInputKey: 'prompt' } },
        { key: 'image', type: 'ImageGen', config: { width: 512, height: 512 }, inputs: ['prompt'] },
        { key: 'cutout', type: 'BackgroundRemover', inputs: ['image'] },
      ],
    },
  },
};

/** The operations of the workflow routes, for the document (schemas/openapi.ts). */
export const workflowOperations: OperationSpec[] = [
  {
    operationId: 'ListWorkflows',
    tag: 'Workflows',
    summary: 'List workflows',
    description:
      'Lists the workflows the key can run, newest change first: only the team ones, and if the key is ' +
      'limited to certain workflows, only those. No pagination: all are returned.',
    responses: {
      200: jsonResponse(
        'The workflows; empty when the team has none or the key may run none.',
        'ListWorkflowsResponse',
      ),
    },
  },
  {
    operationId: 'CreateWorkflow',
    tag: 'Workflows',
    summary: 'Create a workflow',
    description:
      'Creates a workflow from a list of steps; the service builds the canvas graph. Exactly one of `agentId` ' +
      '(add it to this agent) and `projectId` (create a new agent in this project) must be given. Keys limited ' +
      'to certain workflows cannot create workflows.',
    requestBody: {
      required: true,
      content: { 'application/json': { schema: ref('CreateWorkflowRequest'), examples: createWorkflowExamples } },
    },
    responses: {
      201: jsonResponse('The workflow was created.', 'CreateWorkflowResponse'),
      500: jsonResponse('Server failure.', 'ServerError'),
    },
    errorWords: {
      400:
        'Missing `name` or `steps`, not exactly one of `agentId` and `projectId`, or a body that is not JSON or ' +
        'has a field of the wrong type.',
      403: `The key lacks \`${scopeOf('CreateWorkflow')}\`, or is limited to certain workflows.`,
      404: 'The agent or project is not in the team.',
      413: 'The body is larger than 256 KiB.',
      422: 'An unknown node type, or a graph failing validation (repeated step key, input naming no step, ...).',
    },
  },
];
