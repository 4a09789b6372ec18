/**
 * What a run of a workflow takes as its `inputs`, as a JSON Schema (2020-12): one property per
 * `config.apiInputKey`, typed by its step's run input (functions/nodes/catalogue/node-spec.ts,
 * `acceptsApiInputKey`): a text, or a file given as a `fileId` or an https URL of the types the step
 * reads. A key is required when its step is a loader left with nothing else to load
 * (functions/domain/loader-inputs.ts), and no other key is allowed; no inputs at all when a loader
 * has nothing to load and no key (every start is refused). The run start checks its inputs
 * by the same rules (functions/app/start-run.ts, functions/app/run-inputs.ts);
 * test/workflow-inputs.test.ts holds the two equal. GET /workflows/{id} answers it as `inputs`, and
 * an agent's tool takes it as its `inputSchema`.
 */
import { fileIdPattern } from '../../schemas/file-limits.ts';
import type { Canvas, CanvasNode } from '../nodes/catalogue/canvas.ts';
import { getNodeSpec } from '../nodes/catalogue/index.ts';
import { fileInputTypes } from '../nodes/catalogue/node-spec.ts';
import { loadersWithoutValue } from './loader-inputs.ts';
import { apiInputTargets } from './workflow-graph.ts';

/** The JSON Schema dialect of the answer. */
export const jsonSchemaDialect = 'https://json-schema.org/draft/2020-12/schema';

/**
 * An https URL as the start reads one: no space, no credentials before the host (a URL whose host
 * does not resolve, or resolves to a private address, is refused only when the start resolves it).
 */
export const httpsUrlPattern = '^https://[^\\s/?#@]+([/?#][^\\s]*)?$';

/** One run input's schema: a string, a text or a file reference. */
export interface InputPropertySchema {
  type: 'string';
  description: string;
  /** A text input's value when the run gives none (the step's own text or template). */
  default?: string;
  /** A file input: a `fileId` or an https URL. */
  anyOf?: { title: string; pattern: string }[];
  /** A file input: the content types its step reads (an annotation: the start checks the upload's type). */
  'x-contentTypes'?: string[];
}

/** The schema of a workflow's run inputs. */
export interface WorkflowInputsSchema {
  $schema: typeof jsonSchemaDialect;
  type: 'object';
  properties: Record<string, InputPropertySchema>;
  required: string[];
  additionalProperties: false;
  /** Only when no inputs can make a run start (a loader with nothing to load and no key): why. */
  description?: string;
  /** With `description`: the schema no value satisfies, as no start is accepted. */
  not?: Record<string, never>;
}

/** Whether the run must give `node`'s input: a loader with nothing else to load (the start's own rule). */
const needsInput = (node: CanvasNode): boolean => loadersWithoutValue({ nodes: [node], edges: [] }, {}).length > 0;

const propertyOf = (node: CanvasNode): InputPropertySchema | undefined => {
  const spec = getNodeSpec(node.type);
  if (!spec?.acceptsApiInputKey) return undefined;
  const step = `step "${node.id}" (${node.type})`;
  const types = fileInputTypes(spec);
  if (types) {
    return {
      type: 'string',
      description: `A file for ${step}: a fileId from POST /files, or an https URL; of type ${types.join(', ')}.`,
      anyOf: [
        { title: 'fileId', pattern: fileIdPattern.source },
        { title: 'https URL', pattern: httpsUrlPattern },
      ],
      'x-contentTypes': [...types],
    };
  }
  const own = node.type === 'PromptBuilder' ? node.config.template : node.config.text;
  return {
    type: 'string',
    description:
      node.type === 'PromptBuilder' ? `The prompt template of ${step}.` : `The text of ${step}, used as it is.`,
    ...(typeof own === 'string' && { default: own }),
  };
};

/**
 * The JSON Schema of the `inputs` a run of `workflow` takes: `type: object`, a property per
 * `config.apiInputKey` (in step order), `required` where its step has nothing else to load, and no
 * other key (a start refuses an unknown one). Pure: the same canvas, the same schema.
 */
export const workflowInputsSchema = (workflow: { canvas: Canvas }): WorkflowInputsSchema => {
  const { canvas } = workflow;
  const properties: Record<string, InputPropertySchema> = {};
  const required: string[] = [];
  for (const [key, nodeId] of apiInputTargets(canvas)) {
    const node = canvas.nodes.find((n) => n.id === nodeId);
    const property = node && propertyOf(node);
    if (!node || !property) continue;
    properties[key] = property;
    if (needsInput(node)) required.push(key);
  }
  // A loader with nothing to load and no key for a run to give one refuses every start: so does the schema.
  const unloadable = loadersWithoutValue(canvas, {}).filter((issue) => issue.code === 'invalid_config');
  return {
    $schema: jsonSchemaDialect,
    type: 'object',
    properties,
    required,
    additionalProperties: false,
    ...(unloadable.length > 0 && {
      description: `No run can start: ${unloadable.map((issue) => issue.message).join('; ')}`,
      not: {},
    }),
  };
};
