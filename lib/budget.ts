import { CfnBudget } from 'aws-cdk-lib/aws-budgets';
import { Construct } from 'constructs';
import { type StageConfig, serviceName, stackNames } from './stages.ts';

/**
 * The stage's AWS Budgets budget: a monthly COST budget of `monthlyBudgetUsd`, counting only what
 * carries the stage's `stage` cost allocation tag (lib/build-app.ts tags every resource), and mailing
 * `alarmEmail` at 80% of it spent and at 100% forecast, so a runaway month is seen while it can still
 * be stopped. The tag filter is `TagKeyValue: ["user:<key>$<value>"]` (AWS CLI example of
 * CreateBudget, https://docs.aws.amazon.com/code-library/latest/ug/budgets_example_budgets_CreateBudget_section.html,
 * read 2026-11-27); the tag counts only once activated as a cost allocation tag (docs/deploy.md).
 * Without `alarmEmail` (dev by default) the budget is still tracked in the console, mailing no one.
 */
export class StageBudget extends Construct {
  readonly budget: CfnBudget;

  constructor(scope: Construct, id: string, props: { config: StageConfig }) {
    super(scope, id);
    const { config } = props;
    const subscribers = config.alarmEmail ? [{ subscriptionType: 'EMAIL', address: config.alarmEmail }] : [];
    const notify = (notificationType: 'ACTUAL' | 'FORECASTED', threshold: number) => ({
      notification: { notificationType, comparisonOperator: 'GREATER_THAN', threshold, thresholdType: 'PERCENTAGE' },
      subscribers,
    });
    this.budget = new CfnBudget(this, 'Budget', {
      budget: {
        // Unique within the account, as budget names must be; the stack prefix tells deployments apart.
        budgetName: `${stackNames(config).api.replace(/-Api$/, '')}-monthly`,
        budgetType: 'COST',
        timeUnit: 'MONTHLY',
        budgetLimit: { amount: config.monthlyBudgetUsd, unit: 'USD' },
        costFilters: { TagKeyValue: [`user:stage$${config.stage}`] },
      },
      notificationsWithSubscribers: subscribers.length > 0 ? [notify('ACTUAL', 80), notify('FORECASTED', 100)] : [],
      resourceTags: [
        { key: 'service', value: serviceName },
        { key: 'stage', value: config.stage },
      ],
    });
  }
}
