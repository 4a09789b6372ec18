import {
  CreateTableCommand,
  DescribeTableCommand,
  DynamoDBClient,
  ResourceInUseException,
  UpdateTableCommand,
  UpdateTimeToLiveCommand,
} from '@aws-sdk/client-dynamodb';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  SetQueueAttributesCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import {
  deadLetterQueue,
  libraryBucket,
  type QueueDefinition,
  queues,
  type TableDefinition,
  tables,
} from '../platform/definitions.ts';
import { localAwsConfig } from './emulators.ts';

/** Names and URLs of everything provisioned for one prefix (the local default, or one test file). */
export interface LocalResources {
  prefix: string;
  dynamoDbEndpoint: string;
  sqsS3Endpoint: string;
  /** Where S3 clients go: the presign guard in front of fauxqs (`emulators.ts`), else fauxqs itself. */
  s3Endpoint: string;
  tableName: string;
  queueUrls: Record<QueueDefinition['id'], string>;
  /** The one dead-letter queue, as deployed (platform/definitions.ts, `deadLetterQueue`). */
  dlqUrl: string;
  bucket: string;
}

const createTable = async (client: DynamoDBClient, definition: TableDefinition, name: string, withStream: boolean) => {
  const stream = withStream ? definition.stream : undefined;
  const attributes = new Map<string, 'S' | 'N'>();
  for (const key of [
    definition.partitionKey,
    definition.sortKey,
    ...definition.indexes.flatMap((i) => [i.partitionKey, i.sortKey]),
  ]) {
    attributes.set(key.name, key.type);
  }
  try {
    await client.send(
      new CreateTableCommand({
        TableName: name,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [...attributes].map(([AttributeName, AttributeType]) => ({
          AttributeName,
          AttributeType,
        })),
        KeySchema: [
          { AttributeName: definition.partitionKey.name, KeyType: 'HASH' },
          { AttributeName: definition.sortKey.name, KeyType: 'RANGE' },
        ],
        // The stream the operator events' publisher reads (DynamoDB Local keeps one too).
        ...(stream ? { StreamSpecification: { StreamEnabled: true, StreamViewType: stream } } : {}),
        GlobalSecondaryIndexes: definition.indexes.map((index) => ({
          IndexName: index.name,
          KeySchema: [
            { AttributeName: index.partitionKey.name, KeyType: 'HASH' },
            { AttributeName: index.sortKey.name, KeyType: 'RANGE' },
          ],
          // The deployed projections (platform/definitions.ts), so a query reading an attribute its index
          // does not copy fails locally as it would on AWS.
          Projection:
            index.projection.type === 'KEYS_ONLY'
              ? { ProjectionType: 'KEYS_ONLY' }
              : { ProjectionType: 'INCLUDE', NonKeyAttributes: [...index.projection.attributes] },
        })),
      }),
    );
  } catch (error) {
    if (!(error instanceof ResourceInUseException)) throw error;
    // Already there from an earlier start: data persists. A table made before it had a stream gets one.
    if (stream) await streamOn(client, name, stream);
    return;
  }
  await client.send(
    new UpdateTimeToLiveCommand({
      TableName: name,
      TimeToLiveSpecification: { AttributeName: definition.ttlAttribute, Enabled: true },
    }),
  );
  await client.send(new DescribeTableCommand({ TableName: name }));
};

/** Turns the table's stream on unless it is on already. */
const streamOn = async (client: DynamoDBClient, name: string, stream: NonNullable<TableDefinition['stream']>) => {
  const { Table } = await client.send(new DescribeTableCommand({ TableName: name }));
  if (Table?.StreamSpecification?.StreamEnabled) return;
  await client.send(
    new UpdateTableCommand({ TableName: name, StreamSpecification: { StreamEnabled: true, StreamViewType: stream } }),
  );
};

/**
 * Turns the table's stream on if it is off: a stream consumer attaching to a table provisioned
 * without one (a test stack's, see `provision`'s `tableStream`) reads the changes from then on.
 */
export const ensureTableStream = async (dynamoDbEndpoint: string, tableName: string) => {
  const [table] = tables;
  if (!table.stream) return;
  const client = new DynamoDBClient({ ...localAwsConfig, endpoint: dynamoDbEndpoint });
  try {
    await streamOn(client, tableName, table.stream);
  } finally {
    client.destroy();
  }
};

/** The stage's one dead-letter queue (platform/definitions.ts): its URL and ARN. */
const createDeadLetterQueue = async (client: SQSClient, prefix: string) => {
  const dlq = await client.send(
    new CreateQueueCommand({
      QueueName: `${prefix}-${deadLetterQueue.id}`,
      Attributes: { MessageRetentionPeriod: String(deadLetterQueue.retentionDays * 86_400) },
    }),
  );
  const attributes = await client.send(
    new GetQueueAttributesCommand({ QueueUrl: dlq.QueueUrl, AttributeNames: ['QueueArn'] }),
  );
  return { url: dlq.QueueUrl ?? '', arn: attributes.Attributes?.QueueArn };
};

const createQueue = async (client: SQSClient, definition: QueueDefinition, prefix: string, dlqArn?: string) => {
  const QueueName = `${prefix}-${definition.id}`;
  const Attributes = {
    VisibilityTimeout: String(definition.visibilityTimeoutSeconds),
    RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlqArn, maxReceiveCount: definition.maxReceiveCount }),
  };
  try {
    const queue = await client.send(new CreateQueueCommand({ QueueName, Attributes }));
    return queue.QueueUrl ?? '';
  } catch (error) {
    // A queue kept by an earlier `npm start` of another version (its redrive then another queue's):
    // set to this version's attributes, as a deploy would update it, rather than refuse to start.
    const { name, Code } = error as { name?: string; Code?: string };
    if (![name, Code].some((n) => n?.endsWith('QueueNameExists'))) throw error;
    const { QueueUrl } = await client.send(new GetQueueUrlCommand({ QueueName }));
    await client.send(new SetQueueAttributesCommand({ QueueUrl, Attributes }));
    return QueueUrl ?? '';
  }
};

/**
 * fauxqs names queues `http://sqs.<region>.localhost:<port>/…`, a host that does not resolve, and
 * the SQS client prefers a queue URL's host to its endpoint; so queue URLs are re-rooted on the
 * emulator's loopback address.
 */
const onEndpoint = (queueUrl: string, endpoint: string): string => new URL(new URL(queueUrl).pathname, endpoint).href;

/** Creates the tables (idempotently) and returns the data table's name. */
export const provisionTables = async (client: DynamoDBClient, prefix: string, withStream = true): Promise<string> => {
  const [table] = tables;
  const tableName = `${prefix}-${table.id}`;
  await createTable(client, table, tableName, withStream);
  return tableName;
};

/**
 * Creates the tables, queues (with their redrive policy to the one dead-letter queue) and the bucket from the same
 * definitions the CDK stack uses (`platform/definitions.ts`). Idempotent: an existing resource is kept.
 */
export const provision = async (settings: {
  prefix: string;
  dynamoDbEndpoint: string;
  sqsS3Endpoint: string;
  s3Endpoint?: string;
  /**
   * Whether the table gets its stream now, as deployed (the default). A test stack's table gets it
   * only when a stream consumer attaches (`ensureTableStream`): DynamoDB Local looks up a stream's
   * shards by a scan of every stream record in its database, so with a stream on every test file's
   * table each write slowed with all the suite had written (docs/decisions/emulators.md).
   */
  tableStream?: boolean;
}): Promise<LocalResources> => {
  const options = { ...settings, s3Endpoint: settings.s3Endpoint ?? settings.sqsS3Endpoint };
  const { prefix } = options;
  const ddb = new DynamoDBClient({ ...localAwsConfig, endpoint: options.dynamoDbEndpoint });
  const sqs = new SQSClient({ ...localAwsConfig, endpoint: options.sqsS3Endpoint });
  const s3 = new S3Client({ ...localAwsConfig, endpoint: options.sqsS3Endpoint, forcePathStyle: true });
  try {
    const tableName = await provisionTables(ddb, prefix, settings.tableStream ?? true);
    const queueUrls = {} as Record<QueueDefinition['id'], string>;
    const dlq = await createDeadLetterQueue(sqs, prefix);
    for (const definition of queues) {
      queueUrls[definition.id] = onEndpoint(await createQueue(sqs, definition, prefix, dlq.arn), options.sqsS3Endpoint);
    }
    const dlqUrl = onEndpoint(dlq.url, options.sqsS3Endpoint);
    const bucket = `${prefix}-${libraryBucket.id}`.toLowerCase();
    try {
      await s3.send(new CreateBucketCommand({ Bucket: bucket }));
    } catch (error) {
      const name = (error as Error).name;
      if (name !== 'BucketAlreadyOwnedByYou' && name !== 'BucketAlreadyExists') throw error;
    }
    return { ...options, tableName, queueUrls, dlqUrl, bucket };
  } finally {
    ddb.destroy();
    sqs.destroy();
    s3.destroy();
  }
};
