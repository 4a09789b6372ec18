/**
 * A team's steps in flight (its `TEAMSTEPS#` item: per step, its worker's lease), under the team's
 * cap (functions/domain/team-steps.ts). Taking a slot is one conditional write, atomic with every
 * other worker's: the step already holds one (a duplicate delivery), or the team holds fewer than
 * its cap. Leases that ran out are only counted until a refused take removes them.
 */
import * as v from 'valibot';
import type { Deps } from '../deps.ts';
import { expiredSlots, slotDecision, type TeamSlots } from '../domain/team-steps.ts';
import { ifNotExists } from './item-update.ts';
import { storedTeamSteps } from './items.ts';
import { teamStepsKey } from './keys.ts';
import { conditionalUpdate } from './write.ts';

/** The slots a refused write returns (its old image, as attribute values); absent: no item yet. */
const RefusedSlotsSchema = v.object({
  slots: v.optional(v.object({ M: v.record(v.string(), v.object({ S: v.string() })) })),
});
const slotsOf = (oldItem: Record<string, unknown> | undefined): TeamSlots | undefined => {
  const parsed = v.safeParse(RefusedSlotsSchema, oldItem ?? {});
  if (!parsed.success || parsed.output.slots === undefined) return undefined;
  return Object.fromEntries(Object.entries(parsed.output.slots.M).map(([key, lease]) => [key, lease.S]));
};

/** Writes the step's lease: when the step holds its slot already, or the team holds fewer than `cap`. */
const writeLease = (deps: Deps, teamId: string, key: string, lease: string, cap: number) =>
  conditionalUpdate(
    deps,
    storedTeamSteps,
    teamStepsKey(teamId),
    { setEntries: { slots: { [key]: lease } } },
    {
      // The update names the entry `#slots.#slots_0` (item-update.ts); the condition reads the same.
      ConditionExpression: 'attribute_exists(#slots.#slots_0) OR size(#slots) < :cap',
      ExpressionAttributeNames: { '#slots': 'slots', '#slots_0': key },
      ExpressionAttributeValues: { ':cap': cap },
    },
    { ReturnValuesOnConditionCheckFailure: 'ALL_OLD' },
  );

/** Creates the team's item with no slots, if it has none (an entry cannot be set in a map that is absent). */
const createSlots = (deps: Deps, teamId: string) =>
  conditionalUpdate(
    deps,
    storedTeamSteps,
    teamStepsKey(teamId),
    { set: { slots: ifNotExists({}) } },
    { ConditionExpression: 'attribute_not_exists(slots)' },
  );

/**
 * Removes leases that ran out, each only if it is still the lease read (a worker may have renewed
 * its step's meanwhile); false when any changed, and nothing was removed.
 */
const removeExpired = async (deps: Deps, teamId: string, slots: TeamSlots, keys: readonly string[]) => {
  const names: Record<string, string> = { '#slots': 'slots' };
  const values: Record<string, unknown> = {};
  const conditions = keys.map((key, n) => {
    names[`#slots_${n}`] = key;
    values[`:lease_${n}`] = slots[key];
    return `#slots.#slots_${n} = :lease_${n}`;
  });
  const removed = await conditionalUpdate(
    deps,
    storedTeamSteps,
    teamStepsKey(teamId),
    { removeEntries: { slots: keys } },
    {
      ConditionExpression: conditions.join(' AND '),
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
    },
  );
  return removed.written;
};

/**
 * Takes the slot `key` of team `teamId` for one delivery, under `lease`: true when the step may run
 * (a free slot, or its own slot taken over by this delivery), false when the team is at `cap`. A
 * refusal that finds leases run out removes them and tries again, so a crashed worker's slot is free
 * as soon as its lease ends.
 */
export const takeTeamSlot = async (
  deps: Deps,
  teamId: string,
  key: string,
  lease: string,
  cap: number,
): Promise<boolean> => {
  for (let tries = 0; tries < 4; tries++) {
    const taken = await writeLease(deps, teamId, key, lease, cap);
    if (taken.written) return true;
    const slots = slotsOf(taken.oldItem);
    if (slots === undefined) {
      await createSlots(deps, teamId); // refused too when another worker created it first: either way it exists
      continue;
    }
    if (slotDecision(slots, key, cap, deps.now()) === 'wait') return false;
    // Full only of leases that ran out (or another worker just freed one): clear them, take again.
    const expired = expiredSlots(slots, deps.now());
    if (expired.length > 0) await removeExpired(deps, teamId, slots, expired);
  }
  return false;
};

/** Gives the slot `key` back, if it still holds this delivery's `lease` (a duplicate's takeover keeps it). */
export const releaseTeamSlot = async (deps: Deps, teamId: string, key: string, lease: string) => {
  await conditionalUpdate(
    deps,
    storedTeamSteps,
    teamStepsKey(teamId),
    { removeEntries: { slots: [key] } },
    {
      ConditionExpression: '#slots.#slots_0 = :lease',
      ExpressionAttributeNames: { '#slots': 'slots', '#slots_0': key },
      ExpressionAttributeValues: { ':lease': lease },
    },
  );
};
