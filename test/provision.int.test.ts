/**
 * What `npm start`, the suite and the bench make on the emulators (local/provision.ts), on the
 * suite's DynamoDB Local and fauxqs: made again over what an earlier start (of another version)
 * left, it sets each queue to this version's attributes instead of refusing to start; a table made
 * without its stream gets it when a stream consumer attaches.
 */
import { randomUUID } from 'node:crypto';
import { DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  SetQueueAttributesCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { localAwsConfig } from '../local/emulators.ts';
import { ensureTableStream, provision } from '../local/provision.ts';
import { queues } from '../platform/definitions.ts';

const emulators = inject('emulators');
const sqs = new SQSClient({ ...localAwsConfig, endpoint: emulators.sqsS3Endpoint });
const ddb = new DynamoDBClient({ ...localAwsConfig, endpoint: emulators.dynamoDbEndpoint });
afterAll(() => {
  sqs.destroy();
  ddb.destroy();
});

const attributesOf = async (QueueUrl: string) =>
  (
    await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['VisibilityTimeout', 'RedrivePolicy', 'QueueArn'] }),
    )
  ).Attributes ?? {};

const streamOf = async (TableName: string) =>
  (await ddb.send(new DescribeTableCommand({ TableName }))).Table?.StreamSpecification;

describe('provisioning the local resources', () => {
  it('sets a queue an earlier start left with other attributes (another redrive, another timeout) to this version’s', async () => {
    const prefix = `p${randomUUID().slice(0, 8)}`;
    const first = await provision({ prefix, ...emulators, tableStream: false });
    const before = await Promise.all(queues.map((q) => attributesOf(first.queueUrls[q.id])));
    // As an older version left them: a redrive to a queue of its own, another visibility timeout.
    const older = await sqs.send(new CreateQueueCommand({ QueueName: `${prefix}-older-dlq` }));
    const olderArn = (await attributesOf(older.QueueUrl ?? '')).QueueArn;
    for (const q of queues) {
      await sqs.send(
        new SetQueueAttributesCommand({
          QueueUrl: first.queueUrls[q.id],
          Attributes: {
            VisibilityTimeout: '7',
            RedrivePolicy: JSON.stringify({ deadLetterTargetArn: olderArn, maxReceiveCount: 99 }),
          },
        }),
      );
    }
    expect((await attributesOf(first.queueUrls.Steps)).VisibilityTimeout).toBe('7');

    const again = await provision({ prefix, ...emulators, tableStream: false });
    expect(again.queueUrls).toEqual(first.queueUrls);
    const after = await Promise.all(queues.map((q) => attributesOf(again.queueUrls[q.id])));
    expect(after).toEqual(before);
    expect(JSON.parse(after[0]?.RedrivePolicy ?? '{}').deadLetterTargetArn).not.toBe(olderArn);
  });

  it('makes a table without its stream when asked, and a consumer attaching turns it on once', async () => {
    const prefix = `p${randomUUID().slice(0, 8)}`;
    const asDeployed = await provision({ prefix: `${prefix}d`, ...emulators });
    expect(await streamOf(asDeployed.tableName)).toMatchObject({
      StreamEnabled: true,
      StreamViewType: 'NEW_AND_OLD_IMAGES',
    });

    const forTests = await provision({ prefix, ...emulators, tableStream: false });
    expect((await streamOf(forTests.tableName))?.StreamEnabled ?? false).toBe(false);
    await ensureTableStream(emulators.dynamoDbEndpoint, forTests.tableName);
    const enabled = await streamOf(forTests.tableName);
    expect(enabled).toMatchObject({ StreamEnabled: true, StreamViewType: 'NEW_AND_OLD_IMAGES' });
    // A second consumer on the same table (the two mappings) finds it on and changes nothing.
    await ensureTableStream(emulators.dynamoDbEndpoint, forTests.tableName);
    expect(await streamOf(forTests.tableName)).toEqual(enabled);
  });
});
