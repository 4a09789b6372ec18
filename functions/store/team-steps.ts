/**
 * A team's steps in flight (its `TEAMSTEPS#` item: per step, its worker's lease), under the team's
 * cap (functions/domain/team-steps.ts), counted as leases (lease-slots.ts): a step takes its slot
 * when it holds it already (a duplicate delivery) or the team holds fewer than its cap.
 */
import type { Deps } from '../deps.ts';
import { storedTeamSteps } from './items/tenancy.ts';
import { teamStepsKey } from './keys.ts';
import { releaseLeaseSlot, type SlotItem, takeLeaseSlot } from './lease-slots.ts';

const itemOf = (teamId: string): SlotItem => ({ item: storedTeamSteps, key: teamStepsKey(teamId) });

/**
 * Takes the slot `key` of team `teamId` for one delivery, under `lease`: true when the step may run
 * (a free slot, or its own slot taken over by this delivery), false when the team is at `cap`.
 */
export const takeTeamSlot = async (
  deps: Deps,
  teamId: string,
  key: string,
  lease: string,
  cap: number,
): Promise<boolean> => (await takeLeaseSlot(deps, itemOf(teamId), key, lease, cap)).taken;

/** Gives the slot `key` back, if it still holds this delivery's `lease` (a duplicate's takeover keeps it). */
export const releaseTeamSlot = (deps: Deps, teamId: string, key: string, lease: string) =>
  releaseLeaseSlot(deps, itemOf(teamId), key, lease);
