/** The `service` of every log line, as the Powertools logger and `logLine` write it. */
export const logServiceName = 'workflow-run-api';

/** An error as a log line carries it: its name, message and stack, nothing else it holds. */
const loggable = (value: unknown) =>
  value instanceof Error ? { name: value.name, message: value.message, stack: value.stack } : value;

/**
 * One structured JSON line on stdout in the shape the Powertools logger writes (`level`,
 * `message`, `timestamp`, `service`, then the fields; undefined fields left out), for the functions
 * that carry no Powertools (`publicHandler`), so their lines read like every other function's.
 */
export const logLine = (level: 'ERROR' | 'WARN' | 'INFO', message: string, fields: Record<string, unknown> = {}) => {
  const entries = Object.entries(fields).flatMap(([name, value]) =>
    value === undefined ? [] : [[name, loggable(value)] as const],
  );
  const line = { level, message, timestamp: new Date().toISOString(), service: logServiceName };
  process.stdout.write(`${JSON.stringify({ ...line, ...Object.fromEntries(entries) })}\n`);
};
