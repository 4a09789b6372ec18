/**
 * One step of a run in detail (our design, beyond the spec): GET /runs/{jobId}/steps/{nodeId}, the
 * step's attempts (each execution of its node or call of its provider, with why the next came when
 * it did) and its logs (a PythonSandbox step's stdout and stderr, a provider's own log where it gives
 * one). The step item stores the same shapes (functions/store/items/runs.ts reads them from here), so the
 * answer is the item's, in the names of the contract. Responses use `v.strictObject`.
 */
import * as v from 'valibot';
import { failureReasons } from '../platform/alarm-rules.ts';
import { DateTimeSchema, UuidSchema } from './common.ts';
import { jsonResponse, type OperationSpec, uuidPath } from './openapi-parts.ts';
import { RunStepSchema } from './runs.ts';

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

/** 200 of GET /runs/{jobId}/steps/{nodeId}. */
export const RunStepDetailsSchema = v.strictObject({
  jobId: UuidSchema,
  nodeId: v.string(),
  stepType: v.string(),
  status: RunStepSchema.entries.status,
  startedAt: v.nullable(DateTimeSchema),
  endedAt: v.nullable(DateTimeSchema),
  /** Why the step failed; present only on a failed step. */
  error: v.optional(v.string()),
  /** What the step was charged in all, in credits. */
  chargedCredits: v.number(),
  /** Oldest first; bounded by the step's retry limits (see the guide). */
  attempts: v.array(StepAttemptSchema),
  logs: StepLogsSchema,
});
export type RunStepDetails = v.InferOutput<typeof RunStepDetailsSchema>;

export const runStepComponents = {
  RunStepDetails: RunStepDetailsSchema,
  StepAttempt: StepAttemptSchema,
  StepLogs: StepLogsSchema,
  StepLogText: StepLogTextSchema,
};

export const runStepOperations: OperationSpec[] = [
  {
    operationId: 'GetRunStep',
    tag: 'Runs',
    summary: 'Get a step of a run',
    description:
      'Reads one step of a run in detail: its attempts, oldest first (each with its times, outcome, error and ' +
      'retry class, the wait before the next and what set it, the provider, model and provider job id, and what ' +
      'it was charged: a failed attempt nothing), and its logs (a PythonSandbox step: stdout and stderr; a ' +
      "provider's own log where it gives one), each cut to 16 KB and marked when cut. A step not started yet " +
      'reads `queued` with no attempts. Kept as long as its run. Reading never spends credits.',
    parameters: [
      uuidPath('jobId', 'The `jobId` returned when the run started.'),
      {
        name: 'nodeId',
        in: 'path',
        required: true,
        description: 'The step: its node id in the workflow (`node_id` in the run steps).',
        schema: { type: 'string' },
      },
    ],
    responses: { 200: jsonResponse('The step.', 'RunStepDetails') },
    errorWords: { 404: 'No such run in the team, or no such step in the run.' },
  },
];
