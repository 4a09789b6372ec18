import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decide, slidingCount, windowIndex } from '../functions/domain/rate-limit.ts';
import { startLocalApi } from '../local/api-gateway.ts';
import { addKey, call, seedTeam, startTestStack, type TestStack } from './support/stack.ts';

describe('sliding-window rate limit (pure)', () => {
  it('allows up to the limit and refuses beyond it within one window', () => {
    const start = 60_000 * 1000; // the first instant of a window
    expect(decide({ previous: 0, current: 60 }, start, 60)).toEqual({ allowed: true });
    expect(decide({ previous: 0, current: 61 }, start, 60)).toMatchObject({ allowed: false });
  });

  it('weights the previous window by how much of it is still inside the last minute', () => {
    const start = 60_000 * 1000;
    expect(slidingCount({ previous: 60, current: 0 }, start + 15_000)).toBe(45);
    expect(slidingCount({ previous: 60, current: 10 }, start + 30_000)).toBe(40);
  });

  it('gives a whole-second Retry-After after which one more request is allowed', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 200 }),
        fc.integer({ min: 1, max: 200 }),
        fc.integer({ min: 0, max: 59_999 }),
        fc.integer({ min: 1, max: 120 }),
        (previous, current, offset, limit) => {
          const now = 60_000 * 5000 + offset;
          const decision = decide({ previous, current }, now, limit);
          if (decision.allowed) return;
          expect(Number.isInteger(decision.retryAfterSeconds)).toBe(true);
          expect(decision.retryAfterSeconds).toBeGreaterThanOrEqual(1);
          expect(decision.retryAfterSeconds).toBeLessThanOrEqual(120);
          // Honouring it: the next request, counted, is allowed.
          const later = now + decision.retryAfterSeconds * 1000;
          const shift = windowIndex(later) - windowIndex(now);
          const counts =
            shift === 0
              ? { previous, current: current + 1 }
              : shift === 1
                ? { previous: current, current: 1 }
                : { previous: 0, current: 1 };
          expect(decide(counts, later, limit)).toEqual({ allowed: true });
        },
      ),
      { numRuns: 2000 },
    );
  });
});

describe('rate limit through HTTP (spec section 8)', () => {
  let stack: TestStack;
  // A clock pinned to the start of a window, so the previous window is empty and counts are exact.
  const pinned = new Date(Math.ceil(Date.now() / 60_000) * 60_000 + 3_600_000);
  beforeAll(async () => {
    stack = await startTestStack({ now: () => pinned });
  });
  afterAll(() => stack.close());

  it('answers 429 with an integer Retry-After past the default 60 requests per minute', async () => {
    const team = await seedTeam(stack.deps);
    const statuses: number[] = [];
    for (let i = 0; i < 61; i++) statuses.push((await call(stack.baseUrl, '/workflows', { key: team.key })).status);
    expect(statuses.slice(0, 60).every((s) => s === 200)).toBe(true);
    const refused = await call(stack.baseUrl, '/workflows', { key: team.key });
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({ error: 'Rate limit exceeded' });
    expect(refused.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
  });

  it('honours a per-key limit and counts keys separately', async () => {
    const team = await seedTeam(stack.deps);
    const slow = await addKey(stack.deps, team.teamId, { rateLimitPerMinute: 3 });
    for (let i = 0; i < 3; i++) expect((await call(stack.baseUrl, '/workflows', { key: slow.key })).status).toBe(200);
    expect((await call(stack.baseUrl, '/workflows', { key: slow.key })).status).toBe(429);
    expect((await call(stack.baseUrl, '/workflows', { key: team.key })).status).toBe(200);
  });

  it('shares one count across every instance of the function', async () => {
    const team = await seedTeam(stack.deps);
    const key = await addKey(stack.deps, team.teamId, { rateLimitPerMinute: 4 });
    const second = await startLocalApi({ deps: stack.deps, port: 0, host: '127.0.0.1' });
    try {
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          call(i % 2 ? second.baseUrl : stack.baseUrl, '/workflows', { key: key.key }),
        ),
      );
      expect(results.filter((r) => r.status === 200)).toHaveLength(4);
      expect(results.filter((r) => r.status === 429)).toHaveLength(6);
    } finally {
      await second.close();
    }
  });

  it('counts a refused request too, and a request with a bad scope', async () => {
    const team = await seedTeam(stack.deps);
    const key = await addKey(stack.deps, team.teamId, { rateLimitPerMinute: 2, scopes: ['runs:read'] });
    expect((await call(stack.baseUrl, '/workflows', { key: key.key })).status).toBe(403);
    expect((await call(stack.baseUrl, '/workflows', { key: key.key })).status).toBe(403);
    expect((await call(stack.baseUrl, '/workflows', { key: key.key })).status).toBe(429);
  });
});
