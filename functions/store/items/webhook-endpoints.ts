/**
 * A team's webhook endpoints, their slots, and their deliveries. One family of the stored items:
 * see item.ts for how every item is read and written.
 */
import * as v from 'valibot';
import { DeliveryItemSchema } from './deliveries.ts';
import { storedItem } from './item.ts';

/**
 * A team's webhook endpoint (`TEAM#<team>`, `WHENDPOINT#<id>`; functions/store/webhook-endpoints.ts).
 * Its secret signs every delivery, so it is stored (the table is encrypted at rest) and never
 * answered after its creation or rotation; the secret it replaced signs beside it until
 * `previousSecretUntil`. `disabled` is always written: the operator events' filter matches its change.
 */
export const WebhookEndpointItemSchema = v.object({
  endpointId: v.string(),
  teamId: v.string(),
  url: v.string(),
  events: v.array(v.string()),
  workflowIds: v.optional(v.array(v.string())),
  tags: v.optional(v.array(v.string())),
  description: v.optional(v.string()),
  secret: v.string(),
  previousSecret: v.optional(v.string()),
  previousSecretUntil: v.optional(v.string()),
  disabled: v.boolean(),
  disabledReason: v.optional(v.picklist(['requested', 'failing'])),
  /** When its first failed attempt since its last delivered one was made. */
  failingSince: v.optional(v.string()),
  /** When the failures disabled it (operators read it; the operator event carries it). */
  disabledAt: v.optional(v.string()),
  createdAt: v.string(),
  updatedAt: v.string(),
});
export type WebhookEndpointItem = v.InferOutput<typeof WebhookEndpointItemSchema>;
export const storedWebhookEndpoint = storedItem(WebhookEndpointItemSchema);
/** A team's endpoints under their cap (functions/store/webhook-endpoints.ts `putEndpoint`): per endpoint, its creation time. */
export const EndpointSlotsItemSchema = v.object({ slots: v.record(v.string(), v.string()) });
export const storedEndpointSlots = storedItem(EndpointSlotsItemSchema);
/** What the operator events read of an endpoint's change (never its secrets). */
export const WebhookEndpointEventImageSchema = v.pick(WebhookEndpointItemSchema, [
  'endpointId',
  'teamId',
  'url',
  'disabled',
  'disabledReason',
  'failingSince',
  'disabledAt',
]);

/**
 * One delivery of an endpoint (`WHDELIVERY#<endpoint>`, `DELIVERY#<deliveryId>`): the event, its run,
 * and the attempts as a run's delivery keeps them (`DeliveryItemSchema`); kept as long as its run.
 */
export const EndpointDeliveryItemSchema = v.object({
  ...DeliveryItemSchema.entries,
  deliveryId: v.string(),
  endpointId: v.string(),
  teamId: v.string(),
  event: v.string(),
  jobId: v.optional(v.string()),
  createdAt: v.string(),
  deliveredAt: v.optional(v.string()),
  failedAt: v.optional(v.string()),
});
export type EndpointDeliveryItem = v.InferOutput<typeof EndpointDeliveryItemSchema>;
export const storedEndpointDelivery = storedItem(EndpointDeliveryItemSchema);
