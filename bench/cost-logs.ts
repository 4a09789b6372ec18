/**
 * The log lines a metered run's invocations write, counted as CloudWatch Logs would ingest them.
 * Lambda sends a function's stdout and stderr to its log group, one event per line; the service
 * logs through Powertools (its own console on process.stdout and process.stderr, no runtime
 * prefix). While capturing, the service logger runs at INFO, the level deployed (the stacks set no
 * POWERTOOLS_LOG_LEVEL, and INFO is Powertools' default), and every line is counted and kept off
 * the terminal. Metrics are off in the bench and the tests (POWERTOOLS_METRICS_DISABLED): the EMF
 * line each publish would print with them on (`serializeMetrics`) is counted instead.
 */
import { logger } from '../functions/observability/logger.ts';
import { metrics } from '../functions/observability/metrics.ts';
import type { LogCounts } from './cost-meter.ts';

type Write = typeof process.stdout.write;

interface EmfLine {
  _aws?: { CloudWatchMetrics?: { Namespace: string; Dimensions: string[][]; Metrics: { Name: string }[] }[] };
  [field: string]: unknown;
}

/**
 * The custom metrics one EMF line publishes: CloudWatch counts each metric name with each of its
 * dimension sets (and their values) as one metric.
 */
export const emfMetricsOf = (line: EmfLine): string[] =>
  (line._aws?.CloudWatchMetrics ?? []).flatMap((directive) =>
    directive.Metrics.flatMap((metric) =>
      directive.Dimensions.map(
        (names) =>
          `${directive.Namespace}/${metric.Name}/${[...names]
            .sort()
            .map((name) => `${name}=${String(line[name])}`)
            .join(',')}`,
      ),
    ),
  );

/** Starts counting into `logs`; the returned function stops and restores the logger, metrics and streams. */
export const captureLogs = (logs: LogCounts): (() => void) => {
  const level = logger.getLevelName();
  logger.setLogLevel('INFO');
  // Each warm invocation's context middleware puts the level back to the one the process started
  // with (the bench's WARN, the tests' SILENT): keep INFO, as a deployed function starts with.
  const refresh = logger.refreshSampleRateCalculation;
  logger.refreshSampleRateCalculation = function (this: typeof logger) {
    refresh.call(this);
    this.setLogLevel('INFO');
  };
  const streams = [process.stdout, process.stderr];
  const writes = streams.map((stream) => stream.write);
  let partial = '';
  const count = (chunk: unknown) => {
    const text = partial + (typeof chunk === 'string' ? chunk : Buffer.from(chunk as Uint8Array).toString('utf8'));
    const lines = text.split('\n');
    partial = lines.pop() ?? '';
    for (const l of lines) {
      logs.events++;
      logs.bytes += Buffer.byteLength(l);
    }
  };
  for (const stream of streams) {
    stream.write = ((chunk: unknown, ...rest: unknown[]) => {
      count(chunk);
      const callback = rest.find((r) => typeof r === 'function') as (() => void) | undefined;
      callback?.();
      return true;
    }) as Write;
  }
  const metricsOff = process.env.POWERTOOLS_METRICS_DISABLED === 'true';
  const publish = metrics.publishStoredMetrics;
  if (metricsOff) {
    metrics.publishStoredMetrics = function (this: typeof metrics) {
      if (this.hasStoredMetrics()) {
        const line = this.serializeMetrics();
        logs.emfEvents++;
        logs.emfBytes += Buffer.byteLength(JSON.stringify(line));
        for (const metric of emfMetricsOf(line)) if (!logs.emfMetrics.includes(metric)) logs.emfMetrics.push(metric);
      }
      return publish.call(this);
    };
  }
  return () => {
    if (partial !== '') count('\n');
    streams.forEach((stream, i) => {
      stream.write = writes[i] as Write;
    });
    if (metricsOff) metrics.publishStoredMetrics = publish;
    logger.refreshSampleRateCalculation = refresh;
    logger.setLogLevel(level);
  };
};
