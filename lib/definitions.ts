/**
 * Stateful resource definitions shared by the CDK stack (`lib/`) and the local default (`local/`),
 * so the emulated tables and queues cannot drift from what `cdk deploy` creates.
 * Pure data: no CDK or SDK imports.
 */

export interface KeyAttribute {
  name: string;
  type: 'S' | 'N';
}

export interface IndexDefinition {
  /** Logical index name; also the physical index name (indexes are table-scoped, so this is safe). */
  name: string;
  partitionKey: KeyAttribute;
  sortKey: KeyAttribute;
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
 * GSI1: generic inverted lookups (keys per team). GSI2: sparse index of waiting deferred runs by
 * maxMultiplier. GSI3: sparse index of waiting deferred runs by expiresAt.
 */
export const dataTable: TableDefinition = {
  id: 'Data',
  partitionKey: { name: 'PK', type: 'S' },
  sortKey: { name: 'SK', type: 'S' },
  indexes: [
    { name: 'GSI1', partitionKey: { name: 'GSI1PK', type: 'S' }, sortKey: { name: 'GSI1SK', type: 'S' } },
    { name: 'GSI2', partitionKey: { name: 'GSI2PK', type: 'S' }, sortKey: { name: 'GSI2SK', type: 'S' } },
    { name: 'GSI3', partitionKey: { name: 'GSI3PK', type: 'S' }, sortKey: { name: 'GSI3SK', type: 'S' } },
  ],
  ttlAttribute: 'ttl',
};

export const tables = [dataTable] as const;

export interface QueueDefinition {
  /** Logical id used in CDK and as the local queue-name suffix. */
  id: 'Steps' | 'Webhooks';
  /** Seconds a received message stays invisible; must exceed the consumer's timeout. */
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

export const stepsQueue: QueueDefinition = {
  id: 'Steps',
  visibilityTimeoutSeconds: 180,
  maxReceiveCount: 5,
  batchSize: 10,
  consumerTimeoutSeconds: 30,
  dlqRetentionDays: 14,
};

/** Webhook retries are driven by ChangeMessageVisibility; five receives in all, then the DLQ. */
export const webhooksQueue: QueueDefinition = {
  id: 'Webhooks',
  visibilityTimeoutSeconds: 30,
  maxReceiveCount: 5,
  batchSize: 10,
  consumerTimeoutSeconds: 20,
  dlqRetentionDays: 14,
};

export const queues = [stepsQueue, webhooksQueue] as const;

export interface BucketDefinition {
  id: string;
  /** Days before a run's output objects are deleted; null keeps them. */
  expireObjectsAfterDays: number | null;
}

export const libraryBucket: BucketDefinition = { id: 'Library', expireObjectsAfterDays: null };

/**
 * Memory of every function (arm64). Lambda bills GB-seconds, so this is also what the cost model
 * (bench/cost-meter.ts) prices; the handlers wait on I/O, so more memory would not make them faster.
 */
export const functionMemoryMb = 512;

/** The deferred-run dispatcher's schedule. */
export const dispatcherSchedule = { rateMinutes: 1 } as const;

/** Environment variable names through which every function learns its resources. */
export const envNames = {
  table: 'TABLE_NAME',
  stepsQueueUrl: 'STEPS_QUEUE_URL',
  webhooksQueueUrl: 'WEBHOOKS_QUEUE_URL',
  bucket: 'LIBRARY_BUCKET',
} as const;
