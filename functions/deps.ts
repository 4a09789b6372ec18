import { randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { envNames } from '../lib/definitions.ts';
import type { NodeType } from '../schemas/workflows.ts';
import type { NodeExecutor } from './nodes/executors/types.ts';

/** The node executor of each node type, chosen once when deps are built (never per step). */
export type ExecutorLookup = (type: NodeType) => NodeExecutor;

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
  /** What runs each step's node; only the step executor has real ones (see `productionDeps`). */
  executors: ExecutorLookup;
  /** Where a team connection's `env:NAME` secret is looked up (the function's environment when deployed). */
  secretEnv: Readonly<Record<string, string | undefined>>;
}

/** The lookup of a function that runs no steps: asking it for an executor is a wiring mistake. */
export const noExecutors: ExecutorLookup = (type) => {
  throw new Error(`No node executors in this function (asked for ${type})`);
};

/** DocumentClient options shared by every construction so items marshal the same everywhere. */
export const documentClient = (client: DynamoDBClient): DynamoDBDocumentClient =>
  DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });

let cached: Deps | undefined;

/**
 * Built once per cold start from the environment the stack sets. Clients are created here but
 * connect lazily; endpoints come from the SDK's standard configuration. The step executor passes
 * its executors (built from the environment once): taking them as an argument keeps the node
 * executors, providers and media codecs out of every other function's bundle.
 */
export const productionDeps = (options: { executors?: ExecutorLookup } = {}): Deps => {
  cached ??= {
    ddb: documentClient(new DynamoDBClient({})),
    tableName: process.env[envNames.table] ?? '',
    sqs: new SQSClient({}),
    queueUrls: {
      steps: process.env[envNames.stepsQueueUrl] ?? '',
      webhooks: process.env[envNames.webhooksQueueUrl] ?? '',
    },
    s3: new S3Client({}),
    bucket: process.env[envNames.bucket] ?? '',
    now: () => new Date(),
    newId: randomUUID,
    executors: noExecutors,
    secretEnv: process.env,
  };
  return options.executors ? { ...cached, executors: options.executors } : cached;
};
