/**
 * The cold-start floor of a function's first request (bench/bundles.ts `floorSource`): it sends
 * the commands the AWS command log recorded for that request, the same services and operations in
 * the same order, bare. Checked on the wire: the floor's module runs against a recording HTTP
 * endpoint that answers every AWS JSON request with an empty success.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { GetCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { floorQueueVariable, floorSource, sdkPackagesOf } from '../bench/bundles.ts';
import { documentClient } from '../functions/clients/dynamodb.ts';
import { type AwsCommandShape, recordAwsCommands, withAwsCommandLog } from '../local/aws-command-log.ts';
import { invokedAs } from '../local/invocation.ts';
import { dataTable, envNames } from '../platform/definitions.ts';

/** What each request that reached the endpoint asked: its X-Amz-Target and the body's item counts. */
const seen: { target: string; body: Record<string, unknown> }[] = [];
const answers: Record<string, unknown> = {
  'DynamoDB_20120810.Query': { Items: [], Count: 0 },
  'DynamoDB_20120810.BatchGetItem': { Responses: {} },
  'AmazonSQS.SendMessageBatch': { Successful: [], Failed: [] },
  'AWSEvents.PutEvents': { FailedEntryCount: 0, Entries: [] },
};
const server = createServer((request, response) => {
  let body = '';
  request.on('data', (chunk) => {
    body += chunk;
  });
  request.on('end', () => {
    const target = String(request.headers['x-amz-target'] ?? `${request.method} ${request.url}`);
    seen.push({ target, body: body ? (JSON.parse(body) as Record<string, unknown>) : {} });
    response.writeHead(200, { 'content-type': 'application/x-amz-json-1.0' });
    response.end(JSON.stringify(answers[target] ?? {}));
  });
});

const dir = join(import.meta.dirname, '..', 'bench', '.out', `floor-test-${process.pid}`);
const saved = { ...process.env };

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  Object.assign(process.env, {
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'test',
    AWS_SECRET_ACCESS_KEY: 'test',
    AWS_ENDPOINT_URL_DYNAMODB: endpoint,
    AWS_ENDPOINT_URL_SQS: endpoint,
    AWS_ENDPOINT_URL_EVENTBRIDGE: endpoint,
    AWS_ENDPOINT_URL_S3: endpoint,
    [envNames.bucket]: 'floor-bucket',
    [envNames.table]: 'floor-table',
    [envNames.operatorEventBus]: 'floor-bus',
    [floorQueueVariable]: `${endpoint}/000000000000/floor`,
  });
  // Inside the repository, so the floor's imports resolve to its node_modules (as a bundle's would be built).
  mkdirSync(dir, { recursive: true });
});

afterAll(async () => {
  process.env = saved;
  rmSync(dir, { recursive: true, force: true });
  await new Promise((resolve) => server.close(resolve));
});

const shape = (command: string, extra: Partial<AwsCommandShape> = {}): AwsCommandShape => ({
  function: 'RunWorkflow',
  service: command.startsWith('Send') ? 'SQS' : command === 'PutEventsCommand' ? 'EventBridge' : 'DynamoDB',
  command,
  ...extra,
});

describe("a function's cold-start floor", () => {
  it("records a handler's commands through the AWS command log, in order and each time, as the floor reads them", async () => {
    const shapes: AwsCommandShape[] = [];
    const stop = recordAwsCommands((recorded) => shapes.push(recorded));
    const clients = withAwsCommandLog({
      ddb: documentClient(new DynamoDBClient({})),
      sqs: new SQSClient({}),
      s3: new S3Client({ forcePathStyle: true }),
    });
    const table = 'floor-table';
    const handler = invokedAs('RunWorkflow', async () => {
      await clients.ddb.send(new GetCommand({ TableName: table, Key: { PK: 'a', SK: 'a' } }));
      await clients.ddb.send(new GetCommand({ TableName: table, Key: { PK: 'b', SK: 'b' } }));
      await clients.ddb.send(
        new TransactWriteCommand({
          TransactItems: [
            { Put: { TableName: table, Item: { PK: 'c', SK: 'c' } } },
            {
              ConditionCheck: {
                TableName: table,
                Key: { PK: 'd', SK: 'd' },
                ConditionExpression: 'attribute_exists(PK)',
              },
            },
          ],
        }),
      );
      await clients.sqs.send(
        new SendMessageBatchCommand({
          QueueUrl: process.env[floorQueueVariable],
          Entries: [{ Id: '0', MessageBody: '{}' }],
        }),
      );
      // A file link's presign: the command's middleware runs, nothing is sent.
      await getSignedUrl(clients.s3, new GetObjectCommand({ Bucket: 'floor-bucket', Key: 'a/b.png' }), {
        expiresIn: 60,
      });
    });
    try {
      await handler();
      // Sent outside any function's handler: not the function's, not recorded.
      await clients.ddb.send(new GetCommand({ TableName: table, Key: { PK: 'e', SK: 'e' } }));
    } finally {
      stop();
    }
    expect(shapes).toEqual([
      { function: 'RunWorkflow', service: 'DynamoDB', command: 'GetItemCommand' },
      { function: 'RunWorkflow', service: 'DynamoDB', command: 'GetItemCommand' },
      {
        function: 'RunWorkflow',
        service: 'DynamoDB',
        command: 'TransactWriteItemsCommand',
        items: ['Put', 'ConditionCheck'],
      },
      { function: 'RunWorkflow', service: 'SQS', command: 'SendMessageBatchCommand', count: 1 },
      { function: 'RunWorkflow', service: 'S3', command: 'GetObjectCommand', presigned: true },
    ]);
  });

  it('sends the recorded commands, in order, bare: as many items as each named, on its own items and queue', async () => {
    // A run start as the command log records it (its key, its rate count, two batch reads, the transaction, the send).
    const commands = [
      shape('GetItemCommand'),
      shape('UpdateItemCommand'),
      shape('BatchGetItemCommand', { count: 2 }),
      shape('QueryCommand', { index: 'GSI5' }),
      shape('TransactWriteItemsCommand', { items: ['Put', 'Update', 'ConditionCheck', 'Delete'] }),
      shape('SendMessageBatchCommand', { count: 1 }),
      shape('PutEventsCommand', { count: 2 }),
      // A presign (a file link's): signed in the floor too, never sent.
      { function: 'RunWorkflow', service: 'S3', command: 'GetObjectCommand', presigned: true as const },
    ];
    const packages = [
      '@aws-sdk/client-dynamodb',
      '@aws-sdk/client-eventbridge',
      '@aws-sdk/client-sqs',
      '@aws-sdk/client-s3',
      '@aws-sdk/lib-dynamodb',
      '@aws-sdk/s3-request-presigner',
    ];
    const file = join(dir, 'floor.mjs');
    writeFileSync(file, floorSource(packages, commands));
    const floor = (await import(pathToFileURL(file).href)) as { handler: () => Promise<{ statusCode: number }> };
    seen.length = 0;
    expect(await floor.handler()).toEqual({ statusCode: 200 });

    expect(seen.map((s) => s.target)).toEqual([
      'DynamoDB_20120810.GetItem',
      'DynamoDB_20120810.UpdateItem',
      'DynamoDB_20120810.BatchGetItem',
      'DynamoDB_20120810.Query',
      'DynamoDB_20120810.TransactWriteItems',
      'AmazonSQS.SendMessageBatch',
      'AWSEvents.PutEvents',
    ]);
    const [get, , batch, query, transaction, send, put] = seen.map((s) => s.body);
    expect(get).toMatchObject({ TableName: 'floor-table', Key: { PK: { S: 'BENCH#FLOOR' } } });
    expect(Object.values(batch?.RequestItems as Record<string, { Keys: unknown[] }>)[0]?.Keys).toHaveLength(2);
    expect(query).toMatchObject({ IndexName: 'GSI5', ExpressionAttributeNames: { '#pk': 'GSI4PK' } });
    expect(((transaction?.TransactItems ?? []) as object[]).map((item) => Object.keys(item)[0])).toEqual([
      'Put',
      'Update',
      'ConditionCheck',
      'Delete',
    ]);
    expect(send).toMatchObject({ QueueUrl: process.env[floorQueueVariable] });
    expect(send?.Entries).toHaveLength(1);
    expect(put?.Entries).toHaveLength(2);
  });

  it("the MCP route's floor loads the MCP SDK the route answers with, and the bench finds it in a bundle", async () => {
    const file = join(dir, 'floor-mcp.mjs');
    writeFileSync(file, floorSource(['@aws-sdk/client-dynamodb', '@modelcontextprotocol/sdk'], []));
    const floor = (await import(pathToFileURL(file).href)) as { mcp: { Server: unknown } };
    expect(typeof floor.mcp.Server).toBe('function');
    const output = {
      inputs: {
        'node_modules/@modelcontextprotocol/sdk/dist/esm/server/index.js': { bytesInOutput: 1 },
        'node_modules/@aws-sdk/client-dynamodb/dist-es/index.js': { bytesInOutput: 1 },
        'node_modules/@aws-sdk/core/dist-es/index.js': { bytesInOutput: 1 },
      },
      imports: [],
    } as unknown as Parameters<typeof sdkPackagesOf>[0];
    expect(sdkPackagesOf(output)).toEqual(['@aws-sdk/client-dynamodb', '@modelcontextprotocol/sdk']);
  });

  it('a function that sends nothing has a floor that sends nothing; a command it has no bare form or client for stops the bench', () => {
    expect(floorSource([], [])).not.toContain('send(');
    expect(() => floorSource(['@aws-sdk/client-sqs'], [shape('GetItemCommand')])).toThrow(/no @aws-sdk\/lib-dynamodb/);
    expect(() =>
      floorSource(
        ['@aws-sdk/client-sqs'],
        [shape('SendMessageCommand'), shape('PurgeQueueCommand', { service: 'SQS' })],
      ),
    ).toThrow(/no bare form of SQS PurgeQueueCommand/);
    expect(() =>
      floorSource(
        ['@aws-sdk/client-dynamodb', '@aws-sdk/lib-dynamodb'],
        [shape('QueryCommand', { index: 'GSI9' })],
        dataTable.indexes,
      ),
    ).toThrow(/no index GSI9/);
  });
});
