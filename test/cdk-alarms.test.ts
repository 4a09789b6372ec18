/**
 * The stage's alarms on the synthesized templates: each alarm is its rule of `alarmRules`
 * (platform/alarm-rules.ts) with the threshold, period and M-of-N written here, and driving that
 * rule's metric maths with synthetic datapoints shows a single blip trips none of the tolerant
 * ones while a sustained failure trips each. Every alarm has its runbook paragraph.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { buildApp } from '../lib/build-app.ts';
import { aliasedFunctions } from '../lib/safe-deploys.ts';
import { contextKeys } from '../lib/stages.ts';
import {
  type AlarmRule,
  alarmRules,
  alarmStates,
  comparisons,
  oldestMessageThresholdSeconds,
  renderExpr,
  type Series,
  trips,
} from '../platform/alarm-rules.ts';
import { queues, stepsQueue, webhooksQueue } from '../platform/definitions.ts';
import { nestedTemplates } from './support/nested-templates.ts';
import { prodTestContext, synthOnly } from './support/stages.ts';

const testContext = synthOnly;
const prodContext = { ...prodTestContext(), [contextKeys.perFunctionAlarms]: 'true' };

type AlarmProps = Record<string, unknown> & {
  Threshold: number;
  EvaluationPeriods: number;
  DatapointsToAlarm?: number;
  ComparisonOperator: string;
  TreatMissingData: string;
  AlarmDescription: string;
  Period?: number;
  Metrics?: { Id: string; Expression?: string; MetricStat?: { Period: number; Stat: string } }[];
  Statistic?: string;
};

const alarmsOf = (context: Record<string, unknown>) => {
  const built = buildApp(context, {});
  // The per-function alarms live in a nested stack of the API stack's: both templates are the stage's.
  const resources = Object.assign(
    {},
    ...[Template.fromStack(built.api), ...nestedTemplates(built.api)].map((t) => t.toJSON().Resources),
  ) as Record<string, { Type: string; Properties: AlarmProps }>;
  return Object.entries(resources)
    .filter(([, r]) => r.Type === 'AWS::CloudWatch::Alarm')
    .map(([id, r]) => ({ id, props: r.Properties }));
};

/** The rule each alarm of the default stage is, with the numbers it must have (written out, so a change is seen). */
const expected: { rule: AlarmRule; threshold: number; period: number; n: number; m: number }[] = [
  { rule: alarmRules.api5xxRate, threshold: 2, period: 300, n: 5, m: 3 },
  { rule: alarmRules.failedRunRate, threshold: 20, period: 300, n: 5, m: 3 },
  { rule: alarmRules.stepsFailingForOperator, threshold: 0, period: 300, n: 3, m: 3 },
  { rule: alarmRules.deadLetterArrivals, threshold: 0, period: 60, n: 5, m: 1 },
  // 15 minutes of delay + 10 receives × 6 minutes + a period; 15 minutes + 5 × 2 minutes + a period.
  { rule: alarmRules.oldestMessage(stepsQueue), threshold: 4800, period: 300, n: 1, m: 1 },
  { rule: alarmRules.oldestMessage(webhooksQueue), threshold: 1800, period: 300, n: 1, m: 1 },
  { rule: alarmRules.dispatcherTicks('DeferredDispatcher'), threshold: 0, period: 300, n: 5, m: 3 },
  { rule: alarmRules.iteratorAge, threshold: 600_000, period: 300, n: 3, m: 3 },
  { rule: alarmRules.tableThrottles, threshold: 0, period: 300, n: 5, m: 3 },
  { rule: alarmRules.accountConcurrency(1000), threshold: 800, period: 300, n: 5, m: 3 },
  { rule: alarmRules.runEventsThrottles, threshold: 0, period: 300, n: 5, m: 3 },
];

const periodOf = (props: AlarmProps) => props.Period ?? props.Metrics?.find((m) => m.MetricStat)?.MetricStat?.Period;

describe('alarms on the synthesized templates', { timeout: 180_000 }, () => {
  const dev = alarmsOf(testContext);
  const prod = alarmsOf(prodContext);

  it('renders each rule with its threshold, period, evaluation periods and datapoints, and nothing else', () => {
    expect(dev.map((a) => a.id.replace(/^Observability/, '').replace(/Alarm[0-9A-F]{8}$/, '')).sort()).toEqual(
      expected.map((e) => e.rule.id).sort(),
    );
    for (const { rule, threshold, period, n, m } of expected) {
      const alarm = dev.find((a) => a.id.startsWith(`Observability${rule.id}Alarm`));
      expect(alarm, rule.id).toBeDefined();
      const props = alarm?.props as AlarmProps;
      expect(
        {
          threshold: props.Threshold,
          period: periodOf(props),
          n: props.EvaluationPeriods,
          m: props.DatapointsToAlarm,
          comparison: props.ComparisonOperator,
          missing: props.TreatMissingData,
        },
        rule.id,
      ).toEqual({
        threshold,
        period,
        n,
        m,
        comparison: comparisons[rule.comparison],
        missing: rule.treatMissingData,
      });
      // What the test evaluates below is what CloudWatch evaluates: the same expression and statistics.
      if ('metric' in rule.expression) {
        expect(props.Statistic, rule.id).toBe(rule.statistics[rule.expression.metric]);
      } else {
        expect(props.Metrics?.find((q) => q.Expression)?.Expression, rule.id).toBe(renderExpr(rule.expression));
        const stats = Object.fromEntries(
          (props.Metrics ?? []).filter((q) => q.MetricStat).map((q) => [q.Id, q.MetricStat?.Stat]),
        );
        expect(stats, rule.id).toEqual(rule.statistics);
      }
    }
  });

  it('keeps every age threshold above what a message legitimately reaches: its longest delay and every redelivery', () => {
    for (const queue of queues) {
      expect(oldestMessageThresholdSeconds(queue)).toBeGreaterThan(
        900 + queue.visibilityTimeoutSeconds * queue.maxReceiveCount,
      );
    }
    // The case that paged before: a step redelivered twice is 720 s old.
    const rule = alarmRules.oldestMessage(stepsQueue);
    expect(trips(rule, { age: [60, 360, 720] })).toBe(false);
    expect(trips(rule, { age: [900 + stepsQueue.visibilityTimeoutSeconds * stepsQueue.maxReceiveCount] })).toBe(false);
    expect(trips(rule, { age: [3000, 4000, 5000] })).toBe(true);
  });

  it('prod adds the per-function alarms, each of a rule, and takes the account limit from the context', () => {
    expect(prod.length).toBeGreaterThan(dev.length);
    expect(prod.filter((a) => a.props.AlarmDescription.includes('function failed')).length).toBeGreaterThan(40);
    for (const { props } of prod) expect(props.AlarmDescription).toMatch(/prod/);
    const limited = alarmsOf({ ...testContext, [contextKeys.accountConcurrencyLimit]: '3000' });
    const concurrency = limited.find((a) => a.id.startsWith('ObservabilityAccountConcurrencyAlarm'));
    expect(concurrency?.props.Threshold).toBe(2400);
    expect(() => alarmsOf({ ...testContext, [contextKeys.accountConcurrencyLimit]: 'many' })).toThrow(
      /accountConcurrencyLimit/,
    );
  });

  it("prod's canary adds two rollback alarms per aliased function: the new version's errors, and its 5xx answers and failed records", () => {
    const rollbackAlarms = (alarms: typeof prod) =>
      alarms
        .filter((a) => a.id.startsWith('SafeDeploys'))
        .map((a) => a.id.replace(/^SafeDeploys/, '').replace(/Alarm[0-9A-F]{8}$/, ''))
        .sort();
    expect(rollbackAlarms(prod)).toEqual(
      aliasedFunctions.flatMap((id) => [`${id}NewVersionErrors`, `${id}NewVersionFailures`]).sort(),
    );
    expect(rollbackAlarms(dev)).toEqual([]);
  });

  it('gives every alarm of the dev and prod templates its runbook paragraph in docs/operations.md', () => {
    const operations = fs.readFileSync(path.join(import.meta.dirname, '..', 'docs', 'operations.md'), 'utf8');
    const start = operations.indexOf('## Alarms: what each means and what to do');
    expect(start).toBeGreaterThan(-1);
    const section = operations.slice(start, operations.indexOf('\n## ', start + 1));
    const paragraphs = new Map(
      section
        .split('\n\n')
        .map((p) => [/^\*\*`(\w+)`\*\*/.exec(p)?.[1], p] as const)
        .filter((entry): entry is [string, string] => entry[0] !== undefined),
    );
    const runbooks = new Set(
      [...dev, ...prod].map(({ id, props }) => {
        const name = /Runbook: docs\/operations\.md, Alarms, (\w+)\.$/.exec(props.AlarmDescription)?.[1];
        expect(name, id).toBeDefined();
        return name as string;
      }),
    );
    for (const name of runbooks) {
      // One paragraph: what tripped, likely causes, first steps.
      expect(paragraphs.get(name), name).toMatch(/Likely causes|First steps/);
      expect(paragraphs.get(name)?.length ?? 0, name).toBeGreaterThan(200);
    }
    expect(runbooks.size).toBeGreaterThanOrEqual(expected.length - 1);
    // And every paragraph is reached: an alarm's own, or named by one's (an alarm over one metric
    // for several pages names each), or a per-function alarm's (`-c perFunctionAlarms=true`).
    const optIn = new Set(['FunctionErrors', 'FunctionThrottles']);
    const reachable = [...runbooks].map((name) => paragraphs.get(name) ?? '').join('\n');
    for (const name of paragraphs.keys()) {
      if (runbooks.has(name) || optIn.has(name)) continue;
      expect(reachable, `paragraph ${name} is reached by no alarm`).toContain(`\`${name}\``);
    }
  });
});

/** `n` periods of `v`. */
const rep = (v: number | undefined, n: number): Series => Array.from({ length: n }, () => v);

describe('a blip trips none of the tolerant alarms; a sustained failure trips each', () => {
  const sustainedPeriods = 5;

  it('API failure rate (5xx and gateway 429s): one in 5 requests, a burst in one period, or all of 40 requests fail: no page', () => {
    const rule = alarmRules.api5xxRate;
    expect(trips(rule, { failures: [undefined, 1, undefined], requests: [3, 5, 2] })).toBe(false);
    expect(trips(rule, { failures: [0, 0, 60, 0, 0, 0], requests: rep(100, 6) })).toBe(false);
    // Below the minimum volume a rate says nothing, however bad.
    expect(trips(rule, { failures: rep(40, 10), requests: rep(40, 10) })).toBe(false);
    // 5% of 100 requests in 3 of 5 periods.
    expect(trips(rule, { failures: [5, 0, 5, 0, 5], requests: rep(100, 5) })).toBe(true);
    expect(trips(rule, { failures: rep(2, sustainedPeriods), requests: rep(100, sustainedPeriods) })).toBe(false);
  });

  it('failed-run rate: one failed run, or one bad period, no page; a quarter failing for 15 minutes pages', () => {
    const rule = alarmRules.failedRunRate;
    expect(trips(rule, { failedRuns: [1], runsEnded: [1] })).toBe(false);
    expect(trips(rule, { failedRuns: [0, 20, 0, 0, 0], runsEnded: rep(20, 5) })).toBe(false);
    expect(trips(rule, { failedRuns: rep(5, sustainedPeriods), runsEnded: rep(20, sustainedPeriods) })).toBe(true);
    // Nothing ran: no datapoint, no page.
    expect(trips(rule, { failedRuns: rep(undefined, 10), runsEnded: rep(undefined, 10) })).toBe(false);
  });

  it('steps failing on a refused key or a missing configuration: only in three periods in a row', () => {
    const rule = alarmRules.stepsFailingForOperator;
    expect(trips(rule, { failedSteps: [undefined, 1, undefined] })).toBe(false);
    expect(trips(rule, { failedSteps: [3, 2, undefined, 4, 1, undefined] })).toBe(false);
    expect(trips(rule, { failedSteps: [1, 1, 1] })).toBe(true);
  });

  it('sustained worker errors, table throttles, gateway 429s, stream throttles and account concurrency page; one period does not', () => {
    const cases: [AlarmRule, string, number][] = [
      [alarmRules.functionErrors('StepExecutor', 'StepExecutorErrors'), 'errors', 1],
      [alarmRules.functionThrottles('GetRun'), 'throttles', 2],
      [alarmRules.runEventsThrottles, 'throttles', 5],
      [alarmRules.accountConcurrency(1000), 'claimed', 950],
      [alarmRules.iteratorAge, 'iteratorAge', 1_800_000],
    ];
    for (const [rule, metricId, bad] of cases) {
      expect(trips(rule, { [metricId]: [undefined, bad, undefined, undefined, undefined] }), rule.id).toBe(false);
      expect(trips(rule, { [metricId]: [bad, undefined, bad, undefined, undefined] }), rule.id).toBe(false);
      expect(trips(rule, { [metricId]: rep(bad, sustainedPeriods) }), rule.id).toBe(true);
    }
    const table = alarmRules.tableThrottles;
    expect(trips(table, { writeThrottles: [undefined, 500, undefined] })).toBe(false);
    expect(trips(table, { writeThrottles: [3, 1, 2, undefined, undefined] })).toBe(true);
  });

  it("the dispatcher's ticks, from its errors alone: a late or failed period is no page; fifteen minutes without a tick, or of failed ticks, or of both, is", () => {
    const rule = alarmRules.dispatcherTicks('DeferredDispatcher');
    // Errors is 0 for a period whose ticks all succeeded, absent for one without a tick.
    expect(trips(rule, { errors: [0, 0, undefined, 0, 0] })).toBe(false);
    expect(trips(rule, { errors: [0, 2, undefined, 0, 0] })).toBe(false);
    expect(trips(rule, { errors: [0, 0, undefined, undefined, undefined] })).toBe(true);
    expect(trips(rule, { errors: [0, 0, 3, 5, 1] })).toBe(true);
    expect(trips(rule, { errors: [0, 0, 3, undefined, 1] })).toBe(true);
  });

  it('a dead-letter arrival pages at once, is red 5 minutes, and a message kept there or a redrive does not keep it red', () => {
    const rule = alarmRules.deadLetterArrivals;
    // Quiet (SQS publishes nothing for an idle empty queue), one arrival, then kept for inspection.
    const depth: Series = [undefined, undefined, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0];
    expect(alarmStates(rule, { depth })).toEqual([
      false,
      false,
      false,
      false,
      true,
      true,
      true,
      false,
      false,
      false,
      false,
      false,
    ]);
    // A redrive (the depth falls) is no arrival.
    expect(trips(rule, { depth: [3, 3, 3, 3, 3, 0, 0, 0] })).toBe(false);
  });
});
