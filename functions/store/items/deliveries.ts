/**
 * A run's webhook deliveries (RUN#<jobId>, WEBHOOK#<event>) and its steps' event counts. One family
 * of the stored items: see item.ts for how every item is read and written.
 */
import * as v from 'valibot';
import { deliveryStates, webhookErrorKinds } from '../../../schemas/deliveries.ts';
import { counter, storedItem } from './item.ts';

/**
 * The delivery item of one webhook event of a run (functions/store/webhook-deliveries.ts) (`RUN#<job>`, `WEBHOOK#<event>`): its state, the
 * attempts counted so far (the only count of attempts: SQS's receive count is never used), and the
 * delivery log, one entry per attempt (five at most). Written once per attempt, on the condition
 * that the attempt before it is the last one recorded, so a redelivered message never counts twice.
 * It is kept as long as its run (`ttl`: the run's start plus the retention).
 */
export const AttemptEntrySchema = v.object({
  attempt: v.number(),
  at: v.string(),
  host: v.string(),
  statusCode: v.optional(v.number()),
  // `dns`, written before refusals read as one kind (an oracle of how names resolve), reads as `refused`.
  error: v.optional(
    v.pipe(
      v.picklist([...webhookErrorKinds, 'dns']),
      v.transform((kind) => (kind === 'dns' ? 'refused' : kind)),
    ),
  ),
  durationMs: v.number(),
  nextAttemptAt: v.optional(v.string()),
});

export const DeliveryItemSchema = v.object({
  state: v.picklist(deliveryStates),
  attempts: v.number(),
  /** The SQS message that recorded the last attempt (its id is the same on every redelivery). */
  lastMessageId: v.optional(v.string()),
  nextAttemptAt: v.optional(v.string()),
  /** The latest attempts, oldest first (`attemptLogLimit` at most). */
  attemptLog: v.optional(v.array(AttemptEntrySchema), () => []),
  /** Set while a redelivery the caller asked for is pending: its attempt is a single one. */
  redeliveryRequestedAt: v.optional(v.string()),
  /** When the latest redelivery was asked for: the next waits a minute after it (functions/domain/redelivery-limits.ts). */
  lastRedeliveryAt: v.optional(v.string()),
  /**
   * The attempt whose POST started and whose outcome is not recorded yet: still set when the next
   * message comes, that POST was cut (a crash mid-send) and is logged as an `interrupted` attempt.
   */
  sending: v.optional(v.object({ attempt: v.number(), at: v.string() })),
});

/**
 * The delivery item as its writer gives it: its schema, and for operators its run, event (and step,
 * for a step event) and end.
 */
export const storedDelivery = storedItem(DeliveryItemSchema, ['jobId', 'event', 'nodeId', 'deliveredAt', 'failedAt']);

/**
 * The step events a run has sent (`RUN#<job>`, `STEPEVENTS`; functions/store/lifecycle-webhook-deliveries.ts):
 * added to once with each step event's delivery item, in one transaction, on the condition that it
 * is below the cap. Kept as long as its run (`ttl`).
 */
export const StepEventCountSchema = v.object({ sent: counter });
export const storedStepEventCount = storedItem(StepEventCountSchema, ['jobId']);
