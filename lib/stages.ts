/**
 * Stages: one deployment of the service per stage, side by side in one account (stack names,
 * tags, metric dimension and alarms all carry the stage). `cdk deploy -c stage=prod` picks one;
 * `dev` is the default. Everything a stage decides is a typed `StageConfig`, built from the stage's
 * defaults below and a few context values (docs/deploy.md lists them).
 */

import { functionMemoryMb, type QueueDefinition, stepsQueue } from '../platform/definitions.ts';
import { metricsServiceName } from '../platform/metric-names.ts';
import {
  catalogueDefaults,
  type ModelDefaults,
  modelNodeTypes,
  parseModelDefaults,
} from '../platform/model-defaults.ts';
import { factsOf, judgeModel, parseFactsDate } from '../platform/model-facts.ts';
import { openPaidModels, type PaidModels, parsePaidModels } from '../platform/paid-models.ts';
import {
  bedrockDefaultModels,
  type IntegrationLevel,
  integrationLevels,
  providerEntry,
} from '../platform/providers.ts';
import { connectionSecretPrefixOf, parseProviderSecret } from '../platform/secret-refs.ts';
import { type DeploySettings, deployContextKeys, parseDeploySettings } from './deploy-settings.ts';
import { domainBaseUrl, type EdgeConfig, edgeConfig } from './edge-config.ts';
import { checkPins } from './stage-pins.ts';

export const stageNames = ['dev', 'prod'] as const;
export type StageName = (typeof stageNames)[number];

/** The service's name: the `service` tag and metric dimension, and the root of secret names. */
export const serviceName = metricsServiceName;

/** Context keys (`cdk deploy -c key=value`). */
export const contextKeys = {
  /** `dev` (default) or `prod`. */
  stage: 'stage',
  /** Stack-name prefix; stacks are `<prefix>-<stage>-Stateful` and `<prefix>-<stage>-Api`. */
  stackPrefix: 'stackPrefix',
  /** `key:secret,key:secret`: the provider adapters that are on, each with its secret (Secrets Manager or `ssm:/…`). */
  providers: 'providers',
  /** `true` or `false`: model steps without a configured provider run on the sandbox provider. */
  sandboxProviders: 'sandboxProviders',
  /** An email address that receives every alarm and its recovery. */
  alarmEmail: 'alarmEmail',
  /** `true`: add the CloudWatch dashboard ($3 a month). */
  dashboard: 'dashboard',
  /** `true`: also alarm on each route function's errors and throttles. */
  perFunctionAlarms: 'perFunctionAlarms',
  /** `true`: X-Ray active tracing on the functions that serve requests and run steps. */
  tracing: 'tracing',
  /** Megabytes of memory of the step executor (128 to 10240); default 512. */
  stepExecutorMemoryMb: 'stepExecutorMemoryMb',
  /**
   * `true`: PythonSandbox runs start from a snapshot of their container's first interpreter (about
   * 0.6 s of cpu a run instead of about 3 s), and share that container's string-hash seed.
   */
  pythonSnapshots: 'pythonSnapshots',
  /**
   * The stage's public base URL (`https://api.example.com`) when an edge or a custom domain fronts
   * it: where asynchronous providers' webhooks are sent. Default: the HTTP API's own endpoint.
   */
  publicBaseUrl: 'publicBaseUrl',
  /**
   * Comma-separated Bedrock model ids the stage may invoke once `providers` names `bedrock`; default:
   * the catalogue's Bedrock defaults (`bedrockDefaultModels`).
   */
  bedrockModels: 'bedrockModels',
  /**
   * `provider:level,…`: integration levels the stage sets on providers (`app_only`, `byok_only`,
   * `not_allowed`, `region_restricted`), barring them further than the registry; default none.
   */
  providerLevels: 'providerLevels',
  /**
   * `NodeType=provider:model,…` (or, from cdk.json, an object `{ NodeType: "provider:model" }`): the
   * model a step of that type runs when it names none, in place of the catalogue's; each provider
   * one `providers` turns on. A Bedrock model named here is granted beside `bedrockModels`.
   */
  modelDefaults: 'modelDefaults',
  /**
   * `provider:model=price,…` (or, from cdk.json, an object `{ "provider:model": price }`): the models
   * the stage pays for on its own provider keys beside the catalogue's and `modelDefaults`' defaults,
   * each at `250` hundredths of a credit a step, `x1.5` the node type's price, or the node type's
   * price; `open` lets any other model run there at the node type's price (dev only). Default:
   * open on dev, closed on prod (platform/paid-models.ts).
   */
  paidModels: 'paidModels',
  /**
   * `YYYY-MM-DD`: the day the enabled defaults' lifecycles are judged on (platform/model-facts.ts);
   * default today. Tests set it; an operator may look ahead (`-c modelFactsDate=2027-03-01`).
   */
  modelFactsDate: 'modelFactsDate',
  /** Whole days run data and output files are kept; overrides the stage's default. */
  retentionDays: 'retentionDays',
  /** Most steps of one team run at once (a whole number from 1); overrides the stage's default. */
  teamStepsInFlight: 'teamStepsInFlight',
  /** The account's Lambda concurrency limit (Service Quotas), which the concurrency alarm takes 80% of; default 1000. */
  accountConcurrencyLimit: 'accountConcurrencyLimit',
  /** Concurrency reserved for the PythonRunner (its most at once); default: the most PythonSandbox steps the step executor runs at once. */
  pythonRunnerReservedConcurrency: 'pythonRunnerReservedConcurrency',
  /** `us-east-1a,us-east-1b`: the availability zones of the PythonRunner's subnets; default the region's first two. */
  pythonRunnerAzs: 'pythonRunnerAzs',
  /**
   * Concurrency reserved for the run stream's function, and the most streams open at once
   * across the stage (a whole number from 1); overrides the stage's default.
   */
  runEventsConcurrency: 'runEventsConcurrency',
  /**
   * In cdk.json: `{ "stages": { "prod": { "account": "…", "providers": "…", "alarmEmail": "…" } } }`,
   * the values a stage is deployed with, so `cdk deploy -c stage=prod` alone repeats them. On dev
   * `-c key=value` wins; prod must pin `requiredPins.prod` there and no `-c` may change a pinned
   * value (lib/stage-pins.ts).
   */
  stages: 'stages',
  /** Safe deploys and restores (lib/deploy-settings.ts): `deployment`, `tableName`, `tableStreamArn`, `backups`. */
  ...deployContextKeys,
} as const;

export const defaultStackPrefix = 'WorkflowRunApi';

/** One provider adapter that is on, and where its credentials live. */
export interface ProviderSecret {
  /** Provider key from the registry (`functions/nodes/providers/registry.ts`), e.g. `openai-compatible`. */
  provider: string;
  /**
   * Where its credentials live: a Secrets Manager secret name (or full ARN), or `ssm:/<name>` for
   * an SSM SecureString parameter (no monthly charge, against $0.40 a secret). The value is JSON
   * `{"apiKey": "...", "baseUrl": "https://..."}` (`baseUrl` optional when the registry has one).
   */
  secretName: string;
}

export interface StageConfig {
  stage: StageName;
  /**
   * Account and region of both stacks: the stage block's pinned `account` and `region` (required on
   * prod, where the CLI's account must match), else the CDK CLI's (`CDK_DEFAULT_ACCOUNT`,
   * `CDK_DEFAULT_REGION`). Both undefined offline on a stage that pins neither: the stacks are then
   * environment-agnostic. Either way `cdk synth` needs no credentials.
   */
  env: { account?: string; region?: string };
  /** Whole US dollars a month of the stage's AWS Budgets budget (lib/budget.ts). dev: 25 unless pinned. */
  monthlyBudgetUsd: number;
  /** Prefix of both stack names. Default `WorkflowRunApi`. */
  stackPrefix: string;
  /**
   * HTTP API default-stage throttling, across all callers: steady requests per second and burst.
   * Each API key may make 60 requests a minute (1 per second), which the functions enforce; this
   * caps the whole stage, so a flood of requests (any keys, or none) cannot run up Lambda and
   * DynamoDB spend. dev: 5/s, burst 10. prod: 50/s (fifty keys at their full rate), burst 100.
   */
  api: { rateLimit: number; burstLimit: number };
  /**
   * Most concurrent invocations each queue's event source starts (2 to 1000). Steps call paid model
   * providers, so this bounds both spend and provider rate limits. dev: 2 each. prod: steps 10
   * (up to 100 steps at once, batches of 10), webhooks 5.
   */
  consumerMaxConcurrency: Record<QueueDefinition['id'], number>;
  /**
   * Whole days run data is kept: DynamoDB `ttl` on runs, steps, deliveries and ended deferred runs,
   * and the library bucket's object expiration. dev: 30. prod: 365. `-c retentionDays=N` overrides.
   */
  retentionDays: number;
  /**
   * Most steps of one team the step executor runs at once (docs/operations.md, "Fair tenants"); a
   * team's step past it waits and is offered again. A fraction of the executor's steps at once
   * (`consumerMaxConcurrency.Steps` batches of 10), so one team's fan-out leaves the rest to others.
   * dev: 10 of 20. prod: 40 of 100. `-c teamStepsInFlight=N` overrides.
   */
  teamStepsInFlight: number;
  /** Days every log group keeps its events (a CloudWatch Logs retention value). dev: 7. prod: 30. */
  logRetentionDays: number;
  /** Receives every alarm and its recovery (SNS email, confirmed once). Default: none. */
  alarmEmail: string | undefined;
  /** The provider adapters that are on. Default: none. */
  providers: readonly ProviderSecret[];
  /**
   * Model steps whose provider is not configured run on the offline sandbox provider, and every
   * run's step outputs say so. Default: true on dev only.
   */
  sandboxProviders: boolean;
  /**
   * Team connection secrets live under this name prefix (Secrets Manager), or under `/` and it (SSM
   * parameters); the step executor may read nothing else. `workflow-run-api/<stage>/connections/`.
   */
  connectionSecretPrefix: string;
  /** Adds the CloudWatch dashboard ($3 a month, the largest idle cost). Default: false. */
  dashboard: boolean;
  /** Adds an errors and a throttles alarm per route function ($0.20 each a month). Default: false. */
  perFunctionAlarms: boolean;
  /**
   * X-Ray active tracing on every function but the dispatcher. Default: false: at X-Ray's default
   * sampling nearly every request and queue invocation is a trace ($5 per million recorded), which
   * would cost more than the rest of a run (docs/decisions.md); `-c tracing=true` turns it on to
   * investigate. The structured logs carry requestId and jobId either way.
   */
  tracing: boolean;
  /**
   * Memory of the step executor in MB (`-c stepExecutorMemoryMb=N`, 128 to 10240). Default 512,
   * as every function: a batch of 10 media steps decodes and stores images at once, and Lambda
   * gives CPU in proportion to memory. Its wait on a provider is billed at this size (10 s at
   * 512 MB: $0.000067), so a stage whose model steps are text can take 256: the bench measured
   * the executor's peak at about 160 MB for a batch of 10 text model steps (docs/operations.md).
   */
  stepExecutorMemoryMb: number;
  /**
   * PythonSandbox runs start from a snapshot of their container's first interpreter instead of a
   * full load each: about 0.6 s of cpu a run instead of about 3 s, but every run in one container
   * has the same string-hash seed (docs/decisions.md). Default: false, a seed per run.
   */
  pythonSnapshots: boolean;
  /**
   * The Bedrock models the step executor may invoke (its role allows exactly these): none unless
   * `-c providers=…` names `bedrock` (no secret: the role is the credential); then `-c bedrockModels`
   * (default: the catalogue's Bedrock defaults) and every Bedrock model `-c modelDefaults` pins.
   */
  bedrockModels: readonly string[];
  /** Integration levels the stage sets on providers (`-c providerLevels`); empty: the registry's. */
  providerLevels: Readonly<Record<string, IntegrationLevel>>;
  /**
   * The stage's own default model per model node type (`-c modelDefaults`), each on a provider the
   * stage turns on; a type not named keeps the catalogue's default. Empty: the catalogue's.
   */
  modelDefaults: ModelDefaults;
  /**
   * The models the stage pays for on its own keys and their prices (`-c paidModels`); open on dev
   * unless given, never open on prod.
   */
  paidModels: PaidModels;
  /**
   * Where the stage is reached from outside (`-c publicBaseUrl`): providers' webhooks and the file
   * links of runs point there; undefined: the HTTP API's endpoint.
   */
  publicBaseUrl: string | undefined;
  /**
   * prod: termination protection on both stacks, deletion protection on the table, and the table,
   * the bucket and the log groups retained when their stack is deleted. dev: none of these;
   * destroying the stage deletes the table, empties and deletes the bucket, and deletes its logs.
   */
  protectData: boolean;
  /**
   * The custom domain, CloudFront and AWS WAF, and the keyless routes' throttles (lib/edge-config.ts).
   * With a domain, `publicBaseUrl` defaults to `https://<domain name>`.
   */
  edge: EdgeConfig;
  /** Traffic shifting of aliased functions, an existing (restored) table, AWS Backup (lib/deploy-settings.ts). */
  deploys: DeploySettings;
  /**
   * What synthesis warns of in the models the stage enables: Legacy, within 90 days of an end of
   * life, or no recorded facts (platform/model-facts.ts). A model its Region does not serve, or past
   * its end of life, fails synthesis instead.
   */
  modelWarnings: readonly string[];
  /**
   * The account's Lambda concurrency limit (`-c accountConcurrencyLimit=N`; AWS's default quota,
   * 1000, when not given): the account concurrency alarm fires above 80% of it.
   */
  accountConcurrencyLimit: number;
  /**
   * Concurrency reserved for the PythonRunner (`-c pythonRunnerReservedConcurrency=N`), which is
   * also its most: tenants' code cannot take the account's pool from the routes and the step
   * executor. Default: the most PythonSandbox steps the step executor can run at once (its queue's
   * most concurrent invocations times its batch of 10: dev 20, prod 100), so the runner's own cap
   * never throttles a step.
   */
  pythonRunnerReservedConcurrency: number;
  /**
   * The availability zones of the PythonRunner's isolated subnets (`-c pythonRunnerAzs=us-east-1a,us-east-1b`),
   * for an account whose zones differ in capacity or where a zone must be avoided; undefined: the
   * region's first two (`Fn::GetAZs`), as before.
   */
  pythonRunnerAzs: readonly string[] | undefined;
  /**
   * The run stream's reserved concurrency (`-c runEventsConcurrency=N`): the most streams
   * open at once on the stage, so its public function URL cannot take the concurrency the step
   * executor and the routes share; a stream past it is throttled (429) and alarmed. Each key also
   * holds at most `streamsPerKey` (platform/run-stream.ts). dev: 10. prod: 100.
   */
  runEventsConcurrency: number;
}

type StageDefaults = Pick<
  StageConfig,
  | 'api'
  | 'consumerMaxConcurrency'
  | 'retentionDays'
  | 'logRetentionDays'
  | 'sandboxProviders'
  | 'protectData'
  | 'teamStepsInFlight'
  | 'runEventsConcurrency'
>;

export const stageDefaults: Readonly<Record<StageName, StageDefaults>> = {
  dev: {
    api: { rateLimit: 5, burstLimit: 10 },
    consumerMaxConcurrency: { Steps: 2, Webhooks: 2 },
    teamStepsInFlight: 10,
    runEventsConcurrency: 10,
    retentionDays: 30,
    logRetentionDays: 7,
    sandboxProviders: true,
    protectData: false,
  },
  prod: {
    api: { rateLimit: 50, burstLimit: 100 },
    consumerMaxConcurrency: { Steps: 10, Webhooks: 5 },
    teamStepsInFlight: 40,
    runEventsConcurrency: 100,
    retentionDays: 365,
    logRetentionDays: 30,
    sandboxProviders: false,
    protectData: true,
  },
};

/** CloudWatch Logs accepts only these retention periods (days). */
const logRetentionValues = [1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557];

const flag = (key: string, value: unknown, fallback: boolean): boolean => {
  if (value === undefined || value === '') return fallback;
  if (value === true || value === 'true') return true;
  if (value === false || value === 'false') return false;
  throw new Error(`context ${key} must be true or false, got ${JSON.stringify(value)}`);
};

/** A Lambda memory size in MB: a whole number from 128 to 10240; `functionMemoryMb` when not given. */
const memoryMb = (key: string, value: unknown): number => {
  if (value === undefined || value === '') return functionMemoryMb;
  const mb = Number(value);
  if (!Number.isInteger(mb) || mb < 128 || mb > 10_240) {
    throw new Error(`context ${key} must be a whole number of MB from 128 to 10240, got ${JSON.stringify(value)}`);
  }
  return mb;
};

/**
 * `key:secret,key:secret` (or, from cdk.json, an object `{ key: secret }`). Each key must be a
 * registry provider reachable through the API with the service's own credentials (level `api`, not
 * the built-in sandbox); each at most once.
 */
export const parseProviders = (value: unknown): ProviderSecret[] => {
  if (value === undefined || value === '') return [];
  const pairs: [string, unknown][] =
    typeof value === 'string'
      ? value
          .split(',')
          .map((part) => part.trim())
          .filter(Boolean)
          .map((part) => {
            const at = part.indexOf(':');
            return at < 0 ? [part, ''] : [part.slice(0, at).trim(), part.slice(at + 1).trim()];
          })
      : typeof value === 'object' && value !== null && !Array.isArray(value)
        ? Object.entries(value)
        : [];
  if (pairs.length === 0)
    throw new Error(`context providers must be key:secretName pairs, got ${JSON.stringify(value)}`);
  const seen = new Set<string>();
  return pairs.map(([provider, secretName]) => {
    const entry = providerEntry(provider);
    if (entry?.level !== 'api' || entry.protocol === 'sandbox') {
      throw new Error(
        `context providers: ${JSON.stringify(provider)} is not a provider the service runs on its own credentials`,
      );
    }
    if (seen.has(provider)) throw new Error(`context providers: ${provider} is given twice`);
    seen.add(provider);
    // Bedrock runs on the function's role in the stage's own account: no secret to name.
    if (entry.protocol === 'bedrock') {
      if (secretName !== '') throw new Error('context providers: bedrock takes no secret (its role is the credential)');
      return { provider, secretName: '' };
    }
    if (typeof secretName !== 'string' || !parseProviderSecret(secretName)) {
      throw new Error(
        `context providers: ${provider} needs a Secrets Manager secret name or ARN, as ${provider}:<name>, ` +
          `or an SSM parameter, as ${provider}:ssm:/<name>`,
      );
    }
    return { provider, secretName };
  });
};

/**
 * The stage's configuration from the app's context and the CDK CLI's environment. Throws on an
 * unknown stage or a malformed value, so a typo fails `cdk synth` instead of deploying a default.
 */
export const stageConfig = (
  appContext: (key: string) => unknown,
  environment: NodeJS.ProcessEnv = process.env,
): StageConfig => {
  const stage = appContext(contextKeys.stage) ?? 'dev';
  if (!stageNames.includes(stage as StageName)) {
    throw new Error(`context stage must be one of ${stageNames.join(', ')}, got ${JSON.stringify(stage)}`);
  }
  const name = stage as StageName;
  const defaults = stageDefaults[name];
  // The stage's own block in cdk.json, under what `-c key=value` (or cdk.json's top level) gives.
  const stored = (appContext(contextKeys.stages) as Record<string, Record<string, unknown> | undefined> | undefined)?.[
    name
  ];
  const context = (key: string) => appContext(key) ?? stored?.[key];
  const pinned = checkPins(name, stored, appContext, environment);

  const alarmEmail = context(contextKeys.alarmEmail);
  if (alarmEmail !== undefined && alarmEmail !== '') {
    if (typeof alarmEmail !== 'string' || !/^[^@\s]+@[^@\s]+$/.test(alarmEmail)) {
      throw new Error(`context alarmEmail must be an email address, got ${JSON.stringify(alarmEmail)}`);
    }
  }

  const retention = context(contextKeys.retentionDays);
  const retentionDays = retention === undefined || retention === '' ? defaults.retentionDays : Number(retention);
  if (!Number.isInteger(retentionDays) || retentionDays < 1) {
    throw new Error(`context retentionDays must be a whole number of days, got ${JSON.stringify(retention)}`);
  }
  const teamCap = context(contextKeys.teamStepsInFlight);
  const teamStepsInFlight = teamCap === undefined || teamCap === '' ? defaults.teamStepsInFlight : Number(teamCap);
  if (!Number.isInteger(teamStepsInFlight) || teamStepsInFlight < 1) {
    throw new Error(`context teamStepsInFlight must be a whole number of steps from 1, got ${JSON.stringify(teamCap)}`);
  }
  if (!logRetentionValues.includes(defaults.logRetentionDays)) {
    throw new Error(`logRetentionDays of ${name} must be one of ${logRetentionValues.join(', ')}`);
  }

  const providers = parseProviders(context(contextKeys.providers));
  // `{}` in a stage block pins the catalogue's defaults on purpose (prod must pin modelDefaults).
  const modelDefaultsValue = context(contextKeys.modelDefaults);
  const modelDefaults = parseModelDefaults(
    isEmptyObject(modelDefaultsValue) ? undefined : modelDefaultsValue,
    'context modelDefaults',
  );
  const turnedOn = new Set(providers.map((p) => p.provider));
  for (const [type, choice] of Object.entries(modelDefaults)) {
    if (!turnedOn.has(choice.provider)) {
      throw new Error(
        `context modelDefaults: ${type}=${choice.provider}:${choice.model} runs on ${choice.provider}, ` +
          `which this stage does not turn on (-c providers)`,
      );
    }
    if (choice.provider === 'bedrock' && !bedrockModelId.test(choice.model)) {
      throw new Error(`context modelDefaults: ${type}=bedrock:${choice.model} is not a Bedrock model id`);
    }
  }
  // A pinned Bedrock default is invoked by every step of its type: the role must allow it, whatever
  // else `-c bedrockModels` names.
  const pinnedBedrock = Object.values(modelDefaults)
    .filter((choice) => choice.provider === 'bedrock')
    .map((choice) => choice.model);
  const modelWarnings = checkEnabledModels(
    modelDefaults,
    turnedOn,
    pinned.env.region,
    factsDate(appContext(contextKeys.modelFactsDate)),
  );
  const paidModels = parsePaidModels(
    context(contextKeys.paidModels),
    'context paidModels',
    name === 'prod' ? { open: false, prices: {} } : openPaidModels,
  );
  // On prod the operator chooses every model its keys pay for: no tenant may name another there.
  if (name === 'prod' && paidModels.open) {
    throw new Error('context paidModels: prod may not leave its list of paid models open (drop "open")');
  }
  for (const key of Object.keys(paidModels.prices)) {
    const provider = key.slice(0, key.indexOf(':'));
    if (!providerEntry(provider)) throw new Error(`context paidModels: ${key} names no provider the registry knows`);
  }
  const edge = edgeConfig(name, context);
  const prefix = context(contextKeys.stackPrefix) ?? defaultStackPrefix;
  if (typeof prefix !== 'string' || !/^[A-Za-z][A-Za-z0-9]*$/.test(prefix)) {
    throw new Error(`context stackPrefix must be letters and digits, got ${JSON.stringify(prefix)}`);
  }

  const accountConcurrencyLimit = wholeNumber(
    contextKeys.accountConcurrencyLimit,
    context(contextKeys.accountConcurrencyLimit),
    1000,
  );
  const runEventsConcurrency = wholeNumber(
    contextKeys.runEventsConcurrency,
    context(contextKeys.runEventsConcurrency),
    defaults.runEventsConcurrency,
  );
  const pythonRunnerReservedConcurrency = wholeNumber(
    contextKeys.pythonRunnerReservedConcurrency,
    context(contextKeys.pythonRunnerReservedConcurrency),
    defaults.consumerMaxConcurrency.Steps * stepsQueue.batchSize,
  );
  // Lambda keeps at least 100 of the account's concurrency unreserved, and refuses a reservation
  // that would take it below.
  if (runEventsConcurrency + pythonRunnerReservedConcurrency > accountConcurrencyLimit - 100) {
    throw new Error(
      `context runEventsConcurrency (${runEventsConcurrency}) and pythonRunnerReservedConcurrency ` +
        `(${pythonRunnerReservedConcurrency}) together must leave 100 of the account's concurrency ` +
        `(${accountConcurrencyLimit}) unreserved`,
    );
  }

  return {
    stage: name,
    env: pinned.env,
    monthlyBudgetUsd: pinned.monthlyBudgetUsd,
    stackPrefix: prefix,
    ...defaults,
    retentionDays,
    teamStepsInFlight,
    alarmEmail: typeof alarmEmail === 'string' && alarmEmail !== '' ? alarmEmail : undefined,
    providers: providers.filter((p) => p.provider !== 'bedrock'),
    bedrockModels: turnedOn.has('bedrock')
      ? [...new Set([...parseBedrockModels(context(contextKeys.bedrockModels)), ...pinnedBedrock])]
      : [],
    sandboxProviders: flag(
      contextKeys.sandboxProviders,
      context(contextKeys.sandboxProviders),
      defaults.sandboxProviders,
    ),
    connectionSecretPrefix: connectionSecretPrefixOf(name),
    dashboard: flag(contextKeys.dashboard, context(contextKeys.dashboard), false),
    perFunctionAlarms: flag(contextKeys.perFunctionAlarms, context(contextKeys.perFunctionAlarms), false),
    tracing: flag(contextKeys.tracing, context(contextKeys.tracing), false),
    stepExecutorMemoryMb: memoryMb(contextKeys.stepExecutorMemoryMb, context(contextKeys.stepExecutorMemoryMb)),
    pythonSnapshots: flag(contextKeys.pythonSnapshots, context(contextKeys.pythonSnapshots), false),
    publicBaseUrl: httpsUrl(contextKeys.publicBaseUrl, context(contextKeys.publicBaseUrl)) ?? domainBaseUrl(edge),
    edge,
    providerLevels: parseProviderLevels(context(contextKeys.providerLevels)),
    modelDefaults,
    paidModels,
    deploys: parseDeploySettings(name, context),
    modelWarnings,
    accountConcurrencyLimit,
    runEventsConcurrency,
    pythonRunnerReservedConcurrency,
    pythonRunnerAzs: availabilityZones(
      contextKeys.pythonRunnerAzs,
      context(contextKeys.pythonRunnerAzs),
      pinned.env.region,
    ),
  };
};

/** The day lifecycles are judged on: `-c modelFactsDate`, else now. */
const factsDate = (value: unknown): Date => {
  if (value === undefined || value === '') return new Date();
  const date = typeof value === 'string' ? parseFactsDate(value) : undefined;
  if (!date) throw new Error(`context modelFactsDate must be a date as YYYY-MM-DD, got ${JSON.stringify(value)}`);
  return date;
};

/**
 * Each model node type's default on this stage (its own pin, else the catalogue's) whose provider
 * the stage turns on, judged against its recorded facts: throws naming every model the stage's
 * Region does not serve or that is past its end of life; answers the warnings (Legacy, near its
 * end of life, no facts recorded).
 */
const checkEnabledModels = (
  modelDefaults: ModelDefaults,
  turnedOn: ReadonlySet<string>,
  region: string | undefined,
  now: Date,
): string[] => {
  const failures: string[] = [];
  const warnings: string[] = [];
  for (const type of modelNodeTypes) {
    const choice = modelDefaults[type] ?? catalogueDefaults[type];
    if (!turnedOn.has(choice.provider)) continue;
    const facts = factsOf(choice.provider, choice.model);
    if (!facts) {
      warnings.push(
        `${type} defaults to ${choice.provider}:${choice.model}, which platform/model-facts.ts does not know: ` +
          'its lifecycle and Regions are not checked',
      );
      continue;
    }
    const verdict = judgeModel(facts, region, now);
    if (verdict.outcome === 'fail') failures.push(`${type}: ${verdict.reason}`);
    if (verdict.outcome === 'warn') warnings.push(`${type}: ${verdict.reason}`);
  }
  if (failures.length > 0) {
    throw new Error(
      `the stage enables models it cannot run (pin others in modelDefaults, docs/models.md):\n${failures.join('\n')}`,
    );
  }
  return [...new Set(warnings)];
};

/** An availability zone's name (`us-east-1a`), never a zone id (`use1-az1`), which differs by account. */
const zoneName = /^[a-z]{2}(-[a-z]+)+-\d[a-z]$/;

/**
 * Availability zone names from the context (`a,b`): distinct, each a zone name, each in the stage's
 * region when it pins one; undefined when not given. Anything else fails `cdk synth`.
 */
const availabilityZones = (key: string, value: unknown, region: string | undefined): string[] | undefined => {
  if (value === undefined || value === '') return undefined;
  const zones =
    typeof value === 'string'
      ? value
          .split(',')
          .map((zone) => zone.trim())
          .filter(Boolean)
      : [];
  const fits = (zone: string) => zoneName.test(zone) && (region === undefined || zone.slice(0, -1) === region);
  if (zones.length === 0 || new Set(zones).size !== zones.length || !zones.every(fits)) {
    const where = region ? ` of ${region}` : '';
    throw new Error(
      `context ${key} must be distinct availability zone names${where}, comma-separated, got ${JSON.stringify(value)}`,
    );
  }
  return zones;
};

const isEmptyObject = (value: unknown) =>
  typeof value === 'object' && value !== null && !Array.isArray(value) && Object.keys(value).length === 0;

/** A whole number of at least 1 from the context, or `fallback` when not given. */
const wholeNumber = (key: string, value: unknown, fallback: number): number => {
  if (value === undefined || value === '') return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1)
    throw new Error(`context ${key} must be a whole number, got ${JSON.stringify(value)}`);
  return n;
};

/** `provider:level,…` from the context: known providers, levels of the contract. */
const parseProviderLevels = (value: unknown): Record<string, IntegrationLevel> => {
  if (value === undefined || value === '') return {};
  const pairs = typeof value === 'string' ? value.split(',').map((part) => part.trim().split(':')) : [];
  const levels: Record<string, IntegrationLevel> = {};
  for (const [provider = '', level = ''] of pairs) {
    if (!providerEntry(provider) || !(integrationLevels as readonly string[]).includes(level)) {
      throw new Error(`context providerLevels must be provider:level pairs, got ${JSON.stringify(value)}`);
    }
    levels[provider] = level as IntegrationLevel;
  }
  if (Object.keys(levels).length === 0) throw new Error(`context providerLevels is empty: ${JSON.stringify(value)}`);
  return levels;
};

/** A Bedrock model or inference profile id as it goes into an ARN. */
const bedrockModelId = /^[a-z0-9][\w.:-]*$/i;

/** Bedrock model ids from the context (`a,b`), or the catalogue's defaults. */
const parseBedrockModels = (value: unknown): string[] => {
  if (value === undefined || value === '') return [...new Set(Object.values(bedrockDefaultModels))];
  const ids =
    typeof value === 'string'
      ? value
          .split(',')
          .map((id) => id.trim())
          .filter(Boolean)
      : [];
  if (ids.length === 0 || ids.some((id) => !bedrockModelId.test(id))) {
    throw new Error(`context bedrockModels must be Bedrock model ids, comma-separated, got ${JSON.stringify(value)}`);
  }
  return ids;
};

/** An https base URL from the context, or undefined when not given; anything else fails `cdk synth`. */
const httpsUrl = (key: string, value: unknown): string | undefined => {
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'string' || !/^https:\/\/[^/\s]+\/?$/.test(value)) {
    throw new Error(`context ${key} must be an https:// base URL with no path, got ${JSON.stringify(value)}`);
  }
  return value;
};

/** The two stack names of a stage: both carry it, so stages live side by side in one account. */
export const stackNames = (config: Pick<StageConfig, 'stackPrefix' | 'stage'>) => ({
  stateful: `${config.stackPrefix}-${config.stage}-Stateful`,
  api: `${config.stackPrefix}-${config.stage}-Api`,
  /** CloudFront and AWS WAF, in us-east-1, when the stage has them (lib/edge-stack.ts). */
  edge: `${config.stackPrefix}-${config.stage}-Edge`,
});
