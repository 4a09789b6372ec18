/**
 * How a stage is deployed and where its data lives (lib/safe-deploys.ts, lib/stateful-stack.ts):
 * the traffic shift of the functions deployed through an alias, an existing table to run on (a
 * restored one), and AWS Backup. Parsed from the context by `stageConfig` (lib/stages.ts); pure.
 */

/**
 * How a new version of the run-start routes and the step executor takes traffic (docs/deploy.md):
 * - `all-at-once`: CloudFormation moves the `live` alias; no CodeDeploy, no rollback alarm.
 * - `canary`: CodeDeploy sends 10% of invocations to the new version for 5 minutes, then all.
 * - `linear`: CodeDeploy adds 10% every minute (10 minutes).
 * Under `canary` and `linear`, an error of the new version in 2 of 5 minutes rolls it back.
 */
export const deploymentStrategies = ['all-at-once', 'canary', 'linear'] as const;
export type DeploymentStrategy = (typeof deploymentStrategies)[number];

export interface DeploySettings {
  strategy: DeploymentStrategy;
  /**
   * An existing table the stage runs on instead of the one its stateful stack creates (a table
   * restored from a backup or a point in time): its name and its stream's ARN (the operator events'
   * publisher reads the stream; a restore does not copy the stream setting, so it is turned on first).
   */
  existingTable: { name: string; streamArn: string } | undefined;
  /** An AWS Backup plan on the table: daily backups kept 7 days, monthly kept a year. */
  backups: boolean;
}

/** Context keys of these settings (`cdk deploy -c key=value`, or the stage's block in cdk.json). */
export const deployContextKeys = {
  /** `all-at-once`, `canary` or `linear`: dev all-at-once, prod canary. */
  deployment: 'deployment',
  /** The name of an existing table to run on (a restored one); needs `tableStreamArn`. */
  tableName: 'tableName',
  /** That table's stream ARN (`aws dynamodb describe-table --query Table.LatestStreamArn`). */
  tableStreamArn: 'tableStreamArn',
  /** `true` or `false`: the AWS Backup plan; default on prod. */
  backups: 'backups',
} as const;

export const deployDefaults = {
  dev: { strategy: 'all-at-once', backups: false },
  prod: { strategy: 'canary', backups: true },
} as const satisfies Record<string, Omit<DeploySettings, 'existingTable'>>;

/** DynamoDB's rule for a table name: 3 to 255 of letters, digits, `_`, `-` and `.`. */
const tableNamePattern = /^[A-Za-z0-9_.-]{3,255}$/;
/** `arn:<partition>:dynamodb:<region>:<account>:table/<name>/stream/<label>`. */
const streamArnPattern = /^arn:aws[a-z-]*:dynamodb:[a-z0-9-]+:\d{12}:table\/([A-Za-z0-9_.-]{3,255})\/stream\/[^/\s]+$/;

/** The stage's deploy settings from its context; a malformed value fails `cdk synth`. */
export const parseDeploySettings = (
  stage: keyof typeof deployDefaults,
  context: (key: string) => unknown,
): DeploySettings => {
  const defaults = deployDefaults[stage];
  const strategy = context(deployContextKeys.deployment) ?? defaults.strategy;
  if (!deploymentStrategies.includes(strategy as DeploymentStrategy)) {
    throw new Error(
      `context deployment must be one of ${deploymentStrategies.join(', ')}, got ${JSON.stringify(strategy)}`,
    );
  }
  const name = context(deployContextKeys.tableName);
  const streamArn = context(deployContextKeys.tableStreamArn);
  let existingTable: DeploySettings['existingTable'];
  if (name !== undefined && name !== '') {
    if (typeof name !== 'string' || !tableNamePattern.test(name)) {
      throw new Error(`context tableName must be a DynamoDB table name, got ${JSON.stringify(name)}`);
    }
    const streamTable = typeof streamArn === 'string' ? streamArnPattern.exec(streamArn)?.[1] : undefined;
    if (streamTable !== name) {
      throw new Error(
        `context tableName needs tableStreamArn, the stream ARN of table ${name} ` +
          `(turn its NEW_AND_OLD_IMAGES stream on after a restore), got ${JSON.stringify(streamArn)}`,
      );
    }
    existingTable = { name, streamArn: streamArn as string };
  } else if (streamArn !== undefined && streamArn !== '') {
    throw new Error('context tableStreamArn is given without tableName');
  }
  const backups = context(deployContextKeys.backups);
  if (backups !== undefined && backups !== '' && ![true, false, 'true', 'false'].includes(backups as string)) {
    throw new Error(`context backups must be true or false, got ${JSON.stringify(backups)}`);
  }
  return {
    strategy: strategy as DeploymentStrategy,
    existingTable,
    backups: backups === undefined || backups === '' ? defaults.backups : backups === true || backups === 'true',
  };
};
