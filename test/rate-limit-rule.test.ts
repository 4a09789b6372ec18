import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  afterAccepting,
  type Counter,
  type CounterWrite,
  counterWrite,
  decide,
  nextAllowedMs,
  slidingCount,
} from '../functions/domain/rate-limit.ts';
import { readCounter } from '../functions/store/rate-counter.ts';

/** The first instant of a minute, far from the epoch. */
const t0 = 29_000_000 * 60_000;

/** Accepts `count` requests at `atMs` from `counter`, asserting each is accepted. */
const acceptAll = (counter: Counter, atMs: number, count: number, limit: number): Counter => {
  let out = counter;
  for (let i = 0; i < count; i++) {
    expect(decide(out, atMs, limit)).toEqual({ allowed: true });
    out = afterAccepting(out, atMs);
  }
  return out;
};

describe('the rate limit rule: at most N accepted in any 60 s, only accepted requests counted', () => {
  it('accepts 60 in a burst, refuses the 61st for exactly 60 s, then accepts again', () => {
    const counter = acceptAll([], t0, 60, 60);
    expect(decide(counter, t0, 60)).toEqual({ allowed: false, retryAfterSeconds: 60 });
    expect(decide(counter, t0 + 59_999, 60)).toEqual({ allowed: false, retryAfterSeconds: 1 });
    expect(decide(counter, t0 + 60_000, 60)).toEqual({ allowed: true });
  });

  it('slides: requests leave the window 60 s after they came, not at a minute boundary', () => {
    // 30 at :50, 30 at :59; a minute boundary at :60 frees nothing.
    let counter = acceptAll([], t0 + 50_000, 30, 60);
    counter = acceptAll(counter, t0 + 59_000, 30, 60);
    expect(decide(counter, t0 + 61_000, 60)).toEqual({ allowed: false, retryAfterSeconds: 49 });
    expect(decide(counter, t0 + 109_999, 60)).toMatchObject({ allowed: false });
    // At :110 the 30 from :50 have left: exactly 30 more fit until the ones from :59 leave.
    counter = acceptAll(counter, t0 + 110_000, 30, 60);
    expect(decide(counter, t0 + 110_000, 60)).toEqual({ allowed: false, retryAfterSeconds: 9 });
    expect(decide(counter, t0 + 119_000, 60)).toEqual({ allowed: true });
  });

  it('counts a bucket whole while its last request is in the window (at most 5 s of requests early)', () => {
    // 10 at :00.0, 10 at :04.9: the same 5-second bucket, its last at :04.9.
    let counter = acceptAll([], t0, 10, 20);
    counter = acceptAll(counter, t0 + 4_900, 10, 20);
    expect(slidingCount(counter, t0 + 60_500)).toBe(20);
    expect(nextAllowedMs(counter, t0 + 60_500, 20)).toBe(t0 + 64_900);
    expect(slidingCount(counter, t0 + 64_900)).toBe(0);
  });

  const timeline = fc.record({
    start: fc.integer({ min: t0, max: t0 + 10 * 60_000 }),
    limit: fc.integer({ min: 1, max: 12 }),
    gaps: fc.array(
      fc.oneof(
        fc.constant(0),
        fc.integer({ min: 0, max: 400 }),
        fc.integer({ min: 0, max: 8_000 }),
        fc.integer({ min: 0, max: 70_000 }),
      ),
      { minLength: 1, maxLength: 250 },
    ),
  });

  /** One instance, the model of the store: a request accepted is added, a refused one changes nothing. */
  const simulate = ({ start, limit, gaps }: { start: number; limit: number; gaps: number[] }) => {
    let counter: Counter = [];
    let now = start;
    const accepted: number[] = [];
    const requests: {
      at: number;
      accepted: boolean;
      retryAfterSeconds?: number;
      counter: Counter;
      before: number[];
    }[] = [];
    for (const gap of gaps) {
      now += gap;
      const decision = decide(counter, now, limit);
      requests.push({
        at: now,
        accepted: decision.allowed,
        ...(decision.allowed ? {} : { retryAfterSeconds: decision.retryAfterSeconds }),
        counter,
        before: [...accepted],
      });
      if (decision.allowed) {
        counter = afterAccepting(counter, now);
        accepted.push(now);
      }
    }
    return { accepted, requests };
  };

  it('never accepts more than N in any 60 s window, over any timeline (property)', () => {
    fc.assert(
      fc.property(timeline, (input) => {
        const { accepted } = simulate(input);
        // The fullest window ends at an accepted request.
        for (const end of accepted) {
          expect(accepted.filter((t) => t > end - 60_000 && t <= end).length).toBeLessThanOrEqual(input.limit);
        }
      }),
      { numRuns: 1500 },
    );
  });

  it('always accepts a request when fewer than N were accepted in the last 65 s (property)', () => {
    fc.assert(
      fc.property(timeline, (input) => {
        for (const request of simulate(input).requests) {
          const recent = request.before.filter((t) => t > request.at - 65_000).length;
          if (recent < input.limit) expect(request.accepted).toBe(true);
        }
      }),
      { numRuns: 1500 },
    );
  });

  it('gives every refusal a Retry-After in 1..60 that is honest and no longer than needed (property)', () => {
    fc.assert(
      fc.property(timeline, (input) => {
        for (const request of simulate(input).requests) {
          if (request.accepted) continue;
          const seconds = request.retryAfterSeconds ?? 0;
          expect(Number.isInteger(seconds)).toBe(true);
          expect(seconds).toBeGreaterThanOrEqual(1);
          expect(seconds).toBeLessThanOrEqual(60);
          // Sent after it, with nothing accepted meanwhile (refused requests change nothing): accepted.
          expect(decide(request.counter, request.at + seconds * 1000, input.limit)).toEqual({ allowed: true });
          // One second less would not have been enough.
          if (seconds > 1) {
            expect(decide(request.counter, request.at + (seconds - 1) * 1000, input.limit).allowed).toBe(false);
          }
        }
      }),
      { numRuns: 1500 },
    );
  });

  it('does not push the next accepted moment later for refused requests sent meanwhile (property)', () => {
    fc.assert(
      fc.property(timeline, (input) => {
        const { requests } = simulate(input);
        // Within a run of refusals, every Retry-After points at the same next allowed moment.
        for (let i = 1; i < requests.length; i++) {
          const [previous, request] = [requests[i - 1], requests[i]];
          if (!previous || !request || previous.accepted || request.accepted) continue;
          const target = nextAllowedMs(previous.counter, previous.at, input.limit);
          expect(nextAllowedMs(request.counter, request.at, input.limit)).toBe(target);
          expect(request.at + (request.retryAfterSeconds ?? 0) * 1000).toBeLessThan(target + 1000);
        }
      }),
      { numRuns: 1000 },
    );
  });
});

/**
 * DynamoDB's side of the conditional write, as the store's expression says it: the other buckets
 * are as planned, the current one has room; then ADD to the current bucket, SET its time, REMOVE
 * the expired ones.
 */
const conditionHolds = (item: Counter, write: CounterWrite) =>
  write.others.every(({ index, count }) => item.find((b) => b.index === index)?.count === count) &&
  (item.find((b) => b.index === write.current)?.count ?? 0) < write.currentBelow;

const applyWrite = (item: Counter, write: CounterWrite, nowMs: number): Counter => {
  const kept = item.filter((b) => !write.expired.includes(b.index));
  const current = kept.find((b) => b.index === write.current);
  return current
    ? kept.map((b) => (b === current ? { ...b, count: b.count + 1, lastMs: nowMs } : b))
    : [...kept, { index: write.current, count: 1, lastMs: nowMs }];
};

describe('the conditional write shared by many instances (model of the store)', () => {
  it('never accepts more than N in 60 s, and refuses honestly, whatever each instance last saw (property)', () => {
    fc.assert(
      fc.property(
        fc.record({
          start: fc.integer({ min: t0, max: t0 + 10 * 60_000 }),
          limit: fc.integer({ min: 1, max: 10 }),
          instances: fc.integer({ min: 1, max: 4 }),
          requests: fc.array(
            fc.record({
              gap: fc.oneof(fc.integer({ min: 0, max: 300 }), fc.integer({ min: 0, max: 20_000 })),
              by: fc.nat(),
            }),
            { minLength: 1, maxLength: 200 },
          ),
        }),
        ({ start, limit, instances, requests }) => {
          let item: Counter = [];
          const views: Counter[] = Array.from({ length: instances }, () => []);
          const accepted: number[] = [];
          let now = start;
          for (const { gap, by } of requests) {
            now += gap;
            const instance = by % instances;
            // What admitRequest does: refuse from the view, else a conditional write planned from it.
            let view = views[instance] ?? [];
            let outcome: { accepted: boolean; retryAfterSeconds?: number } | undefined;
            for (let attempt = 1; attempt <= 3 && !outcome; attempt++) {
              const decision = decide(view, now, limit);
              if (!decision.allowed) {
                outcome = { accepted: false, retryAfterSeconds: decision.retryAfterSeconds };
                break;
              }
              const write = counterWrite(view, now, limit);
              if (conditionHolds(item, write)) {
                item = applyWrite(item, write, now);
                view = item;
                outcome = { accepted: true };
              } else view = item; // the refusal returns the item as it is
            }
            views[instance] = view;
            if (!outcome) continue; // stale on every try: cannot happen with one clock
            if (outcome.accepted) {
              accepted.push(now);
              continue;
            }
            // A refusal from a possibly old view is still exact: the true item says the same.
            expect(decide(item, now, limit)).toEqual({ allowed: false, retryAfterSeconds: outcome.retryAfterSeconds });
          }
          for (const end of accepted) {
            expect(accepted.filter((t) => t > end - 60_000 && t <= end).length).toBeLessThanOrEqual(limit);
          }
          // The item never grows past the buckets of one window (expired ones are removed).
          expect(item.length).toBeLessThanOrEqual(14);
        },
      ),
      { numRuns: 1000 },
    );
  });
});

describe('reading the counter item', () => {
  it('reads buckets as the DocumentClient returns them and as a refusal carries them', () => {
    expect(readCounter({ PK: 'RATE#k', SK: 'RATE', ttl: 1, c100: 3, l100: 500_400 })).toEqual([
      { index: 100, count: 3, lastMs: 500_400 },
    ]);
    expect(readCounter({ PK: { S: 'RATE#k' }, c100: { N: '3' }, l100: { N: '500400' } })).toEqual([
      { index: 100, count: 3, lastMs: 500_400 },
    ]);
    expect(readCounter(undefined)).toEqual([]);
  });

  it('takes a bucket without its time as ending at its last instant, so it can only refuse early', () => {
    expect(readCounter({ c100: 3 })).toEqual([{ index: 100, count: 3, lastMs: 504_999 }]);
  });
});
