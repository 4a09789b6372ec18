import { randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { envNames } from '../lib/definitions.ts';

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
}

/** DocumentClient options shared by every construction so items marshal the same everywhere. */
export const documentClient = (client: DynamoDBClient): DynamoDBDocumentClient =>
  DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });

let cached: Deps | undefined;

/**
 * Built once per cold start from the environment the stack sets. Clients are created here but
 * connect lazily; endpoints come from the SDK's standard configuration.
 */
export const productionDeps = (): Deps => {
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
  };
  return cached;
};
