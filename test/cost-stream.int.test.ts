/**
 * The run event stream's cost model (bench/cost-stream.ts) on the emulators: one whole capped
 * connection to a run that does not move makes exactly the reads the design says (the run item
 * strongly consistent at the open, then once a poll eventually consistent; the step items it still
 * needs at the open and at every refresh, eventually consistent), counted with the handler's clock
 * injected, never timed; and the read units DynamoDB reports for it (ReturnConsumedCapacity).
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, inject, it } from 'vitest';
import { measureStreamConnection, wideOutputsRun } from '../bench/cost-stream.ts';
import { provision } from '../local/provision.ts';
import { streamCapSeconds, streamFullReadMs, streamPollMs } from '../platform/run-stream.ts';

const capMs = streamCapSeconds * 1000;
/** The refreshes of an unchanged run: every full read but at the cap, which ends the connection first. */
const refreshes = Math.floor((capMs - streamPollMs) / streamFullReadMs);

describe('the run event stream’s reads per connection', () => {
  it('reads the run item once a poll and the ready steps’ items every refresh, for the whole cap', async () => {
    const resources = await provision({ prefix: `s${randomUUID().slice(0, 8)}`, ...inject('emulators') });
    const { meter, bytes, polls } = await measureStreamConnection(resources, { steps: 5 });
    expect(polls).toBe(capMs / streamPollMs);
    const calls = meter.dynamoDb.calls.byCommand;
    // One a poll but the last (it meets the cap), the run item at the open, the key's lookup, and
    // the canvas (read once in a process, then cached); the writes are the key's rate counter, and
    // the stream's slots of its key and of its run, each taken before it opens and given back at
    // its end: the first stream of each, so each take is refused (no item yet), creates the item
    // and takes again (functions/store/lease-slots.ts).
    expect(calls.GetItemCommand).toBe(polls - 1 + 1 + 1 + 1);
    expect(calls.UpdateItemCommand).toBe(1 + 2 * (3 + 1));
    // The partition is never queried while the run is in progress; the ready step (the root) is
    // looked at at the open and every refresh.
    expect(calls.QueryCommand ?? 0).toBe(0);
    expect(calls.BatchGetItemCommand).toBe(1 + refreshes);
    // The status event, then nothing but keep-alives until `retry:`.
    expect(bytes).toBeGreaterThan(0);
    expect(bytes).toBeLessThan(2_000);
    expect(meter.dynamoDb.readUnits).toBeGreaterThan(0);
  });

  it('never reads a step’s outputs before its output event is due: a 20-step run of 250 KB outputs costs a read unit a look at most', async () => {
    const resources = await provision({ prefix: `s${randomUUID().slice(0, 8)}`, ...inject('emulators') });
    const measured = await measureStreamConnection(resources, wideOutputsRun);
    // Every read of the connection (each poll, each refresh, the open) is at most one read unit: a
    // 250 KB item read eventually consistent would be 31.
    expect(measured.largestReadUnits).toBeGreaterThan(0);
    expect(measured.largestReadUnits).toBeLessThanOrEqual(1);
    // A poll of the unchanged run is half a unit (one eventually consistent read of a small item),
    // a refresh half a unit (the claimed step's item); the open, the key and the canvas a few more.
    const polls = measured.polls - 1;
    expect(measured.meter.dynamoDb.readUnits).toBeLessThanOrEqual(polls * 0.5 + (1 + refreshes) * 0.5 + 4);
    // The stream's former reads of the same run: its whole partition, outputs included, strongly
    // consistent at the open and every full read: 19 × 250 KB is about 1,160 units a read.
    expect(measured.formerReadUnits).toBeGreaterThan((1 + refreshes) * 1_100);
  });
});
