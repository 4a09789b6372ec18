/**
 * Secret references: where a secret lives, never the secret. A team connection stores one
 * (`secretsmanager:<name>`, `ssm:/<path>`, or `env:NAME` on the local default), and each provider
 * adapter a stage turns on names one (`PROVIDER_SECRETS`). Pure: parsing and the rules of what a
 * stage may read. The step executor reads them through a `SecretResolver` (`secrets.ts`); every
 * other function has `refusingSecrets`, which checks references but reads nothing.
 */
import { envNames } from '../../../platform/definitions.ts';
import { localStage, metricsServiceName } from '../../../platform/metric-names.ts';
import { connectionSecretPrefixOf, parseSecretRef } from '../../../platform/secret-refs.ts';

/** What a stage may read. */
export interface SecretPolicy {
  /** A deployed stage (`SERVICE_STAGE` set and not `local`): `env:` references are refused. */
  deployed: boolean;
  /**
   * Team connection secrets must be named under this prefix (an SSM parameter under `/` and the
   * prefix). Undefined: a deployed stage's connections must be under some stage's connection prefix.
   */
  connectionPrefix: string | undefined;
}

/** The policy of the function's stage: `SERVICE_STAGE`, `CONNECTION_SECRET_PREFIX`. */
export const secretPolicyFromEnv = (env: NodeJS.ProcessEnv = process.env): SecretPolicy => {
  const stage = env[envNames.stage];
  const prefix = env[envNames.connectionSecretPrefix];
  return {
    deployed: stage !== undefined && stage !== '' && stage !== localStage,
    connectionPrefix: prefix ? prefix : undefined,
  };
};

const anyStageConnections = new RegExp(`^/?${metricsServiceName}/[A-Za-z0-9-]+/connections/.`);

/** Why a team connection may not use `ref` under `policy`; undefined when it may. */
export const connectionRefProblem = (ref: string, policy: SecretPolicy): string | undefined => {
  const parsed = parseSecretRef(ref);
  if (!parsed) return 'a secret reference is secretsmanager:<secret name>, ssm:/<parameter name> or env:<VARIABLE>';
  if (parsed.store === 'env') {
    return policy.deployed
      ? 'env: references are for the local default only; a deployed stage refuses them'
      : undefined;
  }
  if (parsed.name.startsWith('arn:')) return 'name the secret, not its ARN';
  const prefix = policy.connectionPrefix;
  const under =
    prefix === undefined
      ? !policy.deployed || anyStageConnections.test(parsed.name)
      : parsed.name.startsWith(parsed.store === 'ssm' ? `/${prefix}` : prefix);
  if (under) return undefined;
  const where = prefix ?? connectionSecretPrefixOf('<stage>');
  return `team connection secrets must be named under ${parsed.store === 'ssm' ? `/${where}` : where}`;
};

/**
 * A secret that could not be read for a reason that retrying will not change (refused by the
 * stage's policy, missing, not allowed, not in the expected form). Its message names the reference's
 * store and problem, never a value, so it may be shown as a step's error.
 */
export class SecretUnavailableError extends Error {
  override readonly name = 'SecretUnavailableError';
}

/** Reads secrets; only the step executor has one that reaches a secret store. */
export interface SecretResolver {
  /** The stage's rules, also used to check a reference before it is stored (the operators' CLI). */
  readonly policy: SecretPolicy;
  /** The value a team connection's reference names; SecretUnavailableError when it is refused or missing. */
  connectionSecret(ref: string): Promise<string>;
  /** The value of a stage provider's secret (a `PROVIDER_SECRETS` value); SecretUnavailableError when missing. */
  providerSecret(source: string): Promise<string>;
}

/** The resolver of a function that reads no secrets: references are checked, nothing is read. */
export const refusingSecrets = (policy: SecretPolicy): SecretResolver => {
  const refuse = async (): Promise<never> => {
    throw new Error('This function reads no secrets: only the step executor resolves them');
  };
  return { policy, connectionSecret: refuse, providerSecret: refuse };
};
