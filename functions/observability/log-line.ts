/** The `service` of every log line, as the Powertools logger and `logLine` write it. */
export const logServiceName = 'workflow-run-api';

/**
 * What no log line may carry, whatever a message or an error's text holds: a run token (a URL's
 * `access_token` query parameter, or the token itself) and an API key. Each is replaced where it
 * stands, so the line still says where it was.
 */
const secretsInText: readonly [RegExp, string][] = [
  [/(access_token=)[^&#\s"']*/gi, '$1[redacted]'],
  [/wrt_1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+/g, 'wrt_1.[redacted]'],
  [/wra_[0-9A-Za-z]{38}/g, 'wra_[redacted]'],
];

/** A JSON replacer that redacts `secretsInText` in every string of a log line (the Powertools logger's and `logLine`'s). */
export const redactSecrets = (_key: string, value: unknown): unknown =>
  typeof value === 'string'
    ? secretsInText.reduce((text, [pattern, replacement]) => text.replace(pattern, replacement), value)
    : value;

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
  process.stdout.write(`${JSON.stringify({ ...line, ...Object.fromEntries(entries) }, redactSecrets)}\n`);
};
