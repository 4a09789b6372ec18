import type { StepExecutorWiring } from '../deps.ts';
import { executorRegistryFor } from '../nodes/executors/index.ts';
import { secretStoreFromEnv } from '../store/secrets.ts';

/**
 * What only the step executor adds to its deps: its secret store and node executors, built from
 * the environment. Its entry point alone imports this, so no other bundle carries them.
 */
export const stepExecutorWiring: StepExecutorWiring = { secrets: secretStoreFromEnv, executors: executorRegistryFor };
