import { randomUUID } from 'node:crypto';
import type { S3Client } from '@aws-sdk/client-s3';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { envNames } from '../platform/definitions.ts';
import type { NodeType } from '../schemas/workflow-words.ts';
import { parseRetentionDays } from './domain/retention.ts';
import { parseTeamStepsInFlight } from './domain/team-steps.ts';
import { type OriginCheck, originCheckFromEnv } from './http/origin-check.ts';
import type { ModelUse, NodeExecutor, ProviderJobs } from './nodes/executors/types.ts';
import { refusingSecrets, type SecretResolver, secretPolicyFromEnv } from './nodes/providers/secret-refs.ts';
import { type StageProviders, stageProvidersFromEnv } from './nodes/providers/stage.ts';

/**
 * The node executor of each node type, chosen once when deps are built (never per step), and what
 * the step executor needs of asynchronous providers' jobs (`jobs`; absent: no such provider).
 */
export type ExecutorLookup = ((type: NodeType) => NodeExecutor) & { jobs?: ProviderJobs };

/** Everything a handler touches from the outside world; tests pass their own. */
export interface Deps {
  ddb: DynamoDBDocumentClient;
  tableName: string;
  sqs: SQSClient;
  queueUrls: { steps: string; webhooks: string };
  s3: S3Client;
  bucket: string;
  /** The clock, injected so tests control time. */
  now: () => Date;
  /** Id generator (uuid strings, as the spec says). */
  newId: () => string;
  /**
   * The wait between tries of a write that met contention (functions/store/write.ts): a timer
   * unless set; tests pass one that returns at once.
   */
  sleep?: (ms: number) => Promise<void>;
  /** What runs each step's node; only the step executor has real ones (see `productionDeps`). */
  executors: ExecutorLookup;
  /**
   * The stage's providers (`PROVIDER_SECRETS`, `SANDBOX_PROVIDERS`): a run whose model steps none of
   * them (nor the team's own key) can run is refused before anything is held.
   */
  providers: StageProviders;
  /**
   * Reads team connection secrets and the stage's provider credentials. Only the step executor's
   * reaches a secret store (`functions/store/secrets.ts`); every other function's checks
   * references against the stage's policy and reads nothing.
   */
  secrets: SecretResolver;
  /**
   * Whole days run data is kept (`RETENTION_DAYS`; functions/domain/retention.ts): runs, steps and
   * webhook deliveries from the run's start, ended deferred runs from their end.
   */
  retentionDays: number;
  /**
   * Most steps of one team the step executor runs at once (`TEAM_STEPS_IN_FLIGHT`;
   * functions/domain/team-steps.ts): a step past it waits and is offered again. Unset: no cap.
   */
  teamStepsInFlight?: number;
  /**
   * Where the stage's API is reached from outside (`PUBLIC_BASE_URL`: an origin, the API's base path
   * not included): file links point there (functions/app/file-links.ts). The local API server sets
   * its own address when none is given.
   */
  publicBaseUrl?: string;
  /**
   * Where a run's event stream is reached, a base ending in `/api/v1` (`RUN_EVENTS_BASE_URL`, set by
   * the stack: the edge's domain or the stream's function URL): `links.events` of a Run. Unset,
   * `publicBaseUrl` + `/api/v1` (the local server serves the stream beside the other routes).
   */
  runEventsBaseUrl?: string;
  /**
   * Where stored files are downloaded (`FILES_BASE_URL`: the edge's files host, set by the stack when
   * the edge serves files): presigned GETs are given there (functions/domain/served-files.ts). Unset:
   * the bucket's own host.
   */
  filesBaseUrl?: string;
  /**
   * Whether a request came through the stage's edge (functions/http/origin-check.ts): checked by
   * every handler before the key. Unset: no edge in front, every request passes.
   */
  originCheck?: OriginCheck;
  /**
   * Loopback addresses, and plain http to them, pass for a run's URL inputs
   * (`ALLOW_PRIVATE_CALLBACKS=1`: local development only, as for webhooks and node HTTP calls).
   */
  allowLoopback?: boolean;
  /** The local stack (`LOCAL_STACK=1`, set by `npm start`): a refused loopback URL says how to allow it. */
  localStack?: boolean;
  /**
   * Cancels a provider's job for a model step that finished after its run ended (called where the
   * late finish is detected, before its output is dropped; may be called again on a redelivery).
   * Unset, as now: every provider (the sandbox, `openai-compatible`) answers within its call, so
   * when the step finishes nothing is left running to cancel. A provider with an asynchronous job
   * API would record its job on the step and cancel it here.
   */
  cancelProviderJob?: (step: LateStep) => Promise<void>;
}

/** `teamStepsInFlight` as `Deps` takes it: absent when the stage sets no cap. */
export const teamStepsInFlightFrom = (value: string | undefined): Pick<Deps, 'teamStepsInFlight'> => {
  const cap = parseTeamStepsInFlight(value);
  return cap === undefined ? {} : { teamStepsInFlight: cap };
};

/** A step that finished after its run ended: its run, its node, and the model it ran on (model steps). */
export interface LateStep {
  jobId: string;
  nodeId: string;
  model: ModelUse | undefined;
}

/** The lookup of a function that runs no steps: asking it for an executor is a wiring mistake. */
export const noExecutors: ExecutorLookup = (type) => {
  throw new Error(`No node executors in this function (asked for ${type})`);
};

/** The AWS clients in `Deps`: each function's entry point builds the ones its code uses (`functions/clients/`). */
export type Clients = Pick<Deps, 'ddb' | 'sqs' | 's3'>;

/**
 * Stands in for a client the function does not build: typed as the client so `Deps` keeps one
 * shape, and any use of it throws, naming what the entry point forgot to pass.
 */
const absentClient = <T extends object>(name: keyof Clients): T =>
  new Proxy<T>(Object.create(null), {
    get: (_target, property) => {
      if (typeof property === 'symbol' || property === 'then') return undefined;
      throw new Error(`This function builds no ${name} client (used: ${property}); pass it to productionDeps`);
    },
  });

/**
 * What only the step executor adds to its deps, passed from its own entry point so that the secret
 * store's clients, the node executors, providers and media codecs stay out of every other bundle.
 */
export interface StepExecutorWiring {
  /** Builds the secret store from the environment (`secretStoreFromEnv`). */
  secrets: (env: NodeJS.ProcessEnv) => SecretResolver;
  /** Builds the executor lookup over the environment and the store (`executorDeps`). */
  executors: (settings: { env: NodeJS.ProcessEnv; providerSecret: SecretResolver['providerSecret'] }) => ExecutorLookup;
}

/**
 * Built once per cold start, by the entry point, from the environment the stack sets. `clients`
 * are those the function's code uses, built by the modules of `functions/clients/` it imports
 * (`productionDeps({ ...dynamoDbClient(), ...sqsClient() })`): a client it does not pass is absent,
 * and so is its code from the bundle. They connect lazily; endpoints come from the SDK's standard
 * configuration. The step executor passes its wiring (its secret store and executors, built from
 * the environment once).
 */
export const productionDeps = (clients: Partial<Clients>, stepExecutor?: StepExecutorWiring): Deps => {
  const deps: Deps = {
    ddb: clients.ddb ?? absentClient('ddb'),
    tableName: process.env[envNames.table] ?? '',
    sqs: clients.sqs ?? absentClient('sqs'),
    queueUrls: {
      steps: process.env[envNames.stepsQueueUrl] ?? '',
      webhooks: process.env[envNames.webhooksQueueUrl] ?? '',
    },
    s3: clients.s3 ?? absentClient('s3'),
    bucket: process.env[envNames.bucket] ?? '',
    now: () => new Date(),
    newId: randomUUID,
    executors: noExecutors,
    providers: stageProvidersFromEnv(process.env),
    secrets: refusingSecrets(secretPolicyFromEnv(process.env)),
    retentionDays: parseRetentionDays(process.env[envNames.retentionDays]),
    ...teamStepsInFlightFrom(process.env[envNames.teamStepsInFlight]),
    ...(process.env[envNames.publicBaseUrl] ? { publicBaseUrl: process.env[envNames.publicBaseUrl] } : {}),
    ...(process.env[envNames.runEventsBaseUrl] ? { runEventsBaseUrl: process.env[envNames.runEventsBaseUrl] } : {}),
    ...(process.env[envNames.filesBaseUrl] ? { filesBaseUrl: process.env[envNames.filesBaseUrl] } : {}),
    // The rule of allowLoopbackFromEnv (functions/http-client/address-vet.ts), not imported: every bundle loads this module.
    allowLoopback: process.env.ALLOW_PRIVATE_CALLBACKS === '1',
    localStack: process.env.LOCAL_STACK === '1',
    originCheck: originCheckFromEnv(process.env),
  };
  if (!stepExecutor) return deps;
  const secrets = stepExecutor.secrets(process.env);
  const executors = stepExecutor.executors({ env: process.env, providerSecret: secrets.providerSecret });
  return { ...deps, secrets, executors };
};
