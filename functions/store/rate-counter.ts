import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../deps.ts';
import {
  type Bucket,
  bucketMs,
  type Counter,
  counterWrite,
  decide,
  type RateDecision,
  retryAfterSeconds,
  windowSeconds,
} from '../domain/rate-limit.ts';
import { logger } from '../observability/logger.ts';
import { rateCounterKey } from './keys.ts';
import { isConditionalCheckFailed, refusedItem } from './refusals.ts';

/**
 * The rate limit's store: one counter item per key (`RATE#<keyId>`), its buckets as attributes
 * `c<bucket>` (requests accepted) and `l<bucket>` (when the last was accepted), the rule in
 * functions/domain/rate-limit.ts.
 *
 * A request is accepted by ONE conditional UpdateItem, planned from this instance's last view of
 * the item: it adds the request to the current bucket only if the other buckets are as the view
 * says and the total stays within the limit. A refused request writes nothing. The view also
 * keeps a key that is at its limit away from DynamoDB: while the view already refuses, this
 * instance refuses without a call (the view is then exact: nobody can have been accepted since it
 * was read, see `admitRequest`), so a flood on one key costs about one write per instance each
 * time a place frees up, and never touches another key's item.
 *
 * A counter write that DynamoDB throttles (one item takes about 1,000 writes a second) answers
 * 429 with Retry-After 1, and this instance refuses that key without writing for that second.
 */

/**
 * Tries of a write refused because the view was stale (another writer moved the item meanwhile).
 * Each refusal means another request got in, so more tries cost nothing when the key is quiet; 3
 * were too few for one instance serving 200 concurrent requests of a key across a bucket's edge,
 * which then answered a 429 with room left.
 */
const writeTries = 6;

/** Seconds a key is refused here, without a write, after its counter write was throttled (the 429's Retry-After). */
export const throttledRetryAfterSeconds = 1;

/** Keys remembered per instance; the oldest are forgotten first (a forgotten view costs one extra write at most). */
const keysRemembered = 10_000;

/** DynamoDB's names for throttling: the counter item or the table took more than it can. */
const throttlingNames = new Set([
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'RequestLimitExceeded',
]);

export const isThrottling = (error: unknown): boolean => error instanceof Error && throttlingNames.has(error.name);

interface Seen {
  /** The counter as DynamoDB last answered it (after this instance's write, or with its refusal). */
  counter: Counter;
  /** This instance refuses the key without a write until then (after a throttled write). */
  shedUntilMs: number;
}

/** Per instance (per DynamoDB client), per table and key. */
const seenByClient = new WeakMap<object, Map<string, Seen>>();

const seenOf = (deps: Deps) => {
  let seen = seenByClient.get(deps.ddb);
  if (!seen) {
    seen = new Map();
    seenByClient.set(deps.ddb, seen);
  }
  return seen;
};

const remember = (seen: Map<string, Seen>, id: string, entry: Seen) => {
  seen.delete(id);
  seen.set(id, entry);
  if (seen.size > keysRemembered) {
    const oldest = seen.keys().next();
    if (!oldest.done) seen.delete(oldest.value);
  }
};

/** A number as the DocumentClient returns it, or as a refusal's old item carries it (`{ N: "…" }`). */
const numberOf = (value: unknown): number | undefined => {
  const n =
    typeof value === 'number'
      ? value
      : typeof value === 'object' && value !== null && 'N' in value && typeof value.N === 'string'
        ? Number(value.N)
        : undefined;
  return n !== undefined && Number.isFinite(n) ? n : undefined;
};

/**
 * The buckets of a counter item (absent: none). A bucket without its time counts as if its last
 * request came at its very end, so a damaged item can only refuse early, never accept too much.
 */
export const readCounter = (attributes: Record<string, unknown> | undefined): Counter => {
  const counts = new Map<number, number>();
  const lasts = new Map<number, number>();
  for (const [name, value] of Object.entries(attributes ?? {})) {
    const match = /^([cl])(\d+)$/.exec(name);
    const n = numberOf(value);
    if (!match || n === undefined) continue;
    (match[1] === 'c' ? counts : lasts).set(Number(match[2]), n);
  }
  return [...counts].map(
    ([index, count]): Bucket => ({ index, count, lastMs: lasts.get(index) ?? (index + 1) * bucketMs - 1 }),
  );
};

/** The UpdateItem that accepts a request at `nowMs` if the item is as `view` says and there is room. */
const acceptCommand = (deps: Deps, keyId: string, view: Counter, nowMs: number, limit: number) => {
  const write = counterWrite(view, nowMs, limit);
  const names: Record<string, string> = { '#c': `c${write.current}`, '#l': `l${write.current}`, '#ttl': 'ttl' };
  const values: Record<string, number> = {
    ':one': 1,
    ':now': nowMs,
    ':below': write.currentBelow,
    // Idle keys' items disappear once nothing in them can count.
    ':ttl': Math.floor(nowMs / 1000) + 2 * windowSeconds,
  };
  const conditions = ['(attribute_not_exists(#c) OR #c < :below)'];
  write.others.forEach(({ index, count }, i) => {
    names[`#o${i}`] = `c${index}`;
    if (count === undefined) conditions.push(`attribute_not_exists(#o${i})`);
    else {
      values[`:o${i}`] = count;
      conditions.push(`#o${i} = :o${i}`);
    }
  });
  const removed = write.expired.flatMap((index, i) => {
    names[`#xc${i}`] = `c${index}`;
    names[`#xl${i}`] = `l${index}`;
    return [`#xc${i}`, `#xl${i}`];
  });
  return new UpdateCommand({
    TableName: deps.tableName,
    Key: rateCounterKey(keyId),
    UpdateExpression: `ADD #c :one SET #l = :now, #ttl = :ttl${removed.length > 0 ? ` REMOVE ${removed.join(', ')}` : ''}`,
    ConditionExpression: conditions.join(' AND '),
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: values,
    ReturnValues: 'ALL_NEW',
    ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
  });
};

/**
 * Decides a request of key `keyId` at `nowMs` under `limit` requests a minute, counting it if it is
 * accepted.
 *
 * Refusing from the view alone is exact: the view was the true item when DynamoDB answered it, and
 * if it leaves no room now it left none at any moment since (buckets only leave the window), so no
 * instance can have been accepted meanwhile and the true count, and so Retry-After, is the view's.
 */
export const admitRequest = async (deps: Deps, keyId: string, nowMs: number, limit: number): Promise<RateDecision> => {
  const seen = seenOf(deps);
  const id = `${deps.tableName}\u0000${keyId}`;
  const known = seen.get(id);
  if (known && nowMs < known.shedUntilMs) {
    return { allowed: false, retryAfterSeconds: retryAfterSeconds(known.shedUntilMs, nowMs) };
  }
  let view = known?.counter ?? [];
  let at = nowMs;
  for (let attempt = 1; attempt <= writeTries; attempt++) {
    const decision = decide(view, at, limit);
    if (!decision.allowed) return decision;
    try {
      const { Attributes } = await deps.ddb.send(acceptCommand(deps, keyId, view, at, limit));
      remember(seen, id, { counter: readCounter(Attributes), shedUntilMs: 0 });
      return { allowed: true };
    } catch (error) {
      if (isConditionalCheckFailed(error)) {
        // No room, or the view was stale: either way the refusal carries the item as it is.
        view = readCounter(refusedItem(error));
        remember(seen, id, { counter: view, shedUntilMs: 0 });
        // A request read at a clock behind the item's newest bucket (a straggler at a bucket's edge)
        // is counted as of that bucket: writing an earlier bucket would keep failing every writer
        // of the newer one, and counting it later only keeps it in the window longer.
        at = Math.max(at, ...view.map((bucket) => bucket.lastMs));
        continue;
      }
      if (!isThrottling(error)) throw error;
      logger.warn('rate counter write throttled; refusing the key here for a second', { keyId, error: error as Error });
      const shedUntilMs = nowMs + throttledRetryAfterSeconds * 1000;
      remember(seen, id, { counter: view, shedUntilMs });
      return { allowed: false, retryAfterSeconds: throttledRetryAfterSeconds };
    }
  }
  // Still stale after every try: other instances keep writing earlier buckets (clocks apart at a
  // bucket's edge). The view now is the item as it is; if it has room, the next request gets in.
  const decision = decide(view, at, limit);
  return decision.allowed ? { allowed: false, retryAfterSeconds: 1 } : decision;
};
