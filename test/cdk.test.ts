import fs from 'node:fs';
import path from 'node:path';
import { Validations } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { Queue } from 'aws-cdk-lib/aws-sqs';
import { describe, expect, it } from 'vitest';
import { buildApp } from '../lib/build-app.ts';
import { dataTable, queues } from '../lib/definitions.ts';
import { basePath, routes } from '../lib/routes.ts';
import { workers } from '../lib/workers.ts';

/** No bundling (fast), and validation failures thrown with the whole report in the message. */
const testContext = { 'aws:cdk:bundling-stacks': [], '@aws-cdk/core:appMode': 'inmemory' };

type Resources = Record<string, { Type: string; Properties: Record<string, unknown> }>;

// Building and synthesizing takes a few seconds; every test after the first reuses the assembly.
describe('cdk app', { timeout: 60_000 }, () => {
  const { app, stateful, api } = buildApp(testContext);
  let synthesized: { statefulTemplate: Template; apiTemplate: Template; apiResources: Resources } | undefined;
  const templates = () => {
    if (!synthesized) {
      const apiTemplate = Template.fromStack(api);
      const apiResources = apiTemplate.toJSON().Resources as Resources;
      synthesized = { statefulTemplate: Template.fromStack(stateful), apiTemplate, apiResources };
    }
    return synthesized;
  };

  it('passes the cdk-nag AWS Solutions checks with every finding fixed or acknowledged', () => {
    const assembly = app.synth();
    const report = JSON.parse(fs.readFileSync(path.join(assembly.directory, 'validation-report.json'), 'utf8')) as {
      pluginReports: { pluginName: string; conclusion: string; violations: unknown[] }[];
    };
    expect(report.pluginReports.filter((r) => r.conclusion !== 'success' || r.violations.length > 0)).toEqual([]);
  });

  it('gives every cdk-nag acknowledgement a written reason', () => {
    const acknowledgements = app.node
      .findAll()
      .flatMap((c) => c.node.metadata.filter((m) => m.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY))
      .flatMap((m) => Object.entries(m.data as Record<string, string>));
    expect(acknowledgements.length).toBeGreaterThan(0);
    for (const [id, reason] of acknowledgements) {
      expect(id).toMatch(/^(Annotation::)?AwsSolutions-/);
      expect(reason.length, id).toBeGreaterThan(40);
    }
  });

  it('creates one API route per route-table entry, under the base path', () => {
    const { apiTemplate } = templates();
    apiTemplate.resourceCountIs('AWS::ApiGatewayV2::Route', routes.length);
    for (const route of routes) {
      apiTemplate.hasResourceProperties('AWS::ApiGatewayV2::Route', {
        RouteKey: `${route.method} ${basePath}${route.path}`,
      });
    }
    expect(basePath).toBe('/api/v1');
  });

  it('configures no CORS on the HTTP API and logs every request of its default stage', () => {
    const { apiTemplate } = templates();
    apiTemplate.resourceCountIs('AWS::ApiGatewayV2::Api', 1);
    apiTemplate.hasResourceProperties('AWS::ApiGatewayV2::Api', {
      ProtocolType: 'HTTP',
      CorsConfiguration: Match.absent(),
    });
    apiTemplate.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
      StageName: '$default',
      AutoDeploy: true,
      AccessLogSettings: { DestinationArn: Match.anyValue(), Format: Match.stringLikeRegexp('\\$context\\.requestId') },
    });
  });

  it('runs every function on nodejs24.x, ARM, with tracing and the resource environment', () => {
    const { apiTemplate } = templates();
    const functions = apiTemplate.findResources('AWS::Lambda::Function');
    expect(Object.keys(functions)).toHaveLength(routes.length + workers.length);
    for (const fn of Object.values(functions)) {
      expect(fn.Properties).toMatchObject({
        Runtime: 'nodejs24.x',
        Architectures: ['arm64'],
        MemorySize: 512,
        TracingConfig: { Mode: 'Active' },
        LoggingConfig: { LogGroup: expect.anything() },
        Environment: {
          Variables: {
            TABLE_NAME: expect.anything(),
            STEPS_QUEUE_URL: expect.anything(),
            WEBHOOKS_QUEUE_URL: expect.anything(),
            LIBRARY_BUCKET: expect.anything(),
            NODE_OPTIONS: '--enable-source-maps',
          },
        },
      });
    }
  });

  it('gives each route function only the grants its route lists', () => {
    const { apiResources } = templates();
    for (const route of routes) {
      const actions = policyActionsOf(apiResources, `${route.method} ${basePath}${route.path}`);
      const dynamo = actions.filter((a) => a.startsWith('dynamodb:'));
      if (route.grants.table === 'none') expect(dynamo, route.id).toEqual([]);
      if (route.grants.table === 'read') expect(dynamo, route.id).not.toContain('dynamodb:PutItem');
      if (route.grants.table === 'readwrite') expect(dynamo, route.id).toContain('dynamodb:PutItem');
      expect(actions.includes('sqs:SendMessage'), route.id).toBe(
        route.grants.stepsQueue === 'send' || route.grants.webhooksQueue === 'send',
      );
      const s3 = actions.filter((a) => a.startsWith('s3:'));
      expect(s3.length > 0, route.id).toBe(route.grants.bucket === 'read');
      expect(
        s3.filter((a) => a.startsWith('s3:Put')),
        route.id,
      ).toEqual([]);
    }
  });

  it('keeps the table with PK/SK, every GSI projecting ALL, TTL and point-in-time recovery', () => {
    const { statefulTemplate } = templates();
    statefulTemplate.hasResource('AWS::DynamoDB::Table', {
      DeletionPolicy: 'Retain',
      UpdateReplacePolicy: 'Retain',
      Properties: {
        TableName: Match.absent(),
        BillingMode: 'PAY_PER_REQUEST',
        KeySchema: [
          { AttributeName: dataTable.partitionKey.name, KeyType: 'HASH' },
          { AttributeName: dataTable.sortKey.name, KeyType: 'RANGE' },
        ],
        GlobalSecondaryIndexes: dataTable.indexes.map((index) => ({
          IndexName: index.name,
          KeySchema: [
            { AttributeName: index.partitionKey.name, KeyType: 'HASH' },
            { AttributeName: index.sortKey.name, KeyType: 'RANGE' },
          ],
          Projection: { ProjectionType: 'ALL' },
        })),
        TimeToLiveSpecification: { AttributeName: dataTable.ttlAttribute, Enabled: true },
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
        SSESpecification: { SSEEnabled: true },
      },
    });
    expect(dataTable.partitionKey.name).toBe('PK');
    expect(dataTable.sortKey.name).toBe('SK');
  });

  it('keeps the library bucket private, TLS-only, encrypted and retained', () => {
    const { statefulTemplate } = templates();
    statefulTemplate.hasResource('AWS::S3::Bucket', {
      DeletionPolicy: 'Retain',
      Properties: {
        BucketName: Match.absent(),
        PublicAccessBlockConfiguration: {
          BlockPublicAcls: true,
          BlockPublicPolicy: true,
          IgnorePublicAcls: true,
          RestrictPublicBuckets: true,
        },
        BucketEncryption: {
          ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }],
        },
      },
    });
    statefulTemplate.hasResourceProperties('AWS::S3::BucketPolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
        ]),
      },
    });
  });

  it('gives each queue a dead-letter queue with the defined maxReceiveCount and visibility timeout', () => {
    const { apiTemplate } = templates();
    const allQueues = apiTemplate.findResources('AWS::SQS::Queue');
    expect(Object.keys(allQueues)).toHaveLength(queues.length * 2);
    for (const definition of queues) {
      apiTemplate.hasResourceProperties('AWS::SQS::Queue', {
        QueueName: Match.absent(),
        VisibilityTimeout: definition.visibilityTimeoutSeconds,
        SqsManagedSseEnabled: true,
        RedrivePolicy: { deadLetterTargetArn: Match.anyValue(), maxReceiveCount: definition.maxReceiveCount },
      });
      apiTemplate.hasResourceProperties('AWS::SQS::Queue', {
        MessageRetentionPeriod: definition.dlqRetentionDays * 24 * 60 * 60,
        SqsManagedSseEnabled: true,
        RedrivePolicy: Match.absent(),
      });
    }
    // enforceSSL: one TLS-only policy per queue and per DLQ.
    apiTemplate.resourceCountIs('AWS::SQS::QueuePolicy', queues.length * 2);
  });

  it('consumes each queue with partial batch failures, the defined batch size and the consumer timeout', () => {
    const { apiTemplate } = templates();
    const mappings = Object.values(apiTemplate.findResources('AWS::Lambda::EventSourceMapping'));
    expect(mappings).toHaveLength(workers.filter((w) => w.trigger.kind === 'queue').length);
    for (const mapping of mappings) {
      expect(mapping.Properties.FunctionResponseTypes).toEqual(['ReportBatchItemFailures']);
      expect(mapping.Properties.MaximumBatchingWindowInSeconds).toBe(0);
    }
    for (const definition of queues) {
      apiTemplate.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
        BatchSize: definition.batchSize,
        FunctionResponseTypes: ['ReportBatchItemFailures'],
      });
      apiTemplate.hasResourceProperties('AWS::Lambda::Function', {
        Description: `consumes the ${definition.id} queue`,
        Timeout: definition.consumerTimeoutSeconds,
      });
    }
  });

  it('runs the deferred dispatcher on a one-minute schedule', () => {
    const { apiTemplate } = templates();
    apiTemplate.resourceCountIs('AWS::Events::Rule', 1);
    apiTemplate.hasResourceProperties('AWS::Events::Rule', {
      ScheduleExpression: 'rate(1 minute)',
      State: 'ENABLED',
      Targets: [Match.objectLike({ Arn: Match.anyValue() })],
    });
  });

  it('keeps every log group for a bounded time', () => {
    const { apiTemplate } = templates();
    const logGroups = Object.values(apiTemplate.findResources('AWS::Logs::LogGroup'));
    // One per function, plus the API access log.
    expect(logGroups).toHaveLength(routes.length + workers.length + 1);
    for (const logGroup of logGroups) expect(logGroup.Properties.RetentionInDays).toBe(30);
  });

  it('outputs the API URL ending in the base path, and the table, bucket and queue URLs', () => {
    const { statefulTemplate, apiTemplate } = templates();
    const apiOutputs = apiTemplate.toJSON().Outputs as Record<string, { Value: unknown }>;
    expect(JSON.stringify(apiOutputs.ApiUrl?.Value)).toMatch(/\/api\/v1"/);
    for (const definition of queues) expect(apiOutputs[`${definition.id}QueueUrl`]).toBeDefined();
    const statefulOutputs = statefulTemplate.toJSON().Outputs as Record<string, unknown>;
    expect(statefulOutputs.TableName).toBeDefined();
    expect(statefulOutputs.BucketName).toBeDefined();
  });
});

describe('cdk-nag wiring', { timeout: 60_000 }, () => {
  it('fails synthesis on a finding nobody acknowledged, and only on that one, under any stack prefix', () => {
    // Another prefix renames the cross-stack exports that the IAM5 acknowledgements are derived from.
    const { app, api } = buildApp({ ...testContext, stackPrefix: 'Canary' });
    new Queue(api, 'UnacknowledgedQueue');
    let message = '';
    try {
      app.synth();
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toMatch(/AwsSolutions-SQS3/);
    expect(message).toMatch(/CanaryApi\/UnacknowledgedQueue/);
    expect(message).not.toMatch(/AwsSolutions-(IAM|S1|APIG)/);
  });
});

/** Every IAM action granted to the role of the function whose description is `description`. */
function policyActionsOf(resources: Resources, description: string): string[] {
  const all = Object.values(resources);
  const fn = all.find((r) => r.Type === 'AWS::Lambda::Function' && r.Properties.Description === description);
  if (!fn) throw new Error(`no function described as ${description}`);
  const [roleId] = (fn.Properties.Role as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'];
  const policies = all.filter(
    (r) => r.Type === 'AWS::IAM::Policy' && (r.Properties.Roles as { Ref: string }[]).some((x) => x.Ref === roleId),
  );
  return policies
    .flatMap((p) => (p.Properties.PolicyDocument as { Statement: { Action: string | string[] }[] }).Statement)
    .flatMap((statement) => (Array.isArray(statement.Action) ? statement.Action : [statement.Action]));
}
