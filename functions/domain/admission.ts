/**
 * Whether a run may start, in the spec's order of precedence. Pure: the caller reads the facts
 * (functions/store/run/runs.ts) and turns a refusal into its error; both run starts and the deferred
 * dispatcher go through `commitRun` (functions/app/start-run.ts), which applies these in order:
 *
 * 1. `refusalWithoutFacts`: the facts could not be read. A key with a monthly cap is refused
 *    (503, retry later) rather than started unmetered; without a cap the failure stands (500).
 * 2. `runRefusal`: the 402 checks on the facts, in the spec's order: per-step limit, project hard
 *    cap, key monthly cap, team balance.
 * 3. `busyFirst`: a refused run of a workflow that already has a run in progress is answered 409
 *    naming that run, before any 402: more credits would not start it. The lock is read only when
 *    there is a refusal; with none, the start transaction takes the lock (and answers 409 itself).
 *
 * Money is in hundredths of a credit throughout; the HTTP edge converts to credits.
 */
import { fitsMonthlyCap, nextSpendMonthStart } from './monthly-cap.ts';
import type { RunEstimate } from './pricing.ts';

/** The facts the admission checks read, all in hundredths; null means "no limit set". */
export interface AdmissionFacts {
  perStepLimit: number | null;
  project: { hardCap: number | null; spent: number };
  key: { monthlyCap: number | null; spentThisMonth: number };
  balance: number;
}

/** Why a run cannot be paid for or allowed (a 402), with the numbers behind it. */
export type RunRefusal =
  | { kind: 'perStepLimit'; nodeType: string; estimatedChargeHundredths: number; ceilingHundredths: number }
  | { kind: 'projectHardCap'; hardCapHundredths: number; spentHundredths: number; estimateHundredths: number }
  | {
      kind: 'monthlyCap';
      monthlyCapHundredths: number;
      spentThisMonthHundredths: number;
      /** The first instant of the next UTC month, when the key's spend starts again from 0. */
      resetsAt: Date;
    }
  | { kind: 'insufficientCredits'; requiredHundredths: number };

/** The admission's answer when a run may not start now. */
export type AdmissionRefusal =
  | { kind: 'runInProgress'; activeJobId: string }
  | { kind: 'refused'; refusal: RunRefusal }
  | { kind: 'monthlyCapUnverifiable'; retryAfterSeconds: number };

/** Seconds a caller should wait before retrying when a monthly cap could not be read. */
export const monthlyCapRetryAfterSeconds = 5;

/** Step 1. The facts could not be read: a capped key is refused, never started unmetered; null lets the failure stand. */
export const refusalWithoutFacts = (monthlyCapHundredths: number | null): AdmissionRefusal | null =>
  monthlyCapHundredths === null
    ? null
    : { kind: 'monthlyCapUnverifiable', retryAfterSeconds: monthlyCapRetryAfterSeconds };

/**
 * Step 2. The spec's 402 checks, in its order: per-step limit, project hard cap, key monthly cap,
 * team balance. The start transaction enforces the last three again atomically.
 */
export const runRefusal = (estimate: RunEstimate, facts: AdmissionFacts, now: Date): RunRefusal | null => {
  const { perStepLimit } = facts;
  if (perStepLimit !== null) {
    const over = estimate.steps.find((s) => s.hundredths > perStepLimit);
    if (over)
      return {
        kind: 'perStepLimit',
        nodeType: over.type,
        estimatedChargeHundredths: over.hundredths,
        ceilingHundredths: perStepLimit,
      };
  }
  const total = estimate.totalHundredths;
  const { hardCap, spent } = facts.project;
  if (hardCap !== null && spent + total > hardCap)
    return { kind: 'projectHardCap', hardCapHundredths: hardCap, spentHundredths: spent, estimateHundredths: total };
  const { monthlyCap, spentThisMonth } = facts.key;
  if (monthlyCap !== null && !fitsMonthlyCap(monthlyCap, spentThisMonth, total))
    return {
      kind: 'monthlyCap',
      monthlyCapHundredths: monthlyCap,
      spentThisMonthHundredths: spentThisMonth,
      resetsAt: nextSpendMonthStart(now),
    };
  if (facts.balance < total) return { kind: 'insufficientCredits', requiredHundredths: total };
  return null;
};

/** Step 3. A refusal meets the workflow's run lock: a run in progress is answered before any 402. */
export const busyFirst = (refusal: RunRefusal, activeJobId: string | undefined): AdmissionRefusal =>
  activeJobId === undefined ? { kind: 'refused', refusal } : { kind: 'runInProgress', activeJobId };
