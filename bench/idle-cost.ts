/**
 * What a stage costs a month with no traffic, itemised, without the free tier: counted from the
 * stage's synthesized template (alarm metrics, dashboards, event source mappings, the schedule,
 * the table's key, log retention), the provider secrets its configuration names, and one idle
 * dispatcher tick measured on the emulators (invocation time, DynamoDB read units, the log lines it
 * writes at INFO). The one source of the idle cost table in docs/deploy.md.
 */
import { randomUUID } from 'node:crypto';
import { makeHandler as makeDispatcher } from '../functions/workers/deferred-dispatcher.ts';
import { buildApp } from '../lib/build-app.ts';
import { contextKeys } from '../lib/stages.ts';
import { invokedAs } from '../local/invocation.ts';
import { localDeps } from '../local/local-deps.ts';
import { type LocalResources, provision } from '../local/provision.ts';
import { functionMemoryMb } from '../platform/definitions.ts';
import { pinnedProd } from '../test/support/stages.ts';
import { captureLogs } from './cost-logs.ts';
import {
  awsPrices,
  ingestedBytes,
  lambdaPlatformLines,
  type Meter,
  meterDynamoDb,
  meterInvocation,
  meterSqs,
  newMeter,
  resetMeter,
} from './cost-meter.ts';

/** A month of 30 days, in minutes. */
const minutesPerMonth = 30 * 24 * 60;

/** Prices of the idle items, us-east-1, November 2026. */
export const idlePrices = {
  alarmMetricMonth: 0.1,
  dashboardMonth: 3,
  secretsManagerSecretMonth: 0.4,
  ssmStandardParameterMonth: 0,
  kmsRequest: 0.03 / 1e4,
  logsStoredGbMonth: 0.03,
  /** AWS WAF: a web ACL and each rule in it, a month (docs/deploy.md, "Behind your own domain and WAF"). */
  wafWebAclMonth: 5,
  wafRuleMonth: 1,
} as const;

/**
 * Lambda's SQS event source keeps polling a queue while it is empty: at least 5 pollers, each a
 * 20-second long poll (3 ReceiveMessage requests a minute). AWS does not publish the figure;
 * check "SQS requests" in Cost Explorer.
 */
export const idlePollers = { perMapping: 5, receivesPerMinute: 3 } as const;

/**
 * DynamoDB asks KMS for the table's AWS-managed key about once every 5 minutes while something
 * reads or writes it (here: the dispatcher's ticks).
 */
export const kmsRequestsPerMonth = minutesPerMonth / 5;

/** One idle tick of the dispatcher, measured. */
export interface TickCost {
  ms: number;
  readUnits: number;
  logEvents: number;
  logBytes: number;
  emfEvents: number;
}

/** Runs `ticks` dispatcher ticks on a fresh, empty table (after a warm-up) and averages them. */
export const measureIdleTick = async (base: LocalResources, ticks = 20): Promise<TickCost> => {
  const resources = await provision({
    prefix: `idle${randomUUID().slice(0, 8)}`,
    dynamoDbEndpoint: base.dynamoDbEndpoint,
    sqsS3Endpoint: base.sqsS3Endpoint,
    s3Endpoint: base.s3Endpoint,
    // No table stream until a consumer attaches (local/provision.ts, `tableStream`).
    tableStream: false,
  });
  const meter: Meter = newMeter();
  const deps = localDeps(resources);
  const reader = localDeps(resources).ddb;
  meterDynamoDb(deps.ddb, meter, reader);
  meterSqs(deps.sqs, meter);
  // As its schedule invokes it, so the AWS command log (local/aws-command-log.ts) knows who sent what.
  const dispatcher = invokedAs('DeferredDispatcher', makeDispatcher(deps));
  try {
    await dispatcher();
    resetMeter(meter);
    const stop = captureLogs(meter.logs);
    try {
      for (let i = 0; i < ticks; i++) await meterInvocation(meter, 'DeferredDispatcher', () => dispatcher());
    } finally {
      stop();
    }
    return {
      ms: meter.lambda.ms / ticks,
      readUnits: meter.dynamoDb.readUnits / ticks,
      logEvents: meter.logs.events / ticks,
      logBytes: meter.logs.bytes / ticks,
      emfEvents: meter.logs.emfEvents / ticks,
    };
  } finally {
    deps.ddb.destroy();
    deps.sqs.destroy();
    deps.s3.destroy();
    reader.destroy();
  }
};

export interface IdleItem {
  what: string;
  dollars: number;
}

type Template = { Resources: Record<string, { Type: string; Properties?: Record<string, unknown> }> };

const resourcesOf = (template: Template, type: string) =>
  Object.values(template.Resources).filter((r) => r.Type === type);

/** Metrics an alarm watches: one, or those of its metric math (expressions are free). */
const alarmMetrics = (alarm: { Properties?: Record<string, unknown> }) => {
  const metrics = alarm.Properties?.Metrics as { MetricStat?: unknown }[] | undefined;
  return metrics ? metrics.filter((m) => m.MetricStat !== undefined).length : 1;
};

/** The scheduled rules' ticks a month, from their `rate(n minute[s])` expressions. */
const ticksPerMonth = (template: Template) =>
  resourcesOf(template, 'AWS::Events::Rule').reduce((sum, rule) => {
    const rate = /^rate\((\d+) minutes?\)$/.exec(String(rule.Properties?.ScheduleExpression ?? ''));
    return sum + (rate ? minutesPerMonth / Number(rate[1]) : 0);
  }, 0);

/** The stage configurations priced: the deploy guide's dev, and prod with its provider in SSM or Secrets Manager. */
export const idleStages = [
  { name: 'dev', context: { [contextKeys.stage]: 'dev' } },
  {
    name: 'prod, provider in SSM',
    // prod as pinned in cdk.json, with this provider in place of its example ones.
    context: pinnedProd({
      [contextKeys.providers]: 'openai-compatible:ssm:/workflow-run-api/prod/providers/openai-compatible',
      [contextKeys.modelDefaults]: {},
    }),
  },
  {
    name: 'prod, provider in Secrets Manager',
    context: pinnedProd({
      [contextKeys.providers]: 'openai-compatible:workflow-run-api/prod/providers/openai-compatible',
      [contextKeys.modelDefaults]: {},
    }),
  },
] as const;

/** The idle month of one stage, itemised, from its synthesized template and the measured tick. */
export const idleCost = (context: Record<string, unknown>, tick: TickCost): IdleItem[] => {
  const built = buildApp({ ...context, 'aws:cdk:bundling-stacks': [], '@aws-cdk/core:appMode': 'inmemory' }, {});
  const assembly = built.app.synth();
  const api = assembly.getStackByName(built.api.stackName).template as Template;
  const stateful = assembly.getStackByName(built.stateful.stackName).template as Template;
  const { config } = built;
  // prod's edge (us-east-1): its web ACL and rules bill by the month; CloudFront bills by request only.
  const edge = built.edge ? (assembly.getStackByName(built.edge.stackName).template as Template) : undefined;
  const webAcls = edge ? resourcesOf(edge, 'AWS::WAFv2::WebACL') : [];
  const wafRules = webAcls.reduce(
    (sum, acl) => sum + ((acl.Properties?.Rules as unknown[] | undefined)?.length ?? 0),
    0,
  );

  const alarms = resourcesOf(api, 'AWS::CloudWatch::Alarm');
  const alarmMetricCount = alarms.reduce((sum, a) => sum + alarmMetrics(a), 0);
  const dashboards = resourcesOf(api, 'AWS::CloudWatch::Dashboard').length;
  // SQS mappings only: Lambda reads a DynamoDB stream (the operator events') without a billed request.
  const mappings = resourcesOf(api, 'AWS::Lambda::EventSourceMapping').filter(
    (m) => m.Properties?.StartingPosition === undefined,
  ).length;
  const receives = mappings * idlePollers.perMapping * idlePollers.receivesPerMinute * minutesPerMonth;
  const ticks = ticksPerMonth(api);
  const tickGbSeconds = (tick.ms / 1000) * (functionMemoryMb / 1024);
  const platformBytes = lambdaPlatformLines(functionMemoryMb, tick.ms).reduce(
    (sum, l) => sum + ingestedBytes(1, Buffer.byteLength(l)),
    0,
  );
  const tickLogBytes = ingestedBytes(tick.logEvents, tick.logBytes) + platformBytes;
  const monthLogGb = (ticks * tickLogBytes) / 2 ** 30;
  // SSEEnabled: a KMS key (the AWS-managed aws/dynamodb unless one is named); off: DynamoDB's own key, free.
  const kmsKey = resourcesOf(stateful, 'AWS::DynamoDB::Table').some(
    (t) => (t.Properties?.SSESpecification as { SSEEnabled?: boolean } | undefined)?.SSEEnabled === true,
  );
  const secrets = config.providers.filter((p) => !p.secretName.startsWith('ssm:')).length;
  const parameters = config.providers.length - secrets;
  // The stack's own secrets: the edge's origin secret (lib/origin-secret.ts), with the edge on.
  const stackSecrets = resourcesOf(api, 'AWS::SecretsManager::Secret').length;

  return [
    {
      what: `CloudWatch alarms: ${alarmMetricCount} alarm metrics (${alarms.length} alarms) × $${idlePrices.alarmMetricMonth}`,
      dollars: alarmMetricCount * idlePrices.alarmMetricMonth,
    },
    {
      what: `SQS: ${mappings} event sources × ${idlePollers.perMapping} pollers × ${idlePollers.receivesPerMinute} long polls a minute = ${(receives / 1e6).toFixed(2)} M receives`,
      dollars: receives * awsPrices.sqsRequest,
    },
    {
      what: `Lambda: ${ticks.toLocaleString('en-US')} dispatcher ticks × (request + ${tick.ms.toFixed(0)} ms at ${functionMemoryMb} MB)`,
      dollars: ticks * (awsPrices.lambdaRequest + tickGbSeconds * awsPrices.lambdaGbSecond),
    },
    {
      what: `DynamoDB: ${tick.readUnits.toFixed(1)} read units a tick (price item, waiting indexes, queued-run shards)`,
      dollars: ticks * tick.readUnits * awsPrices.dynamoDbReadUnit,
    },
    {
      what: `KMS: the table's AWS-managed key, ~${kmsRequestsPerMonth.toLocaleString('en-US')} requests (one per 5 minutes)`,
      dollars: kmsKey ? kmsRequestsPerMonth * idlePrices.kmsRequest : 0,
    },
    {
      what: `CloudWatch Logs: ${(tickLogBytes / 1024).toFixed(2)} KB a tick (${tick.logEvents.toFixed(0)} line at INFO + START/END/REPORT), ${(monthLogGb * 1024).toFixed(0)} MB ingested, kept ${config.logRetentionDays} days`,
      dollars:
        monthLogGb * awsPrices.logsIngestedGb +
        monthLogGb * Math.min(1, config.logRetentionDays / 30) * idlePrices.logsStoredGbMonth,
    },
    {
      what: `custom metrics: ${tick.emfEvents.toFixed(0)} EMF lines a tick (an idle tick records nothing)`,
      dollars: tick.emfEvents > 0 ? 3 * awsPrices.customMetricMonth : 0,
    },
    {
      what: `provider secrets: ${secrets} in Secrets Manager × $${idlePrices.secretsManagerSecretMonth}, ${parameters} SSM standard parameter(s) × $0`,
      dollars: secrets * idlePrices.secretsManagerSecretMonth + parameters * idlePrices.ssmStandardParameterMonth,
    },
    {
      what: `the edge's origin secret: ${stackSecrets} in Secrets Manager × $${idlePrices.secretsManagerSecretMonth}`,
      dollars: stackSecrets * idlePrices.secretsManagerSecretMonth,
    },
    {
      what: `AWS WAF at the edge: ${webAcls.length} web ACL × $${idlePrices.wafWebAclMonth} + ${wafRules} rules × $${idlePrices.wafRuleMonth}`,
      dollars: webAcls.length * idlePrices.wafWebAclMonth + wafRules * idlePrices.wafRuleMonth,
    },
    {
      what: `dashboards: ${dashboards} × $${idlePrices.dashboardMonth}`,
      dollars: dashboards * idlePrices.dashboardMonth,
    },
    {
      what: `X-Ray (${config.tracing ? 'traced' : 'off'}; the dispatcher never), API Gateway, EventBridge schedule, empty bucket, SNS: no requests`,
      dollars: 0,
    },
  ];
};
