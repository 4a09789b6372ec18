import { Aws, CfnOutput, type CfnResource, Duration, Validations } from 'aws-cdk-lib';
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
import type { IQueue, Queue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import type { QueueDefinition } from '../platform/definitions.ts';
import { metricDimensions, metricNames, metricsNamespace } from '../platform/metric-names.ts';
import { retryDelaySeconds, webhookAttempts } from '../platform/webhook-retries.ts';
import type { StageConfig } from './stages.ts';
import { workers } from './workers.ts';

/** Seconds a webhook message legitimately waits between its first attempt and its last. */
const webhookRetrySpanSeconds = Array.from({ length: webhookAttempts - 1 }, (_, i) => retryDelaySeconds(i + 1)).reduce(
  (sum, seconds) => sum + seconds,
  0,
);

/** Alarm thresholds, in one place for operators to tune. */
export const alarmThresholds = {
  /** Percentage of API requests answered 5xx over `apiWindow`. */
  api5xxPercent: 1,
  apiWindow: Duration.minutes(5),
  /** The dispatcher ticks every minute: no invocation in this window means ticks were missed. */
  dispatcherWindow: Duration.minutes(5),
  /** Window for function errors and throttles, and for the age of the oldest queued message. */
  window: Duration.minutes(5),
  /**
   * Dead-letter arrivals: the DLQ's depth, sampled each minute, rose within the last
   * `deadLetterEvaluationPeriods` minutes. Arrivals, not depth, so that a message left in a DLQ for
   * inspection does not keep the alarm red for the DLQ's retention.
   */
  deadLetterPeriod: Duration.minutes(1),
  deadLetterEvaluationPeriods: 5,
  /**
   * Age (seconds) of the oldest message of each work queue that means it is not being consumed.
   * Steps run within seconds; a webhook may wait out its retry schedule (2 + 4 + 8 + 16 minutes),
   * so its queue gets that span plus a quarter of an hour.
   */
  oldestMessageSeconds: { Steps: 600, Webhooks: webhookRetrySpanSeconds + 900 } satisfies Record<
    QueueDefinition['id'],
    number
  >,
} as const;

export interface ObservabilityProps {
  /** The stage: its metric dimension, alarm email, and whether to add the dashboard and per-route alarms. */
  config: StageConfig;
  api: IHttpApi;
  /** Every route and worker function of this stage, by route or worker id. */
  functions: ReadonlyMap<string, IFunction>;
  /** The work queues by definition id, each with its dead-letter queue. */
  queues: ReadonlyMap<QueueDefinition['id'], Queue>;
  /**
   * The dead-letter queues of stream event source mappings (the operator events' publisher), by
   * stream id: a batch's position lands there after every retry failed. Default: none.
   */
  streamDeadLetterQueues?: ReadonlyMap<string, IQueue>;
}

/**
 * What an operator of one stage is told about, watching only this stage's API, functions and
 * queues: the API's 5xx rate; each dead-letter queue receiving a message; each work queue's oldest
 * message getting old; the dispatcher missing ticks; a worker failing; a queue consumer throttled.
 * Route functions answer errors as 5xx, so the API's rate covers them (`-c perFunctionAlarms=true`
 * adds an errors and a throttles alarm per route function). A customer's failing webhook receiver
 * is not an alarm: it is recorded on the delivery. With `alarmEmail`, an SNS topic mails every
 * alarm and its recovery; with `dashboard`, a CloudWatch dashboard graphs it all.
 */
export class Observability extends Construct {
  readonly dashboard: Dashboard | undefined;
  readonly alarms: Alarm[] = [];
  readonly alarmTopic: Topic | undefined;

  constructor(scope: Construct, id: string, props: ObservabilityProps) {
    super(scope, id);
    const { config, api, functions, queues } = props;
    const window = alarmThresholds.window;
    const fnOf = (fnId: string) => {
      const fn = functions.get(fnId);
      if (!fn) throw new Error(`no function ${fnId}`);
      return fn;
    };

    // API: the share of requests answered 5xx (route functions catch their errors and answer 500;
    // a crash, timeout or throttle of one is a 5xx from API Gateway).
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
          `More than ${alarmThresholds.api5xxPercent}% of ${config.stage} API requests answered 5xx over ` +
          `${alarmThresholds.apiWindow.toMinutes()} minutes. Look for "request failed" in the route functions' logs.`,
        threshold: alarmThresholds.api5xxPercent,
        comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 1,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      }),
    );

    // Queues: dead-letter arrivals, and the work queues' oldest message.
    const deadLetterQueues = [
      ...[...queues].flatMap(([queueId, queue]) =>
        queue.deadLetterQueue
          ? [
              {
                queueId: queueId as string,
                dlq: queue.deadLetterQueue.queue,
                cause: `the ${queueId} consumer could not process it after every receive. Inspect it, fix the cause, then redrive or delete it.`,
              },
            ]
          : [],
      ),
      ...[...(props.streamDeadLetterQueues ?? [])].map(([queueId, dlq]) => ({
        queueId,
        dlq,
        cause:
          `a batch of the table's stream failed every retry of its ${queueId} consumer. The message names the ` +
          'stream records (shard, sequence numbers), which the stream keeps 24 hours: see docs/operations.md, Operator events.',
      })),
    ];
    const deadLetterDepth = (dlq: IQueue, period: Duration) =>
      dlq.metricApproximateNumberOfMessagesVisible({ period, statistic: Stats.MAXIMUM });
    for (const { queueId, dlq, cause } of deadLetterQueues) {
      // SQS stops publishing an idle, empty queue's metrics, so missing minutes are a depth of 0:
      // the first message after a quiet spell is a rise from 0. NumberOfMessagesSent would miss it:
      // SQS does not count a message its redrive policy moves.
      const arrivals = new MathExpression({
        expression: 'DIFF(FILL(depth, 0))',
        usingMetrics: { depth: deadLetterDepth(dlq, alarmThresholds.deadLetterPeriod) },
        period: alarmThresholds.deadLetterPeriod,
        label: `${queueId} DLQ arrivals`,
      });
      this.alarms.push(
        arrivals.createAlarm(this, `${queueId}DeadLetterArrivalsAlarm`, {
          alarmDescription: `A message arrived in the ${config.stage} ${queueId} dead-letter queue: ${cause}`,
          threshold: 0,
          comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
          evaluationPeriods: alarmThresholds.deadLetterEvaluationPeriods,
          datapointsToAlarm: 1,
          treatMissingData: TreatMissingData.NOT_BREACHING,
        }),
      );
    }
    for (const [queueId, queue] of queues) {
      const seconds = alarmThresholds.oldestMessageSeconds[queueId];
      this.alarms.push(
        queue
          .metricApproximateAgeOfOldestMessage({ period: window, statistic: Stats.MAXIMUM })
          .createAlarm(this, `${queueId}OldestMessageAlarm`, {
            alarmDescription:
              `The oldest message of the ${config.stage} ${queueId} queue is over ${Math.round(seconds / 60)} minutes ` +
              `old: its consumer is not keeping up, failing, or throttled. Check the ${queueId} consumer's logs.`,
            threshold: seconds,
            comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
            evaluationPeriods: 1,
            treatMissingData: TreatMissingData.NOT_BREACHING,
          }),
      );
    }

    // Workers: any error (an uncaught error, a timeout or a crash; a batch whose every record
    // failed); a queue consumer throttled (the account's concurrency exhausted). The dispatcher's
    // throttles show as missed ticks.
    for (const worker of workers) {
      // A stream worker's failures are retried from the stream, then land in its DLQ, whose
      // arrivals alarm (above) is the one to act on: a second alarm would add $0.10 a month idle.
      if (worker.trigger.kind === 'stream') continue;
      const fn = fnOf(worker.id);
      this.alarms.push(
        fn.metricErrors({ period: window, statistic: Stats.SUM }).createAlarm(this, `${worker.id}ErrorsAlarm`, {
          alarmDescription: `The ${config.stage} ${worker.id} function failed (an uncaught error, a timeout or a crash). See its logs.`,
          threshold: 0,
          comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
          evaluationPeriods: 1,
          treatMissingData: TreatMissingData.NOT_BREACHING,
        }),
      );
      // A throttled consumer's messages wait: its queue's oldest-message alarm (above) says so within
      // minutes. Its own throttles alarm is one of the per-function ones, with `perFunctionAlarms`.
    }
    // A function that feeds its own queue runs with recursive loop detection set to Allow: should
    // Lambda still drop one of its invocations as a loop, say so at once (docs/operations.md).
    for (const worker of workers.filter((w) => w.feedsItsOwnQueue)) {
      this.alarms.push(
        fnOf(worker.id)
          .metric('RecursiveInvocationsDropped', { period: window, statistic: Stats.SUM })
          .createAlarm(this, `${worker.id}RecursiveInvocationsDroppedAlarm`, {
            alarmDescription:
              `Lambda dropped invocations of the ${config.stage} ${worker.id} function as a recursive loop: ` +
              'its messages (steps, polls or deliveries) were lost. Check that its recursive loop setting is Allow.',
            threshold: 0,
            comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
            evaluationPeriods: 1,
            treatMissingData: TreatMissingData.NOT_BREACHING,
          }),
      );
    }
    // Route functions too, only when asked (two alarms each).
    // Every function the default alarms above do not already watch: routes, the stream's publisher, the PythonRunner.
    const alarmedWorkerIds = new Set(workers.filter((w) => w.trigger.kind !== 'stream').map((w) => w.id));
    for (const worker of config.perFunctionAlarms ? workers.filter((w) => w.trigger.kind === 'queue') : []) {
      this.alarms.push(
        fnOf(worker.id)
          .metricThrottles({ period: window, statistic: Stats.SUM })
          .createAlarm(this, `${worker.id}ThrottlesAlarm`, {
            alarmDescription: `The ${config.stage} ${worker.id} function was throttled: the account's Lambda concurrency is exhausted.`,
            threshold: 0,
            comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
            evaluationPeriods: 1,
            treatMissingData: TreatMissingData.NOT_BREACHING,
          }),
      );
    }
    for (const [fnId, fn] of config.perFunctionAlarms ? functions : []) {
      if (alarmedWorkerIds.has(fnId)) continue;
      this.alarms.push(
        fn.metricErrors({ period: window, statistic: Stats.SUM }).createAlarm(this, `${fnId}ErrorsAlarm`, {
          alarmDescription: `The ${config.stage} ${fnId} function failed (an uncaught error, a timeout or a crash).`,
          threshold: 0,
          comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
          evaluationPeriods: 1,
          treatMissingData: TreatMissingData.NOT_BREACHING,
        }),
        fn.metricThrottles({ period: window, statistic: Stats.SUM }).createAlarm(this, `${fnId}ThrottlesAlarm`, {
          alarmDescription: `The ${config.stage} ${fnId} function was throttled: the account's Lambda concurrency is exhausted.`,
          threshold: 0,
          comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
          evaluationPeriods: 1,
          treatMissingData: TreatMissingData.NOT_BREACHING,
        }),
      );
    }

    // The scheduled dispatcher: missing invocations are missed ticks (deferred runs not moving, no
    // sweep). Throttled ticks are not invocations, so a dispatcher held back shows here too.
    const dispatcherInvocations: IMetric[] = [];
    for (const worker of workers.filter((w) => w.trigger.kind === 'schedule')) {
      const invocations = fnOf(worker.id).metricInvocations({
        period: alarmThresholds.dispatcherWindow,
        statistic: Stats.SUM,
      });
      dispatcherInvocations.push(invocations.with({ label: `${worker.id} invocations` }));
      this.alarms.push(
        invocations.createAlarm(this, `${worker.id}MissedTicksAlarm`, {
          alarmDescription:
            `The ${config.stage} ${worker.id} was not invoked for ${alarmThresholds.dispatcherWindow.toMinutes()} minutes: ` +
            'check its EventBridge schedule rule is enabled and the function is not throttled.',
          threshold: 1,
          comparisonOperator: ComparisonOperator.LESS_THAN_THRESHOLD,
          evaluationPeriods: 1,
          treatMissingData: TreatMissingData.BREACHING,
        }),
      );
    }

    // Optional notifications.
    if (config.alarmEmail) {
      const topic = new Topic(this, 'AlarmTopic', {
        displayName: `Workflow Run API (${config.stage}) alarms`,
        enforceSSL: true,
      });
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
      topic.addSubscription(new EmailSubscription(config.alarmEmail));
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

    this.dashboard = config.dashboard
      ? this.#dashboard(props, api5xxRate, dispatcherInvocations, deadLetterQueues)
      : undefined;
  }

  /** The opt-in dashboard: $3 a month, more than every alarm of the stage together. */
  #dashboard(
    props: ObservabilityProps,
    api5xxRate: IMetric,
    dispatcherInvocations: IMetric[],
    deadLetterQueues: { queueId: string; dlq: IQueue }[],
  ): Dashboard {
    const { config, api, functions, queues } = props;
    const window = alarmThresholds.window;
    const serviceMetric = (metricName: string, label: string) =>
      new Metric({
        namespace: metricsNamespace,
        metricName,
        dimensionsMap: { ...metricDimensions(config.stage) },
        statistic: Stats.SUM,
        period: window,
        label,
      });
    const webhookFailureRate = new MathExpression({
      expression: '100 * FILL(failures, 0) / attempts',
      usingMetrics: {
        attempts: serviceMetric(metricNames.webhookAttempts, 'attempts'),
        failures: serviceMetric(metricNames.webhookFailures, 'failures'),
      },
      period: window,
      label: 'failure rate (%)',
    });
    const fnMetrics = (metric: (fn: IFunction, id: string) => IMetric) =>
      [...functions].map(([fnId, fn]) => metric(fn, fnId));
    const small = { width: 8, height: 6 } as const;

    const dashboard = new Dashboard(this, 'Dashboard', { defaultInterval: Duration.hours(6) });
    // CloudFormation takes Tags on a dashboard (the stage tags reach it), but cfn-lint's bundled
    // resource schema predates that property: skip that one check on this one resource.
    (dashboard.node.defaultChild as CfnResource).addMetadata('cfn-lint', { config: { ignore_checks: ['E3002'] } });
    dashboard.addWidgets(
      new TextWidget({
        markdown:
          `# Workflow Run API (${config.stage})\nAPI traffic and errors, usage from the service metrics ` +
          `(namespace \`${metricsNamespace}\`, stage \`${config.stage}\`), functions, queues, and every alarm.`,
        width: 24,
        height: 2,
      }),
    );
    dashboard.addWidgets(
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
    dashboard.addWidgets(
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
        // Customers' receivers: graphed, not alarmed.
        title: 'Webhook attempts and failures',
        left: [
          serviceMetric(metricNames.webhookAttempts, 'attempts'),
          serviceMetric(metricNames.webhookFailures, 'failures'),
        ],
        right: [webhookFailureRate],
        ...small,
      }),
    );
    dashboard.addWidgets(
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
        ...small,
      }),
    );
    dashboard.addWidgets(
      new GraphWidget({
        title: 'Function errors',
        left: fnMetrics((fn, label) => fn.metricErrors({ period: window, statistic: Stats.SUM, label })),
        ...small,
      }),
      new GraphWidget({
        title: 'Function throttles',
        left: fnMetrics((fn, label) => fn.metricThrottles({ period: window, statistic: Stats.SUM, label })),
        ...small,
      }),
      new GraphWidget({
        title: 'Function duration p99 (ms)',
        left: fnMetrics((fn, label) => fn.metricDuration({ period: window, statistic: Stats.p(99), label })),
        ...small,
      }),
    );
    dashboard.addWidgets(new AlarmStatusWidget({ title: 'Alarms', alarms: this.alarms, width: 24, height: 6 }));

    new CfnOutput(this, 'DashboardUrl', {
      value: `https://console.aws.amazon.com/cloudwatch/home?region=${Aws.REGION}#dashboards:name=${dashboard.dashboardName}`,
    });
    return dashboard;
  }
}
