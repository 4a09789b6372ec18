/**
 * Operator events through the real path: the handlers write the table, DynamoDB Local's stream is
 * read with the Streams API and filtered as the deployed mapping filters it, the real EventPublisher
 * handler puts the events with the EventBridge SDK on the emulator, which appends them to the bus's
 * events file; the tests read that file.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operatorDetailTypes } from '../functions/domain/operator-events.ts';
import { StepFailedError } from '../functions/nodes/executors/types.ts';
import { setLiveMultiplier } from '../functions/store/price-multiplier.ts';
import { readRunPartition } from '../functions/store/run/index.ts';
import { runEventsTail } from '../local/admin.ts';
import type { QueuePoller } from '../local/event-source.ts';
import { type DeliveredEvent, eventBridgeFaultsLeft, setEventBridgeFaults } from '../local/eventbridge-emulator.ts';
import {
  cancelRunCall,
  dispatcherHandler,
  instantExecutor,
  pairPrice,
  pairSteps,
  startRunCall,
  startStepWorkers,
  waitForEnd,
} from './support/runs.ts';
import {
  call,
  createWorkflow,
  seedTeam,
  startOperatorEventsFor,
  startTestStack,
  type TestStack,
} from './support/stack.ts';

type Events = Awaited<ReturnType<typeof startOperatorEventsFor>>;

/** Waits until `found` holds for the bus's events (the stream is read every 100 ms). */
const eventually = async (events: Events, found: (all: DeliveredEvent[]) => boolean, timeoutMs = 60_000) => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const all = events.read();
    if (found(all)) return all;
    if (Date.now() > deadline) throw new Error(`events not there: ${JSON.stringify(all, null, 1)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
};

const ofJob = (all: DeliveredEvent[], jobId: string) => all.filter((e) => e.detail.jobId === jobId);
const ofDeferred = (all: DeliveredEvent[], id: string) => all.filter((e) => e.detail.deferredJobId === id);
const types = (all: DeliveredEvent[]) => all.map((e) => e['detail-type']);

/** Node `hold` waits for `release`; node `boom` fails; every other node answers at once. */
let release: () => void = () => {};
const held = new Promise<void>((resolve) => {
  release = resolve;
});
const executors = () => async (context: Parameters<typeof instantExecutor>[0]) => {
  if (context.node.id === 'boom') throw new StepFailedError('boom failed on purpose');
  if (context.node.id === 'hold') await held;
  return instantExecutor(context);
};

/**
 * For the enclosing describe: a test stack, its operator events' publisher and step workers running
 * `executors`, handed to `use` before its tests and stopped after them (a held step released first).
 */
const withRunsAndEvents = (use: (started: { stack: TestStack; events: Events }) => void) => {
  let stack: TestStack | undefined;
  let events: Events | undefined;
  let workers: QueuePoller | undefined;
  beforeAll(async () => {
    stack = await startTestStack();
    events = await startOperatorEventsFor(stack);
    workers = startStepWorkers(stack, { executors });
    use({ stack, events });
  });
  afterAll(async () => {
    release();
    await workers?.stop();
    await events?.stop();
    await stack?.close();
  });
};

describe('operator events from runs', () => {
  let stack: TestStack;
  let events: Events;
  withRunsAndEvents((started) => ({ stack, events } = started));

  it('a completed run: Run Started, then Run Finished with its exact charge, and nothing secret', async () => {
    const team = await seedTeam(stack.deps);
    const workflowId = await createWorkflow(stack, team, [
      { key: 'in', type: 'TextEntry', config: { text: 'hi', apiInputKey: 'note' } },
      { key: 'out', type: 'TextConsole', inputs: ['in'] },
    ]);
    const started = await startRunCall(stack.baseUrl, team.key, workflowId, {
      inputs: { note: 'private input' },
      callbackUrl: 'https://example.com/hook',
      callbackSecret: 'a-callback-secret-never-in-events',
    });
    expect(started.status).toBe(200);
    const jobId = started.body.jobId as string;
    expect((await waitForEnd(stack.baseUrl, team.key, jobId)).body.status).toBe('completed');

    const all = await eventually(events, (e) => ofJob(e, jobId).length >= 2);
    const [start, finish] = ofJob(all, jobId);
    expect(types([start!, finish!])).toEqual([operatorDetailTypes.runStarted, operatorDetailTypes.runFinished]);
    expect(start).toMatchObject({
      source: 'workflow-run-api',
      'event-bus-name': events.busName,
      detail: { version: 1, eventId: `${jobId}:run-started`, jobId, teamId: team.teamId, workflowId, stepsTotal: 2 },
    });
    const { run } = await readRunPartition(stack.deps, jobId);
    expect(run?.chargedHundredths).toBe(pairPrice);
    expect(finish).toMatchObject({
      detail: {
        version: 1,
        eventId: `${jobId}:run-finished`,
        jobId,
        teamId: team.teamId,
        workflowId,
        status: 'completed',
        creditsChargedHundredths: pairPrice,
        creditsCharged: '0.02',
        stepsCompleted: 2,
      },
    });
    expect(finish?.time).toBe(String(finish?.detail.endedAt).replace(/\.\d{3}Z$/, 'Z'));
    const text = JSON.stringify(ofJob(all, jobId));
    for (const secret of ['private input', 'a-callback-secret-never-in-events', 'example.com/hook', team.key]) {
      expect(text).not.toContain(secret);
    }
  });

  it('a failed run: Run Finished with status failed and what it was charged', async () => {
    const team = await seedTeam(stack.deps);
    const workflowId = await createWorkflow(stack, team, [
      { key: 'in', type: 'TextEntry', config: { text: 'hi' } },
      { key: 'boom', type: 'TextConsole', inputs: ['in'] },
    ]);
    const jobId = (await startRunCall(stack.baseUrl, team.key, workflowId)).body.jobId as string;
    expect((await waitForEnd(stack.baseUrl, team.key, jobId)).body.status).toBe('failed');
    const all = await eventually(events, (e) => ofJob(e, jobId).length >= 2);
    const finish = ofJob(all, jobId).find((e) => e['detail-type'] === operatorDetailTypes.runFinished);
    const { run } = await readRunPartition(stack.deps, jobId);
    expect(run?.chargedHundredths).toBe(1);
    expect(finish?.detail).toMatchObject({
      status: 'failed',
      creditsChargedHundredths: 1,
      creditsCharged: '0.01',
    });
  });

  it('a cancelled run: Run Finished with status cancelled', async () => {
    const team = await seedTeam(stack.deps);
    const workflowId = await createWorkflow(stack, team, [
      { key: 'hold', type: 'TextEntry', config: { text: 'hi' } },
      { key: 'out', type: 'TextConsole', inputs: ['hold'] },
    ]);
    const jobId = (await startRunCall(stack.baseUrl, team.key, workflowId)).body.jobId as string;
    expect((await cancelRunCall(stack.baseUrl, team.key, jobId)).status).toBe(200);
    // The held step ends after the cancel: it charges nothing more, and the worker is free again.
    release();
    const all = await eventually(events, (e) => ofJob(e, jobId).length >= 2);
    expect(types(ofJob(all, jobId))).toEqual([operatorDetailTypes.runStarted, operatorDetailTypes.runFinished]);
    expect(ofJob(all, jobId)[1]?.detail).toMatchObject({ status: 'cancelled', creditsChargedHundredths: 0 });
  });

  it('a bus that refuses entries: the events are put again from the stream once it recovers; the run is unaffected', async () => {
    await setEventBridgeFaults(events.endpoint, events.busName, { refuseCalls: 3, errorCode: 'ThrottlingException' });
    const team = await seedTeam(stack.deps);
    const workflowId = await createWorkflow(stack, team, pairSteps);
    const jobId = (await startRunCall(stack.baseUrl, team.key, workflowId)).body.jobId as string;
    expect((await waitForEnd(stack.baseUrl, team.key, jobId)).body.status).toBe('completed');
    const all = await eventually(events, (e) => ofJob(e, jobId).length >= 2);
    // Every refused call was a delivery of this run's events, retried until the bus took them.
    expect((await eventBridgeFaultsLeft(events.endpoint, events.busName)).refuseCalls).toBe(0);
    expect(types(ofJob(all, jobId))).toEqual([operatorDetailTypes.runStarted, operatorDetailTypes.runFinished]);
    expect(ofJob(all, jobId)[1]?.detail).toMatchObject({ status: 'completed', creditsChargedHundredths: pairPrice });
    expect(events.failures).toEqual([]);
  });

  it('a redelivered stream gives the same event ids (consumers deduplicate on detail.eventId)', async () => {
    const team = await seedTeam(stack.deps);
    const workflowId = await createWorkflow(stack, team, pairSteps);
    const jobId = (await startRunCall(stack.baseUrl, team.key, workflowId)).body.jobId as string;
    await waitForEnd(stack.baseUrl, team.key, jobId);
    const first = await eventually(events, (e) => ofJob(e, jobId).length >= 2);
    // A second publisher reads the stream from its start, as Lambda redelivers after a failure.
    const again = await startOperatorEventsFor(stack);
    try {
      const all = await eventually(again, (e) => ofJob(e, jobId).length >= 4);
      const ids = ofJob(all, jobId).map((e) => e.detail.eventId);
      expect(new Set(ids)).toEqual(new Set([`${jobId}:run-started`, `${jobId}:run-finished`]));
      expect(ids.filter((id) => id === `${jobId}:run-finished`).length).toBeGreaterThanOrEqual(2);
      expect(ofJob(all, jobId).slice(0, 2)).toEqual(ofJob(first, jobId));
    } finally {
      await again.stop();
    }
  });
});

describe("the operators' CLI: events tail", () => {
  let stack: TestStack;
  let events: Events;
  withRunsAndEvents((started) => ({ stack, events } = started));

  const runOnce = async () => {
    const team = await seedTeam(stack.deps);
    const workflowId = await createWorkflow(stack, team, pairSteps);
    const jobId = (await startRunCall(stack.baseUrl, team.key, workflowId)).body.jobId as string;
    await waitForEnd(stack.baseUrl, team.key, jobId);
    return jobId;
  };

  it('prints the last events of a type, one a line, then follows the file', async () => {
    const first = await runOnce();
    const second = await runOnce();
    await eventually(events, (e) => ofJob(e, second).length >= 2);

    const lines: string[] = [];
    const tail = (argv: string[], signal?: AbortSignal) =>
      runEventsTail(['events', 'tail', ...argv], {
        file: events.file,
        write: (l) => lines.push(l),
        signal,
        pollMs: 50,
      });
    expect(await tail(['--type', 'Run Finished', '--lines', '1'])).toBe(0);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      new RegExp(`^\\S+Z  Run Finished  ${second}:run-finished  jobId=${second}  .*status=completed`),
    );
    expect(lines[0]).toContain('creditsCharged=0.02');

    lines.length = 0;
    expect(await tail(['--json'])).toBe(0);
    expect(lines.map((l) => JSON.parse(l).detail.jobId)).toEqual(
      expect.arrayContaining([first, first, second, second]),
    );

    lines.length = 0;
    const abort = new AbortController();
    const following = tail(['--follow', '--lines', '0', '--type', 'Run Started'], abort.signal);
    const third = await runOnce();
    const deadline = Date.now() + 60_000;
    while (!lines.some((l) => l.includes(`${third}:run-started`)) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    abort.abort();
    expect(await following).toBe(0);
    expect(lines).toEqual([expect.stringContaining(`Run Started  ${third}:run-started`)]);

    lines.length = 0;
    expect(await tail(['--lines', 'x'])).toBe(2);
    expect(lines[0]).toMatch(/--lines must be a whole number/);
  });
});

describe('operator events from deferred runs', () => {
  let stack: TestStack;
  let events: Events;
  let clockMs = Date.parse('2026-11-22T03:00:00.000Z');
  beforeAll(async () => {
    stack = await startTestStack({ now: () => new Date(clockMs) });
    events = await startOperatorEventsFor(stack);
  });
  afterAll(async () => {
    await events?.stop();
    await stack?.close();
  });

  const defer = async (key: string, workflowId: string, maxMultiplier: number) => {
    const response = await call(stack.baseUrl, `/workflows/${workflowId}/runs`, {
      key,
      method: 'POST',
      body: { defer: true, maxMultiplier },
    });
    expect(response.status).toBe(202);
    return response.body.deferredJobId as string;
  };

  it('dispatched, expired and cancelled, each once, with the run a dispatch started', async () => {
    await setLiveMultiplier(stack.deps, 1);
    const team = await seedTeam(stack.deps);
    const [toDispatch, toExpire, toCancel] = [
      await createWorkflow(stack, team, pairSteps, 'a'),
      await createWorkflow(stack, team, pairSteps, 'b'),
      await createWorkflow(stack, team, pairSteps, 'c'),
    ];
    const dispatchedId = await defer(team.key, toDispatch!, 0.6);
    const expiringId = await defer(team.key, toExpire!, 0.1);
    const cancelledId = await defer(team.key, toCancel!, 0.1);

    expect(
      (await call(stack.baseUrl, `/deferred-runs/${cancelledId}`, { key: team.key, method: 'DELETE' })).status,
    ).toBe(200);
    await setLiveMultiplier(stack.deps, 0.5);
    const report = await dispatcherHandler(stack.deps)();
    const jobId = report.dispatched.find((d) => d.deferredJobId === dispatchedId)?.jobId;
    expect(jobId).toBeDefined();
    clockMs += 24 * 3600_000 + 1000;
    expect((await dispatcherHandler(stack.deps)()).expired).toContain(expiringId);

    const all = await eventually(events, (e) =>
      [dispatchedId, expiringId, cancelledId].every((id) => ofDeferred(e, id).length > 0),
    );
    expect(ofDeferred(all, dispatchedId).map((e) => e.detail)).toEqual([
      expect.objectContaining({
        eventId: `${dispatchedId}:deferred-dispatched`,
        status: 'dispatched',
        teamId: team.teamId,
        workflowId: toDispatch,
        maxMultiplier: 0.6,
        jobId,
      }),
    ]);
    expect(types(ofDeferred(all, dispatchedId))).toEqual([operatorDetailTypes.deferredDispatched]);
    expect(types(ofDeferred(all, expiringId))).toEqual([operatorDetailTypes.deferredExpired]);
    expect(ofDeferred(all, expiringId)[0]?.detail).toMatchObject({ status: 'expired', jobId: null });
    expect(types(ofDeferred(all, cancelledId))).toEqual([operatorDetailTypes.deferredCancelled]);
    // The dispatched run started (its own Run Started event); a deferred run's request never shows.
    await eventually(events, (e) => ofJob(e, jobId!).some((x) => x['detail-type'] === operatorDetailTypes.runStarted));
    expect(JSON.stringify(all)).not.toContain('"request"');
  });
});
