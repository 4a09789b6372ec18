/**
 * The local emulators refuse what AWS refuses, at AWS's limits, with AWS's error codes (the list
 * and its sources: docs/decisions.md, "Where the local emulators are kinder than AWS"). Each limit
 * here is one a change of ours could cross (a bigger message, a longer batch, a bigger item or
 * transaction) and that AWS would refuse: these tests fail if an emulator upgrade stops refusing it,
 * so the suite cannot pass where AWS would not.
 */
import {
  BatchWriteItemCommand,
  CreateTableCommand,
  DeleteTableCommand,
  DynamoDBClient,
  PutItemCommand,
  type TransactWriteItem,
  TransactWriteItemsCommand,
} from '@aws-sdk/client-dynamodb';
import {
  CreateQueueCommand,
  DeleteQueueCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { localAwsConfig } from '../local/emulators.ts';

/** The name and status an AWS call failed with. */
const failure = async (call: Promise<unknown>) => {
  try {
    await call;
  } catch (error) {
    const e = error as { name: string; message: string; $metadata: { httpStatusCode?: number } };
    return { name: e.name, status: e.$metadata.httpStatusCode, message: e.message };
  }
  throw new Error('the call succeeded');
};

describe('SQS (fauxqs) at SQS’s limits', () => {
  const sqs = new SQSClient({ ...localAwsConfig, endpoint: inject('emulators').sqsS3Endpoint });
  let queueUrl = '';
  /** 1 MiB, SQS's largest message, body and attributes together (a queue's default MaximumMessageSize). */
  const mebibyte = 1_048_576;
  beforeAll(async () => {
    queueUrl = (await sqs.send(new CreateQueueCommand({ QueueName: `limits-${Date.now()}` }))).QueueUrl ?? '';
  });
  afterAll(async () => {
    await sqs.send(new DeleteQueueCommand({ QueueUrl: queueUrl }));
    sqs.destroy();
  });

  it('takes a message of exactly 1 MiB and refuses one byte more: InvalidParameterValue', async () => {
    await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: 'x'.repeat(mebibyte) }));
    expect(
      await failure(sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: 'x'.repeat(mebibyte + 1) }))),
      // fauxqs names it as SQS's query protocol did (`AWS.SimpleQueueService.…`); the code is SQS's.
    ).toMatchObject({ name: expect.stringMatching(/InvalidParameterValue$/), status: 400 });
  });

  it('refuses a batch of 11 entries (TooManyEntriesInBatchRequest) and one over 1 MiB in all (BatchRequestTooLong)', async () => {
    const entries = (n: number, size: number) =>
      Array.from({ length: n }, (_, i) => ({ Id: String(i), MessageBody: 'x'.repeat(size) }));
    expect(
      await failure(sqs.send(new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: entries(11, 10) }))),
    ).toMatchObject({ name: 'TooManyEntriesInBatchRequest', status: 400 });
    const tenth = Math.floor(mebibyte / 10);
    expect(
      await failure(sqs.send(new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: entries(10, tenth + 1) }))),
    ).toMatchObject({ name: 'BatchRequestTooLong', status: 400 });
    const { Successful = [] } = await sqs.send(
      new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: entries(10, tenth) }),
    );
    expect(Successful).toHaveLength(10);
  });
});

describe('DynamoDB Local at DynamoDB’s limits', () => {
  const ddb = new DynamoDBClient({ ...localAwsConfig, endpoint: inject('emulators').dynamoDbEndpoint });
  const TableName = `limits-${Date.now()}`;
  beforeAll(async () => {
    await ddb.send(
      new CreateTableCommand({
        TableName,
        BillingMode: 'PAY_PER_REQUEST',
        KeySchema: [{ AttributeName: 'PK', KeyType: 'HASH' }],
        AttributeDefinitions: [{ AttributeName: 'PK', AttributeType: 'S' }],
      }),
    );
  });
  afterAll(async () => {
    await ddb.send(new DeleteTableCommand({ TableName }));
    ddb.destroy();
  });

  const put = (key: string, bytes = 10): TransactWriteItem => ({
    Put: { TableName, Item: { PK: { S: key }, v: { S: 'x'.repeat(bytes) } } },
  });

  it('refuses an item over 400 KB: ValidationException', async () => {
    expect(
      await failure(
        ddb.send(new PutItemCommand({ TableName, Item: { PK: { S: 'big' }, v: { S: 'x'.repeat(400 * 1024) } } })),
      ),
    ).toMatchObject({ name: 'ValidationException', message: 'Item size has exceeded the maximum allowed size' });
  });

  it('refuses a transaction of 101 items, one over 4 MB, and one naming an item twice: ValidationException', async () => {
    const keys = (n: number, bytes = 10) => Array.from({ length: n }, (_, i) => put(`t${i}`, bytes));
    await ddb.send(new TransactWriteItemsCommand({ TransactItems: keys(100) }));
    expect(await failure(ddb.send(new TransactWriteItemsCommand({ TransactItems: keys(101) })))).toMatchObject({
      name: 'ValidationException',
    });
    expect(
      await failure(ddb.send(new TransactWriteItemsCommand({ TransactItems: keys(12, 390 * 1024) }))),
    ).toMatchObject({ name: 'ValidationException', message: expect.stringMatching(/cannot exceed 4MB/) });
    expect(
      await failure(ddb.send(new TransactWriteItemsCommand({ TransactItems: [put('same'), put('same')] }))),
    ).toMatchObject({ name: 'ValidationException', message: expect.stringMatching(/multiple operations on one item/) });
  });

  it('refuses a BatchWriteItem of 26 requests: ValidationException', async () => {
    const requests = Array.from({ length: 26 }, (_, i) => ({ PutRequest: { Item: { PK: { S: `b${i}` } } } }));
    expect(
      await failure(ddb.send(new BatchWriteItemCommand({ RequestItems: { [TableName]: requests } }))),
    ).toMatchObject({ name: 'ValidationException' });
  });
});
