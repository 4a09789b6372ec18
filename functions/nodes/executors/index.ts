/**
 * The node executors (DESIGN section 4): one per node type, all 55, by category in the files
 * beside this one. Whoever builds `Deps` builds the lookup once with `createExecutorRegistry`
 * (the deployed step executor over `executorDeps` with its secret store, tests and `npm start` over
 * `executorDepsFromEnv` or their own settings); the step orchestration only reads `deps.executors`.
 */
import type { NodeType } from '../../../schemas/workflow-words.ts';
import type { ExecutorLookup } from '../../deps.ts';
import { type ExecutorDeps, type ExecutorSettings, executorDeps } from './helpers.ts';
import { inputExecutors } from './inputs.ts';
import { jobOutcome } from './jobs.ts';
import { logicExecutors } from './logic.ts';
import { modelExecutors } from './models.ts';
import { outputExecutors } from './outputs.ts';
import type { NodeExecutor, ProviderJobs, StepOutcome } from './types.ts';

/** Every node type's executor, built over `deps`. */
export const createExecutors = (deps: ExecutorDeps): Readonly<Record<NodeType, NodeExecutor>> =>
  ({
    ...inputExecutors(deps),
    ...logicExecutors(deps),
    ...modelExecutors(deps),
    ...outputExecutors(deps),
  }) satisfies Record<NodeType, NodeExecutor>;

/** A lookup over `createExecutors(deps)`; throws for a type that has none (never for a node type). */
export const createExecutorRegistry = (deps: ExecutorDeps): ExecutorLookup => {
  const executors = createExecutors(deps);
  const lookup = (type: NodeType) => {
    const executor = Object.hasOwn(executors, type) ? executors[type] : undefined;
    if (!executor) throw new Error(`No executor for node type ${type}`);
    return executor;
  };
  const { jobProviders } = deps;
  if (!jobProviders) return lookup;
  const jobs: ProviderJobs = {
    provider: jobProviders,
    outcome: (context, output, usage) => jobOutcome(deps, context, output, usage),
    publicBaseUrl: deps.publicBaseUrl,
  };
  return Object.assign(lookup, { jobs });
};

/** The step executor's lookup over its environment and its secret store's provider credentials. */
export const executorRegistryFor = (settings: ExecutorSettings) => createExecutorRegistry(executorDeps(settings));

export { type ExecutorDeps, type ExecutorSettings, executorDeps, executorDepsFromEnv, firstInput } from './helpers.ts';
export type { StepOutcome };
