import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { type FailureReason, operatorFailureReasons } from '../../platform/alarm-rules.ts';
import { envNames } from '../../platform/definitions.ts';
import {
  localStage,
  metricNames,
  metricsNamespace,
  metricsServiceName,
  reasonDimension,
} from '../../platform/metric-names.ts';
import { logger } from './logger.ts';

/**
 * The service's own CloudWatch metrics, written as embedded metric format (EMF) lines on stdout and
 * published per invocation: by the `logMetrics` middleware the run starts give `keyedHandler` (`run-start.ts`),
 * and by `metrics.publishStoredMetrics()` at the end of each worker invocation. Set
 * POWERTOOLS_METRICS_DISABLED=true to keep them off stdout (tests, the local default).
 *
 * The names live in `platform/metric-names.ts`, shared with the dashboard and alarms in `lib/observability.ts`.
 */

const nothingToPublish = 'No application metrics to publish';

/**
 * Powertools' own notices go through the service logger (JSON, level from POWERTOOLS_LOG_LEVEL).
 * Most API requests record no metric, so "nothing to publish" is routine: debug, not a warning per request.
 */
const metricsLogger = {
  debug: (message: string) => logger.debug(String(message)),
  info: (message: string) => logger.info(String(message)),
  warn: (message: string) =>
    String(message).startsWith(nothingToPublish) ? logger.debug(String(message)) : logger.warn(String(message)),
  error: (message: string) => logger.error(String(message)),
};

/** The stack sets the stage (`SERVICE_STAGE`); Powertools adds `service` itself. */
export const metrics = new Metrics({
  namespace: metricsNamespace,
  serviceName: metricsServiceName,
  defaultDimensions: { stage: process.env[envNames.stage] || localStage },
  logger: metricsLogger,
});

/** A run was accepted and its root steps committed (API start or deferred dispatch). */
export const countRunStarted = () => metrics.addMetric(metricNames.runsStarted, MetricUnit.Count, 1);

/** A step finished successfully. */
export const countStepCompleted = () => metrics.addMetric(metricNames.stepsCompleted, MetricUnit.Count, 1);

/** Credits charged to a team, given in hundredths (the ledger's unit); published in credits. */
export const addCreditsCharged = (hundredths: number) => {
  if (hundredths > 0) metrics.addMetric(metricNames.creditsCharged, MetricUnit.Count, hundredths / 100);
};

/** One webhook POST; `delivered` when the receiver answered 2xx. */
export const countWebhookAttempt = (delivered: boolean) => {
  metrics.addMetric(metricNames.webhookAttempts, MetricUnit.Count, 1);
  metrics.addMetric(metricNames.webhookFailures, MetricUnit.Count, delivered ? 0 : 1);
};

const deferredMetric = {
  dispatched: metricNames.deferredDispatched,
  expired: metricNames.deferredExpired,
  cancelled: metricNames.deferredCancelled,
} as const;

/**
 * Deferred runs moved by one dispatcher tick. A tick that moved none records nothing: a custom
 * metric costs $0.30 a month in every hour it is published, and the dispatcher ticks every minute.
 */
export const countDeferred = (kind: keyof typeof deferredMetric, n: number) => {
  if (n > 0) metrics.addMetric(deferredMetric[kind], MetricUnit.Count, n);
};

/**
 * One failure, counted twice: in the stage's total (service, stage: what the rate alarms divide)
 * and under its reason (service, stage, reason: six values at most, so six metrics more, published
 * only in an hour a failure of that reason happens). The second is its own EMF line, written at once.
 */
const countFailure = (name: string, reason: FailureReason) => {
  metrics.addMetric(name, MetricUnit.Count, 1);
  const byReason = metrics.singleMetric();
  byReason.addDimension(reasonDimension, reason);
  byReason.addMetric(name, MetricUnit.Count, 1);
};

/** A step failed for good (its run fails with it); one an operator must mend is also counted for its alarm. */
export const countStepFailed = (reason: FailureReason) => {
  countFailure(metricNames.failedSteps, reason);
  if (operatorFailureReasons.includes(reason))
    metrics.addMetric(metricNames.stepsFailingForOperator, MetricUnit.Count, 1);
};

/**
 * A run ended completed (no reason) or failed (its failing step's reason): the failed-run rate is
 * FailedRuns / RunsEnded. A cancel is the caller's choice and is in neither.
 */
export const countRunEnded = (failedFor: FailureReason | undefined) => {
  metrics.addMetric(metricNames.runsEnded, MetricUnit.Count, 1);
  if (failedFor) countFailure(metricNames.failedRuns, failedFor);
};
