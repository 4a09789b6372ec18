import { Duration, Validations } from 'aws-cdk-lib';
import { type Alarm, ComparisonOperator, Metric, Stats, TreatMissingData } from 'aws-cdk-lib/aws-cloudwatch';
import { LambdaApplication, LambdaDeploymentConfig, LambdaDeploymentGroup } from 'aws-cdk-lib/aws-codedeploy';
import { Alias, type IFunction, type Function as LambdaFunction } from 'aws-cdk-lib/aws-lambda';
import { Construct } from 'constructs';
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
 * The rollback alarm: errors of the new version (the alias's `ExecutedVersion`, so the old
 * version's share of the traffic cannot trip it) in 2 of the last 5 minutes. Lambda counts as an
 * error only what the handler did not answer (a crash, a timeout, a whole batch thrown back), never
 * a 4xx or 5xx the handler answered, so a version that errors twice is broken, not unlucky.
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
  alarm?: Alarm;
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
    const deploy: SafeDeploy = { alias };
    this.deploys.set(id, deploy);
    if (this.strategy === 'all-at-once') return alias;

    const newVersionErrors = new Metric({
      namespace: 'AWS/Lambda',
      metricName: 'Errors',
      dimensionsMap: {
        FunctionName: fn.functionName,
        Resource: `${fn.functionName}:${liveAlias}`,
        ExecutedVersion: fn.currentVersion.version,
      },
      statistic: Stats.SUM,
      period: Duration.seconds(rollbackAlarm.periodSeconds),
    });
    deploy.alarm = newVersionErrors.createAlarm(this, `${id}NewVersionErrorsAlarm`, {
      alarmDescription:
        `${id} (${this.#stage}): errors of the version being deployed; CodeDeploy rolls the alias back on it (docs/deploy.md). ` +
        'Runbook: docs/operations.md, Alarms, NewVersionErrors.',
      threshold: rollbackAlarm.threshold,
      comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      evaluationPeriods: rollbackAlarm.evaluationPeriods,
      datapointsToAlarm: rollbackAlarm.datapointsToAlarm,
      // No invocation of the new version yet is no evidence against it.
      treatMissingData: TreatMissingData.NOT_BREACHING,
    });
    // The alarm watches the new version before CodeDeploy starts shifting the alias to it.
    alias.node.addDependency(deploy.alarm);
    this.#application ??= new LambdaApplication(this, 'Application');
    deploy.group = new LambdaDeploymentGroup(this, `${id}Deployment`, {
      application: this.#application,
      alias,
      deploymentConfig: deploymentConfigs[this.strategy],
      alarms: [deploy.alarm],
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
}
