import { Duration, Validations } from 'aws-cdk-lib';
import { type Alarm, ComparisonOperator, Metric, Stats, TreatMissingData } from 'aws-cdk-lib/aws-cloudwatch';
import { LambdaApplication, LambdaDeploymentConfig, LambdaDeploymentGroup } from 'aws-cdk-lib/aws-codedeploy';
import { Alias, type IFunction, type Function as LambdaFunction } from 'aws-cdk-lib/aws-lambda';
import { Construct } from 'constructs';
import { answeredFailures, metricsNamespace, versionDimensions } from '../platform/metric-names.ts';
import type { DeploymentStrategy } from './deploy-settings.ts';

/**
 * The functions a new version reaches through the `live` alias, gradually where the stage says so:
 * the run-start routes (a deferred start is POST /workflows/{id}/runs with `startAt`; the dispatcher
 * starts it later, from the same store code) and the step executor, the code that spends credits
 * and calls providers. Every other function is replaced at once, as before.
 */
export const aliasedFunctions = ['RunWorkflow', 'RunAgent', 'StepExecutor'] as const;

/** The alias API Gateway and the Steps queue's event source invoke; CodeDeploy moves it. */
export const liveAlias = 'live';

/**
 * The rollback alarms' window, the same for both: at least one of the new version's failures in 2 of
 * the last 5 minutes, so a version that fails twice is broken, not unlucky. Each watches the version
 * being deployed only, so the old version's share of the traffic cannot trip it:
 * - `<id>NewVersionErrors`: Lambda's `Errors` by the alias's `ExecutedVersion`: what the handler
 *   did not answer (a crash, a timeout, a whole batch thrown back);
 * - `<id>NewVersionFailures`: our own `AnsweredFailures` by `functionVersion`: the 5xx it answered
 *   and the records it handed back as batch item failures, which Lambda counts as successes.
 */
export const rollbackAlarm = {
  periodSeconds: 60,
  threshold: 1,
  evaluationPeriods: 5,
  datapointsToAlarm: 2,
} as const;

const deploymentConfigs = {
  canary: LambdaDeploymentConfig.CANARY_10PERCENT_5MINUTES,
  linear: LambdaDeploymentConfig.LINEAR_10PERCENT_EVERY_1MINUTE,
} as const;

/** One function deployed through its alias. */
export interface SafeDeploy {
  alias: Alias;
  /** Under `canary` and `linear` only. */
  group?: LambdaDeploymentGroup;
  /** The group's rollback alarms (`rollbackAlarm`); none under `all-at-once`. */
  alarms: Alarm[];
}

/**
 * Aliases, CodeDeploy deployment groups and their rollback alarms for `aliasedFunctions`. The
 * stack asks `target(id, fn)` what to invoke: the alias for these, the function for the rest.
 * Under `all-at-once` the alias simply follows each new version (no CodeDeploy, no alarm).
 */
export class SafeDeploys extends Construct {
  readonly strategy: DeploymentStrategy;
  readonly deploys = new Map<string, SafeDeploy>();
  #application: LambdaApplication | undefined;
  readonly #stage: string;

  constructor(scope: Construct, id: string, props: { strategy: DeploymentStrategy; stage: string }) {
    super(scope, id);
    this.strategy = props.strategy;
    this.#stage = props.stage;
  }

  /** What a route's integration or a queue's event source invokes for the function `id`. */
  target(id: string, fn: LambdaFunction): IFunction {
    if (!(aliasedFunctions as readonly string[]).includes(id)) return fn;
    const alias = new Alias(this, `${id}Live`, { aliasName: liveAlias, version: fn.currentVersion });
    const deploy: SafeDeploy = { alias, alarms: [] };
    this.deploys.set(id, deploy);
    if (this.strategy === 'all-at-once') return alias;

    const period = Duration.seconds(rollbackAlarm.periodSeconds);
    const newVersionErrors = new Metric({
      namespace: 'AWS/Lambda',
      metricName: 'Errors',
      dimensionsMap: {
        FunctionName: fn.functionName,
        Resource: `${fn.functionName}:${liveAlias}`,
        ExecutedVersion: fn.currentVersion.version,
      },
      statistic: Stats.SUM,
      period,
    });
    // The version CloudFormation publishes in this update, as Lambda's context names it
    // (`functionVersion`) in the lines the new code writes (functions/observability/version-failures.ts).
    const newVersionFailures = new Metric({
      namespace: metricsNamespace,
      metricName: answeredFailures,
      dimensionsMap: versionDimensions(fn.functionName, fn.currentVersion.version),
      statistic: Stats.SUM,
      period,
    });
    const runbook = (name: string) => `Runbook: docs/operations.md, Alarms, ${name}.`;
    deploy.alarms = [
      this.#rollbackAlarmOn(
        newVersionErrors,
        `${id}NewVersionErrorsAlarm`,
        `${id} (${this.#stage}): errors of the version being deployed; CodeDeploy rolls the alias back on it (docs/deploy.md). ${runbook('NewVersionErrors')}`,
      ),
      this.#rollbackAlarmOn(
        newVersionFailures,
        `${id}NewVersionFailuresAlarm`,
        `${id} (${this.#stage}): 5xx answers and failed records of the version being deployed; CodeDeploy rolls the alias back on it (docs/deploy.md). ${runbook('NewVersionFailures')}`,
      ),
    ];
    // The alarms watch the new version before CodeDeploy starts shifting the alias to it.
    for (const alarm of deploy.alarms) alias.node.addDependency(alarm);
    this.#application ??= new LambdaApplication(this, 'Application');
    deploy.group = new LambdaDeploymentGroup(this, `${id}Deployment`, {
      application: this.#application,
      alias,
      deploymentConfig: deploymentConfigs[this.strategy],
      alarms: deploy.alarms,
      autoRollback: { failedDeployment: true, stoppedDeployment: true, deploymentInAlarm: true },
    });
    Validations.of(deploy.group).acknowledge({
      id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSCodeDeployRoleForLambdaLimited]',
      reason:
        "CodeDeploy's own managed policy for Lambda deployments: it shifts the alias's weights and reads the " +
        'alarms; the role can be assumed by codedeploy.amazonaws.com only.',
    });
    return alias;
  }

  /** One rollback alarm on `metric` (`rollbackAlarm`'s window). */
  #rollbackAlarmOn(metric: Metric, id: string, description: string): Alarm {
    return metric.createAlarm(this, id, {
      alarmDescription: description,
      threshold: rollbackAlarm.threshold,
      comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      evaluationPeriods: rollbackAlarm.evaluationPeriods,
      datapointsToAlarm: rollbackAlarm.datapointsToAlarm,
      // No invocation of the new version yet, or none that failed (a failure is counted only when
      // it happens), is no evidence against it.
      treatMissingData: TreatMissingData.NOT_BREACHING,
    });
  }
}
