import fs from 'node:fs';
import path from 'node:path';
import { Match, Template } from 'aws-cdk-lib/assertions';
import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { keyedHandler } from '../functions/http/keyed-handler.ts';
import { publicHandler } from '../functions/http/public-handler.ts';
import { json } from '../functions/http/response.ts';
import { logger } from '../functions/observability/logger.ts';
import {
  addCreditsCharged,
  countDeferred,
  countRunStarted,
  countStepCompleted,
  countWebhookAttempt,
  metricNames,
  metrics,
  metricsNamespace,
  metricsServiceName,
} from '../functions/observability/metrics.ts';
import { buildApp } from '../lib/build-app.ts';
import { queues } from '../lib/definitions.ts';
import { alarmEmailContextKey, alarmThresholds, perFunctionAlarmsContextKey } from '../lib/observability.ts';
import { routes } from '../lib/routes.ts';
import { workers } from '../lib/workers.ts';
import { type SeededTeam, seedTeam, startTestStack, type TestStack } from './support/stack.ts';

/** No bundling (fast), and validation failures thrown with the whole report in the message. */
const testContext = { 'aws:cdk:bundling-stacks': [], '@aws-cdk/core:appMode': 'inmemory' };

/** Alarm metrics as CloudWatch bills them: one per plain alarm, one per metric a math alarm reads. */
const alarmMetricCount = (alarms: Record<string, unknown>[]) =>
  alarms.reduce(
    (sum, a) =>
      sum + (a.MetricName ? 1 : ((a.Metrics as { MetricStat?: unknown }[]) ?? []).filter((m) => m.MetricStat).length),
    0,
  );

/** The metrics a dashboard body graphs (its `Fn::Join` resolved with placeholders), counting those math reads. */
const dashboardMetricCount = (body: unknown) => {
  const parts = (body as { 'Fn::Join': [string, unknown[]] })['Fn::Join'][1];
  const text = parts.map((p) => (typeof p === 'string' ? p : 'X')).join('');
  const widgets = (JSON.parse(text) as { widgets: { properties: { metrics?: unknown[][] } }[] }).widgets;
  return widgets.reduce(
    (sum, w) => sum + (w.properties.metrics ?? []).filter((m) => typeof m[0] === 'string').length,
    0,
  );
};

type Resource = { Type: string; Properties: Record<string, unknown> };
type Resources = Record<string, Resource>;

describe('service metrics (embedded metric format)', () => {
  afterEach(() => metrics.clearMetrics());

  it('records each helper under the namespace with the service dimension', () => {
    countRunStarted();
    countStepCompleted();
    countStepCompleted();
    addCreditsCharged(250);
    addCreditsCharged(0);
    countWebhookAttempt(true);
    countWebhookAttempt(false);
    countDeferred('dispatched', 3);
    countDeferred('expired', 0);
    countDeferred('cancelled', 1);
    const emf = metrics.serializeMetrics() as unknown as Record<string, unknown> & {
      _aws: { CloudWatchMetrics: { Namespace: string; Dimensions: string[][]; Metrics: { Name: string }[] }[] };
    };
    const [directive] = emf._aws.CloudWatchMetrics;
    expect(directive?.Namespace).toBe(metricsNamespace);
    expect(directive?.Dimensions).toEqual([['service']]);
    expect(emf.service).toBe(metricsServiceName);
    expect(directive?.Metrics.map((m) => m.Name).sort()).toEqual(Object.values(metricNames).sort());
    expect(emf).toMatchObject({
      RunsStarted: 1,
      StepsCompleted: [1, 1],
      CreditsCharged: 2.5,
      WebhookAttempts: [1, 1],
      WebhookFailures: [0, 1],
      DeferredDispatched: 3,
      DeferredExpired: 0,
      DeferredCancelled: 1,
    });
  });

  it('publishes nothing and warns about nothing when an invocation recorded no metric', () => {
    const stdout = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    const stderr = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    logger.setLogLevel('DEBUG');
    try {
      metrics.publishStoredMetrics();
      const written = [...stdout.mock.calls, ...stderr.mock.calls].map(([chunk]) => String(chunk));
      expect(written.filter((line) => /"level":"(WARN|ERROR)"|_aws/.test(line))).toEqual([]);
    } finally {
      logger.setLogLevel('SILENT');
      stdout.mockRestore();
      stderr.mockRestore();
    }
  });
});

describe('API log lines', () => {
  let stack: TestStack;
  let team: SeededTeam;
  beforeAll(async () => {
    stack = await startTestStack();
    team = await seedTeam(stack.deps);
  });
  afterAll(() => stack.close());

  const event = (requestId: string, options: { key?: string; jobId?: string } = {}) =>
    ({
      version: '2.0',
      routeKey: 'GET /api/v1/probe',
      rawPath: '/api/v1/probe',
      rawQueryString: '',
      headers: options.key ? { authorization: `Bearer ${options.key}` } : {},
      ...(options.jobId ? { pathParameters: { jobId: options.jobId } } : {}),
      requestContext: { requestId, http: { method: 'GET', path: '/api/v1/probe' } },
      isBase64Encoded: false,
    }) as unknown as APIGatewayProxyEventV2;

  const context = {
    functionName: 'probe',
    functionVersion: '$LATEST',
    invokedFunctionArn: 'arn:aws:lambda:us-east-1:000000000000:function:probe',
    memoryLimitInMB: '512',
    awsRequestId: 'aws-request',
    getRemainingTimeInMillis: () => 10_000,
  } as unknown as Context;

  /** The JSON lines the logger writes while `fn` runs, at INFO. */
  const captureLogs = async (fn: () => Promise<unknown>) => {
    const lines: string[] = [];
    const capture = (chunk: unknown) => {
      lines.push(...String(chunk).split('\n').filter(Boolean));
      return true;
    };
    const stdout = vi.spyOn(process.stdout, 'write').mockImplementation(capture);
    const stderr = vi.spyOn(process.stderr, 'write').mockImplementation(capture);
    logger.setLogLevel('INFO');
    try {
      await fn();
    } finally {
      logger.setLogLevel('SILENT');
      stdout.mockRestore();
      stderr.mockRestore();
    }
    return lines.map((line) => JSON.parse(line) as Record<string, unknown>);
  };

  it('carries the request id, team id and job id, never the key, and forgets them after the invocation', async () => {
    // injectLambdaContext resets the level to the configured one (SILENT in tests) at each invocation.
    const keyed = keyedHandler(stack.deps, 'GetRun', async () => {
      logger.setLogLevel('INFO');
      logger.info('keyed probe');
      return json(200, {});
    });
    const failing = keyedHandler(stack.deps, 'GetRun', async () => {
      logger.setLogLevel('INFO');
      throw new Error('boom');
    });
    const open = publicHandler(async () => {
      logger.setLogLevel('INFO');
      logger.info('public probe');
      return json(200, {});
    });
    const lines = await captureLogs(async () => {
      expect((await keyed(event('req-1', { key: team.key, jobId: 'job-1' }), context)).statusCode).toBe(200);
      expect((await failing(event('req-2', { key: team.key }), context)).statusCode).toBe(500);
      expect((await open(event('req-3'), context)).statusCode).toBe(200);
    });
    expect(lines.map((line) => line.message)).toEqual(['keyed probe', 'request failed', 'public probe']);
    expect(lines[0]).toMatchObject({ requestId: 'req-1', teamId: team.teamId, jobId: 'job-1', function_name: 'probe' });
    expect(lines[1]).toMatchObject({ requestId: 'req-2', teamId: team.teamId, level: 'ERROR' });
    expect(lines[1]?.jobId).toBeUndefined();
    expect(lines[2]).toMatchObject({ requestId: 'req-3' });
    expect(lines[2]?.teamId).toBeUndefined();
    const all = JSON.stringify(lines);
    expect(all).not.toContain(team.key);
    expect(all).not.toMatch(/authorization|bearer/i);
  });
});

describe('dashboard and alarms', { timeout: 60_000 }, () => {
  const { api } = buildApp(testContext);
  const template = Template.fromStack(api);
  const resources = template.toJSON().Resources as Resources;
  const ofType = (type: string) => Object.entries(resources).filter(([, r]) => r.Type === type);
  const alarms = ofType('AWS::CloudWatch::Alarm').map(([, r]) => r.Properties);
  const functionIdOf = (description: string) => {
    const found = ofType('AWS::Lambda::Function').find(([, r]) => r.Properties.Description === description);
    if (!found) throw new Error(`no function described as ${description}`);
    return found[0];
  };

  it('adds one dashboard showing the API, the functions, the queues and the service metrics, in the free tier', () => {
    template.resourceCountIs('AWS::CloudWatch::Dashboard', 1);
    const [[, dashboard] = []] = ofType('AWS::CloudWatch::Dashboard');
    expect(dashboard?.Properties.DashboardName).toBeUndefined();
    const body = JSON.stringify(dashboard?.Properties.DashboardBody);
    for (const name of Object.values(metricNames)) expect(body).toContain(`\\"${name}\\"`);
    expect(body).toContain(`\\"${metricsNamespace}\\"`);
    expect(body).toContain(`\\"service\\",\\"${metricsServiceName}\\"`);
    for (const name of ['5xx', 'Count', 'Latency', 'Errors', 'Throttles', 'Duration', 'Invocations']) {
      expect(body).toContain(`\\"${name}\\"`);
    }
    expect(body).toContain('ApproximateAgeOfOldestMessage');
    expect(body).toContain('ApproximateNumberOfMessagesVisible');
    // CloudWatch's always-free tier: 3 dashboards of up to 50 metrics.
    expect(dashboardMetricCount(dashboard?.Properties.DashboardBody)).toBeLessThanOrEqual(50);
  });

  it('alarms when any dead-letter queue holds a message', () => {
    const dlqIds = ofType('AWS::SQS::Queue')
      .filter(([, r]) => r.Properties.RedrivePolicy === undefined)
      .map(([id]) => id);
    expect(dlqIds).toHaveLength(queues.length);
    for (const dlqId of dlqIds) {
      template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        Namespace: 'AWS/SQS',
        MetricName: 'ApproximateNumberOfMessagesVisible',
        Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [dlqId, 'QueueName'] } }],
        Statistic: 'Maximum',
        Threshold: 0,
        ComparisonOperator: 'GreaterThanThreshold',
        TreatMissingData: 'notBreaching',
      });
    }
  });

  it('alarms on any error and any throttle of Lambda in the account and region', () => {
    for (const metricName of ['Errors', 'Throttles']) {
      const found = alarms.filter((a) => a.Namespace === 'AWS/Lambda' && a.MetricName === metricName);
      expect(found).toHaveLength(1);
      expect(found[0]).toMatchObject({
        Statistic: 'Sum',
        Period: 300,
        Threshold: 0,
        ComparisonOperator: 'GreaterThanThreshold',
      });
      expect(found[0]?.Dimensions).toBeUndefined();
    }
  });

  it('alarms when more than 1% of API requests answer 5xx over 5 minutes', () => {
    const apiRef = { Ref: ofType('AWS::ApiGatewayV2::Api')[0]?.[0] };
    const metricStat = (id: string, metricName: string) =>
      Match.objectLike({
        Id: id,
        MetricStat: {
          Metric: {
            Namespace: 'AWS/ApiGateway',
            MetricName: metricName,
            Dimensions: [{ Name: 'ApiId', Value: apiRef }],
          },
          Period: 300,
          Stat: 'Sum',
        },
        ReturnData: false,
      });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Metrics: Match.arrayWith([
        Match.objectLike({ Expression: '100 * FILL(serverErrors, 0) / requests', ReturnData: true }),
        metricStat('serverErrors', '5xx'),
        metricStat('requests', 'Count'),
      ]),
      Threshold: 1,
      ComparisonOperator: 'GreaterThanThreshold',
      EvaluationPeriods: 1,
      TreatMissingData: 'notBreaching',
    });
  });

  it('alarms on the webhook failure rate from the service metrics', () => {
    const alarm = alarms.find((a) => JSON.stringify(a.Metrics ?? '').includes(metricNames.webhookFailures));
    expect(alarm).toBeDefined();
    expect(alarm).toMatchObject({
      Threshold: alarmThresholds.webhookFailurePercent,
      ComparisonOperator: 'GreaterThanThreshold',
    });
    const metricsOf = alarm?.Metrics as {
      Id: string;
      Expression?: string;
      MetricStat?: { Metric: Record<string, unknown>; Period: number; Stat: string };
    }[];
    expect(metricsOf.find((m) => m.Expression)?.Expression).toBe(
      `IF(attempts >= ${alarmThresholds.webhookMinAttempts}, 100 * FILL(failures, 0) / attempts, 0)`,
    );
    for (const [id, metricName] of [
      ['attempts', metricNames.webhookAttempts],
      ['failures', metricNames.webhookFailures],
    ]) {
      expect(metricsOf.find((m) => m.Id === id)?.MetricStat).toEqual({
        Metric: {
          Namespace: metricsNamespace,
          MetricName: metricName,
          Dimensions: [{ Name: 'service', Value: metricsServiceName }],
        },
        Period: 900,
        Stat: 'Sum',
      });
    }
  });

  it('alarms when the dispatcher misses its ticks, treating no data as missed', () => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'AWS/Lambda',
      MetricName: 'Invocations',
      Dimensions: [{ Name: 'FunctionName', Value: { Ref: functionIdOf('runs on the dispatcher schedule') } }],
      Statistic: 'Sum',
      Period: 300,
      Threshold: 1,
      ComparisonOperator: 'LessThanThreshold',
      EvaluationPeriods: 1,
      TreatMissingData: 'breaching',
    });
  });

  it('costs nothing while idle: 9 alarm metrics, inside the always-free 10', () => {
    expect(alarms).toHaveLength(2 + queues.length + 3);
    expect(alarmMetricCount(alarms)).toBe(9);
  });

  it('counts every alarm, names none, and notifies nobody without the alarmEmail context', () => {
    for (const alarm of alarms) {
      expect(alarm.AlarmName).toBeUndefined();
      expect(alarm.AlarmDescription).toEqual(expect.any(String));
      expect(alarm.AlarmActions).toBeUndefined();
    }
    template.resourceCountIs('AWS::SNS::Topic', 0);
    template.resourceCountIs('AWS::SNS::Subscription', 0);
  });
});

describe('per-function alarms with the perFunctionAlarms context', { timeout: 60_000 }, () => {
  const { api } = buildApp({ ...testContext, [perFunctionAlarmsContextKey]: 'true' });
  const template = Template.fromStack(api);
  const resources = template.toJSON().Resources as Resources;
  const ofType = (type: string) => Object.entries(resources).filter(([, r]) => r.Type === type);

  it('alarms on any error and any throttle of every function, and graphs every function', () => {
    const functionIds = ofType('AWS::Lambda::Function').map(([id]) => id);
    expect(functionIds).toHaveLength(routes.length + workers.length);
    for (const fnId of functionIds) {
      for (const metricName of ['Errors', 'Throttles']) {
        template.hasResourceProperties('AWS::CloudWatch::Alarm', {
          Namespace: 'AWS/Lambda',
          MetricName: metricName,
          Dimensions: [{ Name: 'FunctionName', Value: { Ref: fnId } }],
          Statistic: 'Sum',
          Period: 300,
          Threshold: 0,
          ComparisonOperator: 'GreaterThanThreshold',
        });
      }
    }
    const alarms = ofType('AWS::CloudWatch::Alarm').map(([, r]) => r.Properties);
    expect(alarms).toHaveLength(2 * functionIds.length + queues.length + 3);
    expect(alarms.filter((a) => a.Namespace === 'AWS/Lambda' && !a.Dimensions)).toHaveLength(0);
    const body = JSON.stringify(ofType('AWS::CloudWatch::Dashboard')[0]?.[1].Properties.DashboardBody);
    for (const fnId of functionIds) expect(body).toContain(fnId);
  });
});

describe('alarm notifications with the alarmEmail context', { timeout: 60_000 }, () => {
  const email = 'ops@example.com';
  const { app, api } = buildApp({ ...testContext, [alarmEmailContextKey]: email });
  const template = Template.fromStack(api);

  it('mails every alarm and its recovery to the address through a TLS-only topic', () => {
    template.resourceCountIs('AWS::SNS::Topic', 1);
    const [topicId] = Object.keys(template.findResources('AWS::SNS::Topic'));
    template.hasResourceProperties('AWS::SNS::Topic', { TopicName: Match.absent() });
    template.hasResourceProperties('AWS::SNS::Subscription', {
      Protocol: 'email',
      Endpoint: email,
      TopicArn: { Ref: topicId },
    });
    const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm'));
    expect(alarms.length).toBeGreaterThanOrEqual(7);
    for (const alarm of alarms) {
      expect(alarm.Properties.AlarmActions).toEqual([{ Ref: topicId }]);
      expect(alarm.Properties.OKActions).toEqual([{ Ref: topicId }]);
    }
    template.hasResourceProperties('AWS::SNS::TopicPolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
          Match.objectLike({
            Effect: 'Allow',
            Principal: { Service: 'cloudwatch.amazonaws.com' },
            Action: 'sns:Publish',
          }),
        ]),
      },
    });
  });

  it('passes the cdk-nag checks with the topic', () => {
    const assembly = app.synth();
    const report = JSON.parse(fs.readFileSync(path.join(assembly.directory, 'validation-report.json'), 'utf8')) as {
      pluginReports: { conclusion: string; violations: unknown[] }[];
    };
    expect(report.pluginReports.filter((r) => r.conclusion !== 'success' || r.violations.length > 0)).toEqual([]);
  });

  it('refuses an alarmEmail that is not an email address', () => {
    expect(() => buildApp({ ...testContext, [alarmEmailContextKey]: 'not-an-address' })).toThrow(/alarmEmail/);
  });
});
