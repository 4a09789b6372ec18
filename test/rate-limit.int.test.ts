import {
  ProvisionedThroughputExceededException,
  RequestLimitExceeded,
  ThrottlingException,
} from '@aws-sdk/client-dynamodb';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Deps } from '../functions/deps.ts';
import { bucketMs } from '../functions/domain/rate-limit.ts';
import { rateCounterKey } from '../functions/store/keys.ts';
import { readCounter } from '../functions/store/rate-counter.ts';
import { type LocalApi, startLocalApi } from '../local/api-gateway.ts';
import { localDeps } from '../local/local-deps.ts';
import { addKey, call, seedTeam, startTestStack, type TestStack, testExecutors } from './support/stack.ts';

/**
 * The rate limit through the real handlers (spec section 8, docs/api.md's limits), on the emulator,
 * with the injected clock: nothing sleeps. What DynamoDB is asked is watched by a middleware on the
 * handlers' own client, which can also make the counter's write fail as a throttled DynamoDB would.
 */

/** The first instant of a minute, well after any real clock reading the tests might meet. */
const t0 = (Math.ceil(Date.now() / 60_000) + 24 * 60) * 60_000;
let clockMs = t0;
const clock = () => new Date(clockMs);

/** Counter writes sent, by key id, and the error the next ones throw (by key id) to stand in for throttling. */
const counterWrites = new Map<string, number>();
const throttle = new Map<string, () => Error>();

const keyIdOfCounterWrite = (commandName: string | undefined, input: unknown): string | undefined => {
  if (commandName !== 'UpdateItemCommand') return undefined;
  return /RATE#([0-9a-f-]{36})/.exec(JSON.stringify(input))?.[1];
};

/** Watches (and, when asked, fails) the rate counter's UpdateItem on a client, at its first step. */
const watchCounter = (deps: Deps) =>
  deps.ddb.middlewareStack.add(
    (next, context) => async (args) => {
      const keyId = keyIdOfCounterWrite(context.commandName, args.input);
      if (keyId) {
        counterWrites.set(keyId, (counterWrites.get(keyId) ?? 0) + 1);
        const error = throttle.get(keyId);
        if (error) throw error();
      }
      return next(args);
    },
    { step: 'initialize', name: 'watchRateCounter' },
  );

const writesFor = (keyId: string) => counterWrites.get(keyId) ?? 0;

let stack: TestStack;
/** A second instance: its own DynamoDB client (so its own view of each counter), the same table and clock. */
let otherDeps: Deps;
let other: LocalApi;

beforeAll(async () => {
  stack = await startTestStack({ now: clock });
  watchCounter(stack.deps);
  otherDeps = localDeps(stack.resources, { now: clock, executors: testExecutors() });
  watchCounter(otherDeps);
  other = await startLocalApi({ deps: otherDeps, port: 0, host: '127.0.0.1' });
});
afterAll(async () => {
  await other.close();
  otherDeps.ddb.destroy();
  await stack.close();
});
beforeEach(() => {
  clockMs = t0;
});

const list = (key: string, baseUrl = stack.baseUrl) => call(baseUrl, '/workflows', { key });
const retryAfter = (response: { headers: Headers }) => Number(response.headers.get('retry-after'));
const counterItem = async (keyId: string) =>
  (await stack.deps.ddb.send(new GetCommand({ TableName: stack.deps.tableName, Key: rateCounterKey(keyId) }))).Item;

describe('rate limit through HTTP: at most N accepted in any 60 s (spec section 8)', () => {
  it('accepts 60 on the default limit, refuses the 61st with Retry-After ≤ 60, accepts again after it', async () => {
    const team = await seedTeam(stack.deps);
    for (let i = 0; i < 60; i++) expect((await list(team.key)).status).toBe(200);
    const refused = await list(team.key);
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({ error: 'Rate limit exceeded' });
    expect(refused.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
    const seconds = retryAfter(refused);
    expect(seconds).toBeLessThanOrEqual(60);
    // A second sooner is still refused; after it, a request is accepted (here the whole burst has
    // left the window, so 60 fit again, and not 61).
    clockMs = t0 + (seconds - 1) * 1000;
    expect((await list(team.key)).status).toBe(429);
    clockMs = t0 + seconds * 1000;
    const again = await Promise.all(Array.from({ length: 61 }, () => list(team.key)));
    expect(again.filter((r) => r.status === 200)).toHaveLength(60);
    expect(again.filter((r) => r.status === 429)).toHaveLength(1);
  });

  it('slides: requests leave the window 60 s after they came, not at the minute boundary', async () => {
    const team = await seedTeam(stack.deps);
    const key = await addKey(stack.deps, team.teamId, { rateLimitPerMinute: 4 });
    clockMs = t0 + 50_000;
    for (let i = 0; i < 2; i++) expect((await list(key.key)).status).toBe(200);
    clockMs = t0 + 59_000;
    for (let i = 0; i < 2; i++) expect((await list(key.key)).status).toBe(200);
    clockMs = t0 + 61_000; // a new minute, but the last 60 s hold 4
    const refused = await list(key.key);
    expect([refused.status, retryAfter(refused)]).toEqual([429, 49]);
    clockMs = t0 + 110_000; // the two from :50 have left
    for (let i = 0; i < 2; i++) expect((await list(key.key)).status).toBe(200);
    const again = await list(key.key);
    expect([again.status, retryAfter(again)]).toEqual([429, 9]);
  });

  it('does not count refused requests: a flood neither pushes the next accepted moment later nor writes', async () => {
    const team = await seedTeam(stack.deps);
    const key = await addKey(stack.deps, team.teamId, { rateLimitPerMinute: 5 });
    for (let i = 0; i < 5; i++) expect((await list(key.key)).status).toBe(200);
    const item = await counterItem(key.keyId);
    const writes = writesFor(key.keyId);
    // 10 s later a client ignores Retry-After: 40 more, spread over 40 s, each told the same moment.
    for (let i = 0; i < 40; i++) {
      clockMs = t0 + 10_000 + i * 1000;
      const refused = await list(key.key);
      expect([refused.status, clockMs + retryAfter(refused) * 1000]).toEqual([429, t0 + 60_000]);
    }
    // This instance knew the key was full: none of them reached DynamoDB.
    expect(writesFor(key.keyId)).toBe(writes);
    // Another instance has not seen the key: its refusal costs one conditional write that changes nothing.
    const refusedElsewhere = await list(key.key, other.baseUrl);
    expect([refusedElsewhere.status, clockMs + retryAfter(refusedElsewhere) * 1000]).toEqual([429, t0 + 60_000]);
    expect(writesFor(key.keyId)).toBe(writes + 1);
    expect(await counterItem(key.keyId)).toEqual(item);
    // At the moment every refusal named, a request is accepted, on either instance.
    clockMs = t0 + 60_000;
    expect((await list(key.key, other.baseUrl)).status).toBe(200);
    expect((await list(key.key)).status).toBe(200);
  });

  it('never lets a key at its limit touch another key: its own item, one write per accepted request', async () => {
    const team = await seedTeam(stack.deps);
    const busy = await addKey(stack.deps, team.teamId, { rateLimitPerMinute: 3 });
    const quiet = await addKey(stack.deps, team.teamId, { rateLimitPerMinute: 3 });
    for (let i = 0; i < 3; i++) expect((await list(busy.key)).status).toBe(200);
    const busyWrites = writesFor(busy.keyId);
    const statuses: number[] = [];
    for (let i = 0; i < 30; i++) {
      statuses.push((await list(busy.key)).status);
      if (i % 10 === 0) statuses.push((await list(quiet.key)).status);
    }
    expect(statuses.filter((s) => s === 200)).toHaveLength(3); // the quiet key's
    expect(statuses.filter((s) => s === 429)).toHaveLength(30); // the busy key's
    expect(writesFor(busy.keyId)).toBe(busyWrites);
    expect(writesFor(quiet.keyId)).toBe(3);
    // Each key has its own item: the busy key's refusals are nowhere in the quiet key's.
    const bucket = { index: t0 / bucketMs, count: 3, lastMs: t0 };
    expect(readCounter(await counterItem(quiet.keyId))).toEqual([bucket]);
    expect(readCounter(await counterItem(busy.keyId))).toEqual([bucket]);
  });

  it('honours a per-key limit and counts keys separately', async () => {
    const team = await seedTeam(stack.deps);
    const slow = await addKey(stack.deps, team.teamId, { rateLimitPerMinute: 3 });
    for (let i = 0; i < 3; i++) expect((await list(slow.key)).status).toBe(200);
    expect((await list(slow.key)).status).toBe(429);
    expect((await list(team.key)).status).toBe(200);
  });

  it('shares one count across instances, each refusing from its own view once it is full', async () => {
    const team = await seedTeam(stack.deps);
    const key = await addKey(stack.deps, team.teamId, { rateLimitPerMinute: 4 });
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => list(key.key, i % 2 ? other.baseUrl : stack.baseUrl)),
    );
    expect(results.filter((r) => r.status === 200)).toHaveLength(4);
    expect(results.filter((r) => r.status === 429)).toHaveLength(6);
  });

  it('stays exact when an instance saw an earlier bucket before another instance filled it', async () => {
    const team = await seedTeam(stack.deps);
    const key = await addKey(stack.deps, team.teamId, { rateLimitPerMinute: 6 });
    // Each instance accepts 3 in the same second: each then saw 3 of the 6.
    for (const baseUrl of [stack.baseUrl, other.baseUrl]) {
      for (let i = 0; i < 3; i++) expect((await list(key.key, baseUrl)).status).toBe(200);
    }
    // 20 s later (another bucket) each instance's write is refused by what the other added.
    clockMs = t0 + 20_000;
    for (const baseUrl of [stack.baseUrl, other.baseUrl]) {
      const refused = await list(key.key, baseUrl);
      expect([refused.status, retryAfter(refused)]).toEqual([429, 40]);
    }
  });

  it('counts a request refused for its scope (probing is throttled), never one refused for its rate', async () => {
    const team = await seedTeam(stack.deps);
    const key = await addKey(stack.deps, team.teamId, { rateLimitPerMinute: 2, scopes: ['runs:read'] });
    expect((await list(key.key)).status).toBe(403);
    expect((await list(key.key)).status).toBe(403);
    for (let i = 0; i < 5; i++) expect((await list(key.key)).status).toBe(429);
    clockMs = t0 + 60_000;
    expect((await list(key.key)).status).toBe(403);
  });
});

describe('rate limit under a hot key: a throttled counter write is a 429, never a 500', () => {
  it.each([
    [
      'ProvisionedThroughputExceeded',
      () => new ProvisionedThroughputExceededException({ message: 'hot', $metadata: {} }),
    ],
    ['ThrottlingException', () => new ThrottlingException({ message: 'slow down', $metadata: {} })],
    ['RequestLimitExceeded', () => new RequestLimitExceeded({ message: 'account limit', $metadata: {} })],
  ])(
    '%s on the counter write: 429 with Retry-After 1, the key refused here for that second without writing',
    async (_, error) => {
      const team = await seedTeam(stack.deps);
      expect((await list(team.key)).status).toBe(200);
      throttle.set(team.keyId, error);
      try {
        const writes = writesFor(team.keyId);
        const refused = await list(team.key);
        expect(refused.status).toBe(429);
        expect(refused.body).toEqual({ error: 'Rate limit exceeded' });
        expect(refused.headers.get('retry-after')).toBe('1');
        expect(writesFor(team.keyId)).toBe(writes + 1);
        // Within that second this instance sheds the key without a write; another key is untouched.
        clockMs = t0 + 999;
        for (let i = 0; i < 5; i++) {
          const shed = await list(team.key);
          expect([shed.status, shed.headers.get('retry-after')]).toEqual([429, '1']);
        }
        expect(writesFor(team.keyId)).toBe(writes + 1);
        const neighbour = await addKey(stack.deps, team.teamId);
        expect((await list(neighbour.key)).status).toBe(200);
      } finally {
        throttle.delete(team.keyId);
      }
      // After Retry-After, with the item no longer throttled, the key is accepted again.
      clockMs = t0 + 1000;
      expect((await list(team.key)).status).toBe(200);
    },
  );
});
