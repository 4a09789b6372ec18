import { createHash } from 'node:crypto';
import type { NodeType } from '../../../schemas/workflows.ts';
import { type NodeExecutor, type StepContext, StepFailedError, type StepOutcome } from './types.ts';

/** The first value on an input handle, or undefined. */
export const firstInput = (context: StepContext, handle: string): unknown => context.inputs[handle]?.[0];

const firstOutputHandle = (context: StepContext): string => context.spec.outputs[0]?.name ?? 'out';

/** A deterministic stand-in result: same node and inputs, same value. */
const sandbox: NodeExecutor = async (context) => {
  const digest = createHash('sha256')
    .update(JSON.stringify([context.node.type, context.node.config, context.inputs, context.mode]))
    .digest('hex')
    .slice(0, 16);
  const value = { nodeType: context.node.type, digest, mode: context.mode };
  return { outputs: Object.fromEntries(context.spec.outputs.map((h) => [h.name, value])) };
};

const textEntry: NodeExecutor = async (context) => ({
  outputs: { [firstOutputHandle(context)]: context.runInput ?? String(context.node.config.text ?? '') },
});

const jsonLoader: NodeExecutor = async (context) => {
  const source = context.runInput ?? context.node.config.data;
  if (typeof source !== 'string') return { outputs: { [firstOutputHandle(context)]: source ?? null } };
  try {
    return { outputs: { [firstOutputHandle(context)]: JSON.parse(source) as unknown } };
  } catch {
    throw new StepFailedError('JsonLoader: the text is not valid JSON');
  }
};

const executors: Partial<Record<NodeType, NodeExecutor>> = {
  TextEntry: textEntry,
  JsonLoader: jsonLoader,
};

/** The executor of a node type. */
export const executorFor = (type: NodeType): NodeExecutor => executors[type] ?? sandbox;

export type { StepOutcome };
