/**
 * A step's history: the attempts its item records and the logs it keeps (GET /runs/{jobId}/steps/{nodeId}).
 * Pure: what an attempt's entry says and how a log is cut; the step path writes them into the writes
 * it makes anyway (functions/store/run/steps.ts, provider-jobs.ts), never in a write of their own.
 *
 * Bounded per step, so the step item stays far within DynamoDB's 400 KB:
 * - attempts: an entry is appended only by a write that ends an attempt (a busy provider's try, a
 *   failed execution, the step's end after earlier attempts: `completedEntry`), so a step holds at most
 *   `maxProviderTries` + 1 + `stepExecutionAttempts` + 1 entries (12: a busy provider's 6 refusals, the
 *   last failing the step; 5 failed executions; the end), each under 1 KB (its error is cut
 *   to 500 characters); a worker lost mid-node writes none (its claim's count says it);
 * - logs: each stream cut to `stepLogCapBytes` (16 KB), three at most (stdout, stderr, the
 *   provider's): 48 KB, beside a PythonSandbox result's 256 KB cap.
 */
import type { FailureReason } from '../../platform/alarm-rules.ts';
import type { StepAttempt, StepLogs, StepLogText } from '../../schemas/step-attempts.ts';
import { maxProviderTries } from './provider-jobs.ts';
import { stepExecutionAttempts } from './step-attempts.ts';

/** The most bytes of one log stream a step keeps: its head (where a failure's cause usually is not) is cut. */
export const stepLogCapBytes = 16 * 1024;

/** The most attempt entries one step's item can hold (see above). */
export const maxStepAttemptEntries = maxProviderTries + 1 + stepExecutionAttempts + 1;

/** The most characters of an attempt's error. */
const errorChars = 500;

/**
 * A log cut to `cap` bytes of UTF-8: its tail is kept (a traceback ends there), never splitting a
 * character; `bytes` is its whole length. Empty text is no log.
 */
export const capLog = (text: string, cap = stepLogCapBytes): StepLogText | undefined => {
  if (text === '') return undefined;
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= cap) return { text, truncated: false, bytes: bytes.length };
  let start = bytes.length - cap;
  // A UTF-8 continuation byte (10xxxxxx) is inside a character: start at the next one.
  while (start < bytes.length && ((bytes[start] ?? 0) & 0xc0) === 0x80) start++;
  return { text: bytes.subarray(start).toString('utf8'), truncated: true, bytes: bytes.length };
};

/** The logs a step keeps from its streams, each cut; undefined when none has any text. */
export const stepLogs = (streams: { stdout?: string; stderr?: string; provider?: string }): StepLogs | undefined => {
  const logs: StepLogs = {};
  for (const name of ['stdout', 'stderr', 'provider'] as const) {
    const text = streams[name];
    const capped = text === undefined ? undefined : capLog(text);
    if (capped) logs[name] = capped;
  }
  return Object.keys(logs).length > 0 ? logs : undefined;
};

const shortError = (message: string) =>
  message.length > errorChars ? `${message.slice(0, errorChars - 3)}...` : message;

/** Where an attempt ran: the provider, model and job id, each only when known. */
export interface AttemptWhere {
  provider?: string | undefined;
  model?: string | undefined;
  providerJobId?: string | undefined;
}

const where = (at: AttemptWhere) => ({
  ...(at.provider !== undefined && { provider: at.provider }),
  ...(at.model !== undefined && { model: at.model }),
  ...(at.providerJobId !== undefined && { providerJobId: at.providerJobId }),
});

/** A completed attempt, charged what the step was. */
export const completedAttempt = (
  times: { startedAt?: string | undefined; endedAt: string },
  chargedHundredths: number,
  at: AttemptWhere = {},
): StepAttempt => ({
  ...(times.startedAt !== undefined && { startedAt: times.startedAt }),
  endedAt: times.endedAt,
  outcome: 'completed',
  ...where(at),
  chargedHundredths,
});

/**
 * The completed attempt a step's end records: only after earlier attempts (`earlier`, as the step's
 * item was read). A step that completed at its first attempt, nearly every step, stores no entry:
 * its one attempt is its item's own fields (`stepAttemptsOf`), so the end's write stays as small as
 * before (the run's retained bytes, docs/operations.md).
 */
export const completedEntry = (
  earlier: readonly StepAttempt[] | undefined,
  entry: () => StepAttempt,
): StepAttempt | undefined => (earlier !== undefined && earlier.length > 0 ? entry() : undefined);

/** What `stepAttemptsOf` reads of a step's item. */
export interface StepHistoryFields {
  status: string;
  startedAt?: string | undefined;
  endedAt?: string | undefined;
  chargeHundredths: number;
  model?: { provider: string; model: string } | null | undefined;
  providerJob?: { id?: string | undefined } | undefined;
  attemptLog?: readonly StepAttempt[] | undefined;
}

/**
 * A step's attempts as a caller reads them: its log, and, for a completed step whose log does not
 * end with its completion (a first attempt that completed, or a duplicate delivery's end that read
 * the log before another's failure was added), that attempt from the item's own fields. `completed`:
 * the stored status of a completed step.
 */
export const stepAttemptsOf = (step: StepHistoryFields | undefined, completed: string): StepAttempt[] => {
  const log = [...(step?.attemptLog ?? [])];
  if (!step || step.status !== completed || log.at(-1)?.outcome === 'completed' || step.endedAt === undefined)
    return log;
  const times = { startedAt: log.length === 0 ? step.startedAt : undefined, endedAt: step.endedAt };
  const at = { provider: step.model?.provider, model: step.model?.model, providerJobId: step.providerJob?.id };
  return [...log, completedAttempt(times, step.chargeHundredths, at)];
};

/** The wait before the next attempt: `afterSeconds`, set by the provider's `Retry-After` when that decided it. */
export const retryWait = (afterSeconds: number, retryAfterSeconds: number | undefined): StepAttempt['next'] => ({
  afterSeconds,
  why: retryAfterSeconds !== undefined && afterSeconds <= Math.ceil(retryAfterSeconds) ? 'retry-after' : 'backoff',
  ...(retryAfterSeconds !== undefined && { retryAfterSeconds: Math.ceil(retryAfterSeconds) }),
});

/**
 * A failed attempt: charged nothing unless `chargedHundredths` (a provider's job that ran to its end
 * with an answer that cannot be used); `next` absent when no attempt follows it.
 */
export const failedAttempt = (
  times: { startedAt?: string | undefined; endedAt: string },
  failure: {
    error: string;
    reason: FailureReason;
    retryClass: StepAttempt['retryClass'];
    next?: StepAttempt['next'];
    chargedHundredths?: number;
  },
  at: AttemptWhere = {},
): StepAttempt => ({
  ...(times.startedAt !== undefined && { startedAt: times.startedAt }),
  endedAt: times.endedAt,
  outcome: 'failed',
  error: shortError(failure.error),
  reason: failure.reason,
  retryClass: failure.retryClass,
  ...(failure.next !== undefined && { next: failure.next }),
  ...where(at),
  chargedHundredths: failure.chargedHundredths ?? 0,
});
