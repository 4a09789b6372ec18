/**
 * The run event stream's cost model (bench/cost-stream.ts) on the emulators: one whole capped
 * connection to a run that does not move makes exactly the reads the design says (the run item
 * once a poll, eventually consistent; the partition at the start and at every full read), counted
 * with the handler's clock injected, never timed.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, inject, it } from 'vitest';
import { measureStreamConnection } from '../bench/cost-stream.ts';
import { provision } from '../local/provision.ts';
import { streamCapSeconds, streamFullReadMs, streamPollMs } from '../platform/run-stream.ts';

describe('the run event stream’s reads per connection', () => {
  it('reads the run item once a poll and the partition every full read, for the whole cap', async () => {
    const resources = await provision({ prefix: `s${randomUUID().slice(0, 8)}`, ...inject('emulators') });
    const { meter, bytes, polls } = await measureStreamConnection(resources, 5);
    const capMs = streamCapSeconds * 1000;
    expect(polls).toBe(capMs / streamPollMs);
    const calls = meter.dynamoDb.calls.byCommand;
    // One a poll but the last (it meets the cap), the key's lookup, and the canvas (read once in a
    // process, then cached); the writes are the key's rate counter, and the stream's slots of its
    // key and of its run, each taken before it opens and given back at its end: the first stream of
    // each, so each take is refused (no item yet), creates the item and takes again
    // (functions/store/lease-slots.ts).
    expect(calls.GetItemCommand).toBe(polls - 1 + 1 + 1);
    expect(calls.UpdateItemCommand).toBe(1 + 2 * (3 + 1));
    expect(calls.QueryCommand).toBe(1 + Math.floor((capMs - streamPollMs) / streamFullReadMs));
    // The status event, then nothing but keep-alives until `retry:`.
    expect(bytes).toBeGreaterThan(0);
    expect(bytes).toBeLessThan(2_000);
    expect(meter.dynamoDb.readUnits).toBeGreaterThan(0);
  });
});
