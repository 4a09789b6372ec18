/**
 * Every alarm's rule as data: its metric maths, threshold and M-of-N window. The CDK app renders
 * each into a CloudWatch alarm (`lib/observability.ts`), and the tests evaluate the same rule on
 * synthetic datapoints (`test/cdk-alarms.test.ts`), so what is tested is what is deployed. Each
 * rule's `runbook` names its paragraph in docs/operations.md, "Alarms: what each means and what to do".
 */
import type { QueueDefinition } from './definitions.ts';

/** A CloudWatch metric-math expression, small enough to evaluate: only the forms the alarms use. */
export type Expr =
  | { metric: string }
  | { value: number }
  | { fill: Expr; with: number }
  | { diff: Expr }
  | { op: '+' | '*' | '/'; left: Expr; right: Expr }
  | { if: { left: Expr; atLeast: Expr }; yes: Expr; no: Expr };

export const metric = (id: string): Expr => ({ metric: id });
const value = (n: number): Expr => ({ value: n });
const fill = (of: Expr, n = 0): Expr => ({ fill: of, with: n });
const op = (o: '+' | '*' | '/', left: Expr, right: Expr): Expr => ({ op: o, left, right });

/**
 * The percentage `part` is of `whole`, or 0 while `whole` is under `minimum` in the period: a rate
 * over a handful of events (one 5xx in 4 requests) says nothing.
 */
export const rateWithMinimum = (part: string, whole: string, minimum: number): Expr => ({
  if: { left: fill(metric(whole)), atLeast: value(minimum) },
  yes: op('/', op('*', value(100), fill(metric(part))), metric(whole)),
  no: value(0),
});

/** The expression as CloudWatch metric maths writes it. */
export const renderExpr = (e: Expr): string => {
  if ('metric' in e) return e.metric;
  if ('value' in e) return String(e.value);
  if ('fill' in e) return `FILL(${renderExpr(e.fill)}, ${e.with})`;
  if ('diff' in e) return `DIFF(${renderExpr(e.diff)})`;
  if ('op' in e) return `(${renderExpr(e.left)} ${e.op} ${renderExpr(e.right)})`;
  return `IF(${renderExpr(e.if.left)} >= ${renderExpr(e.if.atLeast)}, ${renderExpr(e.yes)}, ${renderExpr(e.no)})`;
};

/** Datapoints per period, oldest first; `undefined` where CloudWatch has none (nothing published). */
export type Series = readonly (number | undefined)[];

/**
 * The expression's value in each period, as CloudWatch computes it: an operation on a period with
 * no datapoint has none, unless FILL gives one; DIFF has none in the first period.
 */
export const evaluateExpr = (e: Expr, series: Readonly<Record<string, Series>>, periods: number): Series => {
  const at = (x: Expr, i: number): number | undefined => {
    if ('metric' in x) {
      const s = series[x.metric];
      if (!s) throw new Error(`no series for ${x.metric}`);
      return s[i];
    }
    if ('value' in x) return x.value;
    if ('fill' in x) return at(x.fill, i) ?? x.with;
    if ('diff' in x) {
      const now = at(x.diff, i);
      const before = i > 0 ? at(x.diff, i - 1) : undefined;
      return now === undefined || before === undefined ? undefined : now - before;
    }
    if ('op' in x) {
      const l = at(x.left, i);
      const r = at(x.right, i);
      if (l === undefined || r === undefined) return undefined;
      if (x.op === '+') return l + r;
      if (x.op === '*') return l * r;
      return r === 0 ? undefined : l / r;
    }
    const l = at(x.if.left, i);
    const r = at(x.if.atLeast, i);
    if (l === undefined || r === undefined) return undefined;
    return l >= r ? at(x.yes, i) : at(x.no, i);
  };
  return Array.from({ length: periods }, (_, i) => at(e, i));
};

export const comparisons = {
  '>': 'GreaterThanThreshold',
  '>=': 'GreaterThanOrEqualToThreshold',
  '<': 'LessThanThreshold',
} as const;

export interface AlarmRule {
  /** Stable id: the alarm's construct id (`<id>Alarm`). */
  id: string;
  /** Its paragraph in docs/operations.md (shared by a family of alarms, e.g. one per route function). */
  runbook: string;
  expression: Expr;
  /** Each metric the expression reads, by its id there, with the statistic CloudWatch takes of it. */
  statistics: Readonly<Record<string, 'Sum' | 'Maximum'>>;
  periodSeconds: number;
  /** N: the periods looked at. */
  evaluationPeriods: number;
  /** M: of those N, how many must breach. */
  datapointsToAlarm: number;
  comparison: keyof typeof comparisons;
  threshold: number;
  /** A period without a datapoint: quiet (`notBreaching`) or a breach in itself (`breaching`). */
  treatMissingData: 'notBreaching' | 'breaching';
}

const breaches = (rule: AlarmRule, v: number | undefined) => {
  if (v === undefined) return rule.treatMissingData === 'breaching';
  if (rule.comparison === '>') return v > rule.threshold;
  if (rule.comparison === '>=') return v >= rule.threshold;
  return v < rule.threshold;
};

/**
 * The alarm's state at the end of each period: ALARM (true) when M of the last N datapoints breach
 * (a missing one counted as its `treatMissingData` says), OK before N periods have passed.
 */
export const alarmStates = (rule: AlarmRule, series: Readonly<Record<string, Series>>): boolean[] => {
  const periods = Math.max(...Object.values(series).map((s) => s.length));
  const values = evaluateExpr(rule.expression, series, periods);
  return values.map((_, i) => {
    if (i + 1 < rule.evaluationPeriods) return false;
    const window = values.slice(i + 1 - rule.evaluationPeriods, i + 1);
    return window.filter((v) => breaches(rule, v)).length >= rule.datapointsToAlarm;
  });
};

/** Whether the alarm goes to ALARM at any period of the series. */
export const trips = (rule: AlarmRule, series: Readonly<Record<string, Series>>): boolean =>
  alarmStates(rule, series).some(Boolean);

/** The failure reasons runs and steps are counted by (`functions/domain/failure-reasons.ts` classifies). */
export const failureReasons = [
  'provider_auth',
  'provider_4xx',
  'provider_unavailable',
  'timeout',
  'configuration',
  'code',
] as const;
export type FailureReason = (typeof failureReasons)[number];

/** The failure reasons no retry mends and an operator does: each step failing so is counted for its alarm. */
export const operatorFailureReasons: readonly FailureReason[] = ['provider_auth', 'configuration'];

/** The longest delay SQS gives a message (DelaySeconds): a webhook's or a provider poll's wait. */
export const sqsMaxDelaySeconds = 900;

const fiveMinutes = 300;

/**
 * The oldest message a work queue may legitimately hold: sent with the longest delay, then received
 * `maxReceiveCount` times, each hidden for the visibility timeout, before SQS moves it to the DLQ;
 * plus one period, so that a datapoint sampled as it moves does not breach. Derived, so it stays above
 * the redelivery visibility when either setting changes.
 */
export const oldestMessageThresholdSeconds = (queue: QueueDefinition) =>
  sqsMaxDelaySeconds + queue.visibilityTimeoutSeconds * queue.maxReceiveCount + fiveMinutes;

/** Sustained: in 3 of the last 5 five-minute periods. One bad period (a deploy, a burst) is not enough. */
const sustained = { periodSeconds: fiveMinutes, evaluationPeriods: 5, datapointsToAlarm: 3 } as const;

/** Every rule, by what it watches; the stack instantiates the parameterised ones per queue or function. */
export const alarmRules = {
  /**
   * The API's failure rate over at least 50 requests in a period: answers 5xx, and the requests API
   * Gateway refused 429 itself (the stage's throttle, before any function), counted together by a
   * metric filter on the access log. One alarm metric fewer than a 5xx rate and a throttles alarm
   * apart; a throttle refusing under 2% of the requests (one noisy client) pages no one.
   */
  api5xxRate: {
    id: 'ApiFailureRate',
    runbook: 'ApiFailureRate',
    expression: rateWithMinimum('failures', 'requests', 50),
    statistics: { failures: 'Sum', requests: 'Sum' },
    ...sustained,
    comparison: '>',
    threshold: 2,
    treatMissingData: 'notBreaching',
  },
  /** The share of runs that ended failed, over at least 10 ended runs in a period. */
  failedRunRate: {
    id: 'FailedRunRate',
    runbook: 'FailedRunRate',
    expression: rateWithMinimum('failedRuns', 'runsEnded', 10),
    statistics: { failedRuns: 'Sum', runsEnded: 'Sum' },
    ...sustained,
    comparison: '>',
    threshold: 20,
    treatMissingData: 'notBreaching',
  },
  /**
   * Steps failing for good for a reason an operator mends (`operatorFailureReasons`: a refused key,
   * a missing provider, secret or connection), in each of three periods in a row: every run needing
   * it fails cleanly until someone acts. One metric for both reasons (its runbook says how to tell
   * which): an alarm per reason took one metric each.
   */
  stepsFailingForOperator: {
    id: 'StepsFailingForOperator',
    runbook: 'StepsFailingForOperator',
    expression: metric('failedSteps'),
    statistics: { failedSteps: 'Sum' },
    periodSeconds: fiveMinutes,
    evaluationPeriods: 3,
    datapointsToAlarm: 3,
    comparison: '>',
    threshold: 0,
    treatMissingData: 'notBreaching',
  },
  /**
   * A message arrived in the stage's dead-letter queue (its depth, sampled each minute, rose). Not
   * tolerant: each arrival is a step, delivery or event the code could not process, lost until
   * someone acts. One queue takes every dead letter (platform/definitions.ts, `deadLetterQueue`).
   */
  deadLetterArrivals: {
    id: 'DeadLetterArrivals',
    runbook: 'DeadLetterArrivals',
    expression: { diff: fill(metric('depth')) },
    statistics: { depth: 'Maximum' },
    periodSeconds: 60,
    evaluationPeriods: 5,
    datapointsToAlarm: 1,
    comparison: '>',
    threshold: 0,
    treatMissingData: 'notBreaching',
  },
  /**
   * A work queue's oldest message is older than any message legitimately gets: past that bound it
   * is not being consumed, so one datapoint is enough (waiting longer only delays the page).
   */
  oldestMessage: (queue: QueueDefinition): AlarmRule => ({
    id: `${queue.id}OldestMessage`,
    runbook: `${queue.id}OldestMessage`,
    expression: metric('age'),
    statistics: { age: 'Maximum' },
    periodSeconds: fiveMinutes,
    evaluationPeriods: 1,
    datapointsToAlarm: 1,
    comparison: '>',
    threshold: oldestMessageThresholdSeconds(queue),
    treatMissingData: 'notBreaching',
  }),
  /** A function's errors (uncaught, timeouts, crashes) in 3 of 5 periods: one crash is not a page. */
  functionErrors: (functionId: string, runbook: string): AlarmRule => ({
    id: `${functionId}Errors`,
    runbook,
    expression: metric('errors'),
    statistics: { errors: 'Sum' },
    ...sustained,
    comparison: '>',
    threshold: 0,
    treatMissingData: 'notBreaching',
  }),
  /** A function throttled in 3 of 5 periods (with `perFunctionAlarms`). */
  functionThrottles: (functionId: string): AlarmRule => ({
    id: `${functionId}Throttles`,
    runbook: 'FunctionThrottles',
    expression: metric('throttles'),
    statistics: { throttles: 'Sum' },
    ...sustained,
    comparison: '>',
    threshold: 0,
    treatMissingData: 'notBreaching',
  }),
  /**
   * The scheduled dispatcher's ticks failed or did not come, in 3 of 5 periods, from its one metric,
   * `Errors`: Lambda publishes it for every period with an invocation (0 when none failed) and
   * nothing for a period without one, so a missing period is a missed tick and counts as a breach.
   * One alarm metric where a failed-ticks alarm and a missed-ticks alarm took two.
   */
  dispatcherTicks: (functionId: string): AlarmRule => ({
    id: `${functionId}Ticks`,
    runbook: `${functionId}Ticks`,
    expression: metric('errors'),
    statistics: { errors: 'Sum' },
    ...sustained,
    comparison: '>',
    threshold: 0,
    treatMissingData: 'breaching',
  }),
  /**
   * The operator events' publisher is more than 10 minutes behind the table's stream for 15 minutes
   * (IteratorAge, in milliseconds): the stream keeps records 24 hours, the mapping retries a batch
   * for up to `maxRecordAgeSeconds`.
   */
  iteratorAge: {
    id: 'EventPublisherIteratorAge',
    runbook: 'EventPublisherIteratorAge',
    expression: metric('iteratorAge'),
    statistics: { iteratorAge: 'Maximum' },
    periodSeconds: fiveMinutes,
    evaluationPeriods: 3,
    datapointsToAlarm: 3,
    comparison: '>',
    threshold: 600_000,
    treatMissingData: 'notBreaching',
  },
  /**
   * DynamoDB throttled writes on the table in 3 of 5 periods (the write helper retries a burst).
   * Writes, not reads: a write throttles first on every hot item (the team item, a key's rate
   * counter; 1,000 write units a second a partition against 3,000 read units), and a read throttled
   * past the SDK's retries fails a request or a delivery, which the API's failure rate and the
   * dead-letter queue page for. One alarm metric, where reads and writes took two.
   */
  tableThrottles: {
    id: 'TableThrottles',
    runbook: 'TableThrottles',
    expression: metric('writeThrottles'),
    statistics: { writeThrottles: 'Sum' },
    ...sustained,
    comparison: '>',
    threshold: 0,
    treatMissingData: 'notBreaching',
  },
  /**
   * The run event stream's function throttled at its reserved concurrency in 3 of 5 periods:
   * callers' streams refused with 429 at the stage's bound.
   */
  runEventsThrottles: {
    id: 'RunEventsThrottles',
    runbook: 'RunEventsThrottles',
    expression: metric('throttles'),
    statistics: { throttles: 'Sum' },
    ...sustained,
    comparison: '>',
    threshold: 0,
    treatMissingData: 'notBreaching',
  },
  /** The account's claimed Lambda concurrency above 80% of its limit in 3 of 5 periods. */
  accountConcurrency: (accountLimit: number): AlarmRule => ({
    id: 'AccountConcurrency',
    runbook: 'AccountConcurrency',
    expression: metric('claimed'),
    statistics: { claimed: 'Maximum' },
    ...sustained,
    comparison: '>',
    threshold: Math.floor(accountLimit * 0.8),
    treatMissingData: 'notBreaching',
  }),
} satisfies Record<string, AlarmRule | ((...args: never[]) => AlarmRule)>;
