import * as v from 'valibot';
import { MultiplierSchema } from '../../schemas/run-words.ts';

/**
 * The price multiplier deferred runs wait for. Operators set a live value, or a schedule of 24
 * values (one per UTC hour). A live value, when set, wins over the schedule; with neither, 1.0.
 */
export interface PriceSettings {
  multiplier: number | null;
  /** 24 multipliers, index = UTC hour; null when no schedule is set. */
  hourly: number[] | null;
}

export const defaultMultiplier = 1;

export const currentMultiplier = (settings: PriceSettings, now: Date): number =>
  settings.multiplier ?? settings.hourly?.[now.getUTCHours()] ?? defaultMultiplier;

/** Validates an operator's multiplier by the callers' rule (`MultiplierSchema`): 0.0001 to 10, up to 4 decimals. */
export const isValidMultiplier = (value: number): boolean => v.is(MultiplierSchema, value);

/**
 * Parses a schedule file: `{ "hours": { "0-6": 0.5, "7-22": 1.0, "23": 0.7 } }` where keys are
 * UTC hours or inclusive ranges; every hour 0..23 must be covered exactly once.
 */
export const parseSchedule = (text: string): number[] => {
  const parsed = JSON.parse(text) as { hours?: Record<string, unknown> };
  if (!parsed || typeof parsed.hours !== 'object' || parsed.hours === null) {
    throw new Error('Schedule must be {"hours": {"<hour or from-to>": multiplier, ...}}');
  }
  const hourly: (number | undefined)[] = Array.from({ length: 24 }, () => undefined);
  for (const [range, value] of Object.entries(parsed.hours)) {
    const match = /^(\d{1,2})(?:-(\d{1,2}))?$/.exec(range);
    if (!match) throw new Error(`Not an hour or hour range: ${range}`);
    const from = Number(match[1]);
    const to = Number(match[2] ?? match[1]);
    if (from > to || to > 23) throw new Error(`Hours must be 0..23 and ascending: ${range}`);
    if (typeof value !== 'number' || !isValidMultiplier(value)) throw new Error(`Not a valid multiplier: ${value}`);
    for (let hour = from; hour <= to; hour++) {
      if (hourly[hour] !== undefined) throw new Error(`Hour ${hour} is set twice`);
      hourly[hour] = value;
    }
  }
  const missing = hourly.flatMap((v, hour) => (v === undefined ? [hour] : []));
  if (missing.length > 0) throw new Error(`Hours without a multiplier: ${missing.join(', ')}`);
  return hourly as number[];
};

/** The multiplier of one UTC hour to come, as the settings stand now. */
export interface HourMultiplier {
  startsAt: Date;
  multiplier: number;
}

/** How many UTC hours to come an estimate shows: a deferred run's whole wait. */
export const outlookHours = 24;

/**
 * The multiplier each of the next `outlookHours` UTC hours would have as the settings stand now
 * (a live value holds until an operator clears it, so it is every hour's). A forecast, not a promise:
 * an operator may change either.
 */
export const nextHourMultipliers = (settings: PriceSettings, now: Date): HourMultiplier[] => {
  const hourStart = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate(), now.getUTCHours());
  return Array.from({ length: outlookHours }, (_, i) => {
    const startsAt = new Date(hourStart + (i + 1) * 3_600_000);
    return { startsAt, multiplier: currentMultiplier(settings, startsAt) };
  });
};

/**
 * When a deferred run waiting for `maxMultiplier` would start, as the settings stand now: at once
 * when the multiplier in force is at most it, else at the first hour to come, before the run
 * expires (`expiresAt`), whose multiplier is; undefined when none is (it would expire unstarted).
 * The dispatcher starts a waiting run at its first tick whose multiplier is at most its own.
 */
export const deferredStartOf = (
  inForce: HourMultiplier,
  hours: readonly HourMultiplier[],
  maxMultiplier: number,
  expiresAt: Date,
): HourMultiplier | undefined =>
  [inForce, ...hours].find((hour) => hour.startsAt < expiresAt && hour.multiplier <= maxMultiplier);
