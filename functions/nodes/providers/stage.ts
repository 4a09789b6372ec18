/**
 * The providers of the stage a function runs in: which adapters it turned on with its own
 * credentials, and whether model steps without one run on the offline sandbox. A deployed stage
 * says so in `PROVIDER_SECRETS` and `SANDBOX_PROVIDERS` (lib/stages.ts), and may pin a node type's
 * default model in `MODEL_DEFAULTS` (locally too); the local default has no
 * `PROVIDER_SECRETS`, takes `openai-compatible` from `OPENAI_COMPATIBLE_BASE_URL`, and is a sandbox
 * stage unless `SANDBOX_PROVIDERS=false`.
 */
import { envNames } from '../../../platform/definitions.ts';
import { type ModelDefaults, parseModelDefaults } from '../../../platform/model-defaults.ts';
import { openPaidModels, type PaidModels, parsePaidModels } from '../../../platform/paid-models.ts';
import { type IntegrationLevel, integrationLevels } from '../../../platform/providers.ts';
import { isRecord } from '../../is-record.ts';

export interface StageProviders {
  /** Provider adapters the stage runs on its own credentials (`PROVIDER_SECRETS` keys). */
  configured: readonly string[];
  /** Model steps whose provider the stage has not configured (nor the team's own key) run on the sandbox. */
  sandbox: boolean;
  /**
   * Provider key → where its credentials live (a Secrets Manager secret name or ARN, or `ssm:/path`);
   * undefined on the local default, whose credentials come from the environment.
   */
  secrets: Readonly<Record<string, string>> | undefined;
  /** The stage's AWS Region (`AWS_REGION`): a model whose licence excludes it is refused there. */
  region?: string | undefined;
  /** Integration levels the stage sets on providers (`PROVIDER_LEVELS`, from `-c providerLevels`). */
  levels?: Readonly<Record<string, IntegrationLevel>> | undefined;
  /**
   * The model a step of a node type runs when it names none, in place of the catalogue's
   * (`MODEL_DEFAULTS`, from `-c modelDefaults`); a type not in it keeps the catalogue's.
   */
  modelDefaults?: ModelDefaults | undefined;
  /**
   * The models the stage pays for on its own keys and their prices (`PAID_MODELS`, from
   * `-c paidModels`); unset: open, any model at its node type's price.
   */
  paidModels?: PaidModels | undefined;
}

/**
 * The local default's providers, from its environment: `openai-compatible` with
 * `OPENAI_COMPATIBLE_BASE_URL`, `replicate` and `fal` with `PROVIDER_<KEY>_API_KEY`, `bedrock` with
 * `AWS_ENDPOINT_URL_BEDROCK_RUNTIME` (a stand-in) or `PROVIDER_BEDROCK=on` (the account's own).
 */
const localProviders = (env: NodeJS.ProcessEnv): string[] => [
  ...(env.OPENAI_COMPATIBLE_BASE_URL ? ['openai-compatible'] : []),
  ...(env.AWS_ENDPOINT_URL_BEDROCK_RUNTIME || env.PROVIDER_BEDROCK === 'on' ? ['bedrock'] : []),
  ...(env.PROVIDER_REPLICATE_API_KEY ? ['replicate'] : []),
  ...(env.PROVIDER_FAL_API_KEY ? ['fal'] : []),
];

/** `PROVIDER_LEVELS`: JSON of provider key to integration level; anything else is a deployment error. */
const levelsFromEnv = (raw: string | undefined): Record<string, IntegrationLevel> | undefined => {
  if (raw === undefined || raw === '') return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    parsed = undefined;
  }
  if (!isRecord(parsed) || Object.values(parsed).some((l) => !(integrationLevels as readonly unknown[]).includes(l))) {
    throw new Error(`${envNames.providerLevels} must be a JSON object of provider keys to integration levels`);
  }
  return parsed as Record<string, IntegrationLevel>;
};

/**
 * The stage's providers from `PROVIDER_SECRETS`, `SANDBOX_PROVIDERS`, `PROVIDER_LEVELS`,
 * `MODEL_DEFAULTS` and, locally, `OPENAI_COMPATIBLE_BASE_URL`.
 */
export const stageProvidersFromEnv = (env: NodeJS.ProcessEnv = process.env): StageProviders => {
  const raw = env[envNames.providerSecrets];
  let secrets: Record<string, string> | undefined;
  if (raw !== undefined && raw !== '') {
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch {
      parsed = undefined;
    }
    if (!isRecord(parsed) || Object.values(parsed).some((value) => typeof value !== 'string' || value === '')) {
      throw new Error(`${envNames.providerSecrets} must be a JSON object of provider keys to secret names`);
    }
    secrets = parsed as Record<string, string>;
  }
  const bedrock = env[envNames.bedrockModels] ? ['bedrock'] : [];
  return {
    configured: [...new Set([...(secrets ? Object.keys(secrets) : []), ...localProviders(env), ...bedrock])],
    sandbox: env[envNames.sandboxProviders] !== 'false',
    secrets,
    region: env.AWS_REGION,
    levels: levelsFromEnv(env[envNames.providerLevels]),
    // Malformed, it throws at the function's start: a deployment error, as the other settings.
    modelDefaults: env[envNames.modelDefaults]
      ? parseModelDefaults(env[envNames.modelDefaults], envNames.modelDefaults)
      : undefined,
    // Unset: open, any model at its node type's price (dev's and the local default's).
    ...(env[envNames.paidModels] && {
      paidModels: parsePaidModels(env[envNames.paidModels], envNames.paidModels, openPaidModels),
    }),
  };
};
