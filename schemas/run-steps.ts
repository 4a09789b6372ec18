/**
 * One step of a run in detail (our design, beyond the spec): GET /runs/{jobId}/steps/{nodeId}, the
 * step's attempts (each execution of its node or call of its provider, with why the next came when
 * it did) and its logs (a PythonSandbox step's stdout and stderr, a provider's own log where it gives
 * one). The step item stores the same shapes (schemas/step-attempts.ts, which
 * functions/store/items/runs.ts reads), so the answer is the item's, in the names of the contract.
 * Responses use `v.strictObject`.
 */
import * as v from 'valibot';
import { DateTimeSchema, UuidSchema } from './common.ts';
import { jsonResponse, type OperationSpec, uuidPath } from './openapi-parts.ts';
import { RunStepSchema } from './runs.ts';
import { StepAttemptSchema, StepLogsSchema, StepLogTextSchema } from './step-attempts.ts';

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
