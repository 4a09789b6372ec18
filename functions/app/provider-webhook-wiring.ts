import type { ExecutorLookup, StepExecutorWiring } from '../deps.ts';
import { jobProvidersFromEnv } from '../nodes/providers/job-providers.ts';
import { secretStoreFromEnv } from '../store/secrets.ts';

/**
 * What only the provider webhook's function adds to its deps (as the step executor adds its own):
 * the secret store (the stage's provider keys, a team's own) and, instead of node executors, the
 * asynchronous providers' adapters that verify the signatures. Its entry point alone imports this.
 */
export const providerWebhookWiring: StepExecutorWiring = {
  secrets: secretStoreFromEnv,
  executors: ({ env, providerSecret }) => {
    const lookup: ExecutorLookup = (type) => {
      throw new Error(`The provider webhook runs no steps (asked for ${type})`);
    };
    return Object.assign(lookup, {
      jobs: {
        provider: jobProvidersFromEnv({ env, providerSecret }),
        outcome: () => Promise.reject(new Error('The provider webhook makes no outputs')),
        publicBaseUrl: undefined,
      },
    });
  },
};
