/**
 * `startBy` (schemas/runs.ts `StartBySchema`): the latest time a run that waits may start. One rule
 * for every start that can wait (a queued run, a deferred run): it must be in the future and at
 * most `startByMaxSeconds` ahead of the moment the start is read. Pure.
 */

/** How far ahead a `startBy` may be: 7 days. */
export const startByMaxSeconds = 7 * 24 * 3600;

/** What is wrong with `startBy` read at `now` (a 400's words), or undefined when it holds. */
export const startByProblem = (startBy: string, now: Date): string | undefined => {
  const at = Date.parse(startBy);
  if (at <= now.getTime()) return 'must be in the future';
  if (at > now.getTime() + startByMaxSeconds * 1000) return 'must be at most 7 days ahead';
  return undefined;
};

/** When a wait that began at `from` and took `startBy` (or, without it, lasts `defaultSeconds`) ends, as ISO 8601. */
export const startDeadline = (from: Date, startBy: string | undefined, defaultSeconds: number): string =>
  startBy !== undefined
    ? new Date(Date.parse(startBy)).toISOString()
    : new Date(from.getTime() + defaultSeconds * 1000).toISOString();
