/**
 * A deferred run's lifetime (spec 3.2 and 8). It is created `waiting` and leaves that status once:
 *
 * - `expired` when 24 hours pass without it starting (`deferredExpiresAt`, `hasExpired`), or, when
 *   the start gave `startBy`, once that time passes (`startByProblem` bounds it);
 * - `cancelled` when the caller cancels it, or when its turn comes and its key has been revoked or
 *   has expired;
 * - `dispatched` when the price multiplier is at most its `maxMultiplier` (see
 *   functions/domain/price-multiplier.ts) and the run it becomes can be paid for and allowed.
 *
 * When its turn comes but the run cannot start, `fateOf` says what becomes of it: it keeps waiting
 * while its workflow has a run in progress, its team holds its storage quota, or its key is over its
 * monthly credit cap (or the cap could not be read), since these pass; any other reason it cannot be paid for or allowed expires it.
 */
import type { RunRefusal } from './admission.ts';

/** A deferred run waits at most this long. */
export const deferredLifetimeSeconds = 24 * 3600;

/** When a deferred run created at `createdAt` expires: at its `startBy` when given, else 24 hours on. */
export const deferredExpiresAt = (createdAt: Date, startBy?: string): Date =>
  startBy === undefined ? new Date(createdAt.getTime() + deferredLifetimeSeconds * 1000) : new Date(startBy);

/** A `startBy` lies at most this far ahead (7 days). */
export const startByMaxSeconds = 7 * 24 * 3600;

/**
 * An uploaded file's object outlives its upload item by a day (the bucket's lifecycle rule on
 * `uploads/`), and a deferred run copies the uploads its `inputs` name only at its dispatch: a
 * deferred run naming uploads may wait no longer than the fixed window, or it would find them gone.
 */
export const startByMaxSecondsWithUploads = deferredLifetimeSeconds;

/** Why a `startBy` is refused: already past, or further ahead than its bound (`latest`, ISO 8601). */
export type StartByProblem = { kind: 'past' } | { kind: 'tooFar'; latest: string };

/** The latest `startBy` a request read at `now` may give (ISO 8601); `withUploads` when its `inputs` name uploaded files. */
export const startByLatest = (now: Date, withUploads: boolean): string =>
  new Date(now.getTime() + (withUploads ? startByMaxSecondsWithUploads : startByMaxSeconds) * 1000).toISOString();

/** Whether `startBy` (ISO 8601) may bound a run started at `now`; `withUploads` when its `inputs` name uploaded files. */
export const startByProblem = (startBy: string, now: Date, withUploads: boolean): StartByProblem | undefined => {
  if (Date.parse(startBy) <= now.getTime()) return { kind: 'past' };
  const latest = startByLatest(now, withUploads);
  return Date.parse(startBy) > Date.parse(latest) ? { kind: 'tooFar', latest } : undefined;
};

/** Whether a deferred run expiring at `expiresAt` (ISO 8601) may no longer start at `now`. */
export const hasExpired = (expiresAt: string, now: Date): boolean => Date.parse(expiresAt) <= now.getTime();

/** Why a deferred run whose turn came did not start. */
export type DispatchObstacle =
  /** Its key was revoked or has expired. */
  | 'keyUnusable'
  /** Its workflow has a run in progress. */
  | 'runInProgress'
  /** Its team holds its storage quota: bytes free as they expire. */
  | 'storageQuota'
  /** Its key has a monthly cap that could not be read. */
  | 'monthlyCapUnverifiable'
  /** The admission's 402s: per-step limit, project hard cap, key monthly cap, team balance. */
  | RunRefusal['kind']
  /** The run can no longer be allowed: its workflow is gone, invalid, not permitted to the key, or needs a provider it may not use. */
  | 'notAllowed';

/** What a waiting deferred run becomes when its turn came and it did not start. */
export type DeferredFate = 'waiting' | 'expired' | 'cancelled';

const fates: Readonly<Record<DispatchObstacle, DeferredFate>> = {
  keyUnusable: 'cancelled',
  runInProgress: 'waiting',
  storageQuota: 'waiting',
  monthlyCap: 'waiting',
  monthlyCapUnverifiable: 'waiting',
  perStepLimit: 'expired',
  projectHardCap: 'expired',
  insufficientCredits: 'expired',
  notAllowed: 'expired',
};

/** The fate of a deferred run kept from starting by `obstacle` (spec 3.2). */
export const fateOf = (obstacle: DispatchObstacle): DeferredFate => fates[obstacle];
