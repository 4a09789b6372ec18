/**
 * What a team may store, and how long each stored byte counts (docs/api.md, "Stored bytes").
 *
 * - A run names at most `maxFileInputs` file inputs (a `fileId` or a URL) and at most
 *   `maxFileInputBytes` of distinct uploads; it holds one copy of each distinct upload.
 * - A team holds at most its quota (`defaultStorageQuotaBytes` unless an operator set another):
 *   its uploads, its runs' input copies and their output files, each counted from when it is
 *   stored until the bucket's lifecycle rule expires it (`expiresOn`), or until it is deleted.
 *
 * The counter keeps bytes by the UTC day they expire: a day that has begun holds nothing any more
 * (S3 expires an object at the midnight UTC after its creation plus the rule's days, and stops
 * billing it then, whenever the deletion itself runs), so what a team holds at `now` is the sum of
 * the days after today, and nothing ever has to be decremented for an expiry.
 */

const mib = 1024 * 1024;

/** File inputs a run may name (`inputs` keys whose value is a `fileId` or a URL). */
export const maxFileInputs = 20;

/** The distinct uploads a run's inputs name, in bytes: what the run copies. */
export const maxFileInputBytes = 500 * mib;

/** A team's storage quota where no operator set one: 50 GiB (about $1.15 a month on S3 Standard). */
export const defaultStorageQuotaBytes = 50 * 1024 * mib;

const dayMs = 86_400_000;

/**
 * The UTC day (`YYYY-MM-DD`) at whose start S3's lifecycle expires an object stored at `storedAt`
 * under a rule of `days`: the creation plus the days, rounded up to the next midnight UTC.
 */
export const expiresOn = (storedAt: Date, days: number): string => {
  const end = storedAt.getTime() + days * dayMs;
  const midnight = Math.floor(end / dayMs) * dayMs + (end % dayMs === 0 ? 0 : dayMs);
  return new Date(midnight).toISOString().slice(0, 10);
};

/** The UTC day of `now`: a day on or before it has expired. */
export const today = (now: Date): string => now.toISOString().slice(0, 10);

/** The bytes still held at `now`: the days after today. */
export const heldBytes = (byDay: Readonly<Record<string, number>>, now: Date): number => {
  const day = today(now);
  return Object.entries(byDay).reduce((sum, [expires, bytes]) => (expires > day ? sum + bytes : sum), 0);
};

/** The days that have expired at `now` (their bytes to take off the total). */
export const expiredDays = (byDay: Readonly<Record<string, number>>, now: Date): string[] => {
  const day = today(now);
  return Object.keys(byDay).filter((expires) => expires <= day);
};

/** What the team holds against its quota. */
export interface StorageUsage {
  usedBytes: number;
  quotaBytes: number;
}

/** The bytes a run's distinct uploads weigh: each `fileId` once. */
export const distinctBytes = (uploads: readonly { fileId: string; size: number }[]): number => {
  const seen = new Map<string, number>();
  for (const upload of uploads) seen.set(upload.fileId, upload.size);
  return [...seen.values()].reduce((a, b) => a + b, 0);
};
