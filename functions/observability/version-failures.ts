import type { Context } from 'aws-lambda';
import { answeredFailures, metricsNamespace, versionDimensions } from '../../platform/metric-names.ts';

/**
 * Powertools' switch for metrics, honoured here too (off in tests and the local default), read once
 * at import as the metrics' stage is.
 */
const disabled = process.env.POWERTOOLS_METRICS_DISABLED === 'true';

/** The invocation's function and the version that runs it, as Lambda's context gives them. */
export type RunningVersion = Pick<Context, 'functionName' | 'functionVersion'>;

/**
 * Counts `count` answered failures (`answeredFailures` in `platform/metric-names.ts`) of the version
 * running this invocation: one embedded metric format line on stdout, written at once, and only when
 * there is one to count. Written by hand, not through Powertools: every API function counts its
 * 5xx, and Powertools metrics costs each bundle's cold start up to 10 ms of cpu to import (the
 * public functions carry no Powertools at all). The format:
 * https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html
 */
export const countAnsweredFailures = (running: RunningVersion | undefined, count: number): void => {
  if (disabled || !running?.functionName || !running.functionVersion || count <= 0) return;
  const dimensions = versionDimensions(running.functionName, running.functionVersion);
  const line = {
    _aws: {
      Timestamp: Date.now(),
      CloudWatchMetrics: [
        {
          Namespace: metricsNamespace,
          Dimensions: [Object.keys(dimensions)],
          Metrics: [{ Name: answeredFailures, Unit: 'Count' }],
        },
      ],
    },
    ...dimensions,
    [answeredFailures]: count,
  };
  process.stdout.write(`${JSON.stringify(line)}\n`);
};

/**
 * A worker's handler whose answer's batch item failures (the records it hands back for redelivery)
 * are counted for the version that failed them: Lambda counts such an invocation as a success.
 */
export const countingFailedRecords =
  <Event, Answer extends { batchItemFailures: readonly unknown[] }>(
    handler: (event: Event, context?: Context) => Promise<Answer>,
  ) =>
  async (event: Event, context?: Context): Promise<Answer> => {
    const answer = await handler(event, context);
    countAnsweredFailures(context, answer.batchItemFailures.length);
    return answer;
  };
