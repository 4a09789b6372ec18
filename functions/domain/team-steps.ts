/**
 * The per-team cap on steps in flight (docs/operations.md, "Fair tenants"): a team holds one slot
 * per step a worker is running for it, and a step that would take the team past its cap waits
 * instead, so one team's fan-out leaves the step executor's other workers to other teams. A slot is
 * a lease: a worker that dies holding one frees it when the lease runs out. Pure: the step executor
 * (functions/app/team-slots.ts) applies these rules over the store's slot item.
 */

/** A team's slots: per step (`slotKeyOf`), the lease its worker holds (`slotLease`). */
export type TeamSlots = Readonly<Record<string, string>>;

/**
 * The slot of a step: one per step, whatever delivery runs it, so a duplicated or redelivered
 * message of a step that is running takes the slot it already has instead of a second one.
 */
export const slotKeyOf = (jobId: string, nodeId: string) => `${jobId}/${nodeId}`;

/**
 * A lease: until when it holds (ISO 8601, so it sorts and compares as text), and the token of the
 * delivery that took it, so that only that delivery gives it back: when a duplicate took the step's
 * slot over, the first to finish does not free the slot the other still runs under.
 */
export const slotLease = (until: Date, token: string) => `${until.toISOString()}|${token}`;

/** When a lease runs out; a lease that cannot be read is run out (it frees its slot). */
export const leaseUntil = (lease: string): number => {
  const until = Date.parse(lease.split('|')[0] ?? '');
  return Number.isNaN(until) ? 0 : until;
};

/** The slots whose lease ran out by `now`: their workers died (or timed out) without giving them back. */
export const expiredSlots = (slots: TeamSlots, now: Date): string[] =>
  Object.entries(slots)
    .filter(([, lease]) => leaseUntil(lease) <= now.getTime())
    .map(([key]) => key);

/** What a team's slots allow a step: run (a free slot, or its own already), or wait (the team is at its cap). */
export const slotDecision = (slots: TeamSlots, key: string, cap: number, now: Date): 'take' | 'wait' => {
  if (Object.hasOwn(slots, key)) return 'take';
  const live = Object.keys(slots).length - expiredSlots(slots, now).length;
  return live < cap ? 'take' : 'wait';
};

/**
 * Seconds a lease lasts: the step executor's longest invocation (its timeout) and a margin, so a
 * live worker never loses its slot and a dead one's frees itself soon after its invocation ended.
 */
export const slotLeaseSeconds = (consumerTimeoutSeconds: number) => consumerTimeoutSeconds + 30;

/** The first wait of a step its team's cap held back; each next one twice as long, up to `maxDeferSeconds`. */
export const firstDeferSeconds = 2;
export const maxDeferSeconds = 30;

/**
 * Seconds before a step held back `deferrals` times before (0 the first time) is offered again,
 * with up to half of it as jitter (`random` in [0, 1)) so a fan-out's steps do not all come back
 * at once: the longer the team's backlog, the fewer sends and receives its waiting steps cost.
 */
export const deferSeconds = (deferrals: number, random: number): number => {
  const base = Math.min(firstDeferSeconds * 2 ** Math.max(0, deferrals), maxDeferSeconds);
  return Math.max(1, Math.round(base * (1 - 0.5 * random)));
};

/**
 * A step is held back at most this many times (about 8 minutes of waits): then it runs past its
 * team's cap, so no step waits for ever behind its own team's others and a step's messages stay
 * bounded (docs/operations.md, "Long runs and Lambda's loop guard").
 */
export const maxDeferrals = 20;

/** The cap a step is held to after `deferrals`: the team's, or none once it waited `maxDeferrals` times. */
export const capAfter = (cap: number, deferrals: number): number =>
  deferrals >= maxDeferrals ? Number.MAX_SAFE_INTEGER : cap;

/**
 * The cap from the stage's setting (`TEAM_STEPS_IN_FLIGHT`): a whole number of steps from 1;
 * unset or empty, no cap. Anything else is a deployment mistake and fails the function's start.
 */
export const parseTeamStepsInFlight = (value: string | undefined): number | undefined => {
  if (value === undefined || value === '') return undefined;
  const cap = Number(value);
  if (!Number.isInteger(cap) || cap < 1) {
    throw new Error(`TEAM_STEPS_IN_FLIGHT must be a whole number of steps from 1, got ${JSON.stringify(value)}`);
  }
  return cap;
};
