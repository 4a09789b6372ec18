/** The `wait` preference of a `Prefer` header (RFC 7240) and the schedule of a wait's looks: pure rules. */
import { describe, expect, it } from 'vitest';
import {
  mayReadStartedRun,
  preferredWaitSeconds,
  waitApplied,
  waitLookTimesMs,
  waitPollDelayMs,
} from '../functions/domain/prefer-wait.ts';
import { requestedWait } from '../functions/http/prefer-wait.ts';
import { maxWaitSeconds, waitMarginMs, waitPollCapMs } from '../platform/run-wait.ts';

describe('preferredWaitSeconds', () => {
  it('reads wait=N among other preferences, its name in any case, a quoted value, parameters ignored', () => {
    expect(preferredWaitSeconds('wait=10')).toBe(10);
    expect(preferredWaitSeconds('respond-async, wait=5')).toBe(5);
    expect(preferredWaitSeconds('WAIT = 7 ; foo=bar')).toBe(7);
    expect(preferredWaitSeconds('wait="12"')).toBe(12);
    expect(preferredWaitSeconds('return=minimal,wait=1')).toBe(1);
  });

  it('takes only the first wait (RFC 7240 section 2)', () => {
    expect(preferredWaitSeconds('wait=3, wait=20')).toBe(3);
    expect(preferredWaitSeconds('wait=abc, wait=20')).toBeUndefined();
  });

  it(`serves a wait over ${maxWaitSeconds} s as ${maxWaitSeconds} s`, () => {
    expect(preferredWaitSeconds('wait=26')).toBe(maxWaitSeconds);
    expect(preferredWaitSeconds('wait=60')).toBe(maxWaitSeconds);
    expect(preferredWaitSeconds(`wait=${'9'.repeat(400)}`)).toBe(maxWaitSeconds);
  });

  it('ignores a missing header, a malformed or zero wait, and every other preference', () => {
    for (const header of [
      undefined,
      '',
      'wait',
      'wait=',
      'wait=-1',
      'wait=1.5',
      'wait=abc',
      'wait=0',
      'wait=1e3',
      'respond-async',
      'waiting=5',
    ]) {
      expect(preferredWaitSeconds(header), String(header)).toBeUndefined();
    }
  });

  it('says the wait served as Preference-Applied spells it', () => {
    expect(waitApplied(25)).toBe('wait=25');
  });
});

describe('the looks of a wait', () => {
  it('pauses 250 ms, then twice as long each time, up to 1 s', () => {
    expect([1, 2, 3, 4, 5, 20].map(waitPollDelayMs)).toEqual([250, 500, 1000, 1000, 1000, 1000]);
    expect(waitPollDelayMs(100)).toBe(waitPollCapMs);
  });

  it(`looks at once, on the schedule and at the deadline: 28 looks in a ${maxWaitSeconds} s wait`, () => {
    expect(waitLookTimesMs(3_000)).toEqual([0, 250, 750, 1750, 2750, 3000]);
    const looks = waitLookTimesMs(maxWaitSeconds * 1000);
    expect(looks).toHaveLength(28);
    expect(looks.at(-1)).toBe(maxWaitSeconds * 1000);
  });
});

describe('requestedWait', () => {
  const now = () => new Date(1_000_000);
  const event = (prefer?: string) => ({ headers: prefer === undefined ? {} : { prefer } });
  const remaining = (ms: number) => ({ getRemainingTimeInMillis: () => ms });

  it('ends N seconds from now, never closer than the margin to the function’s timeout', () => {
    expect(requestedWait({ now }, event('wait=10'), remaining(28_000))).toEqual({ seconds: 10, until: 1_010_000 });
    expect(requestedWait({ now }, event('wait=25'), remaining(20_000))).toEqual({
      seconds: 25,
      until: 1_000_000 + 20_000 - waitMarginMs,
    });
    expect(requestedWait({ now }, event('wait=25'), remaining(1_000))).toEqual({ seconds: 25, until: 1_000_000 });
    expect(requestedWait({ now }, event(), remaining(28_000))).toBeUndefined();
  });
});

describe('mayReadStartedRun', () => {
  it('is a key with every scope, or with runs:read', () => {
    expect(mayReadStartedRun([])).toBe(true);
    expect(mayReadStartedRun(['runs:create', 'runs:read'])).toBe(true);
    expect(mayReadStartedRun(['runs:create'])).toBe(false);
  });
});
