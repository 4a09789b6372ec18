/**
 * A key's monthly credit cap (spec 5 and 8), optional, in hundredths of a credit:
 *
 * - a key's spend is counted per calendar month in UTC (`spendMonth`), on the key's `KEYSPEND`
 *   item of that month (functions/store/keys.ts);
 * - a run start adds its whole estimate to the month it starts in, and fits only while the month's
 *   spend plus the estimate stays within the cap (`fitsMonthlyCap`); the start transaction checks
 *   the same bound again atomically (`monthlyRoom`);
 * - at the run's end, what it did not spend goes back to the month it started in (the run keeps
 *   that month as `spendMonth`), even when it ends in the next one;
 * - the cap resets at the first instant of the next UTC month (`nextSpendMonthStart`), which the
 *   402's `resets` text names (`capResetsText`);
 * - reading never spends and is never refused by the cap: only a run start (and a deferred run's
 *   dispatch, which starts one) reads or adds to the month. A deferred run whose key is over the
 *   cap keeps waiting (functions/domain/deferred-run-lifetime.ts).
 */

/** The calendar month (UTC) a key's spend is counted in, e.g. `2026-11`. */
export const spendMonth = (now: Date): string => now.toISOString().slice(0, 7);

/** The first instant (UTC) of the month after `now`'s: when a key's month spend starts again from 0. */
export const nextSpendMonthStart = (now: Date): Date =>
  new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));

/** The 402's `resets` text: when the key's month spend starts again from 0. */
export const capResetsText = (resetsAt: Date): string =>
  `Resets at ${resetsAt.toISOString()} (start of the next calendar month, UTC)`;

/** The most a key may have spent this month for a start of `estimate` to fit under `cap`. */
export const monthlyRoom = (capHundredths: number, estimateHundredths: number): number =>
  capHundredths - estimateHundredths;

/** Whether a start of `estimate` fits the key's month; a key without a cap (null) always fits. */
export const fitsMonthlyCap = (
  capHundredths: number | null,
  spentThisMonthHundredths: number,
  estimateHundredths: number,
): boolean => capHundredths === null || spentThisMonthHundredths <= monthlyRoom(capHundredths, estimateHundredths);
