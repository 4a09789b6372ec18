/**
 * The lifecycle events' pure rules (functions/domain/lifecycle-webhooks.ts) and the Idempotency-Key's
 * reading of `webhookEvents` (functions/domain/idempotency-key.ts), without I/O.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { requestFingerprint } from '../functions/domain/idempotency-key.ts';
import {
  deliveryName,
  deliveryOfName,
  eventfulSteps,
  notifiesStart,
  notifiesStepEnd,
  sendsEvent,
} from '../functions/domain/lifecycle-webhooks.ts';
import { StepStatus } from '../platform/run-statuses.ts';
import { lifecycleEvents, stepEventCap } from '../schemas/webhook-events.ts';

const target = { routeKey: 'POST /workflows/{id}/runs', pathParameters: { id: 'w' } };

describe('the Idempotency-Key reads webhookEvents as a set', () => {
  it('the same events in another order are the same request; other events are another', () => {
    const body = { callbackUrl: 'https://example.com/h', webhookEvents: ['run.started', 'step.completed'] };
    const reordered = { callbackUrl: 'https://example.com/h', webhookEvents: ['step.completed', 'run.started'] };
    expect(requestFingerprint(target, reordered)).toBe(requestFingerprint(target, body));
    expect(requestFingerprint(target, { ...body, webhookEvents: ['run.started'] })).not.toBe(
      requestFingerprint(target, body),
    );
    expect(requestFingerprint(target, { callbackUrl: body.callbackUrl })).not.toBe(requestFingerprint(target, body));
  });

  it('a body without them is fingerprinted exactly as before, so remembered answers still match', () => {
    const body = { inputs: { topic: 'otters' }, callbackUrl: 'https://example.com/h' };
    const before = createHash('sha256')
      .update(`${target.routeKey}\n${JSON.stringify(target.pathParameters)}\n${JSON.stringify(body)}`)
      .digest('hex');
    expect(requestFingerprint(target, body)).toBe(before);
  });
});

describe('which events a run sends', () => {
  it("without a choice, its end only (the contract's webhook); with one, exactly what it chose", () => {
    const sent = (choice?: string[]) => lifecycleEvents.filter((e) => sendsEvent(choice, e));
    expect(sent()).toEqual(['run.completed', 'run.failed', 'run.cancelled', 'run.stopped']);
    expect(sent(['step.failed', 'run.failed'])).toEqual(['step.failed', 'run.failed']);
    expect(notifiesStart(undefined)).toBe(false);
    expect(notifiesStart(['run.started'])).toBe(true);
  });

  it(`marks only the ends it chose, of the first ${stepEventCap} steps in the workflow's order`, () => {
    const order = Array.from({ length: stepEventCap + 5 }, (_, i) => `n${i}`);
    expect(eventfulSteps(['run.started', 'run.completed'], order)).toBeUndefined();
    const eventSteps = eventfulSteps(['step.completed'], order);
    expect(eventSteps).toEqual(order.slice(0, stepEventCap));
    const run = { webhookEvents: ['step.completed'], eventSteps };
    expect(notifiesStepEnd(run, 'n0', StepStatus.completed)).toBe(true);
    expect(notifiesStepEnd(run, 'n0', StepStatus.failed)).toBe(false);
    expect(notifiesStepEnd(run, 'n0', StepStatus.skipped)).toBe(false);
    expect(notifiesStepEnd(run, `n${stepEventCap}`, StepStatus.completed)).toBe(false);
    expect(notifiesStepEnd({}, 'n0', StepStatus.completed)).toBe(false);
  });

  it("names each delivery, a run event's as the end's always was, and reads the name back", () => {
    expect(deliveryName('run.completed')).toBe('run.completed');
    expect(deliveryName({ event: 'step.failed', nodeId: 'a#b' })).toBe('step.failed#a#b');
    expect(deliveryOfName('step.failed#a#b')).toEqual({ event: 'step.failed', nodeId: 'a#b' });
    expect(deliveryOfName('run.started')).toEqual({ event: 'run.started' });
    expect(deliveryOfName('step.completed')).toBeUndefined();
    expect(deliveryOfName('run.completed#x')).toBeUndefined();
    expect(deliveryOfName('nonsense')).toBeUndefined();
  });
});
