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
} as const;

/** The stage a function runs in when `SERVICE_STAGE` is unset: the local default and tests. */
export const localStage = 'local';

/**
 * Every metric is published with exactly this dimension set, the service and the stage (so dev and
 * prod in one account are graphed and alarmed apart); the alarms and the dashboard must use the same.
 */
export const metricDimensions = (stage: string) => ({ service: metricsServiceName, stage }) as const;
