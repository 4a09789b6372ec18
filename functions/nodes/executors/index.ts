/**
 * The node executors (DESIGN section 4): one per node type, all 55, by category in the files
 * beside this one. `executorFor(type)` uses dependencies configured from env; tests and the
 * orchestrator may build their own registry with `createExecutorRegistry(deps)`.
 */
import type { NodeType } from '../../../schemas/workflows.ts';
import { type ExecutorDeps, executorDepsFromEnv } from './helpers.ts';
import { inputExecutors } from './inputs.ts';
import { logicExecutors } from './logic.ts';
import { modelExecutors } from './models.ts';
import { outputExecutors } from './outputs.ts';
import type { NodeExecutor, StepOutcome } from './types.ts';

/** Every node type's executor, built over `deps`. */
export const createExecutors = (deps: ExecutorDeps): Readonly<Record<NodeType, NodeExecutor>> =>
  ({
    ...inputExecutors(deps),
    ...logicExecutors(deps),
    ...modelExecutors(deps),
    ...outputExecutors(deps),
  }) satisfies Record<NodeType, NodeExecutor>;

/** A lookup over `createExecutors(deps)`; throws for a type that has none (never for the 55). */
export const createExecutorRegistry = (deps: ExecutorDeps): ((type: NodeType) => NodeExecutor) => {
  const executors = createExecutors(deps);
  return (type) => {
    const executor = Object.hasOwn(executors, type) ? executors[type] : undefined;
    if (!executor) throw new Error(`No executor for node type ${type}`);
    return executor;
  };
};

let fromEnv: { env: string; lookup: (type: NodeType) => NodeExecutor } | undefined;

/** The executor of a node type, with providers and HTTP configured from `process.env`. */
export const executorFor = (type: NodeType): NodeExecutor => {
  // Rebuilt when the relevant env changes (tests set it per case); otherwise built once.
  const signature = JSON.stringify(
    Object.entries(process.env).filter(
      ([k]) => /^(SANDBOX_|OPENAI_COMPATIBLE_|PROVIDER_|PYTHON_SANDBOX_)/.test(k) || k === 'ALLOW_PRIVATE_CALLBACKS',
    ),
  );
  if (fromEnv?.env !== signature) fromEnv = { env: signature, lookup: createExecutorRegistry(executorDepsFromEnv()) };
  return fromEnv.lookup(type);
};

export { type ExecutorDeps, executorDepsFromEnv, firstInput } from './helpers.ts';
export { draftMaxTokens, modeSettings } from './models.ts';
export type { StepOutcome };
