/**
 * The node catalogue (DESIGN section 4): one entry per node type of spec section 2.2, as data.
 * Entries live by category in the neighbouring files; this one joins them and answers lookups.
 */
import { type NodeType, nodeTypes } from '../../../schemas/workflow-words.ts';
import { deliveryNodes } from './delivery.ts';
import { inputNodes, resourceNodes } from './inputs.ts';
import { logicNodes } from './logic.ts';
import { modelNodes } from './models.ts';
import type { NodeSpec } from './node-spec.ts';
import { outputNodes } from './outputs.ts';
import { stageNodes } from './stages.ts';

export { canConnect, type ValueKind, valueKinds } from './kinds.ts';
export {
  type HandleSpec,
  type ModelSpec,
  type NodeCategory,
  type NodePrice,
  type NodeSpec,
  nodeCategories,
} from './node-spec.ts';

const entries: Record<NodeType, NodeSpec> = {
  ...stageNodes,
  ...resourceNodes,
  ...modelNodes,
  ...inputNodes,
  ...logicNodes,
  ...outputNodes,
  ...deliveryNodes,
};

/** Every node type's entry, keyed (and ordered) as `nodeTypes`. */
export const catalogue: Readonly<Record<NodeType, NodeSpec>> = Object.freeze(
  Object.fromEntries(nodeTypes.map((type) => [type, entries[type]])) as Record<NodeType, NodeSpec>,
);

/** The entry of a node type; `undefined` for a string that is not a node type. */
export function getNodeSpec(type: NodeType): NodeSpec;
export function getNodeSpec(type: string): NodeSpec | undefined;
export function getNodeSpec(type: string): NodeSpec | undefined {
  return Object.hasOwn(catalogue, type) ? catalogue[type as NodeType] : undefined;
}
