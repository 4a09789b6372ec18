/**
 * Lifecycle webhook events (our design): the events a run start may choose to hear about
 * with `webhookEvents`. Without it a run's webhook is the contract's: its end event only.
 *
 * - `run.started`: the run was created (queued, its estimate held);
 * - `step.completed`, `step.failed`: one step ended so (at most `stepEventCap` step events a run);
 * - `run.completed`, `run.failed`, `run.cancelled`, `run.stopped`: the run ended so.
 *
 * The list names each event at most once, at least one, and needs a `callbackUrl` to send them to.
 * Pure data and schemas: no import of the run schemas (schemas/lifecycle-webhooks.ts has the bodies).
 */
import * as v from 'valibot';

/** The events a run's webhook can carry, in the order a run gives them. */
export const lifecycleEvents = [
  'run.started',
  'step.completed',
  'step.failed',
  'run.completed',
  'run.failed',
  'run.cancelled',
  'run.stopped',
] as const;
export type LifecycleEvent = (typeof lifecycleEvents)[number];

/** The events of one step's end. */
export const stepEvents = ['step.completed', 'step.failed'] as const satisfies readonly LifecycleEvent[];
export type StepEvent = (typeof stepEvents)[number];

/** The events whose body is the Run plus `event` (the end webhook's body). */
export const runEvents = [
  'run.started',
  'run.completed',
  'run.failed',
  'run.cancelled',
  'run.stopped',
] as const satisfies readonly LifecycleEvent[];

/** Most step events one run sends; past it, none (the end event's body carries every step). */
export const stepEventCap = 50;

export const webhookEventsMessages = {
  empty: 'choose at least one event',
  duplicate: 'an event is given at most once',
  needsCallbackUrl: 'webhookEvents needs a callbackUrl to send the events to',
} as const;

export const LifecycleEventSchema = v.picklist(lifecycleEvents);

/** The run start's `webhookEvents`. */
export const WebhookEventsSchema = v.pipe(
  v.array(LifecycleEventSchema),
  v.minLength(1, webhookEventsMessages.empty),
  v.check((events) => new Set(events).size === events.length, webhookEventsMessages.duplicate),
  // The check above, for the OpenAPI document.
  v.metadata({ uniqueItems: true }),
  v.description(
    'Our design: the webhook events to send to `callbackUrl`, each its own delivery. Without it, only the ' +
      `run's end event is sent. At most ${stepEventCap} step events a run; the end event carries every step.`,
  ),
);
export type WebhookEvents = v.InferOutput<typeof WebhookEventsSchema>;

/**
 * What is wrong with a request's `webhookEvents` that its schema cannot see (it reads one field):
 * chosen events with nowhere to send them. Undefined when nothing is.
 */
export const webhookEventsProblem = (request: {
  webhookEvents?: readonly string[] | undefined;
  callbackUrl?: string | undefined;
}): string | undefined =>
  request.webhookEvents !== undefined && request.callbackUrl === undefined
    ? webhookEventsMessages.needsCallbackUrl
    : undefined;
