/**
 * The per-key cap on open event streams (docs/api.md, "Following a run live"): a stream holds one
 * slot of its key for its life, as a lease (the rules of functions/domain/team-steps.ts) that
 * outlasts the longest a stream function can run, so a function killed mid-stream frees its slot
 * when the lease runs out, and a live stream never loses it. Pure.
 */

/** Seconds a stream's lease lasts: the stream function's timeout and a margin. */
export const streamLeaseSeconds = (functionTimeoutSeconds: number) => functionTimeoutSeconds + 30;

/**
 * Whole seconds until a slot of the key is sure to be free, from its live leases' ends (epoch ms):
 * the soonest a stream reaches its cap and closes, `lease − cap` before its lease ends (a stream
 * that ends earlier frees it sooner). At least 1; at most the cap.
 */
export const streamRetryAfterSeconds = (
  leaseEnds: readonly number[],
  now: Date,
  timing: { capSeconds: number; leaseSeconds: number },
): number => {
  const margin = (timing.leaseSeconds - timing.capSeconds) * 1000;
  const soonest = Math.min(...leaseEnds.map((until) => until - margin));
  const seconds = Math.ceil((soonest - now.getTime()) / 1000);
  return Number.isFinite(seconds) ? Math.min(timing.capSeconds, Math.max(1, seconds)) : 1;
};
