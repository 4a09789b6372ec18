/**
 * Stateful resource definitions shared by the CDK stack (`lib/`), the local default (`local/`) and
 * the functions (the names of their environment, the node timeout), so the emulated tables and
 * queues cannot drift from what `cdk deploy` creates.
 * Pure data: no CDK or SDK imports.
 */

import { endStatuses, eventfulStepStatuses, inProgressStatuses, RunStatus } from './run-statuses.ts';

export interface KeyAttribute {
  name: string;
  type: 'S' | 'N';
}

/**
 * What an index copies besides the keys (the table's and its own): nothing (`KEYS_ONLY`), or the
 * named attributes (`INCLUDE`). Never ALL: an index holds only what its queries read, so it stays
 * small and never copies a run's callback secret or a deferred run's request.
 */
export type IndexProjection = { type: 'KEYS_ONLY' } | { type: 'INCLUDE'; attributes: readonly string[] };

export interface IndexDefinition {
  /** Logical index name; also the physical index name (indexes are table-scoped, so this is safe). */
  name: string;
  partitionKey: KeyAttribute;
  sortKey: KeyAttribute;
  projection: IndexProjection;
}

export interface TableDefinition {
  /** Logical id used in CDK and as the local table-name suffix. */
  id: string;
  partitionKey: KeyAttribute;
  sortKey: KeyAttribute;
  indexes: IndexDefinition[];
  /** Attribute holding an epoch-seconds expiry, enabled as the table's TTL. */
  ttlAttribute: string;
  /** The table's stream (24 h of changes), read by the operator events' publisher. Default: none. */
  stream?: 'NEW_AND_OLD_IMAGES';
}

/**
 * The single application table. Item shapes and key prefixes live in `functions/store/keys.ts`.
 * GSI1: generic inverted lookups (keys per team, ids to their team, runs left queued). GSI2: sparse
 * index of waiting deferred runs by maxMultiplier. GSI3: sparse index of waiting deferred runs by
 * expiresAt. GSI5 (on the attributes GSI4PK and GSI4SK, named for the index it replaced): sparse index of a team's runs and
 * deferred runs, newest first (the list endpoints). Each projects only what its queries read (see each index).
 */
export const dataTable: TableDefinition = {
  id: 'Data',
  partitionKey: { name: 'PK', type: 'S' },
  sortKey: { name: 'SK', type: 'S' },
  indexes: [
    {
      name: 'GSI1',
      partitionKey: { name: 'GSI1PK', type: 'S' },
      sortKey: { name: 'GSI1SK', type: 'S' },
      projection: {
        type: 'INCLUDE',
        attributes: [
          // sweepQueuedRuns (functions/app/sweep-queued-runs.ts): the runs left queued.
          'jobId',
          'workflowId',
          'status',
          // findById (functions/store/tenancy.ts, operators' CLI): a project's, agent's or workflow's team.
          'teamId',
          'agentId',
          // listApiKeys (functions/store/api-keys.ts, operators' CLI): a team's keys, never their hashes.
          'keyId',
          'scopes',
          'workflowIds',
          'monthlyCapHundredths',
          'expiresAt',
          'revokedAt',
          'rateLimitPerMinute',
          'hint',
          'createdAt',
        ],
      },
    },
    {
      name: 'GSI2',
      partitionKey: { name: 'GSI2PK', type: 'S' },
      sortKey: { name: 'GSI2SK', type: 'S' },
      // dispatchableDeferredRuns (functions/store/deferred-runs.ts) reads the keys, then each
      // deferred run from the table: its request (callback secret included) is never copied here.
      projection: { type: 'KEYS_ONLY' },
    },
    {
      name: 'GSI3',
      partitionKey: { name: 'GSI3PK', type: 'S' },
      sortKey: { name: 'GSI3SK', type: 'S' },
      // expiredDeferredRuns (functions/store/deferred-runs.ts): only the ids to expire.
      projection: { type: 'INCLUDE', attributes: ['deferredJobId'] },
    },
    {
      name: 'GSI5',
      partitionKey: { name: 'GSI4PK', type: 'S' },
      sortKey: { name: 'GSI4SK', type: 'S' },
      // queryRunList (functions/store/run-list.ts): a team's runs and deferred runs, newest first, as
      // summaries. Only attributes that change rarely (the status, the end, the final charge, the
      // dispatch, `ttl`) or never (a run's `metadata`, `tags` and `resumedFrom`), so a step's count writes no index;
      // never inputs, outputs or a callback. It replaced GSI4 (the same keys without `metadata` and
      // `tags`: a GSI's projection cannot be changed), which nothing read and is deleted; the key
      // attributes keep GSI4's names, so no item is rewritten.
      projection: {
        type: 'INCLUDE',
        attributes: [
          'jobId',
          'deferredJobId',
          'workflowId',
          'status',
          'mode',
          'createdAt',
          'endedAt',
          'estimateHundredths',
          'finalChargedHundredths',
          'maxMultiplier',
          'expiresAt',
          'dispatchedAt',
          'ttl',
          'metadata',
          'tags',
          'resumedFrom',
        ],
      },
    },
  ],
  // Epoch seconds. Rate counters and idempotency records already expire on it; runs, steps,
  // deliveries and ended deferred runs get it from the stage's retention (`envNames.retentionDays`).
  ttlAttribute: 'ttl',
  // The operator events' durable outbox (operatorEventsMapping): the run's writes are unchanged.
  stream: 'NEW_AND_OLD_IMAGES',
};

export const tables = [dataTable] as const;

export interface QueueDefinition {
  /** Logical id used in CDK and as the local queue-name suffix. */
  id: 'Steps' | 'Webhooks';
  /** Seconds a received message stays invisible; at least six times the consumer's timeout (AWS's advice). */
  visibilityTimeoutSeconds: number;
  /** Receives before SQS moves a message to the dead-letter queue. */
  maxReceiveCount: number;
  /** Messages per Lambda invocation (event source mapping batch size). */
  batchSize: number;
  /** Seconds the consumer Lambda may run. */
  consumerTimeoutSeconds: number;
}

/**
 * A step's node may fail five times (counted on the step item: functions/domain/step-attempts.ts);
 * the redrive allows twice as many receives, so that receives which ran nothing (a throttle, a crash
 * before the node) do not move a message to the DLQ before its step has failed visibly. The
 * consumer may run twice a node's timeout (`stepNodeTimeoutSeconds`) and more: a chain's next step
 * runs in the same invocation while a whole node timeout and its end still fit (functions/app/step/run-step.ts).
 */
export const stepsQueue: QueueDefinition = {
  id: 'Steps',
  visibilityTimeoutSeconds: 360,
  maxReceiveCount: 10,
  batchSize: 10,
  consumerTimeoutSeconds: 60,
};

/** Seconds a step's node may run before it is aborted (and the step fails). */
export const stepNodeTimeoutSeconds = 25;

/**
 * Each webhook attempt is its own message (a failed attempt sends the next, delayed until it is
 * due: functions/app/deliver-webhook.ts), so a message is received again only when the worker
 * itself failed on it; five such receives, then the DLQ. The default visibility is six times the
 * consumer's timeout, as AWS advises for Lambda consumers, so a batch that Lambda retries after a
 * throttle is not visible again while it still runs.
 */
export const webhooksQueue: QueueDefinition = {
  id: 'Webhooks',
  visibilityTimeoutSeconds: 120,
  maxReceiveCount: 5,
  batchSize: 10,
  consumerTimeoutSeconds: 20,
};

export const queues = [stepsQueue, webhooksQueue] as const;

/** The sort keys of the items that give operator events (functions/store/keys.ts: `runKey`, `deferredRunKey`). */
export const operatorEventItems = { run: 'RUN', deferredRun: 'DEFERRED' } as const;

/**
 * The operator events' publisher (functions/workers/operator-events.ts) on the table's stream. Its
 * filters (Lambda event filtering, JSON patterns on the stream record; the local poller applies the
 * same ones) pass only the changes that give an event (functions/domain/operator-events.ts): a run
 * item inserted, a run item leaving an in-progress status for an end status, a deferred run leaving
 * `waiting`. The rest of the table's writes never invoke it. A failed batch is retried (split in two
 * on an error) `retryAttempts` times, then its stream position goes to the dead-letter queue.
 */
export const operatorEventsMapping = {
  id: 'OperatorEvents',
  /** Records per invocation (PutEvents takes ten per call). */
  batchSize: 100,
  /** Seconds Lambda gathers records before invoking: fewer invocations for a few seconds' delay. */
  maxBatchingWindowSeconds: 5,
  retryAttempts: 10,
  /** A record older than this is not retried but sent to the DLQ (the stream keeps records 24 h). */
  maxRecordAgeSeconds: 6 * 3600,
  consumerTimeoutSeconds: 30,
  filters: [
    { eventName: ['INSERT'], dynamodb: { Keys: { SK: { S: [operatorEventItems.run] } } } },
    {
      eventName: ['MODIFY'],
      dynamodb: {
        Keys: { SK: { S: [operatorEventItems.run] } },
        // A run queued behind another (`waiting`) that never started ends too: its cancel.
        OldImage: { status: { S: [RunStatus.waiting, ...inProgressStatuses] } },
        NewImage: { status: { S: [...endStatuses] } },
      },
    },
    {
      eventName: ['MODIFY'],
      dynamodb: {
        Keys: { SK: { S: [operatorEventItems.deferredRun] } },
        OldImage: { status: { S: ['waiting'] } },
        NewImage: { status: { S: ['dispatched', 'expired', 'cancelled'] } },
      },
    },
    {
      // A webhook endpoint its failures disabled (only an endpoint item is written `disabledReason`).
      eventName: ['MODIFY'],
      dynamodb: {
        OldImage: { disabled: { BOOL: [false] } },
        NewImage: { disabled: { BOOL: [true] }, disabledReason: { S: ['failing'] } },
      },
    },
  ] as readonly Record<string, unknown>[],
} as const;

/**
 * The lifecycle webhook events' consumer (functions/workers/lifecycle-webhooks.ts) on the
 * same table stream, a mapping of its own. Its filters pass only the changes its runs chose: the
 * insert of a run item marked `notifyStart` (it chose `run.started`), and a change of a step item
 * marked `notify` (written by the step's end when its run chose that end's event) whose new status
 * is `completed` or `failed`. A run that chose nothing never invokes it. Each batch reports its
 * failures item by item; a batch that keeps failing goes to its own dead-letter queue.
 */
export const lifecycleWebhooksMapping = {
  id: 'LifecycleEvents',
  /** Records per invocation: each is one or two writes and one SQS send. */
  batchSize: 50,
  /** No gathering: a receiver hears of a step as soon as the stream has it. */
  maxBatchingWindowSeconds: 0,
  retryAttempts: 10,
  /** A record older than this is not retried but sent to the DLQ (a step event that late says little). */
  maxRecordAgeSeconds: 3600,
  consumerTimeoutSeconds: 30,
  filters: [
    {
      eventName: ['INSERT'],
      dynamodb: {
        Keys: { SK: { S: [operatorEventItems.run] } },
        NewImage: { notifyStart: { BOOL: [true] } },
      },
    },
    {
      eventName: ['INSERT', 'MODIFY'],
      dynamodb: { NewImage: { notify: { BOOL: [true] }, status: { S: [...eventfulStepStatuses] } } },
    },
    // The team's webhook endpoints (functions/app/endpoint-fanout.ts): every run's insert and end,
    // as the operator events' filters pass them.
    { eventName: ['INSERT'], dynamodb: { Keys: { SK: { S: [operatorEventItems.run] } } } },
    // A run queued behind another starts later: its move from `waiting` to `queued` (marked
    // `notifyStart` when it chose run.started; the team's endpoints hear every one).
    {
      eventName: ['MODIFY'],
      dynamodb: {
        Keys: { SK: { S: [operatorEventItems.run] } },
        OldImage: { status: { S: [RunStatus.waiting] } },
        NewImage: { status: { S: [RunStatus.queued] } },
      },
    },
    // A run's end, from in progress or from waiting behind another.
    {
      eventName: ['MODIFY'],
      dynamodb: {
        Keys: { SK: { S: [operatorEventItems.run] } },
        OldImage: { status: { S: [...inProgressStatuses, RunStatus.waiting] } },
        NewImage: { status: { S: [...endStatuses] } },
      },
    },
  ] as readonly Record<string, unknown>[],
} as const;

/** The table stream's event source mappings, each with its own consumer (lib/workers.ts). */
export const streamMappings = [operatorEventsMapping, lifecycleWebhooksMapping] as const;

/**
 * The stage's one dead-letter queue: where both work queues move a message past its receives and
 * both stream mappings send the position of a batch that failed every retry. One queue, so one
 * alarm metric pages for every dead letter ($0.10 a month where four queues took $0.40); a message
 * says where it came from (docs/operations.md, Alarms, "DeadLetterArrivals").
 */
export const deadLetterQueue = {
  id: 'DeadLetter',
  /** Days a dead letter is kept for inspection and redrive. */
  retentionDays: 14,
} as const;
export type StreamMappingId = (typeof streamMappings)[number]['id'];

export interface BucketDefinition {
  id: string;
  /** Key prefix of every object a step stores (`teams/<team>/runs/<job>/<node>/...`). */
  objectPrefix: string;
  /** Key prefix of every file a caller uploads (`uploads/<team>/<fileId>`). */
  uploadPrefix: string;
  /**
   * Whole days an uploaded object is kept (its lifecycle rule): its item lives 24 hours, and a
   * deferred run made in them copies it when dispatched, up to 24 hours later.
   */
  uploadExpiryDays: number;
}

/**
 * Objects under `teams/` expire after the stage's retention (`lib/stages.ts`), like the runs that
 * made them; those under `uploads/` after two days: a day as the file items that name them, and a
 * day more for a deferred run made in the first to copy them when dispatched.
 */
export const libraryBucket: BucketDefinition = {
  id: 'Library',
  objectPrefix: 'teams/',
  uploadPrefix: 'uploads/',
  uploadExpiryDays: 2,
};

/**
 * Memory of every function (arm64). Lambda bills GB-seconds, so this is also what the cost model
 * (bench/cost-meter.ts) prices; the handlers wait on I/O, so more memory would not make them faster.
 */
export const functionMemoryMb = 512;

/** The deferred-run dispatcher's schedule. */
export const dispatcherSchedule = { rateMinutes: 1 } as const;

/** Environment variable names through which every function learns its resources and its stage. */
export const envNames = {
  table: 'TABLE_NAME',
  stepsQueueUrl: 'STEPS_QUEUE_URL',
  webhooksQueueUrl: 'WEBHOOKS_QUEUE_URL',
  bucket: 'LIBRARY_BUCKET',
  /** The stage name (`dev`, `prod`): the `stage` dimension of every service metric; unset locally. */
  stage: 'SERVICE_STAGE',
  /** Whole days run data is kept: runs, steps, deliveries and ended deferred runs expire on `ttl` after it. */
  retentionDays: 'RETENTION_DAYS',
  /**
   * JSON object from provider key to the Secrets Manager secret (name or ARN) holding its
   * credentials, e.g. `{"openai-compatible":"workflow-run-api/prod/providers/openai-compatible"}`;
   * `{}` when no provider is configured. Its keys are the provider adapters that are on.
   */
  providerSecrets: 'PROVIDER_SECRETS',
  /**
   * The Bedrock model ids a stage deployed with `-c providers=bedrock` may invoke, comma-separated:
   * Bedrock is on where it is set (its role is the credential: no secret).
   */
  bedrockModels: 'BEDROCK_MODELS',
  /**
   * JSON of provider key to the integration level the stage sets on it (`-c providerLevels`), e.g.
   * `{"fal":"byok_only"}`: a provider the registry lets run through the API may be barred further.
   */
  providerLevels: 'PROVIDER_LEVELS',
  /**
   * JSON of model node type to `provider:model` (`-c modelDefaults`), e.g.
   * `{"Upscaler":"replicate:nightmareai/real-esrgan:<version>"}`: the model a step of that type runs
   * when it names none, in place of the catalogue's (platform/model-defaults.ts). Locally the
   * `Type=provider:model,…` form works too.
   */
  modelDefaults: 'MODEL_DEFAULTS',
  /**
   * JSON of `provider:model` to its price (`-c paidModels`), e.g. `{"replicate:owner/name":250}`: the
   * models the stage pays for on its own keys beside the defaults (platform/paid-models.ts), `"open":
   * true` when any other runs there too. Unset: open (dev and local); prod always sets it closed.
   */
  paidModels: 'PAID_MODELS',
  /** `true` on a sandbox stage: model steps with no configured provider run on the sandbox provider. */
  sandboxProviders: 'SANDBOX_PROVIDERS',
  /** Team connection secrets must be named under this prefix (the step executor may read only those). */
  connectionSecretPrefix: 'CONNECTION_SECRET_PREFIX',
  /** The PythonRunner function's name: the step executor invokes it for each PythonSandbox step. */
  pythonRunner: 'PYTHON_RUNNER_FUNCTION',
  /**
   * `true` on the PythonRunner of a stage deployed with `pythonSnapshots`: runs start from a snapshot
   * of the container's first interpreter (cheaper, but one string-hash seed per container).
   */
  pythonSnapshots: 'PYTHON_SNAPSHOTS',
  /**
   * `optional` on the deployed PythonRunner (its isolated VPC is the network wall): a run may go ahead
   * where the machine lets no process create a network namespace. Unset, runs require one.
   */
  pythonNetworkNamespace: 'PYTHON_NETWORK_NAMESPACE',
  /**
   * The service's public base URL (scheme and host, no path), which asynchronous providers' webhooks
   * reach: the stage's API endpoint on AWS; on `npm start` its own listening address unless set.
   */
  publicBaseUrl: 'PUBLIC_BASE_URL',
  /** The stage's operator event bus (its name), where the event publisher puts run lifecycle events. */
  operatorEventBus: 'OPERATOR_EVENT_BUS',
  /** Most steps of one team the step executor runs at once (functions/domain/team-steps.ts); unset: no cap. */
  teamStepsInFlight: 'TEAM_STEPS_IN_FLIGHT',
  /**
   * Where a run's event stream is reached (`links.events` of GET /runs/{jobId}): a base
   * ending in `/api/v1`, the edge's domain when it serves the stream, else the stream's function URL.
   * Set on GetRun and the stream's own function; unset (locally), `PUBLIC_BASE_URL` + `/api/v1`.
   */
  runEventsBaseUrl: 'RUN_EVENTS_BASE_URL',
  /**
   * Where stored files are downloaded (`https://files.<domain>`, the edge's files distribution,
   * which adds `X-Content-Type-Options: nosniff`): every presigned GET is given on this host in
   * place of the bucket's (functions/domain/served-files.ts). Unset: the bucket's own host.
   */
  filesBaseUrl: 'FILES_BASE_URL',
  /**
   * The Secrets Manager secret (its name) whose value CloudFront sends as `originHeader`: set only
   * on a function the edge fronts, which then answers only requests that carry it
   * (functions/http/origin-check.ts).
   */
  originSecret: 'ORIGIN_SECRET_ID',
} as const;
