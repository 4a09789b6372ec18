/**
 * Lifecycle webhook events (schemas/webhook-events.ts): which events a run sends, how each
 * delivery is named, and the bound on a run's step events. Pure.
 *
 * - A run that chose nothing (`webhookEvents` absent) sends its end event only: the contract's
 *   webhook, unchanged. A run that chose sends exactly the events it chose, its end event included
 *   only when chosen.
 * - Each event is its own delivery, named `<event>` for a run event and `<event>#<nodeId>` for a
 *   step event: its delivery item is `WEBHOOK#<name>` and its `webhook-id` is derived from the name,
 *   so a run event's id is the one the end webhook always had.
 * - A run sends at most `stepEventCap` step events; the count is kept beside its deliveries.
 */

import { StepStatus } from '../../platform/run-statuses.ts';
import {
  type LifecycleEvent,
  lifecycleEvents,
  type StepEvent,
  stepEventCap,
  stepEvents,
} from '../../schemas/webhook-events.ts';
import { isCompleted } from './run-lifecycle.ts';

/** The events a run without `webhookEvents` sends: its end, as the contract's webhook. */
const endEventPrefix = 'run.';

/** Whether a run that chose `webhookEvents` (or nothing) sends `event`. */
export const sendsEvent = (webhookEvents: readonly string[] | undefined, event: LifecycleEvent): boolean =>
  webhookEvents === undefined
    ? event.startsWith(endEventPrefix) && event !== 'run.started'
    : webhookEvents.includes(event);

/** The event of a step's end, if its status gives one. */
export const stepEventOfStatus = (status: string | undefined): StepEvent | undefined =>
  isCompleted(status) ? 'step.completed' : status === StepStatus.failed ? 'step.failed' : undefined;

/**
 * The steps of a run whose ends may give step events: when the run chose one, the first
 * `stepEventCap` of the steps it runs, in the workflow's order (`order`, topological); else none.
 * Fixed at the start, so the steps past the cap are never marked and never invoke the consumer.
 */
export const eventfulSteps = (
  webhookEvents: readonly string[] | undefined,
  order: readonly string[],
): string[] | undefined =>
  webhookEvents?.some((event) => isStepEvent(event)) ? order.slice(0, stepEventCap) : undefined;

/**
 * Whether the step's end write marks the item for the events' stream consumer (`notify`): the run
 * chose the event this end gives, and the step is one of its eventful steps (`eventfulSteps`). A
 * step of a run that chose no step event, or past the cap, is never marked, so the consumer's
 * filter drops its change before any invocation.
 */
export const notifiesStepEnd = (
  run: { webhookEvents?: readonly string[] | undefined; eventSteps?: readonly string[] | undefined },
  nodeId: string,
  status: string,
): boolean => {
  const event = stepEventOfStatus(status);
  return (
    event !== undefined && (run.webhookEvents?.includes(event) ?? false) && (run.eventSteps?.includes(nodeId) ?? false)
  );
};

/** Whether the run's insert is marked for the consumer (`notifyStart`): it chose `run.started`. */
export const notifiesStart = (webhookEvents: readonly string[] | undefined): boolean =>
  webhookEvents?.includes('run.started') ?? false;

/** One delivery of a run's webhook: its event, and the step for a step event. */
export interface DeliveryRef {
  event: LifecycleEvent;
  nodeId?: string | undefined;
}

export const isStepEvent = (event: string): event is StepEvent => stepEvents.includes(event as StepEvent);

/** A delivery named by its event alone is a run event's (the end webhook's, as it always was named). */
export type DeliveryOf = DeliveryRef | LifecycleEvent;

export const refOf = (delivery: DeliveryOf): DeliveryRef =>
  typeof delivery === 'string' ? { event: delivery } : delivery;

/** The delivery's name: `<event>`, or `<event>#<nodeId>` for a step event. */
export const deliveryName = (delivery: DeliveryOf): string => {
  const { event, nodeId } = refOf(delivery);
  return nodeId === undefined ? event : `${event}#${nodeId}`;
};

/** The delivery a name names (the part after `WEBHOOK#` of a delivery item's key); undefined for none. */
export const deliveryOfName = (name: string): DeliveryRef | undefined => {
  const split = name.indexOf('#');
  const event = (split === -1 ? name : name.slice(0, split)) as LifecycleEvent;
  if (!lifecycleEvents.includes(event)) return undefined;
  if (split === -1) return isStepEvent(event) ? undefined : { event };
  return isStepEvent(event) ? { event, nodeId: name.slice(split + 1) } : undefined;
};
