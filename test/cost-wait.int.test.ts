/**
 * What a waiting request reads (bench/cost-wait.ts) on the emulators: GET /runs/{jobId} with
 * `Prefer: wait=25` on a run that does not end makes a plain GET's reads, one look at the run item
 * per step of the wait's schedule, and GET's read once more at the end: counted with the handler's
 * clock injected, never timed.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, inject, it } from 'vitest';
import { measureWaitingRequest } from '../bench/cost-wait.ts';
import { waitLookTimesMs } from '../functions/domain/prefer-wait.ts';
import { provision } from '../local/provision.ts';
import { maxWaitSeconds } from '../platform/run-wait.ts';

describe('the reads of a request that waits', () => {
  it(`looks at the run item on the schedule for the whole ${maxWaitSeconds} s, then reads the run once more`, async () => {
    const resources = await provision({ prefix: `w${randomUUID().slice(0, 8)}`, ...inject('emulators') });
    const { plain, waited, pauses } = await measureWaitingRequest(resources, maxWaitSeconds);
    const looks = waitLookTimesMs(maxWaitSeconds * 1000).length;
    expect(pauses).toHaveLength(looks - 1);
    expect(pauses.reduce((sum, ms) => sum + ms, 0)).toBe(maxWaitSeconds * 1000);
    // A look is one GetItem; the run's partition is read twice (at once, and at the end) instead of once.
    expect(waited.calls.GetItemCommand).toBe((plain.calls.GetItemCommand ?? 0) + looks);
    expect(waited.calls.QueryCommand).toBe(2 * (plain.calls.QueryCommand ?? 0));
    // The key's rate counter is written once, as for a plain request.
    expect(waited.calls.UpdateItemCommand).toBe(plain.calls.UpdateItemCommand);
    // Each look is half a read unit (the run item is small, read eventually consistent); the last
    // read is at most what a plain GET reads.
    const added = waited.readUnits - plain.readUnits;
    expect(added).toBeGreaterThanOrEqual(looks * 0.5);
    expect(added).toBeLessThanOrEqual(looks * 0.5 + plain.readUnits);
  });
});
