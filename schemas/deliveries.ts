/**
 * The run-finished webhook's delivery log and its redelivery (our design, beyond the spec):
 * GET /runs/{jobId}/deliveries and POST /runs/{jobId}/deliveries/redeliver. Responses use
 * `v.strictObject`. The 409 of a redelivery lives here with its message, beside the endpoints it
 * belongs to; `functions/http/error-map.ts` builds it.
 */
import * as v from 'valibot';
import { DateTimeSchema, notArray, UuidSchema } from './common.ts';
import { deliveryPendingMessage } from './error-messages.ts';
import { jsonResponse, type OperationSpec, ref, uuidPath } from './openapi-parts.ts';
import { WebhookEventSchema } from './run-words.ts';
import { LifecycleEventSchema } from './webhook-events.ts';

/** A delivery's states (functions/domain/webhook.ts says when each holds). */
export const deliveryStates = ['pending', 'delivered', 'failed'] as const;
const DeliveryStateSchema = v.pipe(
  v.picklist(deliveryStates),
  v.description(
    '`pending`: not delivered yet and an attempt will come (the run has not ended, its first attempt or a retry ' +
      'is due, or a redelivery is queued); `delivered`: the last attempt was answered 2xx; `failed`: the last ' +
      'attempt was not, and none is scheduled.',
  ),
);

/** Why an attempt got no answer (functions/domain/webhook.ts, `WebhookErrorKind`). */
export const webhookErrorKinds = ['timeout', 'refused', 'tls', 'connection', 'interrupted'] as const;

/** One attempt of the delivery log. */
export const WebhookAttemptSchema = v.strictObject({
  /** Counted from 1 over the delivery's whole life: a redelivery continues the count. */
  attempt: v.pipe(v.number(), v.integer(), v.minValue(1)),
  /** When the POST started. */
  at: DateTimeSchema,
  /** The callback URL's scheme and host only: never its path or query, which may carry a token. */
  url: v.string(),
  /** The receiver's HTTP status; absent when there was no answer (see `error`). */
  statusCode: v.optional(v.pipe(v.number(), v.integer())),
  /**
   * Why there was no answer: `timeout` (none within 8 s), `refused` (the address did not resolve, or
   * not only to public addresses: one kind, so the log tells nothing of how names resolve; nothing
   * was sent, `durationMs` is 0), `tls` (the handshake failed), `connection` (refused, reset, closed
   * early), `interrupted` (our side stopped mid-send, a crash: the receiver may have got it; the next
   * attempt sends the same `webhook-id` at once).
   */
  error: v.optional(v.picklist(webhookErrorKinds)),
  durationMs: v.pipe(v.number(), v.integer(), v.minValue(0)),
  /** When the retry this attempt scheduled is due; absent when it scheduled none. */
  nextAttemptAt: v.optional(DateTimeSchema),
});
export type WebhookAttemptView = v.InferOutput<typeof WebhookAttemptSchema>;

/** One delivery of a run that chose `webhookEvents`: one event, or one step's event. */
export const LifecycleDeliverySchema = v.strictObject({
  event: LifecycleEventSchema,
  /** The step of a step event; absent for a run event. */
  nodeId: v.optional(v.string()),
  /** Its own, the same on every attempt and redelivery of it. */
  webhookId: v.string(),
  state: DeliveryStateSchema,
  nextAttemptAt: v.nullable(DateTimeSchema),
  attempts: v.pipe(v.number(), v.integer(), v.minValue(0)),
  /** The latest attempts (5 at most), newest first. */
  deliveries: v.array(WebhookAttemptSchema),
});
export type LifecycleDelivery = v.InferOutput<typeof LifecycleDeliverySchema>;

/** 200 of GET /runs/{jobId}/deliveries. */
export const WebhookDeliveriesSchema = v.strictObject({
  jobId: UuidSchema,
  /**
   * The event the run's end sends; null while the run has not ended, and for a run whose
   * `webhookEvents` left its end event out.
   */
  event: v.nullable(WebhookEventSchema),
  /** The same on every attempt and redelivery: receivers deduplicate on it. */
  webhookId: v.nullable(v.string()),
  state: DeliveryStateSchema,
  /** When the next attempt is due (a retry, or a redelivery queued); null when none is scheduled. */
  nextAttemptAt: v.nullable(DateTimeSchema),
  /** Attempts made so far, including those no longer in `deliveries`. */
  attempts: v.pipe(v.number(), v.integer(), v.minValue(0)),
  /** The latest attempts (5 at most), newest first. */
  deliveries: v.array(WebhookAttemptSchema),
  /**
   * Our design, present only for a run started with `webhookEvents`: every delivery
   * opened so far, one per event (and per step for a step event), run events first. The fields
   * above are then its end event's delivery, when it chose it (`event` is null when it did not).
   */
  events: v.optional(v.array(LifecycleDeliverySchema)),
});
export type WebhookDeliveries = v.InferOutput<typeof WebhookDeliveriesSchema>;

/**
 * Body of POST /runs/{jobId}/deliveries/redeliver, optional: which delivery to send again.
 * Without it (or without `event`), the run's end event, as before.
 */
export const RedeliverRequestSchema = notArray(
  v.object({
    event: v.optional(LifecycleEventSchema),
    /** The step, for a step event. */
    nodeId: v.optional(v.pipe(v.string(), v.minLength(1))),
  }),
);
export type RedeliverRequest = v.InferOutput<typeof RedeliverRequestSchema>;

/** 202 of POST /runs/{jobId}/deliveries/redeliver: one new attempt is queued. */
export const RedeliveryQueuedSchema = v.strictObject({
  jobId: UuidSchema,
  /** An end event; or, for a run that chose `webhookEvents`, the event asked for. */
  event: LifecycleEventSchema,
  /** The step of a step event; absent otherwise. */
  nodeId: v.optional(v.string()),
  webhookId: v.string(),
  state: v.literal('pending'),
  /** The number the queued attempt will carry in the log. */
  attempt: v.pipe(v.number(), v.integer(), v.minValue(1)),
});
export type RedeliveryQueued = v.InferOutput<typeof RedeliveryQueuedSchema>;

/** The 409 of a redelivery while the delivery is pending. */
export const DeliveryPendingErrorSchema = v.strictObject({
  error: v.literal(deliveryPendingMessage),
  /** When its next attempt is due; null when none is due yet (the run has not ended, or it is due now). */
  nextAttemptAt: v.nullable(DateTimeSchema),
});
export type DeliveryPendingErrorBody = v.InferOutput<typeof DeliveryPendingErrorSchema>;

/** The named schemas of the document this module holds (its 409's body is an error's, named with the errors). */
export const deliveryComponents = {
  WebhookDeliveries: WebhookDeliveriesSchema,
  LifecycleDelivery: LifecycleDeliverySchema,
  RedeliverRequest: RedeliverRequestSchema,
  WebhookAttempt: WebhookAttemptSchema,
  RedeliveryQueued: RedeliveryQueuedSchema,
};

const noDeliveriesWords =
  'No such run in the team (or in the workflows the key is limited to), or the run has no `callbackUrl`.';

/** The operations of the delivery routes, for the document (schemas/openapi.ts). */
export const deliveryOperations: OperationSpec[] = [
  {
    operationId: 'ListDeliveries',
    tag: 'Runs',
    summary: 'List webhook deliveries of a run',
    description:
      'The run-finished webhook delivery log: its latest attempts (5 at most), newest first, each with when it ' +
      'started, the callback URL host, the status code or why there was none, its duration and when the retry ' +
      'it scheduled is due; and the delivery state. `pending` with no attempt until the run ends and its first ' +
      'attempt is made.',
    parameters: [uuidPath('jobId', 'The `jobId` returned when the run started.')],
    responses: { 200: jsonResponse('The delivery log.', 'WebhookDeliveries') },
    errorWords: { 404: noDeliveriesWords },
  },
  {
    operationId: 'RedeliverWebhook',
    tag: 'Runs',
    summary: 'Redeliver the webhook of a run',
    description:
      'Queues one new attempt of the run-finished webhook, with the same `webhook-id` (receivers deduplicate on ' +
      'it), numbered after the last attempt. It is a single attempt: no retries follow it, and its answer sets ' +
      'the state (`delivered` or `failed`). Refused while the delivery is `pending`. Of concurrent requests, one ' +
      'queues an attempt and the others answer 409.',
    parameters: [uuidPath('jobId', 'The `jobId` returned when the run started.')],
    requestBody: {
      required: false,
      description:
        'Optional: the delivery to send again, for a run started with `webhookEvents`: its `event`, and ' +
        'its `nodeId` for a step event. Without it, the run end event.',
      content: { 'application/json': { schema: ref('RedeliverRequest') } },
    },
    responses: {
      202: jsonResponse('One attempt is queued.', 'RedeliveryQueued'),
      500: jsonResponse('Server failure.', 'ServerError'),
    },
    errorWords: {
      404: noDeliveriesWords,
      400: 'The body names no delivery this run opened (`event`, and `nodeId` for a step event).',
      413: 'The body is over 4 KB.',
      409: 'The delivery is pending: the run has not ended, an attempt is due, or a redelivery is queued.',
    },
  },
];
