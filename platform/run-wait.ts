/**
 * `Prefer: wait=N` (RFC 7240) on the run starts, the resume and GET /runs/{jobId}: how long a
 * request may wait for its run to end, how often it looks, and the time its function is given.
 * Read by the handlers (functions/app/run-wait.ts), the stack (lib/api-stack.ts) and the cost
 * bench. Pure data, written once here.
 */

/**
 * The longest wait a request is given (seconds): a larger N is served as this. API Gateway's HTTP
 * API gives an integration 30 s at most; 25 s leaves room for the start's own work and the answer.
 */
export const maxWaitSeconds = 25;

/** The first look at the run comes this soon (ms); each later one twice as late, up to `waitPollCapMs`. */
export const waitFirstPollMs = 250;

/** The longest gap between two looks at a waited-for run (ms): a run that ends is answered at most this late. */
export const waitPollCapMs = 1_000;

/**
 * The time the functions of the routes that wait are given (seconds): the longest wait, the
 * start's own work before it and the last read after it. Under the HTTP API integration's 30 s
 * (its default and its most): the function answers before the gateway gives up.
 */
export const waitingFunctionTimeoutSeconds = 28;

/**
 * A wait ends at least this long before its function would be stopped (ms): room for the last read
 * of the run and the answer, whatever the start took before the wait.
 */
export const waitMarginMs = 3_000;
