/**
 * An exact count of holders under a cap, as leases in one item (its `slots` map: per holder, its
 * lease, `<until>|<token>`; rules in functions/domain/team-steps.ts). Taking a slot is one
 * conditional write, atomic with every other taker's: the holder already has one (a duplicate), or
 * the item holds fewer than the cap. Leases that ran out are only counted until a refused take
 * removes them, so a holder that died frees its slot once its lease ends. A team's steps in flight
 * (team-steps.ts) and a key's open event streams (stream-slots.ts) are counted this way.
 */
import * as v from 'valibot';
import type { Deps } from '../deps.ts';
import { expiredSlots, slotDecision, type TeamSlots } from '../domain/team-steps.ts';
import { ifNotExists } from './item-update.ts';
import type { storedTeamSteps } from './items/tenancy.ts';
import { conditionalUpdate } from './write.ts';

/** Where a count lives: its item's definition (a `slots` map, as every slot item has) and key. */
export interface SlotItem {
  item: typeof storedTeamSteps;
  key: { PK: string; SK: string };
  /**
   * When DynamoDB may delete the item (epoch seconds), written by each take: a lease's end, so the
   * item of a holder seen no more goes away once every lease in it has run out. Default: kept.
   */
  ttl?: number;
}

/** A take: the slot is held, or refused with the slots whose leases still run. */
export type SlotTake = { taken: true } | { taken: false; live: TeamSlots };

/** The slots a refused write returns (its old image, as attribute values); absent: no item yet. */
const RefusedSlotsSchema = v.object({
  slots: v.optional(v.object({ M: v.record(v.string(), v.object({ S: v.string() })) })),
});
const slotsOf = (oldItem: Record<string, unknown> | undefined): TeamSlots | undefined => {
  const parsed = v.safeParse(RefusedSlotsSchema, oldItem ?? {});
  if (!parsed.success || parsed.output.slots === undefined) return undefined;
  return Object.fromEntries(Object.entries(parsed.output.slots.M).map(([key, lease]) => [key, lease.S]));
};

/** Writes the holder's lease: when it holds its slot already, or the item holds fewer than `cap`. */
const writeLease = (deps: Deps, at: SlotItem, key: string, lease: string, cap: number) =>
  conditionalUpdate(
    deps,
    at.item,
    at.key,
    { setEntries: { slots: { [key]: lease } }, ...(at.ttl === undefined ? {} : { set: { ttl: at.ttl } }) },
    {
      // The update names the entry `#slots.#slots_0` (item-update.ts); the condition reads the same.
      ConditionExpression: 'attribute_exists(#slots.#slots_0) OR size(#slots) < :cap',
      ExpressionAttributeNames: { '#slots': 'slots', '#slots_0': key },
      ExpressionAttributeValues: { ':cap': cap },
    },
    { ReturnValuesOnConditionCheckFailure: 'ALL_OLD' },
  );

/** Creates the item with no slots, if it has none (an entry cannot be set in a map that is absent). */
const createSlots = (deps: Deps, at: SlotItem) =>
  conditionalUpdate(
    deps,
    at.item,
    at.key,
    { set: { slots: ifNotExists({}) } },
    { ConditionExpression: 'attribute_not_exists(slots)' },
  );

/**
 * Removes leases that ran out, each only if it is still the lease read (its holder may have renewed
 * it meanwhile); false when any changed, and nothing was removed.
 */
const removeExpired = async (deps: Deps, at: SlotItem, slots: TeamSlots, keys: readonly string[]) => {
  const names: Record<string, string> = { '#slots': 'slots' };
  const values: Record<string, unknown> = {};
  const conditions = keys.map((key, n) => {
    names[`#slots_${n}`] = key;
    values[`:lease_${n}`] = slots[key];
    return `#slots.#slots_${n} = :lease_${n}`;
  });
  const removed = await conditionalUpdate(
    deps,
    at.item,
    at.key,
    { removeEntries: { slots: keys } },
    {
      ConditionExpression: conditions.join(' AND '),
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
    },
  );
  return removed.written;
};

/** The slots whose leases still run at `now`. */
const liveSlots = (slots: TeamSlots, now: Date): TeamSlots => {
  const expired = new Set(expiredSlots(slots, now));
  return Object.fromEntries(Object.entries(slots).filter(([key]) => !expired.has(key)));
};

/**
 * Takes the slot `key` of the item `at` under `lease`: taken (a free slot, or its own slot taken
 * over), or refused when the item holds `cap` live leases. A refusal that finds leases run out
 * removes them and tries again, so a dead holder's slot is free as soon as its lease ends.
 */
export const takeLeaseSlot = async (
  deps: Deps,
  at: SlotItem,
  key: string,
  lease: string,
  cap: number,
): Promise<SlotTake> => {
  let last: TeamSlots = {};
  for (let tries = 0; tries < 4; tries++) {
    const taken = await writeLease(deps, at, key, lease, cap);
    if (taken.written) return { taken: true };
    const slots = slotsOf(taken.oldItem);
    if (slots === undefined) {
      await createSlots(deps, at); // refused too when another taker created it first: either way it exists
      continue;
    }
    last = slots;
    if (slotDecision(slots, key, cap, deps.now()) === 'wait')
      return { taken: false, live: liveSlots(slots, deps.now()) };
    // Full only of leases that ran out (or another holder just freed one): clear them, take again.
    const expired = expiredSlots(slots, deps.now());
    if (expired.length > 0) await removeExpired(deps, at, slots, expired);
  }
  return { taken: false, live: liveSlots(last, deps.now()) };
};

/** Gives the slot `key` back, if it still holds this `lease` (a duplicate's takeover keeps it). */
export const releaseLeaseSlot = async (deps: Deps, at: SlotItem, key: string, lease: string) => {
  await conditionalUpdate(
    deps,
    at.item,
    at.key,
    { removeEntries: { slots: [key] } },
    {
      ConditionExpression: '#slots.#slots_0 = :lease',
      ExpressionAttributeNames: { '#slots': 'slots', '#slots_0': key },
      ExpressionAttributeValues: { ':lease': lease },
    },
  );
};
