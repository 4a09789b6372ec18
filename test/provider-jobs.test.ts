/**
 * The pure rules of provider jobs (functions/domain/provider-jobs.ts): deadlines, the polling
 * schedule, the busy provider's backoff, webhook tokens, and the bounds that keep a run's chain of
 * queued hops finite with Lambda's loop guard set to Allow.
 */
import { describe, expect, it } from 'vitest';
import {
  firstPollSeconds,
  jobDeadline,
  jobDeadlineMinutes,
  maxMessagesPerStep,
  maxPollSeconds,
  maxProviderTries,
  maxRetryDelaySeconds,
  newWebhookToken,
  pollDelaySeconds,
  pollsBeforeDeadline,
  retryDelaySeconds,
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
    expect(retryDelaySeconds(1, undefined, 0)).toBe(1);
    expect(retryDelaySeconds(1, undefined, 0.999)).toBe(5);
    expect(retryDelaySeconds(3, undefined, 0.999)).toBe(20);
    expect(retryDelaySeconds(1, 30, 0)).toBe(30);
    expect(retryDelaySeconds(20, undefined, 0.999)).toBe(maxRetryDelaySeconds);
    expect(retryDelaySeconds(1, 5000, 0.5)).toBe(maxRetryDelaySeconds);
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
    expect(perStep).toBe(stepExecutionAttempts + maxProviderTries + pollsBeforeDeadline('AutoRigger') + 2);
    // The longest run: 500 steps, each at its most.
    expect(maxStepsPerWorkflow * perStep).toBeLessThan(20_000);
  });
});
