/**
 * Secret references, parsed: where a secret lives, never the secret. Read by the stack (which
 * secrets a stage's step executor may read: `lib/stages.ts`, `lib/grants.ts`) and by the runtime
 * (`functions/nodes/providers/secret-refs.ts`, the rules of what a stage may read, and `secrets.ts`). Pure.
 */
import { metricsServiceName } from './metric-names.ts';

/** The stores a reference may name. */
export type SecretStore = 'env' | 'secretsmanager' | 'ssm';

/** A store and the name in it: variable name, Secrets Manager secret name (or ARN), or SSM parameter name (`/…`). */
export type SecretRef = { [S in SecretStore]: { store: S; name: string } }[SecretStore];

/** Team connection secrets of a stage are named under `workflow-run-api/<stage>/connections/`. */
export const connectionSecretPrefixOf = (stage: string) => `${metricsServiceName}/${stage}/connections/`;

const patterns: Record<SecretStore, RegExp> = {
  env: /^[A-Za-z_][A-Za-z0-9_]*$/,
  // Secrets Manager names: letters, digits and /_+=.@-, at most 512; or a full secret ARN.
  secretsmanager:
    /^(?:[A-Za-z0-9/_+=.@-]{1,512}|arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:[A-Za-z0-9/_+=.@-]+)$/,
  // SSM parameter names: a path of letters, digits and _.-/, at most 1011 characters after the `/`.
  ssm: /^\/[A-Za-z0-9_./-]{1,1011}$/,
};

/** `env:NAME`, `secretsmanager:<name or ARN>` or `ssm:/<path>`; undefined when it is none of them. */
export const parseSecretRef = (ref: string): SecretRef | undefined => {
  const colon = ref.indexOf(':');
  if (colon < 0) return undefined;
  const store = ref.slice(0, colon);
  const name = ref.slice(colon + 1);
  if (store !== 'env' && store !== 'secretsmanager' && store !== 'ssm') return undefined;
  if (!patterns[store].test(name) || name.split('/').includes('..')) return undefined;
  return { store, name };
};

/**
 * Where a stage provider's credentials live (a `PROVIDER_SECRETS` value): `ssm:/<path>`, or a
 * Secrets Manager secret name or ARN (with or without `secretsmanager:`).
 */
export const parseProviderSecret = (source: string): SecretRef | undefined => {
  const ref = parseSecretRef(source);
  if (ref) return ref.store === 'env' ? undefined : ref;
  return patterns.secretsmanager.test(source) ? { store: 'secretsmanager', name: source } : undefined;
};
