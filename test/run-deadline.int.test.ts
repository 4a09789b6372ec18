/**
 * Deadlines (`deadlineSeconds`) and a deferred run's `startBy`, through the run-start handlers, the
 * real step-executor handler and the dispatcher against the emulators. The deadline's timer is a
 * delayed message of the steps queue; where a test is about what the message does at a given time,
 * the clock is injected into the handler that receives it, and nothing asserts the wall clock.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it, vi } from 'vitest';
import type { Deps } from '../functions/deps.ts';
import { type NodeExecutor, StepFailedError } from '../functions/nodes/executors/types.ts';
import { setLiveMultiplier } from '../functions/store/price-multiplier.ts';
import { readRunItem } from '../functions/store/run/index.ts';
import { makeHandler } from '../functions/workers/step-executor.ts';
import { startQueuePoller } from '../local/event-source.ts';
import { stepsQueue } from '../platform/definitions.ts';
import { expectValidResponse } from './support/openapi-validator.ts';
import { queueContents } from './support/queue-contents.ts';
import {
  api,
  deliver,
  dispatcherHandler,
  doc,
  expectBalanced,
  getRunCall,
  instantExecutor,
  ledgerOf,
  pairPrice,
  pairSteps,
  startRunCall,
  stepHandler,
  stepRecord,
} from './support/runs.ts';
import { createWorkflow, seedUnthrottledTeam, stackPerFile } from './support/stack.ts';

const { stack, closers } = stackPerFile();

const team = (credits = 100) => seedUnthrottledTeam(stack.deps, credits);

/** `deps` whose clock reads `at`. */
const at = (when: Date | string): Deps => ({ ...stack.deps, now: () => new Date(when) });

const later = (iso: string, seconds: number) => new Date(Date.parse(iso) + seconds * 1000);

/** The run item as stored; throws when there is none. */
const runItem = async (jobId: string) => {
  const run = await readRunItem(stack.deps, jobId);
  if (!run) throw new Error(`run ${jobId} not found`);
  return run;
};

/** The step queue's deadline messages of run `jobId`, as sent (body and delay). */
const deadlineMessages = async (jobId: string) =>
  (await queueContents(stack.resources, 'Steps'))
    .map((m) => ({ body: JSON.parse(m.body) as Record<string, unknown>, delaySeconds: m.delaySeconds }))
    .filter((m) => m.body.kind === 'deadline' && m.body.jobId === jobId);

/** The webhooks queued for run `jobId`. */
const webhooksOf = async (jobId: string) =>
  (await queueContents(stack.resources, 'Webhooks'))
    .map((m) => JSON.parse(m.body) as { jobId: string; event: string })
    .filter((m) => m.jobId === jobId);

/** The deadline message a run's start sent, as the step executor receives it. */
const deadlineRecord = (message: Record<string, unknown>) => stepRecord(JSON.stringify(message));

/** TextEntry (1 hundredth) → LlmWorker (200 hundredths, a model step). */
const slowPair = [
  { key: 'in', type: 'TextEntry', config: { text: 'hi' } },
  { key: 'llm', type: 'LlmWorker', inputs: ['in'] },
];

describe('deadlineSeconds', () => {
  it('a run whose second step outlasts a 2 s deadline ends cancelled by it: the first step charged, the one in flight not, held 0', async () => {
    const t = await team(100);
    const workflowId = await createWorkflow(stack, t, slowPair);
    // The provider stand-in answers the model step after 6 s; the first step at once.
    let llmStartedAt: Date | undefined;
    const slowSecond: NodeExecutor = async (context) => {
      if (context.node.id === 'llm') {
        llmStartedAt = new Date();
        await sleep(6_000);
      }
      return instantExecutor(context);
    };
    const handler = makeHandler({ ...stack.deps, executors: () => slowSecond }, { stepTimeoutMs: 20_000 });
    // Two consumers, as Lambda runs several: the deadline's message is not queued behind the slow step.
    const pollers = [1, 2].map(() =>
      startQueuePoller({
        endpoint: stack.resources.sqsS3Endpoint,
        queueUrl: stack.resources.queueUrls.Steps,
        definition: stepsQueue,
        handler: handler as never,
        waitSeconds: 1,
      }),
    );
    const stopPollers = async () => {
      for (const poller of pollers) await poller.stop();
    };
    closers.push(stopPollers);
    try {
      await deadlineEndsTheRun(t, workflowId, () => llmStartedAt);
    } finally {
      await stopPollers();
    }
  });

  const deadlineEndsTheRun = async (
    t: Awaited<ReturnType<typeof team>>,
    workflowId: string,
    llmStartedAt: () => Date | undefined,
  ) => {
    const started = await startRunCall(stack.baseUrl, t.key, workflowId, {
      deadlineSeconds: 2,
      callbackUrl: 'https://example.com/hook',
    });
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    const jobId = started.body.jobId as string;
    // Ended, then settled once the step in flight gave its claim up.
    await vi.waitFor(async () => expect((await runItem(jobId)).finalizedAt).toBeDefined(), {
      timeout: 30_000,
      interval: 200,
    });
    const run = await runItem(jobId);
    expect(run).toMatchObject({ status: 'cancelled', endReason: 'deadline', chargedHundredths: 1, heldHundredths: 0 });
    // Within 10 s of the deadline, as the stored times say.
    const lateMs = Date.parse(run.endedAt ?? '') - Date.parse(run.deadlineAt ?? '');
    expect(lateMs).toBeGreaterThanOrEqual(0);
    expect(lateMs).toBeLessThanOrEqual(10_000);
    expect(Date.parse(run.deadlineAt ?? '') - Date.parse(run.createdAt)).toBe(2_000);
    // What this test is about: the model step was in flight at the deadline (its provider call began before it).
    expect(llmStartedAt()?.getTime()).toBeLessThan(Date.parse(run.deadlineAt ?? ''));
    const read = await getRunCall(stack.baseUrl, t.key, jobId);
    expect(read.body).toMatchObject({
      status: 'cancelled',
      endReason: 'deadline',
      steps: [
        { node_id: 'in', status: 'completed' },
        { node_id: 'llm', status: 'unknown' },
      ],
    });
    expectValidResponse(doc, { method: 'GET', path: `/runs/${jobId}`, status: read.status, body: read.body });
    const ledger = await ledgerOf(stack.deps, t.teamId);
    expect(ledger).toEqual({ balance: 10_000 - 1, held: 0, charged: 1, granted: 10_000 });
    expectBalanced(ledger);
    expect(await webhooksOf(jobId)).toEqual([{ jobId, event: 'run.cancelled' }]);
  };

  it('its message, delivered twice at the deadline, ends the run once; a run that ended before it is untouched', async () => {
    const t = await team(100);
    const workflowId = await createWorkflow(stack, t, pairSteps);
    const started = await startRunCall(stack.baseUrl, t.key, workflowId, {
      deadlineSeconds: 60,
      callbackUrl: 'https://example.com/hook',
    });
    const jobId = started.body.jobId as string;
    const run = await runItem(jobId);
    const [timer] = await deadlineMessages(jobId);
    // Sent just before the start committed, delayed the whole minute; the run item's time counts from its start.
    expect(timer).toEqual({
      body: { kind: 'deadline', jobId, teamId: t.teamId, dueAt: expect.any(String) },
      delaySeconds: 60,
    });
    expect(Date.parse(run.deadlineAt ?? '') - Date.parse(run.createdAt)).toBe(60_000);
    // Its first step finishes; then the deadline comes, twice (a redelivery).
    expect(await deliver(stepHandler(stack.deps), [stepRecord({ jobId, workflowId, nodeId: 'in' })])).toEqual([]);
    const due = at(later(run.deadlineAt ?? '', 1));
    expect(await deliver(stepHandler(due), [deadlineRecord(timer?.body ?? {})])).toEqual([]);
    const ended = await runItem(jobId);
    expect(ended).toMatchObject({ status: 'cancelled', endReason: 'deadline', chargedHundredths: 1 });
    const ledger = await ledgerOf(stack.deps, t.teamId);
    expect(ledger).toEqual({ balance: 10_000 - 1, held: 0, charged: 1, granted: 10_000 });
    expect(await deliver(stepHandler(due), [deadlineRecord(timer?.body ?? {})])).toEqual([]);
    expect(await runItem(jobId)).toEqual(ended);
    expect(await ledgerOf(stack.deps, t.teamId)).toEqual(ledger);
    expect(await webhooksOf(jobId)).toEqual([{ jobId, event: 'run.cancelled' }]);
    // Nothing sent on: the one timer the start sent is all there is.
    expect(await deadlineMessages(jobId)).toHaveLength(1);

    // A run that completes before its deadline: the deadline's message changes nothing.
    const other = await createWorkflow(stack, t, pairSteps, 'Other');
    const done = (await startRunCall(stack.baseUrl, t.key, other, { deadlineSeconds: 60 })).body.jobId as string;
    for (const nodeId of ['in', 'out']) {
      expect(await deliver(stepHandler(stack.deps), [stepRecord({ jobId: done, workflowId: other, nodeId })])).toEqual(
        [],
      );
    }
    const completed = await runItem(done);
    expect(completed.status).toBe('completed');
    const [doneTimer] = await deadlineMessages(done);
    expect(
      await deliver(stepHandler(at(later(completed.deadlineAt ?? '', 1))), [deadlineRecord(doneTimer?.body ?? {})]),
    ).toEqual([]);
    expect(await runItem(done)).toEqual(completed);
    expect((await getRunCall(stack.baseUrl, t.key, done)).body).not.toHaveProperty('endReason');
    expect(await ledgerOf(stack.deps, t.teamId)).toEqual({
      balance: 10_000 - 1 - pairPrice,
      held: 0,
      charged: 1 + pairPrice,
      granted: 10_000,
    });
  });

  it('a run still queued behind another at its deadline ends cancelled by it, its whole hold released', async () => {
    const t = await team(100);
    const workflowId = await createWorkflow(stack, t, pairSteps);
    await startRunCall(stack.baseUrl, t.key, workflowId, {});
    const before = await ledgerOf(stack.deps, t.teamId);
    const waiting = await startRunCall(stack.baseUrl, t.key, workflowId, { onConflict: 'queue', deadlineSeconds: 60 });
    expect(waiting.status).toBe(202);
    const jobId = waiting.body.jobId as string;
    const run = await runItem(jobId);
    expect(run.status).toBe('waiting');
    expect((await ledgerOf(stack.deps, t.teamId)).held).toBeGreaterThan(before.held);
    const [timer] = await deadlineMessages(jobId);
    const due = at(later(run.deadlineAt ?? '', 1));
    expect(await deliver(stepHandler(due), [deadlineRecord(timer?.body ?? {})])).toEqual([]);
    expect(await runItem(jobId)).toMatchObject({ status: 'cancelled', endReason: 'deadline', heldHundredths: 0 });
    expect(await ledgerOf(stack.deps, t.teamId)).toEqual(before);
    expect((await getRunCall(stack.baseUrl, t.key, jobId)).body).toMatchObject({
      status: 'cancelled',
      endReason: 'deadline',
    });
  });

  it('a deadline past 15 minutes is a chain of delayed messages: one that arrives early is sent on with the rest', async () => {
    const t = await team(100);
    const workflowId = await createWorkflow(stack, t, pairSteps);
    const jobId = (await startRunCall(stack.baseUrl, t.key, workflowId, { deadlineSeconds: 3_600 })).body
      .jobId as string;
    const run = await runItem(jobId);
    const [first] = await deadlineMessages(jobId);
    expect(first?.delaySeconds).toBe(900);
    // It arrives 15 minutes on: 45 left, sent on for 15 more (SQS's longest delay).
    const dueAt = run.deadlineAt ?? '';
    expect(await deliver(stepHandler(at(later(dueAt, -2_700))), [deadlineRecord(first?.body ?? {})])).toEqual([]);
    // Late in the chain: the last hop is the rest, to the second.
    expect(await deliver(stepHandler(at(later(dueAt, -42))), [deadlineRecord(first?.body ?? {})])).toEqual([]);
    expect((await deadlineMessages(jobId)).map((m) => m.delaySeconds).sort((a, b) => a - b)).toEqual([42, 900, 900]);
    expect((await runItem(jobId)).status).toBe('queued');
    expect(await deliver(stepHandler(at(later(dueAt, 0))), [deadlineRecord(first?.body ?? {})])).toEqual([]);
    expect(await runItem(jobId)).toMatchObject({ status: 'cancelled', endReason: 'deadline', heldHundredths: 0 });
    expect(await ledgerOf(stack.deps, t.teamId)).toEqual({ balance: 10_000, held: 0, charged: 0, granted: 10_000 });
  });

  it('a message whose run was never committed waits a minute for it, then is dropped', async () => {
    const jobId = crypto.randomUUID();
    const t = await team(1);
    const dueAt = '2026-12-07T12:00:00.000Z';
    const message = { kind: 'deadline', jobId, teamId: t.teamId, dueAt };
    expect(await deliver(stepHandler(at(later(dueAt, 10))), [deadlineRecord(message)])).toEqual([]);
    expect((await deadlineMessages(jobId)).map((m) => m.delaySeconds)).toEqual([5]);
    expect(await deliver(stepHandler(at(later(dueAt, 61))), [deadlineRecord(message)])).toEqual([]);
    expect(await deadlineMessages(jobId)).toHaveLength(1);
  });

  it('a resume takes its own deadline; the bounds are 1 to 86,400 whole seconds (400 otherwise)', async () => {
    const t = await team(100);
    const workflowId = await createWorkflow(stack, t, pairSteps);
    for (const deadlineSeconds of [0, 86_401, 1.5, '60', -1]) {
      const refused = await startRunCall(stack.baseUrl, t.key, workflowId, { deadlineSeconds });
      expect(refused.status, String(deadlineSeconds)).toBe(400);
      expect(refused.body.error).toMatch(/^Invalid request body: deadlineSeconds: /);
    }
    const resumeRefused = await api(stack.baseUrl, 'POST', `/runs/${crypto.randomUUID()}/resume`, {
      key: t.key,
      body: { deadlineSeconds: 0 },
    });
    expect(resumeRefused.status).toBe(400);
    const jobId = (await startRunCall(stack.baseUrl, t.key, workflowId)).body.jobId as string;
    expect((await runItem(jobId)).deadlineAt).toBeUndefined();
    expect(await deadlineMessages(jobId)).toEqual([]);
    // It fails at its second step; its resume runs that step again, with a deadline of its own.
    expect(await deliver(stepHandler(stack.deps), [stepRecord({ jobId, workflowId, nodeId: 'in' })])).toEqual([]);
    const failing = stepHandler(stack.deps, () => async () => {
      throw new StepFailedError('refused');
    });
    expect(await deliver(failing, [stepRecord({ jobId, workflowId, nodeId: 'out' })])).toEqual([]);
    expect((await runItem(jobId)).status).toBe('failed');
    const resumed = await api(stack.baseUrl, 'POST', `/runs/${jobId}/resume`, {
      key: t.key,
      body: { deadlineSeconds: 30 },
    });
    expect(resumed.status, JSON.stringify(resumed.body)).toBe(200);
    const newRun = await runItem(resumed.body.jobId as string);
    expect(Date.parse(newRun.deadlineAt ?? '') - Date.parse(newRun.createdAt)).toBe(30_000);
    expect(await deadlineMessages(newRun.jobId)).toHaveLength(1);
  });
});

describe('startBy', () => {
  it('bounds a deferred run’s wait in place of 24 hours: not started by then it expires, holding nothing', async () => {
    await setLiveMultiplier(stack.deps, 1);
    const t = await team(100);
    const workflowId = await createWorkflow(stack, t, pairSteps);
    const startBy = new Date(Date.now() + 3 * 24 * 3600_000).toISOString();
    const deferred = await startRunCall(stack.baseUrl, t.key, workflowId, { defer: true, maxMultiplier: 0.5, startBy });
    expect(deferred.status, JSON.stringify(deferred.body)).toBe(202);
    const id = deferred.body.deferredJobId as string;
    const read = await api(stack.baseUrl, 'GET', `/deferred-runs/${id}`, { key: t.key });
    expect(read.body).toMatchObject({ status: 'waiting', expiresAt: startBy });
    // Two days on (past the old 24 hours) it still waits; past its startBy it expires.
    const tick = (when: Date) => dispatcherHandler(at(when))();
    expect((await tick(new Date(Date.now() + 2 * 24 * 3600_000))).expired).not.toContain(id);
    expect((await api(stack.baseUrl, 'GET', `/deferred-runs/${id}`, { key: t.key })).body.status).toBe('waiting');
    expect((await tick(later(startBy, 1))).expired).toContain(id);
    expect((await api(stack.baseUrl, 'GET', `/deferred-runs/${id}`, { key: t.key })).body.status).toBe('expired');
    expect(await ledgerOf(stack.deps, t.teamId)).toEqual({ balance: 10_000, held: 0, charged: 0, granted: 10_000 });
  });

  it('a deferred run’s deadline counts from its dispatch', async () => {
    await setLiveMultiplier(stack.deps, 1);
    const t = await team(100);
    const workflowId = await createWorkflow(stack, t, pairSteps);
    const id = (
      await startRunCall(stack.baseUrl, t.key, workflowId, { defer: true, maxMultiplier: 0.5, deadlineSeconds: 120 })
    ).body.deferredJobId as string;
    await setLiveMultiplier(stack.deps, 0.5);
    const dispatchedAt = new Date(Date.now() + 3600_000);
    const report = await dispatcherHandler(at(dispatchedAt))();
    await setLiveMultiplier(stack.deps, 1);
    const jobId = report.dispatched.find((d) => d.deferredJobId === id)?.jobId ?? '';
    const run = await runItem(jobId);
    expect(run.deadlineAt).toBe(later(dispatchedAt.toISOString(), 120).toISOString());
    expect((await deadlineMessages(jobId)).map((m) => m.delaySeconds)).toEqual([120]);
  });

  it('answers 422 for a startBy past or beyond 7 days (24 hours with uploaded inputs), 400 without defer', async () => {
    const t = await team(100);
    const workflowId = await createWorkflow(stack, t, pairSteps);
    const past = new Date(Date.now() - 1000).toISOString();
    const tooFar = new Date(Date.now() + 8 * 24 * 3600_000).toISOString();
    for (const startBy of [past, tooFar]) {
      const refused = await startRunCall(stack.baseUrl, t.key, workflowId, { defer: true, startBy });
      expect(refused.status).toBe(422);
      expect(refused.body).toEqual({
        error: 'startBy must lie in the future and no later than latestStartBy',
        startBy,
        latestStartBy: expect.any(String),
      });
      const latest = Date.parse(refused.body.latestStartBy as string);
      expect(latest - Date.parse(past)).toBeGreaterThan(7 * 24 * 3600_000 - 60_000);
      expect(latest).toBeLessThan(Date.parse(tooFar));
      expectValidResponse(doc, {
        method: 'POST',
        path: `/workflows/${workflowId}/runs`,
        status: refused.status,
        body: refused.body,
      });
    }
    const undeferred = await startRunCall(stack.baseUrl, t.key, workflowId, {
      startBy: new Date(Date.now() + 3600_000).toISOString(),
    });
    expect(undeferred.status).toBe(400);
    expect(undeferred.body.error).toBe('Invalid request body: startBy: needs `defer: true` or `onConflict: "queue"`');
    const notADate = await startRunCall(stack.baseUrl, t.key, workflowId, { defer: true, startBy: 'tomorrow' });
    expect(notADate.status).toBe(400);
    expect(await ledgerOf(stack.deps, t.teamId)).toEqual({ balance: 10_000, held: 0, charged: 0, granted: 10_000 });
  });
});
