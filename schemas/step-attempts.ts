/**
 * A step's attempts and logs (our design), as the step item stores them and GET
 * /runs/{jobId}/steps/{nodeId} answers them (schemas/run-steps.ts). Apart from that operation's
 * module, which names the run's schemas, so the step item (functions/store/items/runs.ts) builds
 * only these. Responses use `v.strictObject`.
 */
import * as v from 'valibot';
import { failureReasons } from '../platform/alarm-rules.ts';
import { DateTimeSchema } from './common.ts';

const count = v.pipe(v.number(), v.integer(), v.minValue(0));

/**
 * Why a failed attempt was (or was not) followed by another: `busy-provider` (a 429, a 5xx, a
 * timeout or the network: asked again after a backoff), `deadline` (the step's deadline cut a
 * synchronous call: tried again after a backoff), `execution` (the node threw: its message
 * delivered again), `none` (not retried: the step failed with it).
 */
export const retryClasses = ['busy-provider', 'deadline', 'execution', 'none'] as const;
export const RetryClassSchema = v.picklist(retryClasses);

/** What set the wait before the next attempt: the provider's `Retry-After`, our backoff, or the queue's redelivery. */
export const waitReasons = ['retry-after', 'backoff', 'redelivery'] as const;

/** One attempt of a step. */
export const StepAttemptSchema = v.strictObject({
  /** When it started; absent when it was not recorded (an attempt before its item existed). */
  startedAt: v.optional(DateTimeSchema),
  endedAt: DateTimeSchema,
  outcome: v.picklist(['completed', 'failed']),
  /** The failed attempt's error, in the provider's or the node's words (500 characters at most). */
  error: v.optional(v.string()),
  /** The failed attempt's reason, in the words operators alarm on. */
  reason: v.optional(v.picklist(failureReasons)),
  retryClass: v.optional(RetryClassSchema),
  /** The wait before the next attempt and what set it; absent on the last attempt. */
  next: v.optional(
    v.strictObject({
      /** Seconds; absent for a redelivery (the queue's visibility timeout decides it). */
      afterSeconds: v.optional(count),
      why: v.picklist(waitReasons),
      /** The provider's `Retry-After`, in seconds, when it gave one. */
      retryAfterSeconds: v.optional(count),
    }),
  ),
  provider: v.optional(v.string()),
  model: v.optional(v.string()),
  /** The job's id at an asynchronous provider (a Replicate prediction, a fal request). */
  providerJobId: v.optional(v.string()),
  /** What this attempt was charged, in hundredths of a credit: 0 for a failed attempt (unless its job ran to its end). */
  chargedHundredths: count,
});
export type StepAttempt = v.InferOutput<typeof StepAttemptSchema>;

/** A log, cut to its cap when longer (`truncated`; `bytes` is its whole length in UTF-8). */
export const StepLogTextSchema = v.strictObject({
  text: v.string(),
  truncated: v.boolean(),
  bytes: count,
});
export type StepLogText = v.InferOutput<typeof StepLogTextSchema>;

/** A step's logs: the code's output streams (PythonSandbox), a provider's own log (Replicate's `logs`). */
export const StepLogsSchema = v.strictObject({
  stdout: v.optional(StepLogTextSchema),
  stderr: v.optional(StepLogTextSchema),
  provider: v.optional(StepLogTextSchema),
});
export type StepLogs = v.InferOutput<typeof StepLogsSchema>;
