/**
 * The bodies of the lifecycle webhook events (our design, issue 26; schemas/webhook-events.ts).
 * A run event (`run.started` and the end events) has the end webhook's body, `WebhookBody`; a step
 * event has `StepWebhookBody`: the Run as it stands when the attempt is made, plus `event` and
 * `step`. Responses use `v.strictObject`.
 */
import * as v from 'valibot';
import { DateTimeSchema } from './common.ts';
import { WebhookBodySchema } from './runs.ts';
import { stepEvents } from './webhook-events.ts';

/** The step a step event is about, as it ended. */
export const WebhookStepSchema = v.strictObject({
  node_id: v.string(),
  step_type: v.string(),
  /** `completed` for `step.completed`, `failed` for `step.failed`. */
  status: v.picklist(['completed', 'failed']),
  /** Why it failed; present only on `step.failed`. */
  error: v.optional(v.string()),
  /**
   * What it produced; present only on `step.completed`. Its shape is the node type's, as a Run
   * output's `result` (files in it are RunFile objects with fresh links).
   */
  result: v.optional(v.unknown()),
  /** When it ended: order a run's step events by it (they can arrive in any order). */
  ended_at: DateTimeSchema,
});
export type WebhookStep = v.InferOutput<typeof WebhookStepSchema>;

/** Body of `step.completed` and `step.failed`: the Run plus `event` and `step`. */
export const StepWebhookBodySchema = v.strictObject({
  ...WebhookBodySchema.entries,
  event: v.picklist(stepEvents),
  step: WebhookStepSchema,
});
export type StepWebhookBody = v.InferOutput<typeof StepWebhookBodySchema>;

/** The named schemas of the document this module holds (schemas/openapi.ts gathers them). */
export const lifecycleWebhookComponents = {
  StepWebhookBody: StepWebhookBodySchema,
  WebhookStep: WebhookStepSchema,
};
