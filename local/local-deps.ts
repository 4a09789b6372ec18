import { randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import { SQSClient } from '@aws-sdk/client-sqs';
import { type Deps, documentClient } from '../functions/deps.ts';
import { createExecutorRegistry, executorDepsFromEnv } from '../functions/nodes/executors/index.ts';
import { envNames } from '../lib/definitions.ts';
import { localAwsConfig } from './emulators.ts';
import type { LocalResources } from './provision.ts';

/**
 * Deps for handlers running against the emulators: the same shape production builds from env. The
 * node executors and connection secrets come from this process's environment (as `npm start` has
 * it) unless `overrides` brings others.
 */
export const localDeps = (resources: LocalResources, overrides: Partial<Deps> = {}): Deps => ({
  ddb: documentClient(new DynamoDBClient({ ...localAwsConfig, endpoint: resources.dynamoDbEndpoint })),
  tableName: resources.tableName,
  sqs: new SQSClient({ ...localAwsConfig, endpoint: resources.sqsS3Endpoint }),
  queueUrls: { steps: resources.queueUrls.Steps, webhooks: resources.queueUrls.Webhooks },
  s3: new S3Client({ ...localAwsConfig, endpoint: resources.sqsS3Endpoint, forcePathStyle: true }),
  bucket: resources.bucket,
  now: () => new Date(),
  newId: randomUUID,
  executors: overrides.executors ?? createExecutorRegistry(executorDepsFromEnv()),
  secretEnv: process.env,
  ...overrides,
});

/** Deps for the admin CLI when only DynamoDB is needed (no queues or bucket). */
export const tableOnlyDeps = (dynamoDbEndpoint: string, tableName: string): Deps =>
  localDeps({
    prefix: 'admin',
    dynamoDbEndpoint,
    sqsS3Endpoint: 'http://127.0.0.1:1',
    tableName,
    queueUrls: { Steps: '', Webhooks: '' },
    dlqUrls: { Steps: '', Webhooks: '' },
    bucket: '',
  });

/**
 * The environment a deployed function gets from the stack, pointed at the emulators through the
 * SDK's standard endpoint variables, for code that builds its own clients (`productionDeps`).
 */
export const localEnvironment = (resources: LocalResources): Record<string, string> => ({
  // Embedded metric format lines are for CloudWatch; locally they would only drown the logs.
  POWERTOOLS_METRICS_DISABLED: process.env.POWERTOOLS_METRICS_DISABLED ?? 'true',
  AWS_REGION: localAwsConfig.region,
  AWS_ACCESS_KEY_ID: localAwsConfig.credentials.accessKeyId,
  AWS_SECRET_ACCESS_KEY: localAwsConfig.credentials.secretAccessKey,
  AWS_ENDPOINT_URL_DYNAMODB: resources.dynamoDbEndpoint,
  AWS_ENDPOINT_URL_SQS: resources.sqsS3Endpoint,
  AWS_ENDPOINT_URL_S3: resources.sqsS3Endpoint,
  [envNames.table]: resources.tableName,
  [envNames.stepsQueueUrl]: resources.queueUrls.Steps,
  [envNames.webhooksQueueUrl]: resources.queueUrls.Webhooks,
  [envNames.bucket]: resources.bucket,
});
