/** Stage nodes: markers that group a workflow into phases and pass whatever they get along. */
import * as v from 'valibot';
import type { NodeType } from '../../../schemas/workflow-words.ts';
import { flatPrice, type NodeSpec } from './node-spec.ts';

const stage = (type: NodeType, displayName: string): NodeSpec => ({
  type,
  displayName,
  category: 'stage',
  // Not required: an InputStage is usually the first node and reads from nothing.
  inputs: [{ name: 'in', kind: 'any', multiple: true }],
  outputs: [{ name: 'out', kind: 'any' }],
  configSchema: v.object({ description: v.optional(v.string()) }),
  minimalConfig: {},
  acceptsApiInputKey: false,
  model: null,
  price: flatPrice(1),
});

export const stageNodes = {
  InputStage: stage('InputStage', 'Input stage'),
  ProcessingStage: stage('ProcessingStage', 'Processing stage'),
  ExportStage: stage('ExportStage', 'Export stage'),
} satisfies Partial<Record<NodeType, NodeSpec>>;
