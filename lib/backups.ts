import { Duration, RemovalPolicy, Validations } from 'aws-cdk-lib';
import { BackupPlan, BackupPlanRule, BackupResource, BackupVault } from 'aws-cdk-lib/aws-backup';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { Schedule } from 'aws-cdk-lib/aws-events';
import { Construct } from 'constructs';

/** What the plan keeps (docs/deploy.md, "Backups, restore and safe deploys"). */
export const backupRules = {
  /** Every day at 05:00 UTC, kept a week: a restore point that outlives the table itself. */
  daily: { hourUtc: 5, keepDays: 7 },
  /** The 1st of each month at 05:00 UTC, kept a year: as long as prod keeps run data. */
  monthly: { hourUtc: 5, keepDays: 365 },
} as const;

/**
 * AWS Backup of the application table: its own vault (kept when the stack is deleted, as a vault
 * holding recovery points must be) and a plan with a daily and a monthly rule. Point-in-time
 * recovery (35 days, on every stage's table) stays the first way back; these backups are whole
 * copies outside the table, so deleting or corrupting the table cannot take them with it. The
 * library bucket is not selected: AWS Backup for S3 needs versioning, which would keep every
 * expired output file as a billed noncurrent version past the stage's retention (docs/deploy.md).
 */
export class TableBackups extends Construct {
  readonly plan: BackupPlan;
  readonly vault: BackupVault;

  constructor(scope: Construct, id: string, props: { table: ITable }) {
    super(scope, id);
    // Its name is fixed (CDK derives it from the construct path): kept past a teardown, as a vault
    // holding recovery points must be, but deleted (still empty) when the stack's creation rolls
    // back, so the retry does not meet a vault of the same name.
    this.vault = new BackupVault(this, 'Vault', { removalPolicy: RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE });
    this.plan = new BackupPlan(this, 'Plan', {
      backupVault: this.vault,
      backupPlanRules: [
        new BackupPlanRule({
          ruleName: 'Daily',
          scheduleExpression: Schedule.cron({ hour: String(backupRules.daily.hourUtc), minute: '0' }),
          deleteAfter: Duration.days(backupRules.daily.keepDays),
        }),
        new BackupPlanRule({
          ruleName: 'Monthly',
          scheduleExpression: Schedule.cron({ day: '1', hour: String(backupRules.monthly.hourUtc), minute: '0' }),
          deleteAfter: Duration.days(backupRules.monthly.keepDays),
        }),
      ],
    });
    this.plan.addSelection('Table', { resources: [BackupResource.fromDynamoDbTable(props.table)] });
    Validations.of(this).acknowledge({
      id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSBackupServiceRolePolicyForBackup]',
      reason:
        "AWS Backup's own managed policy for the role it backs the table up with: AWS maintains it as the " +
        'services AWS Backup supports change; the role can be assumed by backup.amazonaws.com only.',
    });
  }
}
