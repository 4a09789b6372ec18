/**
 * A file's link (spec 2.3): every read of a run signs each of its files afresh, and a link works
 * for two hours from that read, the `expiresAt` the file object shows. Links are never stored: a
 * run read later gets new ones, so a link's lifetime never depends on the run's age.
 */

/** How long a signed file link works. */
export const fileUrlSeconds = 2 * 3600;

/** When a link signed at `now` stops working. */
export const fileLinkExpiresAt = (now: Date): Date => new Date(now.getTime() + fileUrlSeconds * 1000);
