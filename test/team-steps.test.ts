import { describe, expect, it } from 'vitest';
import {
  capAfter,
  deferSeconds,
  expiredSlots,
  leaseUntil,
  maxDeferrals,
  maxDeferSeconds,
  parseTeamStepsInFlight,
  slotDecision,
  slotKeyOf,
  slotLease,
  slotLeaseSeconds,
} from '../functions/domain/team-steps.ts';

const now = new Date('2026-11-27T12:00:00.000Z');
const later = (seconds: number) => slotLease(new Date(now.getTime() + seconds * 1000), `t${seconds}`);

describe('a team’s cap on steps in flight (functions/domain/team-steps.ts)', () => {
  it('a step takes a slot while the team holds fewer live ones than its cap, and waits at the cap', () => {
    const two = { [slotKeyOf('j', 'a')]: later(60), [slotKeyOf('j', 'b')]: later(60) };
    expect(slotDecision({}, slotKeyOf('j', 'c'), 1, now)).toBe('take');
    expect(slotDecision(two, slotKeyOf('j', 'c'), 3, now)).toBe('take');
    expect(slotDecision(two, slotKeyOf('j', 'c'), 2, now)).toBe('wait');
  });

  it('a duplicate or redelivered message of a running step takes its own slot again, never a second one', () => {
    const full = { [slotKeyOf('j', 'a')]: later(60), [slotKeyOf('j', 'b')]: later(60) };
    expect(slotDecision(full, slotKeyOf('j', 'a'), 2, now)).toBe('take');
    // One slot per step, whatever the delivery: the same step of another run is another slot.
    expect(slotKeyOf('j', 'a')).not.toBe(slotKeyOf('k', 'a'));
  });

  it('a lease that ran out (its worker died) frees its slot', () => {
    const slots = {
      [slotKeyOf('j', 'a')]: later(-1),
      [slotKeyOf('j', 'b')]: later(0),
      [slotKeyOf('j', 'c')]: later(1),
    };
    expect(expiredSlots(slots, now)).toEqual([slotKeyOf('j', 'a'), slotKeyOf('j', 'b')]);
    expect(slotDecision(slots, slotKeyOf('j', 'd'), 2, now)).toBe('take');
    expect(slotDecision(slots, slotKeyOf('j', 'd'), 1, now)).toBe('wait');
    // A lease that cannot be read holds nothing.
    expect(expiredSlots({ x: 'garbage' }, now)).toEqual(['x']);
  });

  it('a lease outlives the step executor’s longest invocation, and names its delivery', () => {
    expect(slotLeaseSeconds(60)).toBeGreaterThan(60);
    const lease = slotLease(now, 'token-1');
    expect(leaseUntil(lease)).toBe(now.getTime());
    expect(lease).not.toBe(slotLease(now, 'token-2'));
  });

  it('a held-back step waits twice as long each time, with jitter, up to a bound', () => {
    expect(deferSeconds(0, 0)).toBe(2);
    expect(deferSeconds(1, 0)).toBe(4);
    expect(deferSeconds(3, 0)).toBe(16);
    expect(deferSeconds(20, 0)).toBe(maxDeferSeconds);
    expect(deferSeconds(20, 0.999)).toBe(15);
    expect(deferSeconds(0, 0.999)).toBe(1);
  });

  it('a step held back `maxDeferrals` times runs past the cap, so its messages stay bounded', () => {
    expect(capAfter(40, 0)).toBe(40);
    expect(capAfter(40, maxDeferrals - 1)).toBe(40);
    const full = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [slotKeyOf('j', `n${i}`), later(60)]));
    expect(slotDecision(full, slotKeyOf('j', 'late'), capAfter(40, maxDeferrals), now)).toBe('take');
  });

  it('the stage’s setting is a whole number from 1, or unset for no cap', () => {
    expect(parseTeamStepsInFlight(undefined)).toBeUndefined();
    expect(parseTeamStepsInFlight('')).toBeUndefined();
    expect(parseTeamStepsInFlight('40')).toBe(40);
    for (const bad of ['0', '-1', '2.5', 'ten']) expect(() => parseTeamStepsInFlight(bad)).toThrow(/whole number/);
  });
});
