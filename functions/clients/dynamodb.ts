import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { classifyReads } from '../store/read.ts';

/**
 * The DynamoDB client of a function that reads or writes the table. A module of its own, like
 * `sqs.ts` and `s3.ts`: an entry point imports only the clients its code uses, so a function that
 * never sends a message has no SQS client code in its bundle (esbuild drops what is not imported).
 */

/**
 * DocumentClient options shared by every construction so items marshal the same everywhere, and
 * the one classification of reads that meet throttling past the SDK's retries (functions/store/read.ts).
 */
export const documentClient = (client: DynamoDBClient): DynamoDBDocumentClient =>
  classifyReads(DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } }));

/** `ddb` for `productionDeps`, from the SDK's standard configuration; it connects on first use. */
export const dynamoDbClient = () => ({ ddb: documentClient(new DynamoDBClient({})) });
