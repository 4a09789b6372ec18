/**
 * Providers: one interface (types.ts), the registry of licence facts and integration levels
 * (registry.ts), the stage's providers (stage.ts), and `createProviderResolver`, which builds the
 * adapter a step runs on.
 */

import { providerEntry } from '../../../platform/providers.ts';
import { createBedrockProvider } from './bedrock.ts';
import { createOpenAiCompatibleProvider, openAiCompatibleOptionsFromEnv } from './openai-compatible.ts';
import { createSandboxProvider, sandboxOptionsFromEnv } from './sandbox.ts';
import type { Provider, ProviderCredentials, TeamConnection } from './types.ts';

export * from './openai-compatible.ts';
export * from './registry.ts';
export * from './sandbox.ts';
export * from './stage.ts';
export * from './types.ts';

/**
 * Builds the provider for a key, given the team's own connection for it when the step runs on the
 * team's key (`routeProvider` decides). Async: a stage's credentials are read on first use.
 */
export type ProviderResolver = (key: string, connection: TeamConnection | undefined) => Promise<Provider | undefined>;

export interface ProviderResolverOptions {
  /** `SANDBOX_LATENCY_MS`, `OPENAI_COMPATIBLE_*` (timeouts, default models; credentials locally), `PROVIDER_<KEY>_BASE_URL`. */
  env: NodeJS.ProcessEnv;
  /**
   * The stage's own credentials for a provider it turned on (`PROVIDER_SECRETS`), read from the
   * secret store when a step first needs them (the store caches them). Undefined on the local
   * default: `openai-compatible` then takes `OPENAI_COMPATIBLE_BASE_URL` and `OPENAI_COMPATIBLE_API_KEY`.
   */
  stageCredentials?: (key: string) => Promise<ProviderCredentials | undefined>;
}

/**
 * The resolver: `sandbox` (`SANDBOX_LATENCY_MS`); `bedrock` (the region's, `AWS_ENDPOINT_URL_BEDROCK_RUNTIME`
 * points it at a stand-in); `openai-compatible` on the stage's credentials
 * (the secret store's, or env locally), a team connection's secret and endpoint winning; and the
 * registry's other providers over the same protocol, on the team's own key (their base URL is the
 * connection's endpoint, else the registry's; env `PROVIDER_<KEY>_BASE_URL`, e.g.
 * `PROVIDER_BYOK_Y_BASE_URL`, overrides it for tests). Unknown keys resolve to undefined.
 */
export const createProviderResolver = (options: ProviderResolverOptions): ProviderResolver => {
  const { env, stageCredentials } = options;
  const sandbox = createSandboxProvider(sandboxOptionsFromEnv(env));
  const fromEnv = openAiCompatibleOptionsFromEnv(env);
  // Bedrock in the stage's own account: the function's role is the credential (no key, no team's).
  let bedrock: Provider | undefined;
  return async (key, connection) => {
    const entry = providerEntry(key);
    if (!entry) return undefined;
    if (entry.protocol === 'sandbox') return sandbox;
    if (entry.protocol === 'bedrock') {
      bedrock ??= createBedrockProvider({ region: env.AWS_REGION });
      return bedrock;
    }
    // Jobs (Replicate, fal) are the step executor's to submit (job-providers.ts), never called here.
    if (entry.protocol === 'replicate' || entry.protocol === 'fal') return undefined;
    if (key === 'openai-compatible') {
      // The stage's base URL is needed unless the team's connection names its own.
      const stage =
        connection?.endpoint !== undefined
          ? undefined
          : stageCredentials
            ? await stageCredentials(key)
            : { apiKey: fromEnv.apiKey, baseUrl: fromEnv.baseUrl };
      return createOpenAiCompatibleProvider({
        ...fromEnv,
        baseUrl: connection?.endpoint ?? stage?.baseUrl,
        apiKey: connection ? connection.secret : stage?.apiKey,
      });
    }
    const envBase = env[`PROVIDER_${key.toUpperCase().replace(/[^A-Z0-9]/g, '_')}_BASE_URL`];
    return createOpenAiCompatibleProvider({
      ...fromEnv,
      key,
      baseUrl: connection?.endpoint ?? envBase ?? entry.baseUrl,
      apiKey: connection?.secret,
    });
  };
};

/** The local default's resolver: every credential from `env` (see `createProviderResolver`). */
export const providerResolverFromEnv = (env: NodeJS.ProcessEnv = process.env): ProviderResolver =>
  createProviderResolver({ env });
