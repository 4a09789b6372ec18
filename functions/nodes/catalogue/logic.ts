/** Logic nodes: they run for real inside the service (text, JSON, math, conditions, batching, HTTP, crop). */
import * as v from 'valibot';
import type { NodeType } from '../../../schemas/workflow-words.ts';
import { pythonMaxTimeoutMs } from '../../python/protocol.ts';
import { ApiInputKeySchema, flatPrice, intBetween, type NodeSpec, NonEmptyStringSchema } from './node-spec.ts';

/**
 * A CustomApiCall's own limit ends 5 s before its step's node timeout (25 s,
 * `stepNodeTimeoutSeconds`), leaving time to read and store the answer: past the node timeout the
 * step executor aborts the step and retries it, which a slow receiver would only repeat.
 */
export const httpCallMaxTimeoutMs = 20_000;

const notAModel = { acceptsApiInputKey: false, model: null } as const;

/** Operators of a ConditionalSwitch: `truthy` and `empty` ignore `value`. */
const conditionOperators = ['equals', 'notEquals', 'greaterThan', 'lessThan', 'contains', 'truthy', 'empty'] as const;

export const logicNodes = {
  PromptBuilder: {
    type: 'PromptBuilder',
    displayName: 'Prompt builder',
    category: 'logic',
    inputs: [{ name: 'values', kind: 'any', multiple: true }],
    outputs: [{ name: 'prompt', kind: 'text' }],
    configSchema: v.object({ template: v.optional(v.string()), apiInputKey: v.optional(ApiInputKeySchema) }),
    minimalConfig: {},
    acceptsApiInputKey: 'text',
    model: null,
    price: flatPrice(1),
  },
  JsonExtractor: {
    type: 'JsonExtractor',
    displayName: 'JSON extractor',
    category: 'logic',
    inputs: [{ name: 'json', kind: 'json', required: true }],
    outputs: [{ name: 'value', kind: 'any' }],
    // A JSONPath such as `$.items[0].name`.
    configSchema: v.object({ path: NonEmptyStringSchema }),
    minimalConfig: { path: '$' },
    ...notAModel,
    price: flatPrice(1),
  },
  VariableMapper: {
    type: 'VariableMapper',
    displayName: 'Variable mapper',
    category: 'logic',
    inputs: [{ name: 'values', kind: 'any', multiple: true }],
    outputs: [{ name: 'variables', kind: 'json' }],
    // Variable name → JSONPath into the inputs.
    configSchema: v.object({ mapping: v.optional(v.record(v.string(), v.string())) }),
    minimalConfig: {},
    ...notAModel,
    price: flatPrice(1),
  },
  MathOperator: {
    type: 'MathOperator',
    displayName: 'Math operator',
    category: 'logic',
    inputs: [{ name: 'values', kind: 'number', multiple: true }],
    outputs: [{ name: 'result', kind: 'number' }],
    // Arithmetic over `a`, `b`, … (the connected values in order), e.g. `(a + b) / 2`.
    configSchema: v.object({ expression: v.pipe(v.string(), v.nonEmpty(), v.maxLength(1000)) }),
    minimalConfig: { expression: '1 + 1' },
    ...notAModel,
    price: flatPrice(1),
  },
  ConditionalSwitch: {
    type: 'ConditionalSwitch',
    displayName: 'Conditional switch',
    category: 'logic',
    inputs: [{ name: 'value', kind: 'any', required: true }],
    // The branch not taken is skipped (DESIGN section 4).
    outputs: [
      { name: 'true', kind: 'any' },
      { name: 'false', kind: 'any' },
    ],
    configSchema: v.object({ operator: v.picklist(conditionOperators), value: v.optional(v.unknown()) }),
    minimalConfig: { operator: 'truthy' },
    ...notAModel,
    price: flatPrice(1),
  },
  BatchSplitter: {
    type: 'BatchSplitter',
    displayName: 'Batch splitter',
    category: 'logic',
    inputs: [{ name: 'list', kind: 'json', required: true }],
    outputs: [{ name: 'item', kind: 'any' }],
    configSchema: v.object({ maxItems: v.optional(intBetween(1, 1000)) }),
    minimalConfig: {},
    ...notAModel,
    price: flatPrice(1),
  },
  ImageCropper: {
    type: 'ImageCropper',
    displayName: 'Image cropper',
    category: 'logic',
    inputs: [{ name: 'image', kind: 'image', required: true }],
    outputs: [{ name: 'image', kind: 'image' }],
    configSchema: v.object({
      x: v.optional(intBetween(0, 16_384)),
      y: v.optional(intBetween(0, 16_384)),
      width: v.optional(intBetween(1, 16_384)),
      height: v.optional(intBetween(1, 16_384)),
    }),
    minimalConfig: {},
    ...notAModel,
    price: flatPrice(2),
  },
  MeshDecimator: {
    type: 'MeshDecimator',
    displayName: 'Mesh decimator',
    category: 'logic',
    inputs: [{ name: 'mesh', kind: 'mesh', required: true }],
    outputs: [{ name: 'mesh', kind: 'mesh' }],
    // Share of triangles kept; a geometric algorithm, not a model.
    configSchema: v.object({ ratio: v.optional(v.pipe(v.number(), v.gtValue(0), v.maxValue(1))) }),
    minimalConfig: {},
    ...notAModel,
    price: flatPrice(3),
  },
  CustomApiCall: {
    type: 'CustomApiCall',
    displayName: 'Custom API call',
    category: 'logic',
    inputs: [{ name: 'body', kind: 'json' }],
    outputs: [{ name: 'response', kind: 'json' }],
    configSchema: v.object({
      url: v.pipe(v.string(), v.url()),
      method: v.optional(v.picklist(['GET', 'POST', 'PUT', 'PATCH', 'DELETE'])),
      headers: v.optional(v.record(v.string(), v.string())),
      timeoutMs: v.optional(intBetween(1, httpCallMaxTimeoutMs)),
    }),
    minimalConfig: { url: 'https://example.com/' },
    ...notAModel,
    price: flatPrice(5),
  },
  PythonSandbox: {
    type: 'PythonSandbox',
    displayName: 'Python sandbox',
    category: 'logic',
    inputs: [{ name: 'values', kind: 'any', multiple: true }],
    outputs: [{ name: 'result', kind: 'json' }],
    configSchema: v.object({ code: NonEmptyStringSchema, timeoutMs: v.optional(intBetween(1, pythonMaxTimeoutMs)) }),
    minimalConfig: { code: 'result = inputs' },
    ...notAModel,
    price: flatPrice(5),
  },
  IterationGate: {
    type: 'IterationGate',
    displayName: 'Iteration gate',
    category: 'logic',
    // Collects the items of a batch (or several branches) back into one list.
    inputs: [{ name: 'items', kind: 'any', required: true, multiple: true }],
    outputs: [{ name: 'list', kind: 'json' }],
    configSchema: v.object({ maxItems: v.optional(intBetween(1, 1000)) }),
    minimalConfig: {},
    ...notAModel,
    price: flatPrice(1),
  },
} satisfies Partial<Record<NodeType, NodeSpec>>;
