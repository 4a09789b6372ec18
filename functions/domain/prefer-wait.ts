import type { Scope } from '../../platform/routes.ts';
import { maxWaitSeconds, waitFirstPollMs, waitPollCapMs } from '../../platform/run-wait.ts';

/**
 * The `wait` preference of a `Prefer` header (RFC 7240), in seconds, as it is served: a larger N
 * is served as `maxWaitSeconds` (the preference is a hint: the answer's `Preference-Applied` says
 * what was served). Undefined, and so ignored as RFC 7240 asks of a preference a server does not
 * support, when there is none, it is not a whole number of seconds (`wait=abc`, `wait=-1`,
 * `wait=1.5`, `wait=`), or it is 0 (nothing to wait for). Only the first `wait` counts (RFC 7240
 * section 2); other preferences (`respond-async`, `return=...`) and parameters after `;` are ignored.
 * API Gateway joins repeated headers with commas, which is also how preferences are listed.
 */
export const preferredWaitSeconds = (header: string | undefined): number | undefined => {
  if (header === undefined) return undefined;
  for (const preference of header.split(',')) {
    // A preference is `token [ = word ] *( ; parameter )`: the parameters are not ours to read.
    const [head = ''] = preference.split(';');
    const equals = head.indexOf('=');
    const name = (equals === -1 ? head : head.slice(0, equals)).trim().toLowerCase();
    if (name !== 'wait') continue;
    if (equals === -1) return undefined;
    const value = head.slice(equals + 1).trim();
    // The generic syntax allows a quoted word: `wait="10"` is `wait=10`.
    const unquoted = /^"(.*)"$/.exec(value)?.[1] ?? value;
    if (!/^\d+$/.test(unquoted)) return undefined;
    const seconds = Number(unquoted);
    if (seconds === 0) return undefined;
    return Math.min(seconds, maxWaitSeconds);
  }
  return undefined;
};

/** The `Preference-Applied` value for a wait served. */
export const waitApplied = (seconds: number): string => `wait=${seconds}`;

/**
 * The pause after `looks` looks at the run (the first look is at once): 250 ms, then twice as long
 * each time, up to 1 s. A run that ends early is seen soon; a long wait looks about once a second.
 */
export const waitPollDelayMs = (looks: number): number =>
  Math.min(waitFirstPollMs * 2 ** Math.max(0, looks - 1), waitPollCapMs);

/**
 * When a wait of `waitMs` looks at a run that does not end (ms from its start): at once, on the
 * schedule above, and once more at the deadline. A 25 s wait looks 28 times.
 */
export const waitLookTimesMs = (waitMs: number): number[] => {
  const times = [0];
  for (let at = 0; at < waitMs; ) {
    at = Math.min(at + waitPollDelayMs(times.length), waitMs);
    times.push(at);
  }
  return times;
};

/**
 * Whether a start's key may be answered with the Run it started: the Run is what GET /runs/{jobId}
 * shows, so the key needs what that route needs (`runs:read`; no scopes is every scope). A key
 * without it is answered as if it had sent no wait.
 */
export const mayReadStartedRun = (scopes: readonly string[]): boolean =>
  scopes.length === 0 || scopes.includes('runs:read' satisfies Scope);
