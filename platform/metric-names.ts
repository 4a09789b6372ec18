/**
 * The service's metric names and dimensions: pure data, shared by the functions that publish them
^ * (`functions/observability/metrics.ts`) and by the dashboard and alarms in `lib/observability.ts`, which must not load Powertools.
 */

export const metricsNamespace = 'WorkflowRunApi';
/** Powertools adds it to every metric as the `service` dimension. */
export const metricsServiceName = 'workflow-run-api';

export const metricNames = {
  runsStarted: 'RunsStarted',
  stepsCompleted: 'StepsCompleted',
  /** In credits (1 credit = $0.01), not hundredths. */
  creditsCharged: 'CreditsCharged',
  webhookAttempts: 'WebhookAttempts',
  /** 1 per attempt that got no 2xx, 0 per delivered attempt, so that failures / attempts is a rate. */
  webhookFailures: 'WebhookFailures',
  deferredDispatched: 'DeferredDispatched',
  deferredExpired: 'DeferredExpired',
  deferredCancelled: 'DeferredCancelled',
  /** 1 per run that ended completed or failed (a cancel is the caller's choice, not counted): the failed-run rate's denominator. */
  runsEnded: 'RunsEnded',
  /** 1 per run that ended failed, with and without the `reason` dimension (`platform/alarm-rules.ts`, failureReasons). */
  failedRuns: 'FailedRuns',
  /** 1 per step that failed for good (its run fails with it), with and without the `reason` dimension. */
  failedSteps: 'FailedSteps',
  /**
   * 1 per step that failed for a reason an operator mends (`operatorFailureReasons`: a refused key,
   * a missing provider, secret or connection), in the stage's one dimension set: the one metric its
   * alarm reads, where an alarm per reason read one each.
   */
  stepsFailingForOperator: 'StepsFailingForOperator',
  /**
   * Requests answered 5xx, and those API Gateway answered 429 itself (the stage's throttle): a
   * metric filter on the access log, by `apiId`; the API's failure rate's numerator.
   */
  apiFailures: 'ApiFailures',
} as const;

/**
 * The one metric counted per function version, not per stage: 1 per request a function answered
 * with a 5xx and per queue or stream record it handed back as a batch item failure, none of which
 * Lambda's `Errors` counts. The canary's rollback alarm reads it for the version being deployed
 * (`lib/safe-deploys.ts`). Its own dimension set (`versionDimensions`), never in `metricNames`,
 * whose metrics all carry service and stage: a function's name is already its stage's own.
 * Written only when non-zero (`functions/observability/version-failures.ts`), so each version that
 * fails is one metric in the hours it fails, and a version that does not costs nothing.
 */
export const answeredFailures = 'AnsweredFailures';

/** The dimensions of `answeredFailures`: the function's name and the version that answered. */
export const versionDimensions = (functionName: string, functionVersion: string) =>
  ({ functionName, functionVersion }) as const;

/** The dimension that carries a failure's reason. */
export const reasonDimension = 'reason';

/** The stage a function runs in when `SERVICE_STAGE` is unset: the local default and tests. */
export const localStage = 'local';

/**
 * Every metric is published with exactly this dimension set, the service and the stage (so dev and
 * prod in one account are graphed and alarmed apart); the alarms and the dashboard must use the same.
 */
export const metricDimensions = (stage: string) => ({ service: metricsServiceName, stage }) as const;
