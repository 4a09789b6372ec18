/**
 * The adapters of the asynchronous providers (Replicate, fal) a step's job runs on: the stage's own
 * (its credentials from the secret store on AWS, `PROVIDER_<KEY>_API_KEY` locally), built once and
 * kept (each caches its webhook secret or keys), or a team's own key (its connection's secret and
 * endpoint). `PROVIDER_<KEY>_BASE_URL` (and `PROVIDER_FAL_JWKS_URL`) point the stage's elsewhere.
 */
import { createHash } from 'node:crypto';
import { isJobProtocol, providerEntry } from '../../../platform/providers.ts';
import { createFalProvider, falOptionsFromEnv } from './fal.ts';
import { createReplicateProvider, replicateOptionsFromEnv } from './replicate.ts';
import { SecretUnavailableError } from './secret-refs.ts';
import { type JobProvider, parseProviderCredentials, type TeamConnection } from './types.ts';

export type JobProviderResolver = (
  key: string,
  connection: TeamConnection | undefined,
) => Promise<JobProvider | undefined>;

export interface JobProviderSettings {
  env: NodeJS.ProcessEnv;
  /** Reads a `PROVIDER_SECRETS` value (the secret store's); absent on the local default (env keys). */
  providerSecret?: (source: string) => Promise<string>;
}

/** The stage's secret source of a provider (`PROVIDER_SECRETS`), when it has one. */
const stageSecretSource = (env: NodeJS.ProcessEnv, key: string): string | undefined => {
  const raw = env.PROVIDER_SECRETS;
  if (!raw) return undefined;
  try {
    const sources = JSON.parse(raw) as Record<string, unknown>;
    const source = Object.hasOwn(sources, key) ? sources[key] : undefined;
    return typeof source === 'string' && source !== '' ? source : undefined;
  } catch {
    return undefined;
  }
};

const build = (
  protocol: 'replicate' | 'fal',
  env: NodeJS.ProcessEnv,
  credentials: { apiKey: string | undefined; baseUrl?: string | undefined },
): JobProvider =>
  protocol === 'replicate'
    ? createReplicateProvider({
        ...replicateOptionsFromEnv(env),
        apiKey: credentials.apiKey,
        ...(credentials.baseUrl ? { baseUrl: credentials.baseUrl } : {}),
      })
    : createFalProvider({
        ...falOptionsFromEnv(env),
        apiKey: credentials.apiKey,
        ...(credentials.baseUrl ? { baseUrl: credentials.baseUrl } : {}),
      });

/** A resolver over `settings`; the stage's adapters and each team key's are built once per container. */
export const jobProvidersFromEnv = (settings: JobProviderSettings): JobProviderResolver => {
  const env = { ...settings.env };
  const built = new Map<string, Promise<JobProvider | undefined>>();
  const stage = async (key: string, protocol: 'replicate' | 'fal'): Promise<JobProvider | undefined> => {
    const source = stageSecretSource(env, key);
    if (source === undefined) {
      // The local default: the key from the environment, or no such provider.
      const apiKey = env[`PROVIDER_${key.toUpperCase()}_API_KEY`];
      return apiKey ? build(protocol, env, { apiKey }) : undefined;
    }
    if (!settings.providerSecret)
      throw new SecretUnavailableError(`the stage's credentials for ${key} cannot be read here`);
    const credentials = parseProviderCredentials(await settings.providerSecret(source));
    if (!credentials)
      throw new SecretUnavailableError(`the stage's credentials for ${key} are not JSON with an apiKey`);
    return build(protocol, env, credentials);
  };
  return async (key, connection) => {
    const entry = providerEntry(key);
    if (!entry || !isJobProtocol(entry.protocol)) return undefined;
    const protocol = entry.protocol;
    // A team's adapter is kept under a hash of its key: the key itself is never a map key in memory dumps or logs.
    const id = connection
      ? `team:${key}:${createHash('sha256')
          .update(`${connection.secret}\n${connection.endpoint ?? ''}`)
          .digest('hex')}`
      : `stage:${key}`;
    let adapter = built.get(id);
    if (!adapter) {
      adapter = connection
        ? Promise.resolve(build(protocol, env, { apiKey: connection.secret, baseUrl: connection.endpoint }))
        : stage(key, protocol);
      built.set(id, adapter);
      // A failed read is not kept: the next step tries again.
      adapter.catch(() => built.delete(id));
    }
    return adapter;
  };
};
