import { randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { SQSClient } from '@aws-sdk/client-sqs';
import { SSMClient } from '@aws-sdk/client-ssm';
import { documentClient } from '../functions/clients/dynamodb.ts';
import { s3ClientConfig } from '../functions/clients/s3.ts';
import { type Deps, teamStepsInFlightFrom } from '../functions/deps.ts';
import { parseRetentionDays } from '../functions/domain/retention.ts';
import { allowLoopbackFromEnv } from '../functions/http-client/address-vet.ts';
import { createExecutorRegistry, executorDeps } from '../functions/nodes/executors/index.ts';
import { secretPolicyFromEnv } from '../functions/nodes/providers/secret-refs.ts';
import { stageProvidersFromEnv } from '../functions/nodes/providers/stage.ts';
import { createSecretStore } from '../functions/store/secrets.ts';
import { pythonRunner } from '../lib/workers.ts';
import { envNames } from '../platform/definitions.ts';
import { withAwsCommandLog } from './aws-command-log.ts';
import { localAwsConfig } from './emulators.ts';
import type { LocalResources } from './provision.ts';

/**
 * Deps for handlers running against the emulators: the same shape production builds from env. The
 * node executors, the stage's providers, the secret store and the retention (`RETENTION_DAYS`, 30 days
 * when unset) come from this process's environment (as `npm start` has it) unless `overrides`
 * brings others.
 */
export const localDeps = (resources: LocalResources, overrides: Partial<Deps> = {}): Deps => {
  const secrets = overrides.secrets ?? localSecretStore();
  return withAwsCommandLog(
    {
      ddb: documentClient(new DynamoDBClient({ ...localAwsConfig, endpoint: resources.dynamoDbEndpoint })),
      tableName: resources.tableName,
      sqs: new SQSClient({ ...localAwsConfig, endpoint: resources.sqsS3Endpoint }),
      queueUrls: { steps: resources.queueUrls.Steps, webhooks: resources.queueUrls.Webhooks },
      s3: new S3Client({ ...localAwsConfig, ...s3ClientConfig, endpoint: resources.s3Endpoint, forcePathStyle: true }),
      bucket: resources.bucket,
      now: () => new Date(),
      newId: randomUUID,
      executors:
        overrides.executors ??
        createExecutorRegistry(
          executorDeps({
            env: process.env,
            providerSecret: secrets.providerSecret,
            onClient: (clients) => withAwsCommandLog(clients, resources),
          }),
        ),
      providers: stageProvidersFromEnv(process.env),
      secrets,
      retentionDays: parseRetentionDays(process.env[envNames.retentionDays]),
      // Unset: no cap (functions/app/team-slots.ts), as before it existed.
      ...teamStepsInFlightFrom(process.env[envNames.teamStepsInFlight]),
      // Unset: the local API server gives its own address (local/api-gateway.ts).
      ...(process.env[envNames.publicBaseUrl] ? { publicBaseUrl: process.env[envNames.publicBaseUrl] } : {}),
      // Set by `npm start`: the local files front (local/files-edge.ts), which adds nosniff.
      ...(process.env[envNames.filesBaseUrl] ? { filesBaseUrl: process.env[envNames.filesBaseUrl] } : {}),
      allowLoopback: allowLoopbackFromEnv(process.env),
      ...overrides,
    },
    resources,
  );
};

/**
 * The local default's secret store: `env:` references from this process's live environment, and
 * `secretsmanager:`/`ssm:` ones through the SDK's standard configuration (your AWS profile, or
 * `AWS_ENDPOINT_URL_SECRETS_MANAGER`/`AWS_ENDPOINT_URL_SSM`), under the environment's policy.
 */
export const localSecretStore = () =>
  createSecretStore({
    policy: secretPolicyFromEnv(process.env),
    env: process.env,
    secretsManager: new SecretsManagerClient({}),
    ssm: new SSMClient({}),
    now: () => new Date(),
  });

/** Deps for the admin CLI when only DynamoDB is needed (no queues or bucket). */
export const tableOnlyDeps = (dynamoDbEndpoint: string, tableName: string): Deps =>
  localDeps({
    prefix: 'admin',
    dynamoDbEndpoint,
    sqsS3Endpoint: 'http://127.0.0.1:1',
    s3Endpoint: 'http://127.0.0.1:1',
    tableName,
    queueUrls: { Steps: '', Webhooks: '' },
    dlqUrl: '',
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
  AWS_ENDPOINT_URL_S3: resources.s3Endpoint,
  [envNames.table]: resources.tableName,
  [envNames.stepsQueueUrl]: resources.queueUrls.Steps,
  [envNames.webhooksQueueUrl]: resources.queueUrls.Webhooks,
  [envNames.bucket]: resources.bucket,
});

/**
 * Where the step executor finds the PythonRunner function locally: its name and the local Lambda
 * Invoke API serving it (`lambda-emulator.ts`), through the SDK's standard endpoint variable.
 */
export const pythonRunnerEnvironment = (lambdaEndpoint: string): Record<string, string> => ({
  [envNames.pythonRunner]: pythonRunner.id,
  AWS_ENDPOINT_URL_LAMBDA: lambdaEndpoint,
});
