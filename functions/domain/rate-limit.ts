/**
 * Sliding-window rate limit, approximated from two fixed one-minute windows (the method used by
 * Cloudflare and others): the previous window's count is weighted by how much of it still overlaps
 * the last 60 seconds. Exact enough, and one counter item per key.
 */
export const windowSeconds = 60;

export const defaultRequestsPerMinute = 60;

export interface WindowCounts {
  /** Requests counted in the current window, this one included. */
  current: number;
  /** Requests counted in the previous window. */
  previous: number;
}

/** Index of the fixed window that holds `nowMs`. */
export const windowIndex = (nowMs: number): number => Math.floor(nowMs / 1000 / windowSeconds);

/** Fraction of the current window already elapsed, in [0, 1). */
const elapsedFraction = (nowMs: number): number => (nowMs / 1000 / windowSeconds) % 1;

/** Estimated requests in the sliding minute ending now. */
export const slidingCount = (counts: WindowCounts, nowMs: number): number =>
  counts.previous * (1 - elapsedFraction(nowMs)) + counts.current;

export type RateDecision = { allowed: true } | { allowed: false; retryAfterSeconds: number };

/**
 * Decides a request already counted in `counts`. Refused requests count too (so a client that
 * ignores Retry-After stays throttled); Retry-After is the smallest whole number of seconds after
 * which one more request would be allowed if the client sends nothing meanwhile.
 */
export const decide = (counts: WindowCounts, nowMs: number, limit: number): RateDecision => {
  if (slidingCount(counts, nowMs) <= limit) return { allowed: true };
  const window = windowIndex(nowMs);
  for (let wait = 1; wait <= 2 * windowSeconds; wait++) {
    const later = nowMs + wait * 1000;
    const shift = windowIndex(later) - window;
    const projected: WindowCounts =
      shift === 0 ? counts : shift === 1 ? { previous: counts.current, current: 0 } : { previous: 0, current: 0 };
    if (slidingCount(projected, later) + 1 <= limit) return { allowed: false, retryAfterSeconds: wait };
  }
  return { allowed: false, retryAfterSeconds: 2 * windowSeconds };
};
