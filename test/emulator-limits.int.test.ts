/**
 * The local emulators refuse what AWS refuses, at AWS's limits, with AWS's error codes (the list
 * and its sources: docs/decisions/emulators.md, "Where the local emulators are kinder than AWS"). Each limit
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
import { EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import {
  CreateQueueCommand,
  DeleteQueueCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { maxInvokeBytes } from '../local/api-gateway.ts';
import { localAwsConfig } from '../local/emulators.ts';
import { maxPutEventsBytes } from '../local/eventbridge-emulator.ts';
import { type LambdaEmulator, startLambdaEmulator } from '../local/lambda-emulator.ts';

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

  it('refuses a message delayed past 900 seconds, or by less than none: InvalidParameterValue', async () => {
    await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: 'later', DelaySeconds: 900 }));
    for (const DelaySeconds of [901, -1]) {
      expect(
        await failure(sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: 'later', DelaySeconds }))),
      ).toMatchObject({ name: 'InvalidParameterValue', status: 400 });
    }
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

describe('the local Lambda Invoke API at Lambda’s 6 MB, each way', () => {
  let lambda: LambdaEmulator;
  let client: LambdaClient;
  beforeAll(async () => {
    lambda = await startLambdaEmulator({
      Echo: async (event) => event,
      Big: async (event) => 'x'.repeat((event as { bytes: number }).bytes),
    });
    client = new LambdaClient({ ...localAwsConfig, endpoint: lambda.endpoint });
  });
  afterAll(async () => {
    client.destroy();
    await lambda.stop();
  });
  const invoke = (FunctionName: string, payload: unknown) =>
    client.send(new InvokeCommand({ FunctionName, Payload: new TextEncoder().encode(JSON.stringify(payload)) }));

  it('refuses a payload over 6 MB before the function runs: 413 RequestEntityTooLargeException', async () => {
    expect(await failure(invoke('Echo', 'x'.repeat(maxInvokeBytes)))).toMatchObject({
      name: 'RequestEntityTooLargeException',
      status: 413,
    });
    expect((await invoke('Echo', 'x'.repeat(maxInvokeBytes - 2))).FunctionError).toBeUndefined();
  });

  it('fails an invocation whose result is over 6 MB: Unhandled, Function.ResponseSizeTooLarge', async () => {
    const answer = await invoke('Big', { bytes: maxInvokeBytes });
    expect(answer.FunctionError).toBe('Unhandled');
    expect(JSON.parse(new TextDecoder().decode(answer.Payload))).toMatchObject({
      errorType: 'Function.ResponseSizeTooLarge',
    });
    expect((await invoke('Big', { bytes: maxInvokeBytes - 2 })).FunctionError).toBeUndefined();
  });
});

describe('the EventBridge emulator at PutEvents’ limits', () => {
  const events = new EventBridgeClient({ ...localAwsConfig, endpoint: inject('eventBridge').endpoint });
  afterAll(() => events.destroy());
  const entry = (detailBytes: number) => ({
    EventBusName: `limits-${Date.now()}`,
    Source: 's',
    DetailType: 'd',
    Detail: JSON.stringify({ x: 'x'.repeat(detailBytes - 8) }),
  });

  it('refuses 11 entries, and entries over 1 MB in all (as EventBridge weighs them): ValidationException', async () => {
    expect(
      await failure(events.send(new PutEventsCommand({ Entries: Array.from({ length: 11 }, () => entry(10)) }))),
    ).toMatchObject({ name: 'ValidationException', status: 400 });
    // Each entry weighs its Source, DetailType and Detail: 1 + 1 + the detail's bytes.
    const tenth = Math.floor(maxPutEventsBytes / 10) - 2;
    expect(
      await failure(events.send(new PutEventsCommand({ Entries: Array.from({ length: 10 }, () => entry(tenth + 1)) }))),
    ).toMatchObject({ name: 'ValidationException', status: 400 });
    const { FailedEntryCount } = await events.send(
      new PutEventsCommand({ Entries: Array.from({ length: 10 }, () => entry(tenth)) }),
    );
    expect(FailedEntryCount).toBe(0);
  });
});
