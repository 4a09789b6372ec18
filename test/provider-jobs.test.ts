/**
 * The pure rules of provider jobs (functions/domain/provider-jobs.ts): deadlines, the polling
 * schedule, the busy provider's backoff, webhook tokens, and the bounds that keep a run's chain of
 * queued hops finite with Lambda's loop guard set to Allow.
 */
import { describe, expect, it } from 'vitest';
import {
  firstPollSeconds,
  guardVerdict,
  jobDeadline,
  jobDeadlineMinutes,
  maxMessagesPerStep,
  maxPollSeconds,
  maxProviderTries,
  maxRetryDelaySeconds,
  newWebhookToken,
  pollDelaySeconds,
  pollsBeforeDeadline,
  stepRetryDelaySeconds,
  supersededIntents,
  webhookTokenHash,
  webhookTokenMatches,
} from '../functions/domain/provider-jobs.ts';
import { stepExecutionAttempts } from '../functions/domain/step-attempts.ts';
import { maxStepsPerWorkflow } from '../functions/domain/workflow-graph.ts';

describe('provider jobs', () => {
  it('gives each node type a deadline: minutes for text, half an hour for 3D and rigging', () => {
    const at = new Date('2026-11-26T00:00:00Z');
    expect(jobDeadline('LlmWorker', at).toISOString()).toBe('2026-11-26T00:05:00.000Z');
    expect(jobDeadline('TwoDToThreeD', at).toISOString()).toBe('2026-11-26T00:30:00.000Z');
    expect(jobDeadline('AutoRigger', at).toISOString()).toBe('2026-11-26T00:30:00.000Z');
    expect(Math.max(...Object.values(jobDeadlineMinutes))).toBe(30);
    expect(jobDeadline('SomethingElse', at).toISOString()).toBe('2026-11-26T00:10:00.000Z');
  });

  it('polls from about 5 s, twice as long each time, never more than 2 minutes apart', () => {
    expect(pollDelaySeconds(0, 0)).toBe(firstPollSeconds);
    expect([1, 2, 3, 4, 5, 6, 10].map((poll) => pollDelaySeconds(poll, 0))).toEqual([10, 20, 40, 80, 120, 120, 120]);
    for (let poll = 0; poll < 20; poll++) {
      for (const random of [0, 0.5, 0.999]) {
        const delay = pollDelaySeconds(poll, random);
        expect(delay).toBeGreaterThanOrEqual(1);
        expect(delay).toBeLessThanOrEqual(maxPollSeconds);
        expect(delay).toBeGreaterThanOrEqual(Math.floor(0.8 * Math.min(5 * 2 ** poll, maxPollSeconds)));
      }
    }
  });

  it('waits a busy provider out with jitter, never less than its Retry-After, never past SQS’s 15 minutes', () => {
    expect(stepRetryDelaySeconds(1, undefined, 0)).toBe(1);
    expect(stepRetryDelaySeconds(1, undefined, 0.999)).toBe(5);
    expect(stepRetryDelaySeconds(3, undefined, 0.999)).toBe(20);
    expect(stepRetryDelaySeconds(1, 30, 0)).toBe(30);
    expect(stepRetryDelaySeconds(20, undefined, 0.999)).toBe(maxRetryDelaySeconds);
    expect(stepRetryDelaySeconds(1, 5000, 0.5)).toBe(maxRetryDelaySeconds);
  });

  it('stores only a hash of the webhook token and compares it in constant time', () => {
    const token = newWebhookToken();
    expect(token).toMatch(/^[\w-]{32}$/);
    expect(newWebhookToken()).not.toBe(token);
    const hash = webhookTokenHash(token);
    expect(hash).not.toContain(token);
    expect(webhookTokenMatches(token, hash)).toBe(true);
    expect(webhookTokenMatches(`${token}x`, hash)).toBe(false);
    expect(webhookTokenMatches(token, undefined)).toBe(false);
  });

  it('bounds the queued hops of a step, and so of a run, with the loop guard set to Allow', () => {
    // A 30-minute job: 5, 10, 20, 40, 80 s, then every 2 minutes (at 80 % of each at most).
    expect(pollsBeforeDeadline('TwoDToThreeD')).toBeLessThanOrEqual(25);
    expect(pollsBeforeDeadline('LlmWorker')).toBeLessThan(pollsBeforeDeadline('TwoDToThreeD'));
    const perStep = maxMessagesPerStep('AutoRigger', stepExecutionAttempts);
    const claims = stepExecutionAttempts + maxProviderTries;
    // Per claim a guard of its submit (sent again once if early); per lost worker the retry its guard sends.
    expect(perStep).toBe(claims + pollsBeforeDeadline('AutoRigger') + 2 + 2 * claims + stepExecutionAttempts);
    // The longest run: 500 steps, each at its most.
    expect(maxStepsPerWorkflow * perStep).toBeLessThan(31_000);
  });

  it('takes a step over from a claim that died between its submit and its record, and from no other', () => {
    const now = new Date('2026-12-07T10:00:00Z');
    const lease = (seconds: number) => new Date(now.getTime() + seconds * 1000).toISOString();
    const unrecorded = { status: 'processing', attempts: 2, leaseUntil: lease(-1), providerJob: { attempt: 2 } };
    expect(guardVerdict(unrecorded, 2, now)).toEqual({ kind: 'retry' });
    // Come early (a clock ahead): again when the lease ends.
    expect(guardVerdict({ ...unrecorded, leaseUntil: lease(3.5) }, 2, now)).toEqual({ kind: 'early', seconds: 5 });
    // Recorded, given back to a busy provider, taken over, or ended: nothing to do.
    expect(guardVerdict({ ...unrecorded, providerJob: { attempt: 2, id: 'p1' } }, 2, now)).toEqual({ kind: 'done' });
    expect(guardVerdict({ ...unrecorded, providerJob: undefined }, 2, now)).toEqual({ kind: 'done' });
    expect(guardVerdict({ ...unrecorded, attempts: 3 }, 2, now)).toEqual({ kind: 'done' });
    expect(guardVerdict({ ...unrecorded, status: 'completed' }, 2, now)).toEqual({ kind: 'done' });
    expect(guardVerdict(undefined, 2, now)).toEqual({ kind: 'done' });
  });

  it('carries the intents whose job was never recorded, and only those', () => {
    const a = { tokenHash: 'a', intendedAt: '2026-12-07T10:00:00Z' };
    const b = { tokenHash: 'b', intendedAt: '2026-12-07T10:02:01Z' };
    expect(supersededIntents(undefined, 2)).toEqual([]);
    expect(supersededIntents({ attempt: 1, ...a }, 2)).toEqual([a]);
    expect(supersededIntents({ attempt: 2, ...b, superseded: [a] }, 3)).toEqual([a, b]);
    // A recorded job's claim looked for them already; an intent of this very claim is not its own orphan.
    expect(supersededIntents({ attempt: 2, ...b, id: 'p1', superseded: [a] }, 3)).toEqual([]);
    expect(supersededIntents({ attempt: 3, ...b }, 3)).toEqual([]);
    // An intent written before intents were dated cannot be looked for.
    expect(supersededIntents({ attempt: 1, tokenHash: 'c' }, 2)).toEqual([]);
  });
});
