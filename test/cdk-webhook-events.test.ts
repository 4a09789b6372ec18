/**
 * The lifecycle webhook events' consumer in the synthesized stage: its own
 * mapping of the table's stream (filters, retries, partial batch responses, its own DLQ and that
 * DLQ's alarm), its least-privilege role, and what its filters pass (the local mapping applies the
 * same patterns: local/stream-source.ts).
 */
import './support/test-providers.ts';
import { Template } from 'aws-cdk-lib/assertions';
import type { DynamoDBRecord } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { buildApp } from '../lib/build-app.ts';
import { passes } from '../local/stream-source.ts';
import { deadLetterQueue, lifecycleWebhooksMapping } from '../platform/definitions.ts';
import { eventfulStepStatuses, StepStatus } from '../platform/run-statuses.ts';
import { pinnedProd, synthOnly } from './support/stages.ts';

type Resource = { Type: string; Properties: Record<string, unknown> };

const synthesize = (context: Record<string, unknown>) => {
  const built = buildApp({ ...synthOnly, ...context }, {});
  return Template.fromStack(built.api).toJSON().Resources as Record<string, Resource>;
};

const idOf = (resources: Record<string, Resource>, type: string, prefix: string) => {
  const ids = Object.keys(resources).filter((id) => resources[id]?.Type === type && id.startsWith(prefix));
  expect(ids, `${type} ${prefix}`).toHaveLength(1);
  return ids[0] as string;
};

describe.each([
  ['dev', {}],
  ['prod', pinnedProd()],
])('the %s stage', (_stage, context) => {
  const resources = synthesize(context);
  const fnId = idOf(resources, 'AWS::Lambda::Function', 'RunEventWebhooksFunction');
  const dlqId = idOf(resources, 'AWS::SQS::Queue', 'DeadLetterQueue');
  const mappings = Object.values(resources).filter(
    (r) =>
      r.Type === 'AWS::Lambda::EventSourceMapping' &&
      JSON.stringify(r.Properties.FunctionName) === JSON.stringify({ Ref: fnId }),
  );

  it('reads the stream through its own mapping: its filters, retries, partial batch responses and DLQ', () => {
    expect(mappings).toHaveLength(1);
    const [mapping] = mappings as [Resource];
    expect(mapping.Properties).toMatchObject({
      EventSourceArn: { 'Fn::ImportValue': expect.stringMatching(/StreamArn/) },
      StartingPosition: 'TRIM_HORIZON',
      BatchSize: lifecycleWebhooksMapping.batchSize,
      MaximumBatchingWindowInSeconds: lifecycleWebhooksMapping.maxBatchingWindowSeconds,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      BisectBatchOnFunctionError: true,
      MaximumRetryAttempts: lifecycleWebhooksMapping.retryAttempts,
      MaximumRecordAgeInSeconds: lifecycleWebhooksMapping.maxRecordAgeSeconds,
      DestinationConfig: { OnFailure: { Destination: { 'Fn::GetAtt': [dlqId, 'Arn'] } } },
    });
    const filters = (mapping.Properties.FilterCriteria as { Filters: { Pattern: string }[] }).Filters;
    expect(filters.map((f) => JSON.parse(f.Pattern))).toEqual(lifecycleWebhooksMapping.filters);
    expect(resources[fnId]?.Properties).toMatchObject({
      Timeout: lifecycleWebhooksMapping.consumerTimeoutSeconds,
      Description: "reads the table's stream (LifecycleEvents)",
    });
    expect(resources[dlqId]?.Properties).toMatchObject({
      MessageRetentionPeriod: deadLetterQueue.retentionDays * 24 * 3600,
      SqsManagedSseEnabled: true,
    });
  });

  it("alarms on the stage's dead-letter queue, its failures' destination, at the first arrival", () => {
    const alarms = Object.entries(resources).filter(
      ([id, r]) => r.Type === 'AWS::CloudWatch::Alarm' && id.includes('DeadLetterArrivalsAlarm'),
    );
    expect(alarms).toHaveLength(1);
    expect(JSON.stringify(alarms[0]?.[1].Properties.Metrics)).toContain(`"Fn::GetAtt":["${dlqId}","QueueName"]`);
    expect(alarms[0]?.[1].Properties).toMatchObject({ Threshold: 0, ComparisonOperator: 'GreaterThanThreshold' });
  });

  it('may query, put, update and delete table items and send to the webhooks queue, and nothing else of the stage', () => {
    const role = ((resources[fnId] as Resource).Properties.Role as { 'Fn::GetAtt': [string] })['Fn::GetAtt'][0];
    const statements = Object.values(resources)
      .filter((r) => r.Type === 'AWS::IAM::Policy' && JSON.stringify(r.Properties.Roles).includes(role))
      .flatMap((p) => (p.Properties.PolicyDocument as { Statement: { Action: string | string[] }[] }).Statement);
    const actions = statements.flatMap((s) => (Array.isArray(s.Action) ? s.Action : [s.Action]));
    const own = actions.filter((a) => !/^(logs|xray):/.test(a)).sort();
    expect(own).toEqual(
      [
        // Its own work; Query and PutItem: the team's webhook endpoints and their deliveries.
        'dynamodb:UpdateItem',
        'dynamodb:DeleteItem',
        'dynamodb:Query',
        'dynamodb:PutItem',
        'sqs:SendMessage',
        // The stream event source's: reading the stream, its failed batches to its DLQ.
        'dynamodb:DescribeStream',
        'dynamodb:GetRecords',
        'dynamodb:GetShardIterator',
        'dynamodb:ListStreams',
        'sqs:SendMessage',
        'sqs:GetQueueAttributes',
        'sqs:GetQueueUrl',
      ].sort(),
    );
    const webhooksSend = statements.find((s) => JSON.stringify(s).includes('WebhooksQueue'));
    expect(webhooksSend?.Action).toEqual('sqs:SendMessage');
  });
});

/** A stream record as Lambda hands it over (only what the filters look at). */
const record = (eventName: 'INSERT' | 'MODIFY', sk: string, newImage: Record<string, unknown>): DynamoDBRecord => ({
  eventName,
  dynamodb: { Keys: { PK: { S: 'RUN#j' }, SK: { S: sk } }, NewImage: { SK: { S: sk }, ...newImage } as never },
});

describe('the filters', () => {
  const pass = (r: DynamoDBRecord) => passes(lifecycleWebhooksMapping.filters, r);

  it("are the lifecycle's statuses", () => {
    expect(eventfulStepStatuses).toEqual([StepStatus.completed, StepStatus.failed]);
  });

  it('pass the insert of a run marked notifyStart, and a marked step ending completed or failed', () => {
    expect(pass(record('INSERT', 'RUN', { notifyStart: { BOOL: true } }))).toBe(true);
    for (const status of eventfulStepStatuses) {
      expect(pass(record('INSERT', 'STEP#a', { notify: { BOOL: true }, status: { S: status } }))).toBe(true);
      expect(pass(record('MODIFY', 'STEP#a', { notify: { BOOL: true }, status: { S: status } }))).toBe(true);
    }
  });

  it("pass a queued run's start (its move from waiting to queued: the team's endpoints hear it), and no later change", () => {
    const started = {
      ...record('MODIFY', 'RUN', { status: { S: 'queued' } }),
    } as DynamoDBRecord;
    const from = (status: string): DynamoDBRecord => ({
      ...started,
      dynamodb: { ...started.dynamodb, OldImage: { status: { S: status } } as never },
    });
    expect(pass(from('waiting'))).toBe(true);
    expect(pass(from('queued'))).toBe(false);
    expect(pass(record('MODIFY', 'RUN', { status: { S: 'queued' } }))).toBe(false);
    // A run cancelled while it waited ends: its end passes, for the endpoints.
    const ended = record('MODIFY', 'RUN', { status: { S: 'cancelled' } });
    expect(pass({ ...ended, dynamodb: { ...ended.dynamodb, OldImage: { status: { S: 'waiting' } } as never } })).toBe(
      true,
    );
  });

  it("drop every change of a run that chose nothing but its insert (for the team's endpoints), and the rest of the table", () => {
    // Every run's insert passes: the team's webhook endpoints may hear its run.started.
    expect(pass(record('INSERT', 'RUN', {}))).toBe(true);
    expect(pass(record('MODIFY', 'RUN', { notifyStart: { BOOL: true } }))).toBe(false);
    expect(pass(record('INSERT', 'STEP#a', { status: { S: StepStatus.completed } }))).toBe(false);
    expect(pass(record('MODIFY', 'STEP#a', { notify: { BOOL: true }, status: { S: StepStatus.skipped } }))).toBe(false);
    expect(pass(record('MODIFY', 'STEP#a', { status: { S: StepStatus.processing } }))).toBe(false);
    expect(pass(record('INSERT', 'WEBHOOK#run.started', { state: { S: 'pending' } }))).toBe(false);
  });
});
