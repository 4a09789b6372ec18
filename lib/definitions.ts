/**
 * Stateful resource definitions shared by the CDK stack (`lib/`) and the local default (`local/`),
 * so the emulated tables and queues cannot drift from what `cdk deploy` creates.
 * Pure data: no CDK or SDK imports.
 */

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
}

/**
 * The single application table. Item shapes and key prefixes live in `functions/store/keys.ts`.
 * GSI1: generic inverted lookups (keys per team, ids to their team, runs left queued). GSI2: sparse
 * index of waiting deferred runs by maxMultiplier. GSI3: sparse index of waiting deferred runs by
 * expiresAt. Each projects only what its queries read (see each index).
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
  ],
  // Epoch seconds. Rate counters and idempotency records already expire on it; runs, steps,
  // deliveries and ended deferred runs get it from the stage's retention (`envNames.retentionDays`).
  ttlAttribute: 'ttl',
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
  /** Days the DLQ keeps a message for inspection. */
  dlqRetentionDays: number;
}

/**
 * A step's node may fail five times (counted on the step item: functions/domain/step-attempts.ts);
 * the redrive allows twice as many receives, so that receives which ran nothing (a throttle, a crash
 * before the node) do not move a message to the DLQ before its step has failed visibly. The
 * consumer may run twice a node's timeout (`stepNodeTimeoutSeconds`) and more: a chain's next step
 * runs in the same invocation while a whole node timeout and its end still fit (functions/app/run-step.ts).
 */
export const stepsQueue: QueueDefinition = {
  id: 'Steps',
  visibilityTimeoutSeconds: 360,
  maxReceiveCount: 10,
  batchSize: 10,
  consumerTimeoutSeconds: 60,
  dlqRetentionDays: 14,
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
  dlqRetentionDays: 14,
};

export const queues = [stepsQueue, webhooksQueue] as const;

export interface BucketDefinition {
  id: string;
  /** Key prefix of every object a step stores (`teams/<team>/runs/<job>/<node>/...`). */
  objectPrefix: string;
}

/** Objects expire after the stage's retention (`lib/stages.ts`), like the runs that made them. */
export const libraryBucket: BucketDefinition = { id: 'Library', objectPrefix: 'teams/' };

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
  /** `true` on a sandbox stage: model steps with no configured provider run on the sandbox provider. */
  sandboxProviders: 'SANDBOX_PROVIDERS',
  /** Team connection secrets must be named under this prefix (the step executor may read only those). */
  connectionSecretPrefix: 'CONNECTION_SECRET_PREFIX',
} as const;
