import { randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { envNames } from '../lib/definitions.ts';

/** Everything a handler touches from the outside world; tests pass their own. */
export interface Deps {
  ddb: DynamoDBDocumentClient;
  tableName: string;
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
 * Built once per cold start from the environment the stack sets. Endpoints come from the SDK's
 * standard configuration (e.g. AWS_ENDPOINT_URL_DYNAMODB locally), so nothing here knows it is local.
 */
export const productionDeps = (): Deps => {
  cached ??= {
    ddb: documentClient(new DynamoDBClient({})),
    tableName: process.env[envNames.table] ?? '',
    now: () => new Date(),
    newId: randomUUID,
  };
  return cached;
};
