import { Stack } from 'aws-cdk-lib';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { LogGroup, QueryDefinition, QueryString } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import {
  failedRunsByReasonQuery,
  functionLogGroupName,
  jobIdPlaceholder,
  runTrailQuery,
  savedQueryNames,
} from '../platform/log-queries.ts';

/**
 * The stage's saved CloudWatch Logs Insights queries, over every function's log group: a run's trail
 * (put the jobId in place of the placeholder; `npm run admin -- run show <jobId>` prints it filled in)
 * and the failed runs counted by reason. Saved queries cost nothing; running one bills the data scanned.
 */
export class LogQueries extends Construct {
  constructor(scope: Construct, id: string, props: { functions: ReadonlyMap<string, IFunction> }) {
    super(scope, id);
    const stackName = Stack.of(this).stackName;
    // By the names the CLI prints too; created after the functions, whose log groups they name.
    const logGroups = [...props.functions.keys()].map((functionId) =>
      LogGroup.fromLogGroupName(this, `${functionId}Logs`, functionLogGroupName(stackName, functionId)),
    );
    this.node.addDependency(...props.functions.values());
    const names = savedQueryNames(stackName);
    new QueryDefinition(this, 'RunTrail', {
      queryDefinitionName: names.runTrail,
      queryString: new QueryString(runTrailQuery(jobIdPlaceholder)),
      logGroups,
    });
    new QueryDefinition(this, 'FailedRunsByReason', {
      queryDefinitionName: names.failedRunsByReason,
      queryString: new QueryString(failedRunsByReasonQuery),
      logGroups,
    });
  }
}
