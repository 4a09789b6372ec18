/**
 * How long run data is kept (docs/deploy.md, "Retention"). A run, its steps and its webhook
 * deliveries are kept for the stage's retention counted from the run's start (`runItemExpiry`); a
 * deferred run that ended (dispatched, expired, cancelled) for the same number of days counted from
 * its end. Each such item carries the instant it expires as `ttl` (epoch seconds), the attribute
 * DynamoDB's TTL deletes on, up to a few days late: an item whose `ttl` has passed reads as absent
 * (`isExpired`), so an expired run answers 404 whether or not DynamoDB has deleted it yet.
 *
 * Counting from the start keeps a run's output files (stored after it starts, and expired by the
 * bucket's lifecycle the same number of days after each one's creation) at least as long as the run.
 */

/** Days run data is kept where the stage does not say (the local default; the stacks set theirs). */
export const defaultRetentionDays = 30;

const secondsPerDay = 86_400;

/** Epoch seconds of `instant`, rounded down. */
export const epochSeconds = (instant: Date): number => Math.floor(instant.getTime() / 1000);

/** The `ttl` of an item kept `retentionDays` days from `from` (a Date or an ISO 8601 time). */
export const retentionExpiry = (from: Date | string, retentionDays: number): number =>
  epochSeconds(typeof from === 'string' ? new Date(from) : from) + retentionDays * secondsPerDay;

/**
 * An item of a run is never written already expired: it is kept at least this long after the write,
 * long enough for a cancel's answer and every webhook attempt (about half an hour) to read the run.
 */
export const runItemGraceSeconds = 3600;

/**
 * The `ttl` of an item of a run (the run item, written by the update that ends the run; its steps;
 * its webhook deliveries), written at `writtenAt`: the run's start plus the retention. Only a run
 * still in progress when that has passed (one stuck, then cancelled) gets later ones: an hour after
 * each write (`runItemGraceSeconds`).
 */
export const runItemExpiry = (runStart: string, writtenAt: Date, retentionDays: number): number =>
  Math.max(retentionExpiry(runStart, retentionDays), epochSeconds(writtenAt) + runItemGraceSeconds);

/**
 * Whether an item with this `ttl` reads as absent at `now`: from the second its `ttl` names on.
 * An item without a `ttl` (a run in progress, a waiting deferred run) never expires.
 */
export const isExpired = (ttl: unknown, now: Date): boolean => typeof ttl === 'number' && ttl <= epochSeconds(now);

/**
 * The retention days a setting names (the stage's `RETENTION_DAYS`): a whole number of at least 1;
 * unset or empty is the default. Anything else is a wiring mistake, refused when deps are built.
 */
export const parseRetentionDays = (setting: string | undefined): number => {
  if (setting === undefined || setting.trim() === '') return defaultRetentionDays;
  const days = Number(setting);
  if (!Number.isInteger(days) || days < 1) {
    throw new Error(`RETENTION_DAYS must be a whole number of days (at least 1), got ${JSON.stringify(setting)}`);
  }
  return days;
};
