/**
 * The secret store of the step executor (the only function that imports this module, so no other
 * bundle loads these clients): `secretsmanager:` references through Secrets Manager
 * `GetSecretValue`, `ssm:` references through SSM `GetParameter` with decryption (SecureString),
 * and `env:` references from the function's environment on the local default only.
 *
 * Each value is cached per container for `secretCacheMs` (5 minutes), so a busy executor reads a
 * secret about once per 5 minutes per container, and a rotated secret is picked up within that.
 * Values are never logged, never put in an error message (SDK errors carry none), and never
 * returned by the API.
 */
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { GetParameterCommand, SSMClient } from '@aws-sdk/client-ssm';
import { parseProviderSecret, parseSecretRef, type SecretRef } from '../../platform/secret-refs.ts';
import {
  connectionRefProblem,
  type SecretPolicy,
  type SecretResolver,
  SecretUnavailableError,
  secretPolicyFromEnv,
} from '../nodes/providers/secret-refs.ts';

/** How long a secret's value is reused before it is read again. */
export const secretCacheMs = 5 * 60 * 1000;

/**
 * Answers that retrying will not change: the secret or parameter is missing, deleted, not allowed
 * to this role, or cannot be decrypted. Anything else (throttling, a network failure) is thrown as
 * it is, so the step's message is redelivered.
 */
const permanentErrors = new Set([
  'ResourceNotFoundException',
  'AccessDeniedException',
  'DecryptionFailure',
  'InvalidRequestException',
  'InvalidParameterException',
  'ParameterNotFound',
  'ParameterVersionNotFound',
  'InvalidKeyId',
  'ValidationException',
]);

export interface SecretStoreOptions {
  policy: SecretPolicy;
  /** Where `env:` references are read (the local default; refused on a deployed stage). */
  env: Readonly<Record<string, string | undefined>>;
  secretsManager: Pick<SecretsManagerClient, 'send'>;
  ssm: Pick<SSMClient, 'send'>;
  /** The clock the cache expires on (injected so tests move it). */
  now: () => Date;
  /** Default `secretCacheMs`. */
  cacheMs?: number;
}

/** A reference to a secret store (not the environment). */
type StoredRef = Exclude<SecretRef, { store: 'env' }>;

const storeName = { secretsmanager: 'Secrets Manager secret', ssm: 'SSM parameter' } as const;

/** A secret store over the given clients, caching each value for `cacheMs`. */
export const createSecretStore = (options: SecretStoreOptions): SecretResolver => {
  const cacheMs = options.cacheMs ?? secretCacheMs;
  const cache = new Map<string, { value: Promise<string>; expiresAt: number }>();

  const fetchValue = async (ref: StoredRef): Promise<string> => {
    let value: string | undefined;
    try {
      if (ref.store === 'secretsmanager') {
        const answer = await options.secretsManager.send(new GetSecretValueCommand({ SecretId: ref.name }));
        value = answer.SecretString;
      } else {
        const answer = await options.ssm.send(new GetParameterCommand({ Name: ref.name, WithDecryption: true }));
        value = answer.Parameter?.Value;
      }
    } catch (error) {
      const name = (error as Error).name;
      if (permanentErrors.has(name)) throw new SecretUnavailableError(`the ${storeName[ref.store]} answered ${name}`);
      throw error;
    }
    if (value === undefined || value === '') {
      throw new SecretUnavailableError(`the ${storeName[ref.store]} has no text value`);
    }
    return value;
  };

  const read = (ref: SecretRef): Promise<string> => {
    if (ref.store === 'env') {
      if (options.policy.deployed) {
        return Promise.reject(new SecretUnavailableError('env: references are refused on a deployed stage'));
      }
      const value = options.env[ref.name];
      return value
        ? Promise.resolve(value)
        : Promise.reject(new SecretUnavailableError(`the variable ${ref.name} is not set`));
    }
    const id = `${ref.store}:${ref.name}`;
    const now = options.now().getTime();
    const cached = cache.get(id);
    if (cached && cached.expiresAt > now) return cached.value;
    const value = fetchValue(ref);
    cache.set(id, { value, expiresAt: now + cacheMs });
    // A failed read is not remembered: the next step asks again.
    value.catch(() => {
      if (cache.get(id)?.value === value) cache.delete(id);
    });
    return value;
  };

  return {
    policy: options.policy,
    connectionSecret: (ref) => {
      const problem = connectionRefProblem(ref, options.policy);
      const parsed = parseSecretRef(ref);
      if (problem || !parsed)
        return Promise.reject(new SecretUnavailableError(problem ?? 'the reference is malformed'));
      return read(parsed);
    },
    providerSecret: (source) => {
      const parsed = parseProviderSecret(source);
      if (!parsed) return Promise.reject(new SecretUnavailableError('the secret name is malformed'));
      return read(parsed);
    },
  };
};

/**
 * The step executor's store: clients with the SDK's standard configuration (region and
 * credentials from the Lambda environment), the stage's policy, the wall clock.
 */
export const secretStoreFromEnv = (env: NodeJS.ProcessEnv = process.env): SecretResolver =>
  createSecretStore({
    policy: secretPolicyFromEnv(env),
    env: { ...env },
    secretsManager: new SecretsManagerClient({}),
    ssm: new SSMClient({}),
    now: () => new Date(),
  });
