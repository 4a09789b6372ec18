/**
 * The rate limit of a key: at most `limit` requests accepted in any 60 seconds, a sliding window
 * that is exact, not estimated. Only accepted requests are counted: a refused request changes
 * nothing, so it can neither use up the limit nor push the moment a request fits again.
 *
 * Accepted requests are counted in 5-second buckets (`bucketMs`), each remembering how many it
 * holds and when its last one was accepted. A bucket counts whole while its last request is less
 * than 60 seconds old. So the count is never below the true number of requests in the last 60
 * seconds (no window ever holds more than `limit`), and it is above it by at most the requests of
 * the one bucket that straddles the window's start: a request is always accepted when fewer than
 * `limit` were accepted in the last 65 seconds.
 *
 * A refusal's Retry-After is the whole number of seconds until enough buckets have left the
 * window for one more request, in 1..60: a request sent after it is accepted if nothing else was
 * accepted meanwhile. The store keeps the buckets in one item per key, written by one conditional
 * UpdateItem (`functions/store/rate-counter.ts`, modelled here by `afterAccepting` and
 * `counterWrite`).
 */
export const windowSeconds = 60;
export const windowMs = windowSeconds * 1000;

/** The width of a bucket: the count is at most one bucket's requests above the true count. */
export const bucketMs = 5_000;

export const defaultRequestsPerMinute = 60;

export interface Bucket {
  /** `bucketIndexOf` the time of its requests. */
  index: number;
  /** Requests accepted in it. */
  count: number;
  /** When the last of them was accepted, ms since the epoch. */
  lastMs: number;
}

/** A key's counter: its buckets, as the store last answered them. */
export type Counter = readonly Bucket[];

export const bucketIndexOf = (ms: number): number => Math.floor(ms / bucketMs);

/** The oldest bucket that may still hold a request of the 60 seconds ending at `nowMs`; older ones never count again. */
export const oldestBucketIndex = (nowMs: number): number => bucketIndexOf(nowMs - windowMs);

/** Whether a bucket counts against the 60 seconds ending at `nowMs`: its last request is inside them. */
export const inWindow = (bucket: Bucket, nowMs: number): boolean => bucket.lastMs > nowMs - windowMs;

/** Requests counted against the 60 seconds ending at `nowMs` (never fewer than those accepted in them). */
export const slidingCount = (counter: Counter, nowMs: number): number =>
  counter.reduce((sum, bucket) => (inWindow(bucket, nowMs) ? sum + bucket.count : sum), 0);

/** A limit as the rule applies it: a whole number, at least 1. */
const effectiveLimit = (limit: number): number => Math.max(1, Math.floor(limit));

/**
 * The first instant at which one more request fits under `limit`, if nothing else is accepted
 * meanwhile: `nowMs` when it fits now, else the moment the bucket that frees the last needed
 * place leaves the window (its last request's time + 60 s).
 */
export const nextAllowedMs = (counter: Counter, nowMs: number, limit: number): number => {
  const counted = counter.filter((bucket) => inWindow(bucket, nowMs)).sort((a, b) => a.lastMs - b.lastMs);
  let excess = counted.reduce((sum, bucket) => sum + bucket.count, 0) + 1 - effectiveLimit(limit);
  if (excess <= 0) return nowMs;
  for (const bucket of counted) {
    excess -= bucket.count;
    if (excess <= 0) return bucket.lastMs + windowMs;
  }
  // Unreachable: the limit is at least 1, so dropping every counted bucket always makes room.
  return nowMs + windowMs;
};

/**
 * Whole seconds from `nowMs` until `atMs`, in 1..60. Above 60 only if another instance's clock ran
 * ahead of this one's (by milliseconds on Lambda), and then 60 is the honest answer within that.
 */
export const retryAfterSeconds = (atMs: number, nowMs: number): number =>
  Math.min(windowSeconds, Math.max(1, Math.ceil((atMs - nowMs) / 1000)));

export type RateDecision = { allowed: true } | { allowed: false; retryAfterSeconds: number };

/** Whether one more request fits now, given the requests accepted so far (this one not included). */
export const decide = (counter: Counter, nowMs: number, limit: number): RateDecision => {
  const at = nextAllowedMs(counter, nowMs, limit);
  return at <= nowMs ? { allowed: true } : { allowed: false, retryAfterSeconds: retryAfterSeconds(at, nowMs) };
};

/** The counter after accepting a request at `nowMs`: what the store's write does to the item. */
export const afterAccepting = (counter: Counter, nowMs: number): Counter => {
  const index = bucketIndexOf(nowMs);
  const kept = counter.filter((bucket) => bucket.index >= oldestBucketIndex(nowMs));
  const current = kept.find((bucket) => bucket.index === index);
  if (!current) return [...kept, { index, count: 1, lastMs: nowMs }];
  return kept.map((bucket) => (bucket === current ? { index, count: bucket.count + 1, lastMs: nowMs } : bucket));
};

/**
 * The conditional write that accepts a request at `nowMs`, planned from `view` (the counter as
 * this instance last saw it). Its condition holds only if the view is still right about every
 * other bucket that may count (`others`, unchanged, or absent where `count` is undefined) and the
 * current bucket has room (`currentBelow`): then the true count is the view's and the request
 * fits. Another instance's accepted requests change the current bucket only, so concurrent
 * writers do not conflict; a write refused by a stale `others` is planned again from the item the
 * refusal returns.
 */
export interface CounterWrite {
  /** The bucket the request is added to. */
  current: number;
  /** The current bucket must hold fewer requests than this (the limit less the other buckets' count). */
  currentBelow: number;
  /** Every other bucket that may count now, as the view has it. */
  others: { index: number; count: number | undefined }[];
  /** Buckets of the view too old ever to count again: removed by the write. */
  expired: number[];
}

export const counterWrite = (view: Counter, nowMs: number, limit: number): CounterWrite => {
  const current = bucketIndexOf(nowMs);
  const oldest = oldestBucketIndex(nowMs);
  const byIndex = new Map(view.map((bucket) => [bucket.index, bucket]));
  // The earlier buckets of the window, and any later one an instance whose clock runs ahead wrote.
  const indexes = [
    ...Array.from({ length: Math.max(0, current - oldest) }, (_, i) => oldest + i),
    ...view.filter((bucket) => bucket.index > current).map((bucket) => bucket.index),
  ];
  let othersCount = 0;
  const others = indexes.map((index) => {
    const bucket = byIndex.get(index);
    if (bucket && inWindow(bucket, nowMs)) othersCount += bucket.count;
    return { index, count: bucket?.count };
  });
  return {
    current,
    currentBelow: effectiveLimit(limit) - othersCount,
    others,
    expired: view.filter((bucket) => bucket.index < oldest).map((bucket) => bucket.index),
  };
};
