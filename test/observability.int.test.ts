import fs from 'node:fs';
import path from 'node:path';
import { Match, Template } from 'aws-cdk-lib/assertions';
import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { keyedHandler } from '../functions/http/keyed-handler.ts';
import { anyOrigin } from '../functions/http/origin-check.ts';
import { publicHandler } from '../functions/http/public-handler.ts';
import { json } from '../functions/http/response.ts';
import { logger } from '../functions/observability/logger.ts';
import {
  addCreditsCharged,
  countDeferred,
  countRunEnded,
  countRunStarted,
  countStepCompleted,
  countStepFailed,
  countWebhookAttempt,
  metrics,
} from '../functions/observability/metrics.ts';
import { buildApp } from '../lib/build-app.ts';
import { alarmThresholds } from '../lib/observability.ts';
import { contextKeys } from '../lib/stages.ts';
import { pythonRunner, workers } from '../lib/workers.ts';
import { queues, streamMappings } from '../platform/definitions.ts';
import { metricNames, metricsNamespace, metricsServiceName, versionDimensions } from '../platform/metric-names.ts';
import { routes } from '../platform/routes.ts';
import { nestedParameters, nestedTemplates } from './support/nested-templates.ts';
import { type SeededTeam, seedTeam, startTestStack, type TestStack } from './support/stack.ts';
import { pinnedProd } from './support/stages.ts';

/** No bundling (fast), and validation failures thrown with the whole report in the message. */
const testContext = { 'aws:cdk:bundling-stacks': [], '@aws-cdk/core:appMode': 'inmemory' };

type Resource = { Type: string; Properties: Record<string, unknown> };
type Resources = Record<string, Resource>;

describe('service metrics (embedded metric format)', () => {
  afterEach(() => metrics.clearMetrics());

  it('records each helper under the namespace with the service and stage dimensions', () => {
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
    expect(directive?.Dimensions).toEqual([['service', 'stage']]);
    expect(emf.service).toBe(metricsServiceName);
    // SERVICE_STAGE is unset in tests, as in the local default.
    expect(emf.stage).toBe('local');
    // Failures are counted by their own helpers (below); the access log's 5xx and 429s by a metric filter.
    const countedElsewhere: string[] = [
      metricNames.deferredExpired,
      metricNames.runsEnded,
      metricNames.failedRuns,
      metricNames.failedSteps,
      metricNames.stepsFailingForOperator,
      metricNames.apiFailures,
    ];
    expect(directive?.Metrics.map((m) => m.Name).sort()).toEqual(
      Object.values(metricNames)
        .filter((name) => !countedElsewhere.includes(name))
        .sort(),
    );
    expect(emf).toMatchObject({
      RunsStarted: 1,
      StepsCompleted: [1, 1],
      CreditsCharged: 2.5,
      WebhookAttempts: [1, 1],
      WebhookFailures: [0, 1],
      DeferredDispatched: 3,
      DeferredCancelled: 1,
    });
    // A dispatcher tick that moved nothing publishes nothing: no custom metric costs money while idle.
    expect(emf.DeferredExpired).toBeUndefined();
  });

  it("counts a failed step and its run in the stage's total and under their reason (its own EMF line)", () => {
    const stdout = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    // A single metric reads the switch when it is made: on, to see the line it writes at once.
    vi.stubEnv('POWERTOOLS_METRICS_DISABLED', 'false');
    try {
      countStepFailed('provider_auth');
      countRunEnded('provider_auth');
      countRunEnded(undefined);
      const lines = stdout.mock.calls.map(([chunk]) => JSON.parse(String(chunk)) as Record<string, unknown>);
      const byReason = lines.map((line) => ({
        dimensions: (line._aws as { CloudWatchMetrics: { Dimensions: string[][] }[] }).CloudWatchMetrics[0]?.Dimensions,
        reason: line.reason,
        stage: line.stage,
        service: line.service,
        failedSteps: line.FailedSteps,
        failedRuns: line.FailedRuns,
      }));
      expect(byReason).toEqual([
        {
          dimensions: [['service', 'stage', 'reason']],
          reason: 'provider_auth',
          stage: 'local',
          service: metricsServiceName,
          failedSteps: 1,
          failedRuns: undefined,
        },
        {
          dimensions: [['service', 'stage', 'reason']],
          reason: 'provider_auth',
          stage: 'local',
          service: metricsServiceName,
          failedSteps: undefined,
          failedRuns: 1,
        },
      ]);
    } finally {
      vi.unstubAllEnvs();
      stdout.mockRestore();
    }
    // The totals (no reason) go with the invocation's other metrics.
    const emf = metrics.serializeMetrics() as unknown as Record<string, unknown> & {
      _aws: { CloudWatchMetrics: { Dimensions: string[][] }[] };
    };
    expect(emf._aws.CloudWatchMetrics[0]?.Dimensions).toEqual([['service', 'stage']]);
    // A refused key is an operator's to mend: counted for its alarm too, in the stage's dimension set.
    expect(emf).toMatchObject({ FailedSteps: 1, FailedRuns: 1, RunsEnded: [1, 1], StepsFailingForOperator: 1 });
  });

  it("counts a step failing for a reason a retry or the caller mends in FailedSteps only, not for the operator's alarm", () => {
    for (const reason of ['timeout', 'provider_4xx', 'provider_unavailable', 'code'] as const) countStepFailed(reason);
    const emf = metrics.serializeMetrics() as unknown as Record<string, unknown>;
    expect(emf.FailedSteps).toEqual([1, 1, 1, 1]);
    expect(emf.StepsFailingForOperator).toBeUndefined();
    metrics.clearMetrics();
    countStepFailed('configuration');
    expect((metrics.serializeMetrics() as unknown as Record<string, unknown>).StepsFailingForOperator).toBe(1);
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
    // A public handler carries no Powertools: it logs only a server failure, as one line of the same shape.
    const open = publicHandler(async () => json(200, {}), anyOrigin);
    const openFailing = publicHandler(async () => {
      throw new Error('boom');
    }, anyOrigin);
    const lines = await captureLogs(async () => {
      expect((await keyed(event('req-1', { key: team.key, jobId: 'job-1' }), context)).statusCode).toBe(200);
      expect((await failing(event('req-2', { key: team.key }), context)).statusCode).toBe(500);
      expect((await open(event('req-3'), context)).statusCode).toBe(200);
      expect((await openFailing(event('req-4', { key: team.key }), context)).statusCode).toBe(500);
    });
    expect(lines.map((line) => line.message)).toEqual(['keyed probe', 'request failed', 'request failed']);
    expect(lines[0]).toMatchObject({ requestId: 'req-1', teamId: team.teamId, jobId: 'job-1', function_name: 'probe' });
    expect(lines[1]).toMatchObject({ requestId: 'req-2', teamId: team.teamId, level: 'ERROR' });
    expect(lines[1]?.jobId).toBeUndefined();
    expect(lines[2]).toMatchObject({
      level: 'ERROR',
      service: lines[1]?.service,
      requestId: 'req-4',
      function_name: 'probe',
      function_request_id: 'aws-request',
      error: { name: 'Error', message: 'boom' },
    });
    expect(lines[2]?.teamId).toBeUndefined();
    const all = JSON.stringify(lines);
    expect(all).not.toContain(team.key);
    expect(all).not.toMatch(/authorization|bearer/i);
  });
});

/** Alarm metrics as CloudWatch bills them ($0.10 each a month): one per plain alarm, one per metric a math alarm reads. */
const alarmMetricCount = (alarms: Record<string, unknown>[]) =>
  alarms.reduce(
    (sum, a) =>
      sum + (a.MetricName ? 1 : ((a.Metrics as { MetricStat?: unknown }[]) ?? []).filter((m) => m.MetricStat).length),
    0,
  );

const synthesizeApi = (context: Record<string, unknown>) => {
  const built = buildApp({ ...testContext, ...context }, {});
  const template = Template.fromStack(built.api);
  const resources = template.toJSON().Resources as Resources;
  const ofType = (type: string) => Object.entries(resources).filter(([, r]) => r.Type === type);
  const functionIdOf = (description: string) => {
    const found = ofType('AWS::Lambda::Function').find(([, r]) => r.Properties.Description === description);
    if (!found) throw new Error(`no function described as ${description}`);
    return found[0];
  };
  return {
    ...built,
    template,
    ofType,
    functionIdOf,
    alarms: ofType('AWS::CloudWatch::Alarm').map(([, r]) => r.Properties),
  };
};

describe('alarms of one stage', { timeout: 180_000 }, () => {
  const dev = synthesizeApi({});
  const prod = synthesizeApi(pinnedProd());
  const { template, ofType, functionIdOf, alarms } = dev;
  const functionIds = ofType('AWS::Lambda::Function').map(([id]) => id);

  it("watches only this stage's resources and metrics, and the account's concurrency alone account-wide", () => {
    for (const [built, alarmList] of [
      [dev, dev.alarms],
      [prod, prod.alarms],
    ] as const) {
      for (const alarm of alarmList) {
        const metrics = (
          alarm.MetricName
            ? [{ Namespace: alarm.Namespace, MetricName: alarm.MetricName, Dimensions: alarm.Dimensions }]
            : (
                alarm.Metrics as {
                  MetricStat?: { Metric: { Namespace: string; MetricName: string; Dimensions?: unknown } };
                }[]
              )
                .filter((m) => m.MetricStat)
                .map((m) => m.MetricStat?.Metric)
        ) as { Namespace: string; MetricName: string; Dimensions?: { Name: string; Value: unknown }[] }[];
        for (const metric of metrics) {
          // The account's claimed concurrency is the account's: the one metric without a dimension.
          if (metric.MetricName === 'ClaimedAccountConcurrency') {
            expect(metric.Namespace).toBe('AWS/Lambda');
            expect(metric.Dimensions).toBeUndefined();
            continue;
          }
          const dimensions = metric.Dimensions ?? [];
          expect(dimensions.length, JSON.stringify(alarm.AlarmDescription)).toBeGreaterThan(0);
          for (const dimension of dimensions) {
            // The service's own metrics carry the stage's name, but the versioned failure count
            // (by function and version) and the gateway's 429s (by API); every other dimension names
            // a resource of this stack (a Ref or GetAtt), never a literal shared by stages.
            const byResource = ['apiId', ...Object.keys(versionDimensions('', ''))];
            if (metric.Namespace === metricsNamespace && !byResource.includes(dimension.Name)) {
              expect([metricsServiceName, built.config.stage, 'provider_auth', 'configuration']).toContain(
                dimension.Value,
              );
            } else expect(typeof dimension.Value).toBe('object');
          }
        }
      }
    }
    expect(String(prod.alarms[0]?.AlarmDescription)).toMatch(/prod/);
  });

  it('alarms when a message arrives in the dead-letter queue (arrivals, not depth)', () => {
    const dlqIds = ofType('AWS::SQS::Queue')
      .filter(([, r]) => r.Properties.RedrivePolicy === undefined)
      .map(([id]) => id);
    // One for the stage: the work queues' and the stream mappings' dead letters (one alarm metric).
    expect(dlqIds).toHaveLength(1);
    for (const [, queue] of ofType('AWS::SQS::Queue').filter(([, r]) => r.Properties.RedrivePolicy)) {
      expect(queue.Properties.RedrivePolicy).toMatchObject({
        deadLetterTargetArn: { 'Fn::GetAtt': [dlqIds[0], 'Arn'] },
      });
    }
    for (const [, mapping] of ofType('AWS::Lambda::EventSourceMapping').filter(
      ([, r]) => r.Properties.StartingPosition,
    )) {
      expect(mapping.Properties.DestinationConfig).toEqual({
        OnFailure: { Destination: { 'Fn::GetAtt': [dlqIds[0], 'Arn'] } },
      });
    }
    expect(streamMappings.length).toBeGreaterThan(0);
    for (const dlqId of dlqIds) {
      template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        Metrics: [
          Match.objectLike({ Expression: 'DIFF(FILL(depth, 0))', ReturnData: true }),
          Match.objectLike({
            Id: 'depth',
            MetricStat: {
              Metric: {
                Namespace: 'AWS/SQS',
                MetricName: 'ApproximateNumberOfMessagesVisible',
                Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [dlqId, 'QueueName'] } }],
              },
              Period: 60,
              Stat: 'Maximum',
            },
            ReturnData: false,
          }),
        ],
        Threshold: 0,
        ComparisonOperator: 'GreaterThanThreshold',
        EvaluationPeriods: alarmThresholds.deadLetterEvaluationPeriods,
        DatapointsToAlarm: 1,
        TreatMissingData: 'notBreaching',
      });
    }
    // Depth is graphed, never alarmed: a message kept for inspection must not keep an alarm red.
    expect(alarms.filter((a) => a.MetricName === 'ApproximateNumberOfMessagesVisible')).toEqual([]);
  });

  it("alarms when a work queue's oldest message is older than its consumer ever leaves one", () => {
    for (const definition of queues) {
      const [queueId] = ofType('AWS::SQS::Queue').find(
        ([id, r]) => id.startsWith(`${definition.id}Queue`) && r.Properties.RedrivePolicy,
      ) ?? [''];
      template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        Namespace: 'AWS/SQS',
        MetricName: 'ApproximateAgeOfOldestMessage',
        Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [queueId, 'QueueName'] } }],
        Statistic: 'Maximum',
        Period: 300,
        Threshold: alarmThresholds.oldestMessageSeconds[definition.id],
        ComparisonOperator: 'GreaterThanThreshold',
        TreatMissingData: 'notBreaching',
      });
    }
    // Past its longest delay (15 minutes) and every redelivery its redrive allows.
    for (const definition of queues) {
      expect(alarmThresholds.oldestMessageSeconds[definition.id]).toBeGreaterThan(
        900 + definition.visibilityTimeoutSeconds * definition.maxReceiveCount,
      );
    }
  });

  it("alarms on the dispatcher's ticks by its errors metric alone; the queue workers' failures by their queues", () => {
    const fnId = functionIdOf('runs on the dispatcher schedule');
    // A missing period (no invocation: a missed tick) is a breach, as a failed tick is.
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'AWS/Lambda',
      MetricName: 'Errors',
      Dimensions: [{ Name: 'FunctionName', Value: { Ref: fnId } }],
      Statistic: 'Sum',
      Period: 300,
      Threshold: 0,
      ComparisonOperator: 'GreaterThanThreshold',
      EvaluationPeriods: 5,
      DatapointsToAlarm: 3,
      TreatMissingData: 'breaching',
    });
    expect(alarms.filter((a) => a.Namespace === 'AWS/Lambda' && a.MetricName === 'Errors')).toHaveLength(1);
    expect(alarms.filter((a) => a.Namespace === 'AWS/Lambda' && a.MetricName === 'Invocations')).toEqual([]);
    // The queue feeders run with the loop guard at Allow, under which Lambda never publishes
    // RecursiveInvocationsDropped: no alarm watches a metric that cannot come.
    const feeders = workers.filter((w) => w.feedsItsOwnQueue);
    expect(feeders.map((w) => w.id)).toEqual(['StepExecutor', 'WebhookDelivery']);
    for (const worker of feeders) {
      template.hasResourceProperties('AWS::Lambda::Function', {
        Description: `consumes the ${worker.trigger.kind === 'queue' ? worker.trigger.queue : ''} queue`,
        RecursiveLoop: 'Allow',
      });
    }
    expect(JSON.stringify(alarms)).not.toContain('RecursiveInvocationsDropped');
  });

  it("alarms when more than 2% of at least 50 API requests answer 5xx or the gateway's own 429 in 3 of 5 five-minute periods", () => {
    const apiRef = { Ref: ofType('AWS::ApiGatewayV2::Api')[0]?.[0] };
    const metricStat = (id: string, namespace: string, metricName: string, dimension: string) =>
      Match.objectLike({
        Id: id,
        MetricStat: {
          Metric: { Namespace: namespace, MetricName: metricName, Dimensions: [{ Name: dimension, Value: apiRef }] },
          Period: 300,
          Stat: 'Sum',
        },
        ReturnData: false,
      });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Metrics: Match.arrayWith([
        Match.objectLike({
          Expression: 'IF(FILL(requests, 0) >= 50, ((100 * FILL(failures, 0)) / requests), 0)',
          ReturnData: true,
        }),
        metricStat('failures', metricsNamespace, metricNames.apiFailures, 'apiId'),
        metricStat('requests', 'AWS/ApiGateway', 'Count', 'ApiId'),
      ]),
      Threshold: 2,
      ComparisonOperator: 'GreaterThanThreshold',
      EvaluationPeriods: 5,
      DatapointsToAlarm: 3,
      TreatMissingData: 'notBreaching',
    });
    // The numerator: the access log's lines answered 5xx, or 429 by the gateway (no integration latency).
    template.hasResourceProperties('AWS::Logs::MetricFilter', {
      FilterPattern: '{ ($.status = "5*") || (($.status = "429") && ($.integrationLatency = "-")) }',
      MetricTransformations: [
        Match.objectLike({
          MetricNamespace: metricsNamespace,
          MetricName: metricNames.apiFailures,
          MetricValue: '1',
          Dimensions: [{ Key: 'apiId', Value: '$.apiId' }],
        }),
      ],
    });
  });

  it("does not alarm on a customer's failing webhook receiver", () => {
    expect(JSON.stringify(alarms)).not.toContain(metricNames.webhookFailures);
    expect(JSON.stringify(alarms)).not.toContain(metricNames.webhookAttempts);
  });

  it('costs $1.30 a month idle: 13 standard-resolution alarm metrics (prod 19), and no dashboard unless asked', () => {
    // The API's failure rate, 5xx and the gateway's own 429s (2 metrics); the failed-run rate (2);
    // steps failing for an operator's reason (1); the dead-letter queue's arrivals (1); per work
    // queue, its oldest message; the dispatcher's ticks (failed or missed, one metric); the
    // publisher's iterator age; table write throttles; the account's concurrency; the run event
    // stream's throttles (test/cdk-alarms.test.ts checks each rule). 19 metrics before: a DLQ
    // per work queue and per stream mapping, an alarm per operator's reason, reads' throttles, and
    // the gateway's 429s apart.
    expect(alarms).toHaveLength(1 + 1 + 1 + 1 + queues.length + 1 + 1 + 1 + 1 + 1);
    expect(alarmMetricCount(alarms)).toBe(13);
    // prod adds its canary's two rollback alarms for each of RunWorkflow, RunAgent and StepExecutor
    // (the new version's errors, and its 5xx answers and failed records: lib/safe-deploys.ts).
    expect(alarmMetricCount(prod.alarms)).toBe(13 + 2 * 3);
    template.resourceCountIs('AWS::CloudWatch::Dashboard', 0);
    expect(functionIds.length).toBe(routes.length + workers.length + 1);
    expect(functionIds.some((id) => id.startsWith(pythonRunner.id))).toBe(true);
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

describe('the dashboard, with the dashboard context', { timeout: 180_000 }, () => {
  const { template, ofType } = synthesizeApi({ ...pinnedProd(), [contextKeys.dashboard]: 'true' });

  it("graphs the API, every function, the queues and the stage's service metrics", () => {
    template.resourceCountIs('AWS::CloudWatch::Dashboard', 1);
    const [[, dashboard] = []] = ofType('AWS::CloudWatch::Dashboard');
    expect(dashboard?.Properties.DashboardName).toBeUndefined();
    const body = JSON.stringify(dashboard?.Properties.DashboardBody);
    for (const name of Object.values(metricNames)) expect(body).toContain(`\\"${name}\\"`);
    expect(body).toContain(`\\"${metricsNamespace}\\"`);
    expect(body).toContain(`\\"service\\",\\"${metricsServiceName}\\",\\"stage\\",\\"prod\\"`);
    for (const name of ['5xx', 'Count', 'Latency', 'Errors', 'Throttles', 'Duration', 'Invocations']) {
      expect(body).toContain(`\\"${name}\\"`);
    }
    expect(body).toContain('ApproximateAgeOfOldestMessage');
    expect(body).toContain('ApproximateNumberOfMessagesVisible');
    for (const [fnId] of ofType('AWS::Lambda::Function')) expect(body).toContain(fnId);
  });
});

describe('per-function alarms with the perFunctionAlarms context', { timeout: 180_000 }, () => {
  const { template, ofType, alarms: stackAlarms, api } = synthesizeApi({ [contextKeys.perFunctionAlarms]: 'true' });
  // In a nested stack of their own (the API stack would pass CloudFormation's 500 resources): each
  // alarm names its function through a parameter the API stack passes.
  const [nested] = nestedTemplates(api);
  const nestedAlarms = Object.values(nested?.findResources('AWS::CloudWatch::Alarm') ?? {}).map(
    (r) => r.Properties as (typeof stackAlarms)[number],
  );
  const alarms = [...stackAlarms, ...nestedAlarms];
  const passed = nestedParameters(template);

  it('alarms on any error and any throttle of every route function too, from a nested stack', () => {
    const functionIds = ofType('AWS::Lambda::Function').map(([id]) => id);
    // Every route, worker and the PythonRunner (invoked by the step executor).
    expect(functionIds).toHaveLength(routes.length + workers.length + 1);
    const erroredFunctions = new Set(
      nestedAlarms
        .filter((a) => a.Namespace === 'AWS/Lambda' && a.MetricName === 'Errors')
        .map((a) => {
          const ref = (a.Dimensions as { Value: { Ref: string } }[] | undefined)?.[0]?.Value.Ref ?? '';
          return (passed[ref] as { Ref?: string } | undefined)?.Ref;
        }),
    );
    const erroredInStack = new Set(
      stackAlarms
        .filter((a) => a.Namespace === 'AWS/Lambda' && a.MetricName === 'Errors')
        .map((a) => (a.Dimensions as { Value: { Ref?: string } }[] | undefined)?.[0]?.Value.Ref),
    );
    for (const fnId of functionIds) expect(erroredInStack.has(fnId) || erroredFunctions.has(fnId)).toBe(true);
    // Two more per route, the two stream workers, the PythonRunner and the queue consumers, but the
    // run event stream's throttles (alarmed by default): the dispatcher's errors are its ticks alarm.
    const consumers = workers.filter((w) => w.trigger.kind === 'queue').length;
    const streamWorkers = workers.filter((w) => w.trigger.kind === 'stream').length;
    expect(alarmMetricCount(alarms)).toBe(13 - 1 + 2 * (routes.length + streamWorkers + 1 + consumers));
    // The account's concurrency is the one alarm without a dimension.
    expect(alarms.filter((a) => a.Namespace === 'AWS/Lambda' && !a.Dimensions).map((a) => a.MetricName)).toEqual([
      'ClaimedAccountConcurrency',
    ]);
  });
});

describe('alarm notifications with the alarmEmail context', { timeout: 180_000 }, () => {
  const email = 'ops@example.com';
  const { app, template } = synthesizeApi({ [contextKeys.alarmEmail]: email });

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
    expect(alarms.length).toBeGreaterThanOrEqual(10);
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
    expect(() => buildApp({ ...testContext, [contextKeys.alarmEmail]: 'not-an-address' }, {})).toThrow(/alarmEmail/);
  });
});
