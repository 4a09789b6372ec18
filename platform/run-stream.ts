/**
 * The run event stream's timing (GET /runs/{jobId}/events): read by its function
 * (functions/app/run-stream.ts), the stack (its function's timeout, lib/api-stack.ts) and the cost
 * bench. Pure data, written once here.
 */

/** How long one stream stays open before it sends `retry:` and closes: no Lambda is held for long. */
export const streamCapSeconds = 120;

/** The function's timeout: the cap, plus room to send the last events and close cleanly. */
export const streamFunctionTimeoutSeconds = streamCapSeconds + 10;

/** The wait before the client reconnects, as the closing `retry:` field tells it (milliseconds). */
export const streamRetryMs = 1_000;

/** How often the run item is read (one eventually consistent GetItem). */
export const streamPollMs = 1_000;

/**
 * How often the whole run partition is read even when the run item did not move: a model step's
 * claim (`processing`) is written to its step item alone, so this bounds how late its `step` event is.
 */
export const streamFullReadMs = 5_000;

/**
 * The longest the stream stays silent: past it, a comment line is sent. CloudFront's origin
 * response timeout (30 s by default) also bounds the wait between two packets of an answer, and a
 * run may go minutes without a change (a long model step).
 */
export const streamKeepAliveMs = 15_000;

/**
 * The stream function's memory. A connected minute is billed as the whole minute of its memory
 * (the handler waits between polls), which is nearly all the stream's cost: half the service's
 * 512 MB halves it. Its work is a read a second and a few lines of JSON (bench: "The run event
 * stream's cost per connected minute").
 */
export const streamFunctionMemoryMb = 256;

/**
 * Most event streams one API key holds open at once: past it, the next is answered 429 with
 * `Retry-After` before it opens (functions/app/stream-slots.ts). A key's 60 requests a minute
 * could otherwise keep about 120 functions busy (each stream lasts up to its cap); five follow
 * five runs live, and a client following more polls GET /runs/{jobId} instead.
 */
export const streamsPerKey = 5;

/**
 * Most event streams one run has open at once, whatever keys opened them: past it, the next is
 * answered 429 with `Retry-After` before it opens, as past `streamsPerKey`. A team's keys (each
 * under its own cap) could otherwise all follow one run; a client following a run needs one stream
 * (and a second while it reconnects).
 */
export const streamsPerRun = 3;
