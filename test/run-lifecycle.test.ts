/** The run's lifecycle module: its rules, its one-source statuses, and the table in the docs. */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  cancelStatus,
  claimedView,
  holdsEndedRun,
  isDone,
  isLastCount,
  lifecycleTable,
  progress,
  releasesSuccessors,
  runTransitions,
  runViewStatus,
  stepQueuedView,
  stepViewStatus,
  storedRunStatuses,
  storedStepStatuses,
} from '../functions/domain/run-lifecycle.ts';
import { fromCondition, statusValues } from '../functions/store/run/lifecycle-conditions.ts';
import { RunStatus, StepStatus } from '../platform/run-statuses.ts';
import { runStatuses, stepStatuses } from '../schemas/run-words.ts';

const root = new URL('..', import.meta.url).pathname;

describe('run lifecycle rules', () => {
  it('a cancel stops a run with a completed step, else cancels it', () => {
    expect(cancelStatus(0)).toBe('cancelled');
    expect(cancelStatus(2)).toBe('stopped');
  });

  it('a run is done once every step is counted, and only a completed step can be the last count', () => {
    expect(isDone({ stepsCompleted: 2, stepsSkipped: 1, stepsTotal: 3 })).toBe(true);
    expect(isDone({ stepsCompleted: 1, stepsSkipped: 1, stepsTotal: 3 })).toBe(false);
    expect(isLastCount({ stepsCompleted: 1, stepsSkipped: 1, stepsTotal: 3 }, 'completed')).toBe(true);
    expect(isLastCount({ stepsCompleted: 1, stepsSkipped: 1, stepsTotal: 3 }, 'skipped')).toBe(false);
    expect(isLastCount({ stepsCompleted: 0, stepsSkipped: 0, stepsTotal: 3 }, 'completed')).toBe(false);
  });

  it('progress is completed steps in whole percent', () => {
    expect(progress(1, 3)).toBe(33);
    expect(progress(0, 0)).toBe(0);
  });

  it('a completed or skipped step releases its successors; a failed or unknown one does not', () => {
    expect(releasesSuccessors('completed')).toBe(true);
    expect(releasesSuccessors('skipped')).toBe(true);
    expect(releasesSuccessors('failed')).toBe(false);
    expect(releasesSuccessors('unknown')).toBe(false);
    expect(releasesSuccessors(undefined)).toBe(false);
  });

  it('what a caller reads of a run and its steps', () => {
    expect(runViewStatus('queued', true)).toBe('claimed');
    expect(runViewStatus('queued', false)).toBe('queued');
    expect(runViewStatus('processing', true)).toBe('processing');
    expect(stepViewStatus('processing', false, undefined)).toBe('queued');
    expect(stepViewStatus('cancelled', false, undefined)).toBe('skipped');
    expect(stepViewStatus('processing', false, { status: 'completed' })).toBe('processing');
    expect(stepViewStatus('stopped', false, { status: 'completed' })).toBe('unknown');
    expect(stepViewStatus('stopped', true, { status: 'completed' })).toBe('completed');
    expect(stepViewStatus('failed', false, { status: 'processing' })).toBe('unknown');
  });

  it('a live claim holds an ended run; a released or expired one does not', () => {
    const now = new Date('2026-01-01T00:00:00Z');
    expect(holdsEndedRun({ status: 'processing', attempts: 1, leaseUntil: '2026-01-01T00:01:00Z' }, now)).toBe(true);
    expect(holdsEndedRun({ status: 'processing', attempts: 1, leaseUntil: new Date(0).toISOString() }, now)).toBe(
      false,
    );
    expect(holdsEndedRun({ status: 'processing', leaseUntil: '2026-01-01T00:01:00Z' }, now)).toBe(false);
  });

  it("the store's conditions come from the moves' `from`", () => {
    expect(fromCondition(runTransitions.countStep)).toBe('#status IN (:queued, :processing)');
    expect(fromCondition(runTransitions.countSweepRefusal)).toBe('#status = :queued');
    expect(fromCondition({ from: ['none', 'processing'] })).toBe('(attribute_not_exists(PK) OR #status = :processing)');
    expect(statusValues('queued', 'processing')).toEqual({ ':queued': 'queued', ':processing': 'processing' });
  });
});

describe('one source for the statuses', () => {
  it('the public picklists are the stored statuses plus what only a caller reads', () => {
    // `waiting` is stored only: a run queued behind another reads `queued`.
    expect(new Set(runStatuses)).toEqual(
      new Set([...storedRunStatuses.filter((s) => s !== RunStatus.waiting), claimedView]),
    );
    expect(new Set(stepStatuses)).toEqual(new Set([...storedStepStatuses, stepQueuedView]));
    expect(storedStepStatuses).toContain(StepStatus.unknown);
  });

  /**
   * The same words in other machines, counted per file: a deferred run's `cancelled`, a webhook
   * delivery's `failed`, a provider file's `processing`, a missing node's step type, SQS's code
   * `unknown`, and a provider's job (Replicate's `processing`, `failed`, `canceled`; our JobState
   * and the verdict on it). Any other run or step status spelled outside the lifecycle fails here.
   */
  const otherMachines: Record<string, number> = {
    // A bulk action's and its targets' outcomes (cancelled, skipped, failed; running, done).
    'functions/app/bulk-cancel.ts': 7,
    'functions/app/deliver-endpoint-webhook.ts': 1,
    'functions/app/deliver-webhook.ts': 1,
    'functions/app/dispatch-deferred.ts': 2,
    'functions/app/provider-job.ts': 6,
    'functions/app/read-run.ts': 2,
    'functions/app/step/check-job.ts': 1,
    'functions/domain/deferred-run-lifetime.ts': 2,
    'functions/domain/run-view.ts': 1,
    // An attempt's outcome (completed, failed) in a step's history.
    'functions/domain/step-history.ts': 3,
    'functions/domain/webhook.ts': 2,
    'functions/nodes/executors/types.ts': 1,
    'functions/nodes/providers/fal.ts': 3,
    'functions/nodes/providers/replicate.ts': 4,
    'functions/nodes/providers/types.ts': 1,
    'functions/store/deferred-runs.ts': 3,
    // The bulk action's statuses and its targets' outcomes, as their item schemas read them.
    'functions/store/items/bulk-actions.ts': 3,
    'functions/store/run/runs.ts': 1,
    'functions/store/webhook-endpoints.ts': 2,
    'functions/workers/deferred-dispatcher.ts': 1,
  };

  it('no status string literal appears in functions/ outside the lifecycle module', () => {
    const statuses = [...new Set([...runStatuses, ...stepStatuses])].join('|');
    const literal = new RegExp(`['"](${statuses})['"]`, 'g');
    const files = (readdirSync(join(root, 'functions'), { recursive: true }) as string[])
      .filter((f) => /\.(ts|mjs)$/.test(f))
      .map((f) => relative(root, join(root, 'functions', f)));
    const found: Record<string, number> = {};
    for (const file of files) {
      // The view statuses only a caller reads (`claimed`, a step's `queued`).
      if (file === 'functions/domain/run-lifecycle.ts') continue;
      const count = readFileSync(join(root, file), 'utf8').match(literal)?.length ?? 0;
      if (count > 0) found[file] = count;
    }
    expect(found).toEqual(otherMachines);
  });
});

describe('docs/architecture.md', () => {
  it('shows the lifecycle as the module holds it', () => {
    expect(readFileSync(join(root, 'docs/architecture.md'), 'utf8')).toContain(lifecycleTable());
  });
});
