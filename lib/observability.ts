import { Aws, CfnOutput, Duration, Validations } from 'aws-cdk-lib';
import type { IHttpApi } from 'aws-cdk-lib/aws-apigatewayv2';
import {
  type Alarm,
  AlarmStatusWidget,
  ComparisonOperator,
  Dashboard,
  GraphWidget,
  type IMetric,
  MathExpression,
  Metric,
  Stats,
  TextWidget,
  TreatMissingData,
} from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import { PolicyStatement, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import type { Queue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { metricDimensions, metricNames, metricsNamespace } from '../functions/observability/metric-names.ts';
import type { QueueDefinition } from './definitions.ts';
import { workers } from './workers.ts';

/** Context key: `cdk deploy -c alarmEmail=ops@example.com` sends every alarm (and its recovery) there. */
export const alarmEmailContextKey = 'alarmEmail';

/**
 * Context key: `cdk deploy -c perFunctionAlarms=true` alarms on each function's errors and throttles
 * (two alarms per function, $0.10 each a month) and graphs each function on the dashboard. Without
 * it, the errors and throttles of Lambda in the account and region are watched as two aggregates,
 * so the default alarms (9 alarm metrics) and dashboard (under 50 metrics) stay inside CloudWatch's
 * always-free tier (10 alarm metrics, 3 dashboards of 50 metrics): no cost while idle.
 */
export const perFunctionAlarmsContextKey = 'perFunctionAlarms';

/** Alarm thresholds, in one place for operators to tune. */
export const alarmThresholds = {
  /** Percentage of API requests answered 5xx over `apiWindow`. */
  api5xxPercent: 1,
  apiWindow: Duration.minutes(5),
  /** Percentage of webhook attempts without a 2xx over `webhookWindow`, once there were `webhookMinAttempts`. */
  webhookFailurePercent: 20,
  webhookMinAttempts: 10,
  webhookWindow: Duration.minutes(15),
  /** The dispatcher ticks every minute: no invocation in this window means ticks were missed. */
  dispatcherWindow: Duration.minutes(5),
  /** Window for function errors and throttles, and DLQ depth. */
  window: Duration.minutes(5),
} as const;

export interface ObservabilityProps {
  api: IHttpApi;
  /** Every route and worker function, by route or worker id. */
  functions: ReadonlyMap<string, IFunction>;
  /** The work queues by definition id; their dead-letter queues are watched. */
  queues: ReadonlyMap<QueueDefinition['id'], Queue>;
}

/**
 * What an operator watches: one CloudWatch dashboard (API traffic, errors and latency; runs, steps,
 * credits, webhooks and deferred runs from the service's EMF metrics; function errors, throttles and
 * duration; queue age and DLQ depth) and the alarms (every DLQ not empty, any function error or
 * throttle, API 5xx rate, webhook failure rate, dispatcher missed ticks), inside CloudWatch's
 * always-free tier unless `perFunctionAlarms` is set. With the `alarmEmail` context value, an SNS
 * topic mails every alarm and its recovery.
 */
export class Observability extends Construct {
  readonly dashboard: Dashboard;
  readonly alarms: Alarm[] = [];
  readonly alarmTopic: Topic | undefined;

  constructor(scope: Construct, id: string, props: ObservabilityProps) {
    super(scope, id);
    const { api, functions, queues } = props;
    const window = alarmThresholds.window;

    const serviceMetric = (metricName: string, label: string, period = window) =>
      new Metric({
        namespace: metricsNamespace,
        metricName,
        dimensionsMap: { ...metricDimensions },
        statistic: Stats.SUM,
        period,
        label,
      });

    // API
    const api5xxRate = new MathExpression({
      expression: '100 * FILL(serverErrors, 0) / requests',
      usingMetrics: {
        serverErrors: api.metricServerError({ period: alarmThresholds.apiWindow, statistic: Stats.SUM }),
        requests: api.metricCount({ period: alarmThresholds.apiWindow, statistic: Stats.SUM }),
      },
      period: alarmThresholds.apiWindow,
      label: 'API 5xx rate (%)',
    });
    this.alarms.push(
      api5xxRate.createAlarm(this, 'Api5xxRateAlarm', {
        alarmDescription:
          `More than ${alarmThresholds.api5xxPercent}% of API requests answered 5xx over ` +
          `${alarmThresholds.apiWindow.toMinutes()} minutes. Look for "request failed" in the route functions' logs.`,
        threshold: alarmThresholds.api5xxPercent,
        comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 1,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      }),
    );

    const perFunction = ['true', true].includes(this.node.tryGetContext(perFunctionAlarmsContextKey));
    // Functions, by default: any error or throttle of Lambda in this account and region (one metric
    // each; exact when the service has its account to itself, as AWS recommends for a workload).
    const lambdaTotal = (metricName: 'Errors' | 'Throttles') =>
      new Metric({ namespace: 'AWS/Lambda', metricName, statistic: Stats.SUM, period: window });
    const lambdaErrors = lambdaTotal('Errors');
    const lambdaThrottles = lambdaTotal('Throttles');
    if (!perFunction) {
      this.alarms.push(
        lambdaErrors.createAlarm(this, 'FunctionErrorsAlarm', {
          alarmDescription:
            'A Lambda function in this account and region failed (an uncaught error, a timeout or a crash). ' +
            "The dashboard's function graphs and each function's logs say which.",
          threshold: 0,
          comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
          evaluationPeriods: 1,
          treatMissingData: TreatMissingData.NOT_BREACHING,
        }),
        lambdaThrottles.createAlarm(this, 'FunctionThrottlesAlarm', {
          alarmDescription:
            'A Lambda function in this account and region was throttled (account or reserved concurrency exhausted).',
          threshold: 0,
          comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
          evaluationPeriods: 1,
          treatMissingData: TreatMissingData.NOT_BREACHING,
        }),
      );
    }
    // Functions with perFunctionAlarms: any error or throttle, per function.
    for (const [fnId, fn] of perFunction ? functions : []) {
      this.alarms.push(
        fn.metricErrors({ period: window, statistic: Stats.SUM }).createAlarm(this, `${fnId}ErrorsAlarm`, {
          alarmDescription: `The ${fnId} function failed (an uncaught error, a timeout or a crash).`,
          threshold: 0,
          comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
          evaluationPeriods: 1,
          treatMissingData: TreatMissingData.NOT_BREACHING,
        }),
        fn.metricThrottles({ period: window, statistic: Stats.SUM }).createAlarm(this, `${fnId}ThrottlesAlarm`, {
          alarmDescription: `The ${fnId} function was throttled (account or reserved concurrency exhausted).`,
          threshold: 0,
          comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
          evaluationPeriods: 1,
          treatMissingData: TreatMissingData.NOT_BREACHING,
        }),
      );
    }

    // Dead-letter queues: any message is a step or webhook that ran out of retries.
    const deadLetterQueues = [...queues].flatMap(([queueId, queue]) =>
      queue.deadLetterQueue ? [{ queueId, dlq: queue.deadLetterQueue.queue }] : [],
    );
    for (const { queueId, dlq } of deadLetterQueues) {
      this.alarms.push(
        dlq
          .metricApproximateNumberOfMessagesVisible({ period: window, statistic: Stats.MAXIMUM })
          .createAlarm(this, `${queueId}DeadLetterQueueAlarm`, {
            alarmDescription: `Messages in the ${queueId} dead-letter queue: they ran out of retries. Inspect, then redrive or delete them.`,
            threshold: 0,
            comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
            evaluationPeriods: 1,
            treatMissingData: TreatMissingData.NOT_BREACHING,
          }),
      );
    }

    // Webhooks: failure rate from the service's own metrics, once there is enough traffic to mean something.
    const webhookAttempts = serviceMetric(metricNames.webhookAttempts, 'attempts', alarmThresholds.webhookWindow);
    const webhookFailures = serviceMetric(metricNames.webhookFailures, 'failures', alarmThresholds.webhookWindow);
    const webhookFailureRate = new MathExpression({
      expression: `IF(attempts >= ${alarmThresholds.webhookMinAttempts}, 100 * FILL(failures, 0) / attempts, 0)`,
      usingMetrics: { attempts: webhookAttempts, failures: webhookFailures },
      period: alarmThresholds.webhookWindow,
      label: 'Webhook failure rate (%)',
    });
    this.alarms.push(
      webhookFailureRate.createAlarm(this, 'WebhookFailureRateAlarm', {
        alarmDescription:
          `More than ${alarmThresholds.webhookFailurePercent}% of webhook attempts got no 2xx over ` +
          `${alarmThresholds.webhookWindow.toMinutes()} minutes (at least ${alarmThresholds.webhookMinAttempts} ` +
          'attempts). See "webhook attempt" lines in the WebhookDelivery logs.',
        threshold: alarmThresholds.webhookFailurePercent,
        comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 1,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      }),
    );

    // The scheduled dispatcher: missing invocations are missed ticks (deferred runs not moving, no sweep).
    const scheduled = workers.filter((w) => w.trigger.kind === 'schedule');
    const dispatcherInvocations: IMetric[] = [];
    for (const worker of scheduled) {
      const fn = functions.get(worker.id);
      if (!fn) throw new Error(`no function for scheduled worker ${worker.id}`);
      const invocations = fn.metricInvocations({ period: alarmThresholds.dispatcherWindow, statistic: Stats.SUM });
      dispatcherInvocations.push(invocations.with({ label: `${worker.id} invocations` }));
      this.alarms.push(
        invocations.createAlarm(this, `${worker.id}MissedTicksAlarm`, {
          alarmDescription:
            `${worker.id} was not invoked for ${alarmThresholds.dispatcherWindow.toMinutes()} minutes: ` +
            'check its EventBridge schedule rule is enabled.',
          threshold: 1,
          comparisonOperator: ComparisonOperator.LESS_THAN_THRESHOLD,
          evaluationPeriods: 1,
          treatMissingData: TreatMissingData.BREACHING,
        }),
      );
    }

    // Optional notifications.
    const alarmEmail: unknown = this.node.tryGetContext(alarmEmailContextKey);
    if (alarmEmail !== undefined && alarmEmail !== '') {
      if (typeof alarmEmail !== 'string' || !/^[^@\s]+@[^@\s]+$/.test(alarmEmail)) {
        throw new Error(`context ${alarmEmailContextKey} must be an email address, got ${JSON.stringify(alarmEmail)}`);
      }
      const topic = new Topic(this, 'AlarmTopic', { displayName: 'Workflow Run API alarms', enforceSSL: true });
      // enforceSSL replaces the default topic policy: let CloudWatch alarms of this account publish.
      topic.addToResourcePolicy(
        new PolicyStatement({
          principals: [new ServicePrincipal('cloudwatch.amazonaws.com')],
          actions: ['sns:Publish'],
          resources: [topic.topicArn],
          conditions: {
            ArnLike: { 'aws:SourceArn': `arn:${Aws.PARTITION}:cloudwatch:${Aws.REGION}:${Aws.ACCOUNT_ID}:alarm:*` },
            StringEquals: { 'aws:SourceAccount': Aws.ACCOUNT_ID },
          },
        }),
      );
      topic.addSubscription(new EmailSubscription(alarmEmail));
      Validations.of(topic).acknowledge({
        id: 'AwsSolutions-SNS2',
        reason:
          'The topic carries alarm notifications only (alarm name, state, metric values), no customer data. ' +
          'CloudWatch cannot publish to a topic encrypted with the AWS-managed aws/sns key, and a customer-managed ' +
          'key would cost every deployment a monthly fee for no protected content. Publishing requires TLS.',
      });
      const action = new SnsAction(topic);
      for (const alarm of this.alarms) {
        alarm.addAlarmAction(action);
        alarm.addOkAction(action);
      }
      this.alarmTopic = topic;
    }

    // Dashboard
    const fnMetrics = (metric: (fn: IFunction, id: string) => IMetric) =>
      [...functions].map(([fnId, fn]) => metric(fn, fnId));
    const small = { width: 8, height: 6 } as const;
    this.dashboard = new Dashboard(this, 'Dashboard', { defaultInterval: Duration.hours(6) });
    this.dashboard.addWidgets(
      new TextWidget({
        markdown:
          '# Workflow Run API\nAPI traffic and errors, usage from the service metrics ' +
          `(namespace \`${metricsNamespace}\`), functions, queues, and every alarm.`,
        width: 24,
        height: 2,
      }),
    );
    this.dashboard.addWidgets(
      new GraphWidget({
        title: 'API requests',
        left: [
          api.metricCount({ period: window, statistic: Stats.SUM, label: 'requests' }),
          api.metricClientError({ period: window, statistic: Stats.SUM, label: '4xx' }),
          api.metricServerError({ period: window, statistic: Stats.SUM, label: '5xx' }),
        ],
        ...small,
      }),
      new GraphWidget({
        title: 'API 5xx rate (%)',
        left: [api5xxRate],
        leftAnnotations: [{ value: alarmThresholds.api5xxPercent, label: 'alarm' }],
        ...small,
      }),
      new GraphWidget({
        title: 'API latency (ms)',
        left: [
          api.metricLatency({ period: window, statistic: Stats.p(50), label: 'p50' }),
          api.metricLatency({ period: window, statistic: Stats.p(99), label: 'p99' }),
          api.metricIntegrationLatency({ period: window, statistic: Stats.p(99), label: 'integration p99' }),
        ],
        ...small,
      }),
    );
    this.dashboard.addWidgets(
      new GraphWidget({
        title: 'Runs started, steps completed',
        left: [
          serviceMetric(metricNames.runsStarted, 'runs started'),
          serviceMetric(metricNames.stepsCompleted, 'steps completed'),
        ],
        ...small,
      }),
      new GraphWidget({
        title: 'Credits charged',
        left: [serviceMetric(metricNames.creditsCharged, 'credits')],
        ...small,
      }),
      new GraphWidget({
        title: 'Webhook attempts and failures',
        left: [
          serviceMetric(metricNames.webhookAttempts, 'attempts'),
          serviceMetric(metricNames.webhookFailures, 'failures'),
        ],
        right: [webhookFailureRate],
        ...small,
      }),
    );
    this.dashboard.addWidgets(
      new GraphWidget({
        title: 'Deferred runs',
        left: [
          serviceMetric(metricNames.deferredDispatched, 'dispatched'),
          serviceMetric(metricNames.deferredExpired, 'expired'),
          serviceMetric(metricNames.deferredCancelled, 'cancelled'),
        ],
        right: dispatcherInvocations,
        ...small,
      }),
      new GraphWidget({
        title: 'Queue age of oldest message (s)',
        left: [...queues].map(([queueId, queue]) =>
          queue.metricApproximateAgeOfOldestMessage({ period: window, statistic: Stats.MAXIMUM, label: queueId }),
        ),
        ...small,
      }),
      new GraphWidget({
        title: 'Dead-letter queue depth',
        left: deadLetterQueues.map(({ queueId, dlq }) =>
          dlq.metricApproximateNumberOfMessagesVisible({
            period: window,
            statistic: Stats.MAXIMUM,
            label: `${queueId} DLQ`,
          }),
        ),
        leftAnnotations: [{ value: 0, label: 'alarm above' }],
        ...small,
      }),
    );
    // Per function only when asked: three graphs of one metric per function would pass the free
    // tier's 50 metrics per dashboard.
    this.dashboard.addWidgets(
      new GraphWidget({
        title: 'Function errors',
        left: perFunction
          ? fnMetrics((fn, label) => fn.metricErrors({ period: window, statistic: Stats.SUM, label }))
          : [lambdaErrors.with({ label: 'all functions' })],
        ...small,
      }),
      new GraphWidget({
        title: 'Function throttles',
        left: perFunction
          ? fnMetrics((fn, label) => fn.metricThrottles({ period: window, statistic: Stats.SUM, label }))
          : [lambdaThrottles.with({ label: 'all functions' })],
        ...small,
      }),
      new GraphWidget({
        title: 'Function duration p99 (ms)',
        left: perFunction
          ? fnMetrics((fn, label) => fn.metricDuration({ period: window, statistic: Stats.p(99), label }))
          : [
              new Metric({
                namespace: 'AWS/Lambda',
                metricName: 'Duration',
                statistic: Stats.p(99),
                period: window,
                label: 'all functions',
              }),
            ],
        ...small,
      }),
    );
    this.dashboard.addWidgets(new AlarmStatusWidget({ title: 'Alarms', alarms: this.alarms, width: 24, height: 6 }));

    new CfnOutput(this, 'DashboardUrl', {
      value: `https://console.aws.amazon.com/cloudwatch/home?region=${Aws.REGION}#dashboards:name=${this.dashboard.dashboardName}`,
    });
  }
}
