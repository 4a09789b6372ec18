/**
 * The bodies of the lifecycle webhook events (our design; schemas/webhook-events.ts).
 * A run event (`run.started` and the end events) has the end webhook's body, `WebhookBody`; a step
 * event has `StepWebhookBody`: the run's status as it stands when the attempt is made, `event`,
 * `step` and a link to the Run. Responses use `v.strictObject`.
 */
import type { PathItemObject, SchemaObject } from 'openapi3-ts/oas31';
import * as v from 'valibot';
import { DateTimeSchema } from './common.ts';
import { ref } from './openapi-parts.ts';
import { WebhookBodySchema } from './runs.ts';
import { stepEventCap, stepEvents } from './webhook-events.ts';

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

/**
 * Body of `step.completed` and `step.failed`: the run's status and what identifies it, `event`, the
 * `step`, and a link to the Run. Not the Run's steps or page of outputs: a run sends up to
 * `stepEventCap` step events, and each carrying the whole Run would send it that many times.
 */
export const StepWebhookBodySchema = v.strictObject({
  event: v.picklist(stepEvents),
  jobId: WebhookBodySchema.entries.jobId,
  status: WebhookBodySchema.entries.status,
  progress: WebhookBodySchema.entries.progress,
  metadata: WebhookBodySchema.entries.metadata,
  tags: WebhookBodySchema.entries.tags,
  resumedFrom: WebhookBodySchema.entries.resumedFrom,
  step: WebhookStepSchema,
  /** Where to read the whole Run (GET /runs/{jobId}, with a key); absent when the stage does not know its address. */
  links: v.optional(v.strictObject({ run: v.pipe(v.string(), v.url()) })),
});
export type StepWebhookBody = v.InferOutput<typeof StepWebhookBodySchema>;

/** The named schemas of the document this module holds (schemas/openapi.ts gathers them). */
export const lifecycleWebhookComponents = {
  StepWebhookBody: StepWebhookBodySchema,
  WebhookStep: WebhookStepSchema,
};

/** Said of every lifecycle webhook: retries, duplicates, order (docs/api.md, "Lifecycle events"). */
const deliveryWords =
  'Reply with any 2xx within 8 seconds, or the delivery is retried as the run-finished webhook is (5 attempts; ' +
  'first retry after 2 minutes, doubling). Each event is its own delivery with its own `webhook-id`, signed the same ' +
  'way; deduplicate on `webhook-id`. Deliveries can arrive in any order: `run.started` comes before every other ' +
  'event of the run, step events are ordered by `step.ended_at`, and the end event comes after them.';

/**
 * The document's `webhooks` entries of the lifecycle events (beside `runFinished`, schemas/openapi.ts),
 * given the schema object of the `X-Service-Event` header's value.
 */
export const lifecycleWebhookEntries = (
  eventHeader: (events: readonly string[]) => SchemaObject,
): Record<string, PathItemObject> => ({
  runStarted: {
    post: {
      operationId: 'RunStartedWebhook',
      summary: 'Run started (when chosen)',
      description:
        'Our design: sent to the `callbackUrl` of a run started with `webhookEvents` naming ' +
        '`run.started`, when the run is created (queued, its estimate held). The body is the run-finished ' +
        `webhook's: the Run as it stands when the attempt is made, plus \`event\`. ${deliveryWords}`,
      security: [],
      parameters: [{ name: 'X-Service-Event', in: 'header', required: true, schema: eventHeader(['run.started']) }],
      requestBody: { required: true, content: { 'application/json': { schema: ref('WebhookBody') } } },
      responses: { '2XX': { description: 'Received.' } },
    },
  },
  stepFinished: {
    post: {
      operationId: 'StepFinishedWebhook',
      summary: 'Step completed or failed (when chosen)',
      description:
        'Our design: sent to the `callbackUrl` of a run started with `webhookEvents` naming ' +
        "`step.completed` or `step.failed`, when one of its steps ends so: the run's status as it stands when the " +
        'attempt is made, `event`, `step`, and `links.run` to read the whole Run (its steps and outputs are not in ' +
        `the body). At most ${stepEventCap} step events a run; past them none is sent, and ` +
        `the end event's body carries every step. ${deliveryWords}`,
      security: [],
      parameters: [{ name: 'X-Service-Event', in: 'header', required: true, schema: eventHeader(stepEvents) }],
      requestBody: { required: true, content: { 'application/json': { schema: ref('StepWebhookBody') } } },
      responses: { '2XX': { description: 'Received.' } },
    },
  },
});
