/**
 * How often a caller may ask for a webhook to be sent again (POST /runs/{jobId}/deliveries/redeliver),
 * as pure rules. Each accepted redelivery POSTs a body to an address the caller chose: unbounded, it
 * turns the service into a bandwidth amplifier paid by nobody. So a delivery's first redelivery is
 * always accepted, each later one waits `redeliverySpacingMs` after the one before; a run's
 * deliveries together take `redeliveriesPerRunPerMinute`; and each accepted one counts once more
 * against the key's requests per minute (the POST it causes, beside the request that asked).
 */

/** The least time between two redeliveries of one delivery. */
export const redeliverySpacingMs = 60_000;

/** Most redeliveries of one run's deliveries (its end's and its lifecycle events') in any minute. */
export const redeliveriesPerRunPerMinute = 10;

/** The rate counter of a run's redeliveries (functions/store/rate-counter.ts keeps one per id). */
export const runRedeliveryCounterId = (jobId: string): string => `redeliver:${jobId}`;

/**
 * Seconds until the delivery may be redelivered again, given when it last was (never: now, 0).
 * At least 1 while it must wait, as a `Retry-After` is.
 */
export const redeliveryWaitSeconds = (lastRedeliveryAt: string | undefined, now: Date): number => {
  if (lastRedeliveryAt === undefined) return 0;
  const waitMs = Date.parse(lastRedeliveryAt) + redeliverySpacingMs - now.getTime();
  return waitMs > 0 ? Math.max(1, Math.ceil(waitMs / 1000)) : 0;
};
