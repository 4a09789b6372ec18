/**
 * The stage's log groups by name and the CloudWatch Logs Insights queries that follow a run, shared
 * by the stack (`lib/service-function.ts` names each function's log group, `lib/log-queries.ts` saves
 * the queries) and the operators' CLI (`npm run admin -- run show`, which prints them for one run).
 */

/** Each function's log group: `/<api stack>/<route or worker id>`, so a stage's groups are known without AWS. */
export const functionLogGroupName = (apiStackName: string, functionId: string) => `/${apiStackName}/${functionId}`;

/** The saved queries' names (the console lists saved queries in folders split on `/`). */
export const savedQueryNames = (apiStackName: string) => ({
  runTrail: `${apiStackName}/run-trail`,
  failedRunsByReason: `${apiStackName}/failed-runs-by-reason`,
});

/** What the saved run-trail query filters on until an operator puts a run's jobId in its place. */
export const jobIdPlaceholder = 'PUT-THE-JOB-ID-HERE';

/**
 * A query as the pieces of CDK's `QueryString` (fields, filter, stats, sort, limit), rendered the same
 * way by `renderQuery` for the CLI, so the saved query and the printed one are the same text.
 */
export interface QueryParts {
  fields?: string[];
  filterStatements?: string[];
  statsStatements?: string[];
  sort?: string;
  limit?: number;
}

/**
 * Every line any function logged for one run, oldest first: each worker's record logs through its
 * own child logger (functions/observability/logger.ts), so a line's `jobId` is its own run's.
 */
export const runTrailQuery = (jobId: string): QueryParts => ({
  fields: ['@timestamp', '@log', 'level', 'message', 'nodeId', 'function_request_id', 'error'],
  filterStatements: [`jobId = "${jobId}"`],
  sort: '@timestamp asc',
  limit: 10_000,
});

/**
 * The runs that failed, counted by why: the `run failed` line the step executor logs when a step
 * fails its run (functions/app/step/run-step.ts), by its `reason` (the failure classes of the failed-run
 * metric), with a run of each to follow through the run-trail query.
 */
export const failedRunsByReasonQuery: QueryParts = {
  filterStatements: ['message = "run failed"'],
  statsStatements: ['count(*) as failedRuns, latest(jobId) as lastJobId by reason'],
  sort: 'failedRuns desc',
};

/** The query text, as CDK's `QueryString` renders the same parts. */
export const renderQuery = (parts: QueryParts): string =>
  [
    parts.fields && `fields ${parts.fields.join(', ')}`,
    ...(parts.filterStatements ?? []).map((s) => `filter ${s}`),
    ...(parts.statsStatements ?? []).map((s) => `stats ${s}`),
    parts.sort && `sort ${parts.sort}`,
    parts.limit !== undefined && `limit ${parts.limit}`,
  ]
    .filter((line): line is string => typeof line === 'string' && line.length > 0)
    .join('\n| ');
