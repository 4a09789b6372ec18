/**
 * The step plan (functions/domain/step-plan.ts): the exactly-once and money rules of the step path
 * as a pure function of what a delivery read, with no emulator. The integration tests
 * (run-redelivery, run-inline, run-end, run-ledger) check the same rules through the real handler.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { predecessors, type StepState, successors } from '../functions/domain/run-graph.ts';
import { releasesSuccessors, storedRunStatuses, storedStepStatuses } from '../functions/domain/run-lifecycle.ts';
import { stepExecutionAttempts } from '../functions/domain/step-attempts.ts';
import {
  type CountFacts,
  failureRecordTries,
  type NodeErrorKind,
  planClaim,
  planCount,
  planDeadlineRetry,
  planFailedExecution,
  planInline,
  planNodeError,
  planRead,
  planRelease,
  planReleaseRead,
  planReread,
  type RunFacts,
  releaseReadIds,
  settleMarginMs,
} from '../functions/domain/step-plan.ts';
import type { Canvas } from '../functions/nodes/catalogue/canvas.ts';
import { StepStatus, type StoredRunStatus, type StoredStepStatus } from '../platform/run-statuses.ts';
import { canvasNode } from './support/canvas.ts';

const runFacts = (over: Partial<RunFacts> = {}): RunFacts => ({
  status: 'processing',
  doneSteps: new Set(),
  stepsCompleted: 0,
  stepsSkipped: 0,
  stepsTotal: 3,
  ...over,
});

const edge = (source: string, target: string) => ({
  id: `${source}-${target}`,
  source,
  target,
  sourceHandle: 'text',
  targetHandle: 'text',
});

/** A canvas of nodes `a`, `b`, ... (a model step where `models` names it) and the given edges. */
const canvasOf = (ids: readonly string[], edges: [string, string][], models: readonly string[] = []): Canvas => ({
  nodes: ids.map((id) => canvasNode(id, models.includes(id) ? 'LlmWorker' : 'TextConsole')),
  edges: edges.map(([s, t]) => edge(s, t)),
});

const runStatus = fc.constantFrom(...storedRunStatuses);
const stepStatus = fc.constantFrom(...storedStepStatuses);
const charge = fc.integer({ min: 0, max: 1_000_000 });

describe('what a delivery does with the step it read', () => {
  it('a message of an ended run runs nothing: it retires a step that finished uncounted, and settles an unsettled run', () => {
    fc.assert(
      fc.property(
        fc.constantFrom<StoredRunStatus>('completed', 'failed', 'cancelled', 'stopped'),
        fc.option(stepStatus, { nil: undefined }),
        fc.boolean(),
        fc.boolean(),
        (status, own, counted, finalized) => {
          const run = runFacts({
            status,
            doneSteps: new Set(counted ? ['a'] : []),
            ...(finalized && { finalizedAt: '2026-12-07T00:00:00.000Z' }),
          });
          const plan = planRead(run, 'a', own === undefined ? undefined : { status: own, chargeHundredths: 7 });
          expect(plan).toEqual({ kind: 'after-end', retire: own === 'completed' && !counted, settle: !finalized });
        },
      ),
    );
  });

  it('in a run in progress: a finished step is counted again at its stored charge, a dead end does nothing, else it runs', () => {
    fc.assert(
      fc.property(
        fc.constantFrom<StoredRunStatus>('queued', 'processing'),
        fc.option(stepStatus),
        charge,
        (status, own, c) => {
          const plan = planRead(
            runFacts({ status }),
            'a',
            own === null ? undefined : { status: own, chargeHundredths: c },
          );
          if (own === 'completed' || own === 'skipped')
            expect(plan).toEqual({ kind: 'count', status: own, chargeHundredths: c });
          else if (own === 'failed' || own === 'unknown') expect(plan).toEqual({ kind: 'nothing' });
          else expect(plan).toEqual({ kind: 'run' });
        },
      ),
    );
  });
});

describe("a model step's claim", () => {
  it('refused: nothing runs; a job already at a provider gets a poll', () => {
    expect(planClaim({ claimed: false, waitsOnJob: true })).toEqual({ kind: 'nothing', poll: true });
    expect(planClaim({ claimed: false, waitsOnJob: false })).toEqual({ kind: 'nothing', poll: false });
  });

  it('fails the step once the claims that lost their worker reach the attempts, a busy provider’s tries not counted', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 30 }), fc.integer({ min: 0, max: 30 }), (attempt, tries) => {
        fc.pre(tries < attempt);
        const lost = attempt - 1 - tries;
        const plan = planClaim({ claimed: true, attempt, providerTries: tries });
        expect(plan).toEqual(lost >= stepExecutionAttempts ? { kind: 'fail', lostWorkers: lost } : { kind: 'run' });
      }),
    );
    expect(planClaim({ claimed: true, attempt: stepExecutionAttempts + 1, providerTries: 0 }).kind).toBe('fail');
    expect(planClaim({ claimed: true, attempt: stepExecutionAttempts, providerTries: 0 }).kind).toBe('run');
  });
});

describe("a node's throw", () => {
  const kinds: NodeErrorKind[] = ['step-failed', 'deadline', 'busy-provider', 'secret', 'unexpected'];

  it('a step run in its predecessor’s invocation never spends an execution on an unexpected throw: its message is sent', () => {
    for (const claimed of [true, false]) {
      expect(planNodeError('unexpected', { claimed, inline: true })).toEqual({ kind: 'to-queue' });
    }
    expect(planNodeError('busy-provider', { claimed: false, inline: true })).toEqual({ kind: 'to-queue' });
  });

  it('each kind, claimed or not, inline or not', () => {
    fc.assert(
      fc.property(fc.constantFrom(...kinds), fc.boolean(), fc.boolean(), (kind, claimed, inline) => {
        const plan = planNodeError(kind, { claimed, inline }).kind;
        if (kind === 'step-failed' || kind === 'secret') expect(plan).toBe('fail');
        else if (kind === 'deadline') expect(plan).toBe('retry-deadline');
        else if (kind === 'busy-provider' && claimed) expect(plan).toBe('retry-busy');
        else expect(plan).toBe(inline ? 'to-queue' : 'count-execution');
      }),
    );
  });

  it('a failed execution: redelivered until the attempts are spent, then the step fails; another delivery’s finish ends it', () => {
    expect(planFailedExecution(null)).toEqual({ kind: 'nothing' });
    expect(planFailedExecution(stepExecutionAttempts - 1)).toEqual({ kind: 'redeliver' });
    expect(planFailedExecution(stepExecutionAttempts)).toEqual({ kind: 'fail' });
  });

  it('a deadline on an unclaimed step: retried after the backoff for its count, failed past the attempts', () => {
    const delay = (tries: number) => tries * 10;
    expect(planDeadlineRetry(null, delay)).toEqual({ kind: 'nothing' });
    expect(planDeadlineRetry(2, delay)).toEqual({ kind: 'retry', delaySeconds: 20 });
    expect(planDeadlineRetry(stepExecutionAttempts, delay)).toEqual({ kind: 'fail' });
  });

  it('recording a failure (or calling a provider after a claim) reads the run again: gone, ended, or going', () => {
    expect(planReread(undefined)).toEqual({ kind: 'gone' });
    expect(planReread({ status: 'processing' })).toEqual({ kind: 'going' });
    expect(planReread({ status: 'cancelled' })).toEqual({ kind: 'ended', settle: true });
    expect(planReread({ status: 'failed', finalizedAt: '2026-12-07T00:00:00.000Z' })).toEqual({
      kind: 'ended',
      settle: false,
    });
    expect(failureRecordTries).toBe(5);
  });
});

describe('a step’s count on its run: the money rules', () => {
  const counted = fc.oneof(
    fc.constant<CountFacts>({ counted: true, ended: true }),
    fc
      .record({ stepsCompleted: fc.nat(5), stepsSkipped: fc.nat(5), stepsTotal: fc.integer({ min: 1, max: 12 }) })
      .map((run): CountFacts => ({ counted: true, ended: false, run })),
    fc
      .record({ runEnded: fc.boolean(), alreadyCounted: fc.boolean(), unsettled: fc.boolean() })
      .map((r): CountFacts => ({ counted: false, ...r })),
  );
  const outcome = fc.record({
    status: fc.constantFrom(StepStatus.completed, StepStatus.skipped),
    chargeHundredths: charge,
  });

  it('only the count that counted a completed step charges it, at its charge; a skipped step is charged nothing', () => {
    fc.assert(
      fc.property(counted, outcome, fc.boolean(), (count, o, here) => {
        const plan = planCount(count, o, here);
        const charges = count.counted && o.status === 'completed';
        expect(plan.charged).toBe(charges ? o.chargeHundredths : undefined);
      }),
    );
  });

  it('a step that finished after its run ended is retired, never charged, and releases nothing', () => {
    fc.assert(
      fc.property(fc.boolean(), fc.boolean(), outcome, fc.boolean(), (alreadyCounted, unsettled, o, here) => {
        const plan = planCount({ counted: false, runEnded: true, alreadyCounted, unsettled }, o, here);
        expect(plan).toEqual({
          charged: undefined,
          retire: !alreadyCounted && o.status === 'completed',
          settle: unsettled,
          run: 'going',
          release: 'none',
        });
      }),
    );
  });

  it('a count an earlier delivery made releases the successors from a read (they may have been sent already)', () => {
    fc.assert(
      fc.property(outcome, fc.boolean(), fc.boolean(), (o, here, unsettled) => {
        const plan = planCount({ counted: false, runEnded: false, alreadyCounted: true, unsettled }, o, here);
        expect(plan).toEqual({ charged: undefined, retire: false, settle: false, run: 'going', release: 'read' });
      }),
    );
  });

  it('the last count ends the run (in its own transaction, or by ending it after); no successor is released then', () => {
    fc.assert(
      fc.property(counted, outcome, fc.boolean(), (count, o, here) => {
        const plan = planCount(count, o, here);
        if (!count.counted) return;
        const done = count.ended || count.run.stepsCompleted + count.run.stepsSkipped >= count.run.stepsTotal;
        expect(plan.run).toBe(count.ended ? 'ended' : done ? 'end' : 'going');
        expect(plan.release).toBe(done ? 'none' : here ? 'finished' : 'read');
        expect(plan.retire).toBe(false);
      }),
    );
  });
});

describe('the successors a finished step releases', () => {
  it("a chain's next step (its only successor, reading from it alone, not a model step) runs in this invocation", () => {
    expect(planRelease(canvasOf(['a', 'b'], [['a', 'b']]), 'a')).toEqual({ kind: 'inline', nodeId: 'b' });
  });

  it('a model step keeps its own message; a fan-out sends every successor; the last step sends nothing', () => {
    expect(planRelease(canvasOf(['a', 'b'], [['a', 'b']], ['b']), 'a')).toEqual({ kind: 'send', nodeIds: ['b'] });
    const fanOut = canvasOf(
      ['a', 'b', 'c'],
      [
        ['a', 'b'],
        ['a', 'c'],
      ],
    );
    expect(planRelease(fanOut, 'a')).toEqual({ kind: 'send', nodeIds: ['b', 'c'] });
    expect(planRelease(fanOut, 'b')).toEqual({ kind: 'send', nodeIds: [] });
  });

  it('a join is released from a read of the steps it reads from', () => {
    const join = canvasOf(
      ['a', 'b', 'c'],
      [
        ['a', 'c'],
        ['b', 'c'],
      ],
    );
    expect(planRelease(join, 'a')).toEqual({ kind: 'read' });
    expect(releaseReadIds(join, 'a').sort()).toEqual(['a', 'b', 'c']);
  });

  /** A random DAG over a..f (edges only forward), some model steps, and items for some steps. */
  const ids = ['a', 'b', 'c', 'd', 'e', 'f'];
  const dag = fc
    .record({
      edges: fc.uniqueArray(
        fc.tuple(fc.integer({ min: 0, max: 5 }), fc.integer({ min: 0, max: 5 })).filter(([s, t]) => s < t),
        { selector: ([s, t]) => `${s}-${t}`, maxLength: 12 },
      ),
      models: fc.subarray(ids),
      items: fc.dictionary(fc.constantFrom(...ids), stepStatus),
      node: fc.constantFrom(...ids),
      status: runStatus,
      counters: fc.record({ stepsCompleted: fc.nat(6), stepsSkipped: fc.nat(6) }),
    })
    .map(({ edges, models, items, node, status, counters }) => ({
      canvas: canvasOf(
        ids,
        edges.map(([s, t]) => [ids[s] as string, ids[t] as string]),
        models,
      ),
      steps: new Map<string, StepState>(
        Object.entries(items).map(([id, s]) => [id, { status: s as StoredStepStatus }]),
      ),
      node,
      run: runFacts({ status, ...counters, stepsTotal: 6 }),
    }));

  it('from a read: only successors whose inputs all finished, none already started but a finished chain step, nothing once the run ended', () => {
    fc.assert(
      fc.property(dag, ({ canvas, steps, node, run }) => {
        const plan = planReleaseRead(canvas, node, run, steps);
        const inProgress = run.status === 'queued' || run.status === 'processing';
        if (!inProgress) {
          expect(plan).toEqual({ send: [], end: false });
          return;
        }
        expect(plan.end).toBe(run.stepsCompleted + run.stepsSkipped >= run.stepsTotal);
        for (const s of plan.send) {
          expect(successors(canvas, node)).toContain(s);
          expect(predecessors(canvas, s).every((p) => releasesSuccessors(steps.get(p)?.status))).toBe(true);
          // Started steps had their message; a chain's next step that finished may have run in a lost invocation.
          if (steps.has(s)) {
            expect(releasesSuccessors(steps.get(s)?.status)).toBe(true);
            expect(planRelease(canvas, node)).toEqual({ kind: 'inline', nodeId: s });
          }
        }
        for (const s of successors(canvas, node)) {
          const ready = predecessors(canvas, s).every((p) => releasesSuccessors(steps.get(p)?.status));
          const chained = planRelease(canvas, node);
          const resent = chained.kind === 'inline' && chained.nodeId === s && releasesSuccessors(steps.get(s)?.status);
          if (ready && (!steps.has(s) || resent)) expect(plan.send).toContain(s);
        }
      }),
    );
  });

  it('without a read: a successor it releases reads from this step alone, so no other delivery released it', () => {
    fc.assert(
      fc.property(dag, ({ canvas, node }) => {
        const plan = planRelease(canvas, node);
        const released = plan.kind === 'inline' ? [plan.nodeId] : plan.kind === 'send' ? plan.nodeIds : [];
        for (const s of released) expect(predecessors(canvas, s)).toEqual([node]);
        if (plan.kind === 'inline') expect(canvas.nodes.find((n) => n.id === plan.nodeId)?.type).not.toBe('LlmWorker');
        if (plan.kind === 'read')
          expect(successors(canvas, node).some((s) => predecessors(canvas, s).length > 1)).toBe(true);
      }),
    );
  });
});

describe('a chain’s next step in this invocation', () => {
  it('runs only with a whole node timeout and the margin to settle it left', () => {
    expect(planInline(undefined, 1_000)).toBe('send');
    expect(planInline(1_000 + settleMarginMs - 1, 1_000)).toBe('send');
    expect(planInline(1_000 + settleMarginMs, 1_000)).toBe('run');
  });
});
