/**
 * Open event streams, counted exactly as leases (lease-slots.ts) in two `STREAMS#` items: one per
 * key (`STREAMS#<keyId>`) and one per run (`STREAMS#RUN#<jobId>`). A stream takes a slot when the
 * item holds fewer than its cap; each take sets the item's expiry to its lease's end, so a key or a
 * run that streams no more leaves nothing behind.
 */
import type { Deps } from '../deps.ts';
import { storedStreamSlots } from './items/tenancy.ts';
import { runStreamSlotsKey, streamSlotsKey } from './keys.ts';
import { releaseLeaseSlot, type SlotTake, takeLeaseSlot } from './lease-slots.ts';

/** Whose streams an item counts: a key's, or a run's. */
export type StreamHolder = { keyId: string } | { jobId: string };

const keyOf = (holder: StreamHolder) =>
  'keyId' in holder ? streamSlotsKey(holder.keyId) : runStreamSlotsKey(holder.jobId);

/** Takes the slot `streamId` of `holder` under `lease`, which ends at `until`; refused at `cap`. */
export const takeStreamSlot = (
  deps: Deps,
  holder: StreamHolder,
  streamId: string,
  lease: { text: string; until: Date },
  cap: number,
): Promise<SlotTake> =>
  takeLeaseSlot(
    deps,
    { item: storedStreamSlots, key: keyOf(holder), ttl: Math.ceil(lease.until.getTime() / 1000) },
    streamId,
    lease.text,
    cap,
  );

/** Gives the stream's slot of `holder` back, if it still holds its `lease`. */
export const releaseStreamSlot = (deps: Deps, holder: StreamHolder, streamId: string, lease: string) =>
  releaseLeaseSlot(deps, { item: storedStreamSlots, key: keyOf(holder) }, streamId, lease);
