/**
 * A step's history, pure: how a log is cut (its tail, whole characters, marked), what an attempt's
 * entry says of its wait, the bound on a step's entries, and the append its writes make.
 */
import * as v from 'valibot';
import { describe, expect, it } from 'vitest';
import { maxProviderTries } from '../functions/domain/provider-jobs.ts';
import { stepExecutionAttempts } from '../functions/domain/step-attempts.ts';
import {
  capLog,
  completedAttempt,
  completedEntry,
  failedAttempt,
  maxStepAttemptEntries,
  retryWait,
  stepAttemptsOf,
  stepLogCapBytes,
  stepLogs,
} from '../functions/domain/step-history.ts';
import { itemUpdate } from '../functions/store/item-update.ts';
import { StepItemSchema, storedStep } from '../functions/store/items/runs.ts';
import { StepAttemptSchema } from '../schemas/step-attempts.ts';

describe('a step log', () => {
  it('is kept whole within its cap, and empty text is no log', () => {
    expect(capLog('hello\n')).toEqual({ text: 'hello\n', truncated: false, bytes: 6 });
    expect(capLog('')).toBeUndefined();
    expect(stepLogs({ stdout: '', stderr: '' })).toBeUndefined();
    expect(stepLogs({ stdout: 'a', provider: 'b' })).toEqual({
      stdout: { text: 'a', truncated: false, bytes: 1 },
      provider: { text: 'b', truncated: false, bytes: 1 },
    });
  });

  it('past its cap keeps its tail, marked as cut, with its whole length', () => {
    const text = `${'a'.repeat(stepLogCapBytes)}Traceback: the end`;
    const cut = capLog(text);
    expect(cut).toEqual({ text: expect.stringMatching(/Traceback: the end$/), truncated: true, bytes: text.length });
    expect(Buffer.byteLength(cut?.text ?? '')).toBe(stepLogCapBytes);
  });

  it('never cuts a character in two', () => {
    // 3-byte characters over a cap that is not a multiple of 3: the cut moves to the next whole one.
    const text = '€'.repeat(10);
    const cut = capLog(text, 8);
    expect(cut).toEqual({ text: '€€', truncated: true, bytes: 30 });
    expect(cut?.text).not.toContain('\ufffd');
  });
});

describe("an attempt's entry", () => {
  const times = { startedAt: '2026-12-07T10:00:00.000Z', endedAt: '2026-12-07T10:00:01.000Z' };

  it("says the provider's Retry-After set the wait only when the backoff was not longer", () => {
    expect(retryWait(30, 30)).toEqual({ afterSeconds: 30, why: 'retry-after', retryAfterSeconds: 30 });
    expect(retryWait(4, 1)).toEqual({ afterSeconds: 4, why: 'backoff', retryAfterSeconds: 1 });
    expect(retryWait(4, undefined)).toEqual({ afterSeconds: 4, why: 'backoff' });
    // A fractional Retry-After is waited for whole seconds.
    expect(retryWait(2, 1.5)).toEqual({ afterSeconds: 2, why: 'retry-after', retryAfterSeconds: 2 });
  });

  it('a failed attempt is charged nothing unless said, its error cut to 500 characters', () => {
    const failed = failedAttempt(times, {
      error: 'x'.repeat(2000),
      reason: 'provider_unavailable',
      retryClass: 'busy-provider',
      next: retryWait(5, undefined),
    });
    expect(failed).toMatchObject({ outcome: 'failed', chargedHundredths: 0, retryClass: 'busy-provider' });
    expect(failed.error).toHaveLength(500);
    expect(v.is(StepAttemptSchema, failed)).toBe(true);
    const completed = completedAttempt(times, 7, { provider: 'replicate', model: 'm', providerJobId: 'p1' });
    expect(completed).toEqual({
      ...times,
      outcome: 'completed',
      provider: 'replicate',
      model: 'm',
      providerJobId: 'p1',
      chargedHundredths: 7,
    });
    expect(v.is(StepAttemptSchema, completed)).toBe(true);
  });

  it("a step's entries are bounded by its retry limits, and fit its item many times over", () => {
    expect(maxStepAttemptEntries).toBe(maxProviderTries + 1 + stepExecutionAttempts + 1);
    const entry = failedAttempt(
      times,
      {
        error: 'x'.repeat(2000),
        reason: 'provider_unavailable',
        retryClass: 'busy-provider',
        next: retryWait(900, 900),
      },
      { provider: 'replicate', model: 'owner/a-model-name-of-some-length', providerJobId: 'p'.repeat(40) },
    );
    const entries = JSON.stringify(Array.from({ length: maxStepAttemptEntries }, () => entry));
    const logs = 3 * stepLogCapBytes;
    // With a PythonSandbox result's 256 KB at most, far within DynamoDB's 400 KB item.
    expect(entries.length + logs + 256 * 1024).toBeLessThan(350 * 1024);
  });
});

describe("the step's writes", () => {
  it('append an entry to the attempt log, made when absent, in the update they make anyway', () => {
    const entry = completedAttempt({ endedAt: '2026-12-07T10:00:01.000Z' }, 0);
    const update = itemUpdate(storedStep, { set: { nodeId: 'a' }, append: { attemptLog: [entry] } });
    expect(update.UpdateExpression).toContain(
      '#attemptLog = list_append(if_not_exists(#attemptLog, :empty_list), :append_attemptLog)',
    );
    expect(update.ExpressionAttributeValues).toMatchObject({ ':empty_list': [], ':append_attemptLog': [entry] });
    // The item's one schema reads what was written.
    expect(v.is(StepItemSchema.entries.attemptLog, [entry])).toBe(true);
  });
});

describe("a step's attempts as read", () => {
  const completed = 'completed';
  const item = { status: completed, endedAt: '2026-12-07T10:00:02.000Z', chargeHundredths: 40 };

  it('a step that completed at its first attempt stores no entry: its one attempt is its own fields', () => {
    const read = stepAttemptsOf(
      {
        ...item,
        startedAt: '2026-12-07T10:00:00.000Z',
        model: { provider: 'replicate', model: 'm' },
        providerJob: { id: 'p1' },
      },
      completed,
    );
    expect(read).toEqual([
      {
        startedAt: '2026-12-07T10:00:00.000Z',
        endedAt: item.endedAt,
        outcome: 'completed',
        provider: 'replicate',
        model: 'm',
        providerJobId: 'p1',
        chargedHundredths: 40,
      },
    ]);
    // Only after earlier attempts does the end record its own.
    expect(completedEntry(undefined, () => read[0] as never)).toBeUndefined();
    expect(completedEntry(read, () => read[0] as never)).toEqual(read[0]);
  });

  it('a log that ends with its completion is read as it is; one that does not gets it; an unfinished step none', () => {
    const refused = failedAttempt(
      { endedAt: '2026-12-07T10:00:01.000Z' },
      { error: 'busy', reason: 'provider_unavailable', retryClass: 'busy-provider' },
    );
    const done = completedAttempt({ endedAt: item.endedAt }, 40);
    expect(stepAttemptsOf({ ...item, attemptLog: [refused, done] }, completed)).toEqual([refused, done]);
    expect(stepAttemptsOf({ ...item, attemptLog: [refused] }, completed)).toEqual([refused, done]);
    expect(stepAttemptsOf({ status: 'processing', chargeHundredths: 0, attemptLog: [refused] }, completed)).toEqual([
      refused,
    ]);
    expect(stepAttemptsOf(undefined, completed)).toEqual([]);
  });
});
