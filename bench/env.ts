/**
 * Imported first by bench/run.ts, before any service module is evaluated: the service's settings as
 * the local default has them (`local/local-deps.ts`). Metrics are off, so the embedded-metric lines
 * the handlers would print per invocation neither flood the output nor differ from `npm start`.
 */
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';
// The webhook worker logs each attempt at INFO, which would interleave with the cost section's lines.
process.env.POWERTOOLS_LOG_LEVEL ??= 'WARN';
