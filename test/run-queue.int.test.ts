/**
 * A busy workflow queues instead of refusing (`onConflict`), through the real path: run starts,
 * resumes, reads and cancels over the local API (every answer checked against the OpenAPI
 * document), the steps queue read with the SDK and fed to the real step-executor handler, the
 * dispatcher's tick as its handler runs it, the ledger read from DynamoDB Local. The clock is real;
 * a wait's end is reached by handing the sweep a later clock.
 */
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { cancelRun } from '../functions/app/cancel-run.ts';
import { sweepQueuedRuns } from '../functions/app/sweep-queued-runs.ts';
import { queueCap } from '../functions/domain/workflow-queue.ts';
import { workflowLockKey, workflowQueuePartition } from '../functions/store/keys.ts';
import { lifecycleChangeOf } from '../functions/store/lifecycle-webhook-deliveries.ts';
import { readLock, readRunItem, startNextQueued } from '../functions/store/run/index.ts';
import { RunStatus } from '../platform/run-statuses.ts';
import {
  api,
  cancelRunCall,
  deliver,
  dispatcherHandler,
  drainSteps,
  expectBalanced,
  faultyDeps,
  getRunCall,
  ledgerOf,
  pairPrice,
  pairSteps,
  racingDeps,
  type StepMessage,
  startRunCall,
  stepHandler,
  stepRecord,
  takeStepMessages,
} from './support/runs.ts';
import { createWorkflow, type SeededTeam, seedUnthrottledTeam, stackPerFile } from './support/stack.ts';

const { stack } = stackPerFile();

const granted = 10_000; // 100 credits, in hundredths
const team = () => seedUnthrottledTeam(stack.deps, granted / 100);
const steps = () => stepHandler(stack.deps);

/** A team with a two-step workflow (TextEntry → TextConsole: 2 hundredths a run). */
const setUp = async () => {
  const owner = await team();
  const workflowId = await createWorkflow(stack, owner, pairSteps);
  return { owner, workflowId };
};

const start = (owner: SeededTeam, workflowId: string, body: Record<string, unknown> = {}) =>
  startRunCall(stack.baseUrl, owner.key, workflowId, body);

/** One step message delivered to the real handler. */
const drainOne = async (message: StepMessage) => {
  expect(await deliver(steps(), [stepRecord(message)])).toEqual([]);
};

/** The runs whose steps were delivered, in the order their first step was. */
const runsInOrder = (delivered: StepMessage[]) => [...new Set(delivered.map((m) => m.jobId))];

describe('onConflict: queue', () => {
  it('20 concurrent queue starts: one runs at once, 19 wait and complete in acceptance order, the ledger exact', async () => {
    const { owner, workflowId } = await setUp();
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => start(owner, workflowId, { onConflict: 'queue' })),
    );
    const started = answers.filter((a) => a.status === 200);
    const queued = answers.filter((a) => a.status === 202);
    expect(started).toHaveLength(1);
    expect(queued).toHaveLength(19);
    const first = started[0]?.body.jobId as string;
    // Acceptance order is the queue's: each place answered once, 1 to 19, each behind the one before.
    const byPlace = [...queued].sort((a, b) => (a.body.queuePosition as number) - (b.body.queuePosition as number));
    expect(byPlace.map((a) => a.body.queuePosition)).toEqual(Array.from({ length: 19 }, (_, i) => i + 1));
    expect(byPlace.map((a) => a.body.queuedBehind)).toEqual([first, ...byPlace.slice(0, -1).map((a) => a.body.jobId)]);
    for (const answer of queued) {
      expect(answer.body).toMatchObject({ status: 'queued', workflowId, estimatedCredits: pairPrice / 100 });
    }
    // Every estimate is held at once, nothing charged yet.
    expect(await ledgerOf(stack.deps, owner.teamId)).toMatchObject({ held: 20 * pairPrice, charged: 0 });
    // Only the first run's steps were sent; the 20th waiting reads queued with its place.
    const last = byPlace[18]?.body.jobId as string;
    expect((await getRunCall(stack.baseUrl, owner.key, last)).body).toMatchObject({
      status: 'queued',
      progress: 0,
      queuePosition: 19,
      queuedBehind: byPlace[17]?.body.jobId,
    });

    const delivered = await drainSteps(stack.deps, steps());
    expect(runsInOrder(delivered)).toEqual([first, ...byPlace.map((a) => a.body.jobId)]);
    for (const answer of answers) {
      const run = await getRunCall(stack.baseUrl, owner.key, answer.body.jobId as string);
      expect(run.body.status).toBe('completed');
      expect(run.body.queuePosition).toBeUndefined();
    }
    const ledger = await ledgerOf(stack.deps, owner.teamId);
    expectBalanced(ledger);
    expect(ledger).toMatchObject({ held: 0, charged: 20 * pairPrice, balance: granted - 20 * pairPrice });
    // The lock is gone with the last run: the workflow is free again, and a plain start runs at once.
    expect(await readLock(stack.deps, workflowId)).toBeUndefined();
    expect((await start(owner, workflowId)).status).toBe(200);
    await drainSteps(stack.deps, steps());
  }, 120_000);

  it('with no run in progress, queue and replace start at once as a plain start does', async () => {
    const { owner, workflowId } = await setUp();
    const queued = await start(owner, workflowId, { onConflict: 'queue' });
    expect(queued.status).toBe(200);
    expect(queued.body.queuePosition).toBeUndefined();
    await drainSteps(stack.deps, steps());
    const replaced = await start(owner, workflowId, { onConflict: 'replace' });
    expect(replaced.status).toBe(200);
    expect(replaced.body.replaced).toBeUndefined();
    await drainSteps(stack.deps, steps());
  });

  it('the default (reject) still answers 409 naming the run in progress, and holds nothing', async () => {
    const { owner, workflowId } = await setUp();
    const running = await start(owner, workflowId);
    const refused = await start(owner, workflowId, { onConflict: 'reject' });
    expect(refused.status).toBe(409);
    expect(refused.body).toEqual({
      error: 'This workflow already has a run in progress',
      activeJobId: running.body.jobId,
    });
    expect((await ledgerOf(stack.deps, owner.teamId)).held).toBe(pairPrice);
    await drainSteps(stack.deps, steps());
  });

  it('a queued start is answered its 402 at once when the credits do not cover it', async () => {
    const owner = await seedUnthrottledTeam(stack.deps, 0.03);
    const workflowId = await createWorkflow(stack, owner, pairSteps);
    expect((await start(owner, workflowId)).status).toBe(200);
    const refused = await start(owner, workflowId, { onConflict: 'queue' });
    expect(refused.status).toBe(402);
    expect(await ledgerOf(stack.deps, owner.teamId)).toMatchObject({ held: pairPrice });
    await drainSteps(stack.deps, steps());
  });

  it('cancelling a queued run ends it cancelled and releases its hold; the queue closes up', async () => {
    const { owner, workflowId } = await setUp();
    const running = (await start(owner, workflowId)).body.jobId as string;
    const second = (await start(owner, workflowId, { onConflict: 'queue' })).body.jobId as string;
    const third = await start(owner, workflowId, { onConflict: 'queue' });
    expect(third.body).toMatchObject({ queuePosition: 2, queuedBehind: second });
    expect((await ledgerOf(stack.deps, owner.teamId)).held).toBe(3 * pairPrice);

    const cancelled = await cancelRunCall(stack.baseUrl, owner.key, second);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toMatchObject({ jobId: second, status: 'cancelled', progress: 0 });
    expect((await ledgerOf(stack.deps, owner.teamId)).held).toBe(2 * pairPrice);
    expect((await getRunCall(stack.baseUrl, owner.key, third.body.jobId as string)).body).toMatchObject({
      queuePosition: 1,
      queuedBehind: running,
    });
    // Cancelled once: a second cancel is told it ended.
    expect((await cancelRunCall(stack.baseUrl, owner.key, second)).status).toBe(409);

    const delivered = await drainSteps(stack.deps, steps());
    expect(runsInOrder(delivered)).toEqual([running, third.body.jobId]);
    const ledger = await ledgerOf(stack.deps, owner.teamId);
    expectBalanced(ledger);
    expect(ledger).toMatchObject({ held: 0, charged: 2 * pairPrice });
  });

  it('a run ended while its last waiting run is cancelled settles all the same: hold released, lock free', async () => {
    const { owner, workflowId } = await setUp();
    const running = (await start(owner, workflowId)).body.jobId as string;
    const waiting = (await start(owner, workflowId, { onConflict: 'queue' })).body.jobId as string;
    await takeStepMessages(stack.deps);
    // The running run's settlement meets the lock counting one waiting run and is refused; the
    // waiting run's own cancel lands right then, before the lock is read again (as two deliveries of
    // a bulk cancel race). Nobody waits any more: the plain settlement must be taken again.
    let raced = false;
    const racing = racingDeps(stack, async (command, input) => {
      const settling = command === 'TransactWriteItemsCommand' && JSON.stringify(input).includes('"Delete"');
      if (raced || !settling || !JSON.stringify(input).includes(running)) return;
      raced = true;
      await cancelRun(stack.deps, owner.teamId, waiting);
    });
    const ended = await cancelRun(racing, owner.teamId, running);
    expect(raced).toBe(true);
    expect(ended).toMatchObject({ jobId: running, status: 'cancelled' });
    expect(await readRunItem(stack.deps, running)).toMatchObject({
      heldHundredths: 0,
      finalizedAt: expect.any(String),
    });
    expect(await readRunItem(stack.deps, waiting)).toMatchObject({ status: RunStatus.cancelled, heldHundredths: 0 });
    expect(await readLock(stack.deps, workflowId)).toBeUndefined();
    const ledger = await ledgerOf(stack.deps, owner.teamId);
    expectBalanced(ledger);
    expect(ledger).toMatchObject({ held: 0, charged: 0 });
    // The workflow takes a plain start again.
    expect((await start(owner, workflowId)).status).toBe(200);
  });

  it('the 101st waiting run is answered 409 with the queue depth; a replacement is never refused', async () => {
    const { owner, workflowId } = await setUp();
    const running = (await start(owner, workflowId)).body.jobId as string;
    // 99 already waiting (the lock's count is what the cap reads): the 100th is taken, the 101st refused.
    await stack.deps.ddb.send(
      new UpdateCommand({
        TableName: stack.deps.tableName,
        Key: workflowLockKey(workflowId),
        UpdateExpression: 'SET waiting = :n',
        ExpressionAttributeValues: { ':n': queueCap - 1 },
      }),
    );
    const hundredth = await start(owner, workflowId, { onConflict: 'queue' });
    expect(hundredth.status).toBe(202);
    const full = await start(owner, workflowId, { onConflict: 'queue' });
    expect(full.status).toBe(409);
    expect(full.body).toEqual({ error: "This workflow's queue is full", activeJobId: running, queueDepth: 100 });
    // The estimate of that start shows the same refusal, and one that replaces none.
    const estimated = await api(stack.baseUrl, 'POST', `/workflows/${workflowId}/estimate`, {
      key: owner.key,
      body: { onConflict: 'queue' },
    });
    expect(estimated.body.refusal).toEqual({ status: 409, body: full.body });
    const replacing = await api(stack.baseUrl, 'POST', `/workflows/${workflowId}/estimate`, {
      key: owner.key,
      body: { onConflict: 'replace' },
    });
    expect(replacing.body.refusal).toBeNull();
    expect((await ledgerOf(stack.deps, owner.teamId)).held).toBe(2 * pairPrice);
    expect(queueCap).toBe(100);
    // Put the count back to the runs really waiting, then clear the workflow.
    await stack.deps.ddb.send(
      new UpdateCommand({
        TableName: stack.deps.tableName,
        Key: workflowLockKey(workflowId),
        UpdateExpression: 'SET waiting = :n',
        ExpressionAttributeValues: { ':n': 1 },
      }),
    );
    await drainSteps(stack.deps, steps());
    expect((await getRunCall(stack.baseUrl, owner.key, hundredth.body.jobId as string)).body.status).toBe('completed');
  });
});

describe('onConflict: replace', () => {
  it('cancels the run in progress as a cancel would and starts ahead of the queued runs', async () => {
    const { owner, workflowId } = await setUp();
    // It asked for its end's webhook: the replacing start queues it, as a cancel would.
    const running = (await start(owner, workflowId, { callbackUrl: 'https://example.com/hook' })).body.jobId as string;
    const queued = (await start(owner, workflowId, { onConflict: 'queue' })).body.jobId as string;
    // The run in progress has done its first step.
    const [firstStep] = await takeStepMessages(stack.deps);
    expect(firstStep?.jobId).toBe(running);
    await drainOne(firstStep as StepMessage);

    const replacing = await start(owner, workflowId, { onConflict: 'replace' });
    expect(replacing.status).toBe(200);
    expect(replacing.body).toMatchObject({ status: 'queued', replaced: running });
    const jobId = replacing.body.jobId as string;
    // `stopped`: a step of it had completed (the cancel's rule); charged that step only.
    expect((await getRunCall(stack.baseUrl, owner.key, running)).body).toMatchObject({ status: 'stopped' });
    expect((await readLock(stack.deps, workflowId))?.jobId).toBe(jobId);
    expect((await getRunCall(stack.baseUrl, owner.key, queued)).body).toMatchObject({
      queuePosition: 1,
      queuedBehind: jobId,
    });

    // The replaced run's next step, sent before its cancel, is delivered too and does nothing.
    const delivered = await drainSteps(stack.deps, steps());
    expect(runsInOrder(delivered).filter((id) => id !== running)).toEqual([jobId, queued]);
    const ledger = await ledgerOf(stack.deps, owner.teamId);
    expectBalanced(ledger);
    expect(ledger).toMatchObject({ held: 0, charged: 1 + 2 * pairPrice });
  });
});

describe('the wait of a queued run', () => {
  it('a queued run not started by its startBy ends cancelled, holding nothing', async () => {
    const { owner, workflowId } = await setUp();
    const running = (await start(owner, workflowId)).body.jobId as string;
    const startBy = new Date(Date.now() + 60_000).toISOString();
    const waiting = (await start(owner, workflowId, { onConflict: 'queue', startBy })).body.jobId as string;
    const patient = (await start(owner, workflowId, { onConflict: 'queue' })).body.jobId as string;
    expect((await readRunItem(stack.deps, waiting))?.waitUntil).toBe(startBy);

    // The tick after its startBy: cancelled, its hold back; the one without startBy waits on.
    const later = new Date(Date.now() + 2 * 60_000);
    const report = await sweepQueuedRuns({ ...stack.deps, now: () => later });
    expect(report.waitEnded).toContain(waiting);
    expect(report.waitEnded).not.toContain(patient);
    expect((await getRunCall(stack.baseUrl, owner.key, waiting)).body).toMatchObject({ status: 'cancelled' });
    expect((await ledgerOf(stack.deps, owner.teamId)).held).toBe(2 * pairPrice);

    const delivered = await drainSteps(stack.deps, steps());
    expect(runsInOrder(delivered)).toEqual([running, patient]);
    expect(await ledgerOf(stack.deps, owner.teamId)).toMatchObject({ held: 0, charged: 2 * pairPrice });
  });

  it("a startBy in the past or more than 7 days ahead is the deferred runs' 422; without queue or defer a 400", async () => {
    const { owner, workflowId } = await setUp();
    const past = await start(owner, workflowId, { onConflict: 'queue', startBy: '2020-01-01T00:00:00.000Z' });
    expect(past.status).toBe(422);
    expect(past.body).toMatchObject({
      error: 'startBy must lie in the future and no later than latestStartBy',
      startBy: '2020-01-01T00:00:00.000Z',
    });
    const far = new Date(Date.now() + 8 * 24 * 3600_000).toISOString();
    const tooFar = await start(owner, workflowId, { onConflict: 'queue', startBy: far });
    expect(tooFar.status).toBe(422);
    expect(Date.parse(tooFar.body.latestStartBy as string)).toBeLessThan(Date.parse(far));
    const alone = await start(owner, workflowId, { startBy: far });
    expect(alone.status).toBe(400);
    expect(alone.body.error).toBe('Invalid request body: startBy: needs `defer: true` or `onConflict: "queue"`');
  });
});

describe('starting the next queued run', () => {
  it('is exactly once: a start-next repeated and racing the tick starts the waiting run once', async () => {
    const { owner, workflowId } = await setUp();
    const running = (await start(owner, workflowId)).body.jobId as string;
    const waiting = (await start(owner, workflowId, { onConflict: 'queue' })).body.jobId as string;
    await takeStepMessages(stack.deps);
    // The cancel's process dies between handing the lock over and starting the queue: its read of
    // the queue fails, so the lock is left free with one run waiting.
    const dying = faultyDeps(stack, {
      failDynamo: (command, input) =>
        command === 'QueryCommand' && JSON.stringify(input).includes(workflowQueuePartition(workflowId)),
    });
    await cancelRun(dying, owner.teamId, running);
    expect(await readLock(stack.deps, workflowId)).toMatchObject({ waiting: 1 });
    expect((await readLock(stack.deps, workflowId))?.jobId).toBeUndefined();
    expect((await readRunItem(stack.deps, waiting))?.status).toBe(RunStatus.waiting);

    // The tick sees a waiting run two minutes after its acceptance: its clock set past that.
    const later = new Date(Date.now() + 3 * 60_000);
    const [a, b, tick] = await Promise.all([
      startNextQueued(stack.deps, workflowId),
      startNextQueued(stack.deps, workflowId),
      sweepQueuedRuns({ ...stack.deps, now: () => later }),
    ]);
    expect([a, b, ...tick.startedFromQueue].filter((id) => id === waiting)).toHaveLength(1);
    expect(await startNextQueued(stack.deps, workflowId)).toBeUndefined();
    // Its first step was sent. The tick, its clock three minutes on, may also find the promoted run
    // "left queued" and send that step again (the sweep's own fallback): a duplicate delivery, which the
    // step's conditional writes make harmless; the run below is charged once.
    const sent = await takeStepMessages(stack.deps);
    expect(sent.length).toBeGreaterThanOrEqual(1);
    expect(sent.every((m) => m.jobId === waiting && m.nodeId === 'in')).toBe(true);
    for (const message of sent) await drainOne(message);
    await drainSteps(stack.deps, steps());
    expect((await getRunCall(stack.baseUrl, owner.key, waiting)).body.status).toBe('completed');
    expect(await ledgerOf(stack.deps, owner.teamId)).toMatchObject({ held: 0, charged: pairPrice });
  });

  it('a queued run that starts is marked for run.started when it chose it (its move from waiting)', () => {
    const image = { SK: 'RUN', jobId: 'j', createdAt: '2026-12-07T00:00:00.000Z', notifyStart: true };
    const change = lifecycleChangeOf(
      { oldImage: { ...image, status: 'waiting', notifyStart: undefined }, newImage: { ...image, status: 'queued' } },
      new Date(),
      30,
    );
    expect(change?.ref).toEqual({ event: 'run.started' });
    // A later change of the started run gives nothing.
    expect(
      lifecycleChangeOf(
        { oldImage: { ...image, status: 'queued' }, newImage: { ...image, status: 'processing' } },
        new Date(),
        30,
      ),
    ).toBeUndefined();
  });
});

describe('deferred runs and resumes', () => {
  it('a dispatched deferred run that meets a busy workflow queues (onConflict: queue) instead of waiting', async () => {
    const { owner, workflowId } = await setUp();
    const running = (await start(owner, workflowId)).body.jobId as string;
    const deferredQueued = await start(owner, workflowId, { defer: true, maxMultiplier: 10, onConflict: 'queue' });
    const deferredPlain = await start(owner, workflowId, { defer: true, maxMultiplier: 10 });
    expect(deferredQueued.status).toBe(202);
    const report = (await dispatcherHandler(stack.deps)()) as {
      dispatched: { deferredJobId: string; jobId: string }[];
      keptWaiting: string[];
    };
    const dispatched = report.dispatched.find((d) => d.deferredJobId === deferredQueued.body.deferredJobId);
    expect(dispatched).toBeDefined();
    expect(report.keptWaiting).toContain(deferredPlain.body.deferredJobId);
    expect((await getRunCall(stack.baseUrl, owner.key, dispatched?.jobId as string)).body).toMatchObject({
      status: 'queued',
      queuePosition: 1,
      queuedBehind: running,
    });
    const delivered = await drainSteps(stack.deps, steps());
    expect(runsInOrder(delivered)).toEqual([running, dispatched?.jobId]);
    await api(stack.baseUrl, 'DELETE', `/deferred-runs/${deferredPlain.body.deferredJobId}`, { key: owner.key });
  });

  it('a resume with onConflict queue waits behind the run in progress (202)', async () => {
    const { owner, workflowId } = await setUp();
    const first = (await start(owner, workflowId)).body.jobId as string;
    // Stop it after its first step, so it can be resumed.
    const [step] = await takeStepMessages(stack.deps);
    await drainOne(step as StepMessage);
    await takeStepMessages(stack.deps);
    expect((await cancelRunCall(stack.baseUrl, owner.key, first)).body.status).toBe('stopped');
    const running = (await start(owner, workflowId)).body.jobId as string;
    const resumed = await api(stack.baseUrl, 'POST', `/runs/${first}/resume`, {
      key: owner.key,
      body: { onConflict: 'queue' },
    });
    expect(resumed.status).toBe(202);
    expect(resumed.body).toMatchObject({ resumedFrom: first, queuePosition: 1, queuedBehind: running });
    const delivered = await drainSteps(stack.deps, steps());
    expect(runsInOrder(delivered)).toEqual([running, resumed.body.jobId]);
    expect((await getRunCall(stack.baseUrl, owner.key, resumed.body.jobId as string)).body.status).toBe('completed');
  });
});
