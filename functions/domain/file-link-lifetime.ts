/**
 * A file's link (spec 2.3): every read of a run links each of its files afresh, and a link works
 * for two hours from that read, the `expiresAt` the file object shows. Links are never stored: a
 * run read later gets new ones, so a link's lifetime never depends on the run's age. The link is
 * our own (functions/domain/file-links.ts): its end is in its signed text, so it holds whatever
 * the signing role's session length; following it gets a storage URL that lives only minutes.
 */

/** How long a file link works. */
export const fileUrlSeconds = 2 * 3600;

/**
 * When a link made at `now` stops working: two hours on, in whole seconds (the link carries its end
 * as unix seconds, so the `expiresAt` shown is exactly the one checked; at most a second early).
 */
export const fileLinkExpiresAt = (now: Date): Date =>
  new Date(Math.floor(now.getTime() / 1000) * 1000 + fileUrlSeconds * 1000);

/**
 * How far past two hours from now a link's end may lie and still be honoured: the clocks of the
 * functions that sign and check links differ by a little. A link ending later was not issued here.
 */
export const fileLinkSkewSeconds = 60;

/**
 * How long the storage URL a link redirects to works: long enough to start the download it was
 * fetched for, short enough that a leaked one is soon useless (and well inside any session).
 */
export const fileRedirectSeconds = 300;
