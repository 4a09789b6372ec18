/**
 * The node-type reference (our design): GET /node-types and GET /node-types/{type} answer, for each
 * of the node types, what it does, its handles and their value kinds, its settings, its price and
 * its default model, generated from the node catalogue (functions/docs/node-types.ts). docs/nodes.md
 * is the same reference as a page.
 */
import * as v from 'valibot';
import { jsonResponse, type OperationSpec } from './openapi-parts.ts';
import { nodeTypes } from './workflow-words.ts';

const describedString = (description: string) => v.pipe(v.string(), v.metadata({ description }));

export const NodeTypeInputSchema = v.strictObject({
  name: describedString("The handle's name: a connection's `targetHandle`."),
  kind: describedString(
    'The kind of value it takes: text, number, boolean, json, list, embedding, image, audio, video, mesh, file or any.',
  ),
  required: v.pipe(v.boolean(), v.metadata({ description: 'The step cannot run without a connection here.' })),
  multiple: v.pipe(v.boolean(), v.metadata({ description: 'It takes several connections (else at most one).' })),
});

export const NodeTypeOutputSchema = v.strictObject({
  name: describedString("The handle's name: a connection's `sourceHandle`."),
  kind: describedString('The kind of value it gives.'),
});

export const NodeTypeSettingSchema = v.strictObject({
  name: describedString('The key under the step’s `config`.'),
  type: describedString('Its JSON type: string, integer, number, boolean, object, array, or any.'),
  required: v.boolean(),
  description: v.string(),
  default: v.optional(v.unknown()),
  enum: v.optional(v.array(v.unknown())),
  minimum: v.optional(v.number()),
  maximum: v.optional(v.number()),
  exclusiveMinimum: v.optional(v.number()),
  minLength: v.optional(v.number()),
  maxLength: v.optional(v.number()),
  format: v.optional(v.string()),
});

export const NodeTypeReferenceSchema = v.strictObject({
  type: v.picklist(nodeTypes),
  name: describedString('Its default label.'),
  category: v.picklist(['stage', 'resource', 'input', 'logic', 'model', 'output', 'delivery']),
  description: describedString('What a step of this type does.'),
  inputs: v.array(NodeTypeInputSchema),
  outputs: v.array(NodeTypeOutputSchema),
  settings: v.array(NodeTypeSettingSchema),
  runInput: v.pipe(
    v.nullable(
      v.strictObject({
        kind: v.picklist(['text', 'file']),
        contentTypes: v.optional(v.array(v.string())),
      }),
    ),
    v.metadata({
      description:
        'What a run may give the step through `config.apiInputKey`: a text, or a file of these content types; null: nothing.',
    }),
  ),
  price: v.pipe(
    v.strictObject({
      production: v.pipe(v.number(), v.integer()),
      draft: v.pipe(v.number(), v.integer()),
      formula: v.string(),
    }),
    v.metadata({
      description:
        'In hundredths of a credit (1 credit = $0.01): the rate of one step in `production` (and `preview`) and in `draft` mode, and how a model step’s price follows its work.',
    }),
  ),
  model: v.pipe(
    v.nullable(
      v.strictObject({
        provider: v.string(),
        model: v.string(),
        sandboxModel: v.string(),
        pricedPerRun: v.boolean(),
      }),
    ),
    v.metadata({
      description:
        'A model step’s default provider and model (a stage may pin others; `config.provider` and `config.model` choose for one step), and the offline sandbox model that stands in where that provider is off; null for a step that is no model step.',
    }),
  ),
});
export type NodeTypeView = v.InferOutput<typeof NodeTypeReferenceSchema>;

export const NodeTypeReferenceListSchema = v.strictObject({ nodeTypes: v.array(NodeTypeReferenceSchema) });
export type NodeTypeListView = v.InferOutput<typeof NodeTypeReferenceListSchema>;

export const nodeTypeComponents = {
  NodeTypeReference: NodeTypeReferenceSchema,
  NodeTypeList: NodeTypeReferenceListSchema,
  NodeTypeInput: NodeTypeInputSchema,
  NodeTypeOutput: NodeTypeOutputSchema,
  NodeTypeSetting: NodeTypeSettingSchema,
};

export const nodeTypeOperations: OperationSpec[] = [
  {
    operationId: 'ListNodeTypes',
    tag: 'Node types',
    summary: 'List the node types',
    description:
      'Every node type a workflow step may have, in the catalogue’s order: what it does, its inputs and outputs ' +
      'with their value kinds, its settings with their types, defaults and bounds, its price and its default ' +
      'model. No key needed: it is the same for every caller.',
    responses: { 200: jsonResponse('The node types.', 'NodeTypeList') },
  },
  {
    operationId: 'GetNodeType',
    tag: 'Node types',
    summary: 'Get a node type',
    description: 'One node type’s reference, as the list gives it. No key needed.',
    parameters: [
      {
        name: 'type',
        in: 'path',
        required: true,
        description: 'The node type, e.g. `PromptBuilder`.',
        schema: { type: 'string', enum: [...nodeTypes] },
      },
    ],
    responses: {
      200: jsonResponse('The node type.', 'NodeTypeReference'),
      404: {
        description: 'No such node type.',
        content: {
          'application/json': { schema: { type: 'object', properties: { message: { type: 'string' } } } },
        },
      },
    },
  },
];
