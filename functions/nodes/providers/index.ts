/**
 * Providers: one interface (types.ts), the registry of licence facts and integration levels
 * (registry.ts), and `resolveProvider`, which builds the adapter a step runs on.
 */
import { createOpenAiCompatibleProvider, openAiCompatibleOptionsFromEnv } from './openai-compatible.ts';
import { providerEntry } from './registry.ts';
import { createSandboxProvider, sandboxOptionsFromEnv } from './sandbox.ts';
import type { Provider, TeamConnection } from './types.ts';

export * from './openai-compatible.ts';
export * from './registry.ts';
export * from './sandbox.ts';
export * from './types.ts';

/** Builds the provider for a key, given the team's own connection for it when there is one. */
export type ProviderResolver = (key: string, connection: TeamConnection | undefined) => Provider | undefined;

/**
 * The default resolver, configured from env: `sandbox` (`SANDBOX_LATENCY_MS`), `openai-compatible`
 * (`OPENAI_COMPATIBLE_BASE_URL`, `OPENAI_COMPATIBLE_API_KEY`; a team connection's secret and
 * endpoint win), and the registry's other providers over the same protocol, on the team's own key
 * (their base URL is the connection's endpoint, else the registry's; env
 * `PROVIDER_<KEY>_BASE_URL`, e.g. `PROVIDER_BYOK_Y_BASE_URL`, overrides it for tests).
 * Unknown keys resolve to undefined.
 */
export const providerResolverFromEnv = (env: NodeJS.ProcessEnv = process.env): ProviderResolver => {
  const sandbox = createSandboxProvider(sandboxOptionsFromEnv(env));
  return (key, connection) => {
    const entry = providerEntry(key);
    if (!entry) return undefined;
    if (entry.protocol === 'sandbox') return sandbox;
    const fromEnv = openAiCompatibleOptionsFromEnv(env);
    if (key === 'openai-compatible') {
      return createOpenAiCompatibleProvider({
        ...fromEnv,
        baseUrl: connection?.endpoint ?? fromEnv.baseUrl,
        apiKey: connection?.secret ?? fromEnv.apiKey,
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
