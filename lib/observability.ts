import { Aws, CfnOutput, type CfnResource, Duration, NestedStack, Validations } from 'aws-cdk-lib';
import type { IHttpApi } from 'aws-cdk-lib/aws-apigatewayv2';
import {
  type Alarm,
  AlarmStatusWidget,
  type ComparisonOperator,
  Dashboard,
  GraphWidget,
  type IMetric,
  MathExpression,
  Metric,
  Stats,
  TextWidget,
  type TreatMissingData,
  Unit,
} from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { PolicyStatement, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { FilterPattern, type ILogGroup, MetricFilter } from 'aws-cdk-lib/aws-logs';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import type { IQueue, Queue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import {
  type AlarmRule,
  alarmRules,
  comparisons,
  failureReasons,
  oldestMessageThresholdSeconds,
  renderExpr,
} from '../platform/alarm-rules.ts';
import { type QueueDefinition, queues as queueDefinitions } from '../platform/definitions.ts';
import { metricDimensions, metricNames, metricsNamespace, reasonDimension } from '../platform/metric-names.ts';
import { streamRoutes } from '../platform/routes.ts';
import type { StageConfig } from './stages.ts';
import { workers } from './workers.ts';

/** Alarm thresholds, in one place for operators to tune: the rules themselves are `alarmRules` (platform/alarm-rules.ts). */
export const alarmThresholds = {
  /** Percentage of API requests answered 5xx, over at least 50 requests, in 3 of 5 periods. */
  api5xxPercent: alarmRules.api5xxRate.threshold,
  /** Window for the dashboard's graphs. */
  window: Duration.minutes(5),
  /** Dead-letter arrivals: the DLQ's depth, sampled each minute, rose within the last 5 minutes. */
  deadLetterPeriod: Duration.seconds(alarmRules.deadLetterArrivals.periodSeconds),
  deadLetterEvaluationPeriods: alarmRules.deadLetterArrivals.evaluationPeriods,
  /** Age (seconds) of the oldest message of each work queue past which it is not being consumed. */
  oldestMessageSeconds: Object.fromEntries(
    queueDefinitions.map((q) => [q.id, oldestMessageThresholdSeconds(q)]),
  ) as Record<QueueDefinition['id'], number>,
} as const;

export interface ObservabilityProps {
  /** The stage: its metric dimension, alarm email, and whether to add the dashboard and per-route alarms. */
  config: StageConfig;
  api: IHttpApi;
  /** Every route and worker function of this stage, by route or worker id. */
  functions: ReadonlyMap<string, IFunction>;
  /** The work queues by definition id. */
  queues: ReadonlyMap<QueueDefinition['id'], Queue>;
  /**
   * The stage's one dead-letter queue (platform/definitions.ts, `deadLetterQueue`): the work
   * queues' messages past their receives, and the stream mappings' failed batches' positions.
   */
  deadLetterQueue: IQueue;
  /** The application table: its read and write throttles are alarmed. Default: not watched. */
  table?: ITable;
  /** The API's access log: a metric filter counts the 429s API Gateway answered itself. Default: not watched. */
  accessLogs?: ILogGroup;
  /** Alarms made elsewhere (the canary's rollback alarms) that also mail the alarm email. Default: none. */
  otherAlarms?: readonly Alarm[];
}

/**
 * What an operator of one stage is told about. Every alarm is a rule of `alarmRules`
 * (platform/alarm-rules.ts): rates over a minimum volume and failures sustained over 3 of 5
 * periods, so one blip pages no one; a dead-letter arrival, a dropped recursive invocation and a
 * queue's message older than it can legitimately be, at once, because each is already a loss.
 * Each alarm's description names its paragraph in docs/operations.md ("Alarms: what each means
 * and what to do"). With `alarmEmail`, an SNS topic mails every alarm and its recovery; with
 * `dashboard`, a CloudWatch dashboard graphs it all.
 */
export class Observability extends Construct {
  readonly dashboard: Dashboard | undefined;
  readonly alarms: Alarm[] = [];
  readonly alarmTopic: Topic | undefined;

  /** The rule's alarm over these metrics (each taken at the rule's period, with its statistic), in `scope`. */
  #alarm(rule: AlarmRule, metrics: Record<string, Metric>, description: string, scope: Construct = this): Alarm {
    const period = Duration.seconds(rule.periodSeconds);
    const using = Object.fromEntries(
      Object.entries(rule.statistics).map(([id, statistic]) => {
        const metric = metrics[id];
        if (!metric) throw new Error(`alarm ${rule.id}: no metric ${id}`);
        return [id, metric.with({ period, statistic })];
      }),
    );
    const watched: Metric | MathExpression =
      'metric' in rule.expression
        ? (using[rule.expression.metric] as Metric)
        : new MathExpression({ expression: renderExpr(rule.expression), usingMetrics: using, period, label: rule.id });
    const alarm = watched.createAlarm(scope, `${rule.id}Alarm`, {
      alarmDescription: `${description} Runbook: docs/operations.md, Alarms, ${rule.runbook}.`,
      threshold: rule.threshold,
      comparisonOperator: comparisons[rule.comparison] as ComparisonOperator,
      evaluationPeriods: rule.evaluationPeriods,
      datapointsToAlarm: rule.datapointsToAlarm,
      treatMissingData: rule.treatMissingData as TreatMissingData,
    });
    this.alarms.push(alarm);
    return alarm;
  }

  constructor(scope: Construct, id: string, props: ObservabilityProps) {
    super(scope, id);
    const { config, api, functions, queues } = props;
    const stage = config.stage;
    const fnOf = (fnId: string) => {
      const fn = functions.get(fnId);
      if (!fn) throw new Error(`no function ${fnId}`);
      return fn;
    };
    const serviceMetric = (metricName: string, dimensions: Record<string, string> = {}) =>
      new Metric({
        namespace: metricsNamespace,
        metricName,
        dimensionsMap: { ...metricDimensions(stage), ...dimensions },
      });

    // API: the share of requests answered 5xx (route functions catch their errors and answer 500;
    // a crash, timeout or throttle of one is a 5xx from API Gateway) or refused 429 by the gateway's
    // own throttle. HTTP APIs publish no 429 metric, so a metric filter on the access log counts both:
    // the 5xx answers and the 429s that never reached a function (no integration latency). Without
    // the access log, the API's own 5xx metric.
    if (props.accessLogs) {
      new MetricFilter(this, 'ApiFailuresFilter', {
        logGroup: props.accessLogs,
        metricNamespace: metricsNamespace,
        metricName: metricNames.apiFailures,
        filterPattern: FilterPattern.any(
          FilterPattern.stringValue('$.status', '=', '5*'),
          FilterPattern.all(
            FilterPattern.stringValue('$.status', '=', '429'),
            FilterPattern.stringValue('$.integrationLatency', '=', '-'),
          ),
        ),
        metricValue: '1',
        // The API's id, not the stage: a metric filter's dimensions come from the log line.
        dimensions: { apiId: '$.apiId' },
        unit: Unit.COUNT,
      });
    }
    const failures = props.accessLogs
      ? new Metric({
          namespace: metricsNamespace,
          metricName: metricNames.apiFailures,
          dimensionsMap: { apiId: api.apiId },
        })
      : api.metricServerError();
    const apiRate = alarmRules.api5xxRate;
    const api5xxAlarm = this.#alarm(
      apiRate,
      { failures, requests: api.metricCount() },
      `More than ${apiRate.threshold}% of ${stage} API requests (over at least 50) answered 5xx or refused 429 by ` +
        `API Gateway's throttle (${config.api.rateLimit}/s, burst ${config.api.burstLimit}) in ` +
        `${apiRate.datapointsToAlarm} of ${apiRate.evaluationPeriods} five-minute periods.`,
    );

    // Runs: the share that ended failed; steps failing for a reason no retry mends.
    this.#alarm(
      alarmRules.failedRunRate,
      { failedRuns: serviceMetric(metricNames.failedRuns), runsEnded: serviceMetric(metricNames.runsEnded) },
      `More than ${alarmRules.failedRunRate.threshold}% of ${stage} runs ended failed (over at least 10 ended runs) ` +
        'in 3 of 5 five-minute periods.',
    );
    this.#alarm(
      alarmRules.stepsFailingForOperator,
      { failedSteps: serviceMetric(metricNames.stepsFailingForOperator) },
      `${stage} steps failed because a provider refused the key (reason provider_auth) or a provider, secret or ` +
        'connection is missing or unreadable (reason configuration) in each of the last 3 five-minute periods.',
    );

    // Queues: dead-letter arrivals, and the work queues' oldest message.
    // SQS stops publishing an idle, empty queue's metrics, so missing minutes are a depth of 0:
    // the first message after a quiet spell is a rise from 0. NumberOfMessagesSent would miss it:
    // SQS does not count a message its redrive policy moves.
    this.#alarm(
      alarmRules.deadLetterArrivals,
      { depth: props.deadLetterQueue.metricApproximateNumberOfMessagesVisible() },
      `A dead letter arrived in the ${stage} dead-letter queue: a step or webhook message its consumer could not ` +
        'process after every receive, or the position of a stream batch that failed every retry of its consumer.',
    );
    for (const definition of queueDefinitions) {
      const queue = queues.get(definition.id);
      if (!queue) continue;
      const rule = alarmRules.oldestMessage(definition);
      this.#alarm(
        rule,
        { age: queue.metricApproximateAgeOfOldestMessage() },
        `The oldest message of the ${stage} ${definition.id} queue is over ${Math.round(rule.threshold / 60)} minutes ` +
          'old, older than its longest delay and every redelivery allow: its consumer is not consuming it.',
      );
    }

    // Queue workers have no errors alarm of their own: a batch they fail as a function (a crash, a
    // timeout) comes back and, past its receives, reaches its dead-letter queue, alarmed above;
    // their queue's oldest message pages if they stop consuming (a disabled mapping, a recursive
    // loop guard left to Terminate). One alarm metric fewer each (docs/operations.md, "Alarms").
    // The operator events' publisher falling behind the table's stream. (The lifecycle events'
    // consumer is watched by its DLQ: a step event late is still delivered.)
    for (const worker of workers.filter((w) => w.trigger.kind === 'stream' && w.trigger.mapping === 'OperatorEvents')) {
      this.#alarm(
        alarmRules.iteratorAge,
        { iteratorAge: fnOf(worker.id).metric('IteratorAge') },
        `The ${stage} ${worker.id} is more than 10 minutes behind the table's stream for 15 minutes.`,
      );
    }
    // Every function the default alarms above do not already watch, only when asked (two alarms each):
    // the dispatcher's errors are its ticks alarm below. In a nested stack of their own: about two
    // per function, they would take the stack past CloudFormation's 500 resources.
    const perFunction = config.perFunctionAlarms
      ? new NestedStack(this, 'FunctionAlarms', {
          description: `Workflow Run API ${stage}: an errors and a throttles alarm per function`,
        })
      : this;
    const alarmedWorkerIds = new Set(workers.filter((w) => w.trigger.kind === 'schedule').map((w) => w.id));
    for (const worker of config.perFunctionAlarms ? workers.filter((w) => w.trigger.kind === 'queue') : []) {
      this.#alarm(
        alarmRules.functionThrottles(worker.id),
        { throttles: fnOf(worker.id).metricThrottles() },
        `The ${stage} ${worker.id} function was throttled in 3 of 5 five-minute periods.`,
        perFunction,
      );
    }
    // The run event stream's function URL is public and held to its reserved concurrency: a stream
    // past it is refused (429), on every stage.
    const streamIds = new Set(streamRoutes.map((route) => route.id));
    for (const id of streamIds) {
      this.#alarm(
        alarmRules.runEventsThrottles,
        { throttles: fnOf(id).metricThrottles() },
        `The ${stage} run event stream (${id}) was throttled at its reserved concurrency ` +
          `(${config.runEventsConcurrency}) in 3 of 5 five-minute periods.`,
      );
    }
    for (const [fnId, fn] of config.perFunctionAlarms ? functions : []) {
      if (alarmedWorkerIds.has(fnId)) continue;
      this.#alarm(
        alarmRules.functionErrors(fnId, 'FunctionErrors'),
        { errors: fn.metricErrors() },
        `The ${stage} ${fnId} function failed (an uncaught error, a timeout or a crash) in 3 of 5 five-minute periods.`,
        perFunction,
      );
      // The stream's throttles and the queue consumers' are alarmed above.
      if (streamIds.has(fnId) || workers.some((w) => w.id === fnId && w.trigger.kind === 'queue')) continue;
      this.#alarm(
        alarmRules.functionThrottles(fnId),
        { throttles: fn.metricThrottles() },
        `The ${stage} ${fnId} function was throttled in 3 of 5 five-minute periods.`,
        perFunction,
      );
    }

    // The scheduled dispatcher: a period without an errors datapoint had no invocation (a missed
    // tick; throttled ticks are not invocations), one with errors had failed ticks.
    const dispatcherInvocations: IMetric[] = [];
    for (const worker of workers.filter((w) => w.trigger.kind === 'schedule')) {
      const fn = fnOf(worker.id);
      dispatcherInvocations.push(
        fn
          .metricInvocations()
          .with({ label: `${worker.id} invocations`, period: alarmThresholds.window, statistic: Stats.SUM }),
      );
      this.#alarm(
        alarmRules.dispatcherTicks(worker.id),
        { errors: fn.metricErrors() },
        `The ${stage} ${worker.id}'s ticks failed or did not come (it ticks every minute) in 3 of 5 five-minute periods.`,
      );
    }

    // The table: DynamoDB refusing reads or writes for throughput, sustained.
    if (props.table) {
      this.#alarm(
        alarmRules.tableThrottles,
        { writeThrottles: props.table.metric('WriteThrottleEvents') },
        `DynamoDB throttled writes on the ${stage} table in 3 of 5 five-minute periods.`,
      );
    }
    // The account's Lambda concurrency (every stage and function of the account share it).
    const concurrency = alarmRules.accountConcurrency(config.accountConcurrencyLimit);
    this.#alarm(
      concurrency,
      { claimed: new Metric({ namespace: 'AWS/Lambda', metricName: 'ClaimedAccountConcurrency' }) },
      `The account's claimed Lambda concurrency (watched by the ${stage} stage) was above ${concurrency.threshold} (80% of its limit of ` +
        `${config.accountConcurrencyLimit}) in 3 of 5 five-minute periods.`,
    );

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
      for (const alarm of [...this.alarms, ...(props.otherAlarms ?? [])]) {
        alarm.addAlarmAction(action);
        alarm.addOkAction(action);
      }
      this.alarmTopic = topic;
    }

    this.dashboard = config.dashboard ? this.#dashboard(props, api5xxAlarm.metric, dispatcherInvocations) : undefined;
  }

  /** The opt-in dashboard: $3 a month, more than every alarm of the stage together. */
  #dashboard(props: ObservabilityProps, api5xxRate: IMetric, dispatcherInvocations: IMetric[]): Dashboard {
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
        leftAnnotations: [
          { value: alarmThresholds.api5xxPercent, label: 'alarm (3 of 5 periods, 50 requests or more)' },
        ],
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
        title: 'Runs ended, failed runs by reason',
        left: [
          serviceMetric(metricNames.runsEnded, 'runs ended'),
          serviceMetric(metricNames.failedRuns, 'failed runs'),
          ...failureReasons.map((reason) =>
            serviceMetric(metricNames.failedRuns, reason).with({
              dimensionsMap: { ...metricDimensions(config.stage), [reasonDimension]: reason },
            }),
          ),
        ],
        ...small,
      }),
      new GraphWidget({
        title: 'Failed steps by reason',
        left: [
          serviceMetric(metricNames.failedSteps, 'failed steps'),
          serviceMetric(metricNames.stepsFailingForOperator, "an operator's to mend"),
          ...failureReasons.map((reason) =>
            serviceMetric(metricNames.failedSteps, reason).with({
              dimensionsMap: { ...metricDimensions(config.stage), [reasonDimension]: reason },
            }),
          ),
        ],
        ...small,
      }),
      new GraphWidget({
        title: "API failures: 5xx answers and the gateway's own 429s (the stage's throttle)",
        left: [
          new Metric({
            namespace: metricsNamespace,
            metricName: metricNames.apiFailures,
            dimensionsMap: { apiId: api.apiId },
            statistic: Stats.SUM,
            period: window,
            label: 'failures',
          }),
        ],
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
        left: [
          props.deadLetterQueue.metricApproximateNumberOfMessagesVisible({
            period: window,
            statistic: Stats.MAXIMUM,
            label: 'dead letters',
          }),
        ],
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
