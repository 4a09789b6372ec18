/**
 * A key's open event streams (its `STREAMS#` item), counted exactly as leases (lease-slots.ts):
 * a stream takes a slot when the key holds fewer than the cap; each take sets the item's expiry
 * to its lease's end, so a key that streams no more leaves nothing behind.
 */
import type { Deps } from '../deps.ts';
import { storedStreamSlots } from './items.ts';
import { streamSlotsKey } from './keys.ts';
import { releaseLeaseSlot, type SlotTake, takeLeaseSlot } from './lease-slots.ts';

/** Takes the slot `streamId` of key `keyId` under `lease`, which ends at `until`; refused at `cap`. */
export const takeStreamSlot = (
  deps: Deps,
  keyId: string,
  streamId: string,
  lease: { text: string; until: Date },
  cap: number,
): Promise<SlotTake> =>
  takeLeaseSlot(
    deps,
    { item: storedStreamSlots, key: streamSlotsKey(keyId), ttl: Math.ceil(lease.until.getTime() / 1000) },
    streamId,
    lease.text,
    cap,
  );

/** Gives the stream's slot back, if it still holds its `lease`. */
export const releaseStreamSlot = (deps: Deps, keyId: string, streamId: string, lease: string) =>
  releaseLeaseSlot(deps, { item: storedStreamSlots, key: streamSlotsKey(keyId) }, streamId, lease);
