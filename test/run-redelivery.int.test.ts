/**
 * The step executor under SQS's at-least-once delivery (spec 3.1; docs/architecture.md, "Executing a step"): the real
 * handler is fed SQS records built from the messages the service put on the steps queue (taken off
 * it with the SDK), duplicated, reordered, delivered at once, after a crash, throttled, and failing.
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Deps } from '../functions/deps.ts';
import { executionsFailedError, stepExecutionAttempts } from '../functions/domain/step-attempts.ts';
import { prng } from '../functions/nodes/providers/sandbox.ts';
import { workflowLockKey } from '../functions/store/keys.ts';
import { claimStep, readRunItem, stepLeaseSeconds } from '../functions/store/run/index.ts';
import { stepsQueue } from '../platform/definitions.ts';
import type { RunStepDetails } from '../schemas/run-steps.ts';
import { queueContents } from './support/queue-contents.ts';
import {
  cancelRunCall,
  deliver,
  diamondPrices,
  diamondSteps,
  drainSteps,
  expectBalanced,
  expectRunCompletedOnce,
  faultyDeps,
  getRunCall,
  instantExecutor,
  ledgerOf,
  realStepHandler,
  runParts,
  type StepMessage,
  startRunCall,
  startStepWorkers,
  stepHandler,
  stepRecord,
  stepRecords,
  takeStepMessages,
  transactionConflict,
  waitForEnd,
} from './support/runs.ts';
import {
  createWorkflow,
  type SeededTeam,
  seedUnthrottledTeam,
  stackPerFile,
  startTestStack,
  type TestStack,
} from './support/stack.ts';

const { stack } = stackPerFile();

const diamondTotal = Object.values(diamondPrices).reduce((a, b) => a + b, 0);

const team = (stackToUse: TestStack, credits = 100) => seedUnthrottledTeam(stackToUse.deps, credits);

/** Starts a run over HTTP; its root step messages are on the steps queue (no worker polls it here). */
const startQueued = async (t: SeededTeam, steps: unknown[] = diamondSteps) => {
  const workflowId = await createWorkflow(stack, t, steps);
  const started = await startRunCall(stack.baseUrl, t.key, workflowId);
  expect(started.status, JSON.stringify(started.body)).toBe(200);
  return { workflowId, jobId: started.body.jobId as string };
};

/** The step messages of one run now on the queue (others' are dropped: their runs ended). */
const messagesOf = async (jobId: string) => (await takeStepMessages(stack.deps)).filter((m) => m.jobId === jobId);

/** The run item, as a worker claiming one of its steps has read it. */
const runItemOf = async (jobId: string) => {
  const run = await readRunItem(stack.deps, jobId);
  if (!run) throw new Error(`run ${jobId} not found`);
  return run;
};

/** A team with its diamond run started, and the run's root message (`a`) taken off the queue. */
const startedRoot = async () => {
  const t = await team(stack, 100);
  const { jobId, workflowId } = await startQueued(t);
  const [root] = await messagesOf(jobId);
  expect(root?.nodeId).toBe('a');
  return { t, jobId, workflowId, root: root as StepMessage };
};

/** The run ended `completed`, every step completed and charged once at its price, the ledger balanced. */
const expectCompletedOnce = async (t: SeededTeam, jobId: string, prices: Record<string, number>) => {
  const { run } = await expectRunCompletedOnce(stack.deps, t.teamId, jobId, prices);
  const lock = await stack.deps.ddb.send(
    new GetCommand({ TableName: stack.deps.tableName, Key: workflowLockKey(run?.workflowId as string) }),
  );
  expect(lock.Item).toBeUndefined();
  const read = await getRunCall(stack.baseUrl, t.key, jobId);
  expect(read.body).toMatchObject({ status: 'completed', progress: 100 });
};

describe('redelivered and duplicated step messages', () => {
  it('the same step message delivered 1–5 times, in any order, some at once: one charge per distinct step', {
    timeout: 120_000,
  }, async () => {
    const handler = stepHandler(stack.deps);
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          copies: fc.dictionary(fc.constantFrom('a', 'b', 'c', 'd', 'e'), fc.integer({ min: 1, max: 5 })),
          seed: fc.integer(),
        }),
        async ({ copies, seed }) => {
          const random = prng(seed); // deterministic per seed: a failure replays
          const t = await team(stack, 100);
          const { jobId } = await startQueued(t);
          const seen = new Set<string>();
          const pending: { message: StepMessage; receiveCount: number }[] = [];
          for (let round = 0; round < 200; round++) {
            for (const message of await messagesOf(jobId)) {
              // Each step's first message is delivered `copies` times; a message sent again is delivered once more.
              const times = seen.has(message.nodeId) ? 1 : (copies[message.nodeId] ?? 1);
              seen.add(message.nodeId);
              for (let i = 1; i <= times; i++) pending.push({ message, receiveCount: i });
            }
            if (pending.length === 0) break;
            // Any order: take 1 to 3 pending deliveries at random, and deliver them at once.
            const group = Array.from(
              { length: Math.min(pending.length, 1 + Math.floor(random() * 3)) },
              () => pending.splice(Math.floor(random() * pending.length), 1)[0] as (typeof pending)[number],
            );
            const records = group.map((d) => stepRecord(d.message, d.receiveCount));
            const failed =
              random() < 0.5
                ? await deliver(handler, records) // one SQS batch
                : (await Promise.all(records.map((r) => deliver(handler, [r])))).flat(); // parallel invocations
            expect(failed).toEqual([]);
          }
          expect([...seen].sort()).toEqual(['a', 'b', 'c', 'd', 'e']);
          await expectCompletedOnce(t, jobId, diamondPrices);
          expect(await ledgerOf(stack.deps, t.teamId)).toEqual({
            balance: 10_000 - diamondTotal,
            held: 0,
            charged: diamondTotal,
            granted: 10_000,
          });
        },
      ),
      { numRuns: 3 },
    );
  });

  it('a worker killed between charging and acknowledging: not charged twice, successors released, the run ends', async () => {
    const { t, jobId, workflowId, root } = await startedRoot();
    const handler = stepHandler(stack.deps);
    // The worker charged `a`, then died before sending its successors: its SQS sends fail.
    const dying = stepHandler(faultyDeps(stack, { failSqs: (command) => command.startsWith('SendMessage') }));
    const record = stepRecord(root, 1);
    expect(await deliver(dying, [record])).toEqual([record.messageId]);
    expect((await runParts(stack.deps, jobId)).charges.get('a')?.hundredths).toBe(1);
    expect(await messagesOf(jobId)).toEqual([]);
    const charged = (await ledgerOf(stack.deps, t.teamId)).charged;

    // SQS delivers the same record again: no new charge, and now the successors go out.
    expect(await deliver(handler, [stepRecord(root, 2)])).toEqual([]);
    expect((await ledgerOf(stack.deps, t.teamId)).charged).toBe(charged);
    const released = await messagesOf(jobId);
    expect(released.map((m) => m.nodeId).sort()).toEqual(['b', 'c']);

    // A worker that finished everything but the delete: its record comes back; nothing changes.
    for (const message of released) expect(await deliver(handler, [stepRecord(message)])).toEqual([]);
    // A late duplicate of `a` once its successors ran sends none of them again (no cascade of duplicates).
    expect(await deliver(handler, [stepRecord(root, 3)])).toEqual([]);
    const afterDuplicate = await messagesOf(jobId);
    expect(afterDuplicate.map((m) => m.nodeId)).toEqual(['d']);
    const [d] = afterDuplicate;
    expect(await deliver(handler, [stepRecord(d as StepMessage)])).toEqual([]);
    const afterD = await ledgerOf(stack.deps, t.teamId);
    expect(await deliver(handler, [stepRecord(d as StepMessage, 2)])).toEqual([]);
    expect(await ledgerOf(stack.deps, t.teamId)).toEqual(afterD);
    // The redelivery released `e` again: two messages for it, one charge.
    const forE = await messagesOf(jobId);
    expect(forE.map((m) => m.nodeId)).toEqual(['e', 'e']);
    expect(await deliver(handler, stepRecords(forE))).toEqual([]);
    expect(await deliver(handler, [stepRecord({ jobId, workflowId, nodeId: 'e' }, 3)])).toEqual([]);
    await expectCompletedOnce(t, jobId, diamondPrices);
  });

  it('a worker killed between claiming a model step and finishing it: the step is taken over once its lease ran out', async () => {
    const { t, jobId, root } = await startedRoot();
    const handler = stepHandler(stack.deps);
    expect(await deliver(handler, [stepRecord(root)])).toEqual([]);
    const released = await messagesOf(jobId);
    const b = released.find((m) => m.nodeId === 'b') as StepMessage;
    const c = released.find((m) => m.nodeId === 'c') as StepMessage;
    expect(await deliver(handler, [stepRecord(b)])).toEqual([]);
    // The first worker claimed the model step `c` and died.
    expect(await claimStep(stack.deps, await runItemOf(jobId), 'c')).toEqual({
      claimed: true,
      attempt: 1,
      providerTries: 0,
    });
    // Within the lease, the redelivery is taken for a duplicate and dropped: the provider is not paid twice.
    expect(await deliver(handler, [stepRecord(c, 2)])).toEqual([]);
    expect((await runParts(stack.deps, jobId)).steps.get('c')).toMatchObject({ status: 'processing', attempts: 1 });

    // Past the lease, SQS's redelivery takes the step over and the run goes on to its end.
    const later: Deps = { ...stack.deps, now: () => new Date(Date.now() + (stepLeaseSeconds + 1) * 1000) };
    expect(await deliver(stepHandler(later), [stepRecord(c, 3)])).toEqual([]);
    expect((await runParts(stack.deps, jobId)).steps.get('c')).toMatchObject({ status: 'completed', attempts: 2 });
    await drainSteps(stack.deps, stepHandler(later));
    await expectCompletedOnce(t, jobId, diamondPrices);
  });

  it('a cheap step is not claimed: its item is written once, when it finishes', async () => {
    const { t, jobId, root } = await startedRoot();
    // Two deliveries of `a` at once both run the (free, deterministic) node; one records and counts it.
    const handler = stepHandler(stack.deps);
    const records = [stepRecord(root, 1), stepRecord(root, 1)];
    expect((await Promise.all(records.map((r) => deliver(handler, [r])))).flat()).toEqual([]);
    const { run, steps } = await runParts(stack.deps, jobId);
    expect(steps.get('a')).toMatchObject({ status: 'completed', chargeHundredths: 1 });
    expect(steps.get('a')?.attempts).toBeUndefined();
    expect(run).toMatchObject({ stepsCompleted: 1, chargedHundredths: 1 });
    await drainSteps(stack.deps, handler);
    await expectCompletedOnce(t, jobId, diamondPrices);
  });

  it('a worker killed between recording a step and counting it: the redelivery counts it once', async () => {
    const { t, jobId, root } = await startedRoot();
    // The step's end is written, then the run's count fails (the worker died there).
    const dying = stepHandler(
      faultyDeps(stack, {
        failDynamo: (command, input) => command === 'UpdateItemCommand' && JSON.stringify(input).includes('"SK":"RUN"'),
      }),
    );
    const record = stepRecord(root, 1);
    expect(await deliver(dying, [record])).toEqual([record.messageId]);
    let parts = await runParts(stack.deps, jobId);
    expect(parts.steps.get('a')).toMatchObject({ status: 'completed', chargeHundredths: 1 });
    expect(parts.run).toMatchObject({ stepsCompleted: 0, chargedHundredths: 0, heldHundredths: diamondTotal });
    expect(await messagesOf(jobId)).toEqual([]);

    // SQS delivers it again: counted once, successors released.
    const handler = stepHandler(stack.deps);
    expect(await deliver(handler, [stepRecord(root, 2)])).toEqual([]);
    parts = await runParts(stack.deps, jobId);
    expect(parts.run).toMatchObject({ stepsCompleted: 1, chargedHundredths: 1, heldHundredths: diamondTotal - 1 });
    expect(parts.run?.doneSteps).toEqual(new Set(['a']));
    const released = await messagesOf(jobId);
    expect(released.map((m) => m.nodeId).sort()).toEqual(['b', 'c']);
    for (const message of released) expect(await deliver(handler, [stepRecord(message)])).toEqual([]);
    // A late duplicate of `a`: its count is refused (doneSteps holds it) and it sends nothing again.
    const before = (await runParts(stack.deps, jobId)).run;
    const pending = await messagesOf(jobId);
    expect(await deliver(handler, [stepRecord(root, 3)])).toEqual([]);
    expect(await messagesOf(jobId)).toEqual([]);
    expect((await runParts(stack.deps, jobId)).run).toMatchObject({
      stepsCompleted: before?.stepsCompleted,
      chargedHundredths: before?.chargedHundredths,
    });
    for (const message of pending) expect(await deliver(handler, [stepRecord(message)])).toEqual([]);
    await drainSteps(stack.deps, handler);
    await expectCompletedOnce(t, jobId, diamondPrices);
  });

  it('a step that finishes after its run was cancelled is not charged, and its item says so', async () => {
    const { t, jobId, root } = await startedRoot();
    // The run is cancelled while its first step is running.
    const cancelling = stepHandler(stack.deps, () => async (context) => {
      expect((await cancelRunCall(stack.baseUrl, t.key, jobId)).body.status).toBe('cancelled');
      return instantExecutor(context);
    });
    expect(await deliver(cancelling, [stepRecord(root)])).toEqual([]);
    const { run, steps } = await runParts(stack.deps, jobId);
    expect(run).toMatchObject({ status: 'cancelled', heldHundredths: 0, chargedHundredths: 0 });
    // Its output is dropped, not published: the item says `unknown`, with no outputs and no charge.
    expect(steps.get('a')).toMatchObject({ status: 'unknown', chargeHundredths: 0 });
    expect(Object.keys(steps.get('a') ?? {})).not.toContain('outputs');
    expect((await getRunCall(stack.baseUrl, t.key, jobId)).body).toMatchObject({ status: 'cancelled', output: [] });
    expect(await messagesOf(jobId)).toEqual([]);
    expect(await ledgerOf(stack.deps, t.teamId)).toEqual({ balance: 10_000, held: 0, charged: 0, granted: 10_000 });
  });

  it('a transaction cancelled by a conflicting one is retried, not taken for a finished step', async () => {
    const t = await team(stack, 100);
    const { jobId } = await startQueued(t);
    // DynamoDB cancels a transaction that touches an item another transaction is writing (the team
    // item is written by every start and every end of the team's runs). The run's end meets one.
    const conflicts = new Set(['finalizedAt']);
    const conflicting = faultyDeps(stack, {
      failDynamo: (command, input) => {
        if (!command.startsWith('TransactWrite')) return false;
        const text = JSON.stringify(input);
        const hit = [...conflicts].find((c) => text.includes(c));
        if (hit) conflicts.delete(hit);
        return hit !== undefined;
      },
      error: transactionConflict,
    });
    await drainSteps(stack.deps, stepHandler(conflicting));
    expect(conflicts.size).toBe(0);
    await expectCompletedOnce(t, jobId, diamondPrices);
  });
});

describe('attempts are counted on the step, never from SQS receives', () => {
  it('the redrive leaves room for receives that ran nothing', () => {
    expect(stepsQueue.maxReceiveCount).toBeGreaterThan(stepExecutionAttempts);
  });

  it('a step message received many times without a failed execution does not fail the step', async () => {
    const { t, jobId, root } = await startedRoot();
    // Every node throws on its first execution only, and every record says SQS received it 20
    // times already (throttled, handed back): each step spends one attempt, and the run completes.
    const threw = new Set<string>();
    const flaky = stepHandler(stack.deps, () => async (context) => {
      if (threw.has(context.node.id)) return instantExecutor(context);
      threw.add(context.node.id);
      throw new Error('provider hiccup');
    });
    let ready = [root];
    while (ready.length > 0) {
      for (const message of ready) {
        const first = stepRecord(message, 20);
        expect(await deliver(flaky, [first])).toEqual([first.messageId]);
        expect(await deliver(flaky, [stepRecord(message, 21)])).toEqual([]);
      }
      ready = await messagesOf(jobId);
    }
    expect([...threw].sort()).toEqual(['a', 'b', 'c', 'd', 'e']);
    await expectCompletedOnce(t, jobId, diamondPrices);
    const { steps } = await runParts(stack.deps, jobId);
    // A cheap step counted its failure on its item; the model step's claims count its executions.
    expect(steps.get('a')).toMatchObject({ status: 'completed', failures: 1 });
    expect(steps.get('c')).toMatchObject({ status: 'completed', attempts: 2 });
  });

  it.each([
    ['a cheap step', 'a'],
    ['a model step', 'c'],
  ])('%s whose node throws on each execution fails the run after the configured attempts', async (_, failing) => {
    const { t, jobId, root } = await startedRoot();
    const executions: string[] = [];
    const handler = stepHandler(stack.deps, () => async (context) => {
      if (context.node.id !== failing) return instantExecutor(context);
      executions.push(context.node.id);
      throw new Error('provider exploded');
    });
    let message = root;
    if (failing === 'c') {
      expect(await deliver(handler, [stepRecord(root)])).toEqual([]);
      const released = await messagesOf(jobId);
      expect(await deliver(handler, [stepRecord(released.find((m) => m.nodeId === 'b') as StepMessage)])).toEqual([]);
      message = released.find((m) => m.nodeId === 'c') as StepMessage;
    }
    // The same message handed over again and again, each time as a first receive.
    for (let execution = 1; execution < stepExecutionAttempts; execution++) {
      const record = stepRecord(message, 1);
      expect(await deliver(handler, [record])).toEqual([record.messageId]);
      expect((await getRunCall(stack.baseUrl, t.key, jobId)).body.status).not.toBe('failed');
    }
    // The last execution fails the run visibly; the message is done (nothing for the DLQ).
    expect(await deliver(handler, [stepRecord(message, 1)])).toEqual([]);
    expect(executions).toHaveLength(stepExecutionAttempts);
    const read = await getRunCall(stack.baseUrl, t.key, jobId);
    expect(read.body.status).toBe('failed');
    const view = read.body.steps as { node_id: string; status: string; error?: string }[];
    expect(view.find((s) => s.node_id === failing)).toMatchObject({
      status: 'failed',
      error: executionsFailedError(stepExecutionAttempts),
    });
    // Its history: each execution one failed attempt, charged nothing; each but the last delivered again.
    const details = await fetch(`${stack.baseUrl}/runs/${jobId}/steps/${failing}`, {
      headers: { authorization: `Bearer ${t.key}` },
    });
    const attempts = ((await details.json()) as RunStepDetails).attempts;
    expect(attempts).toHaveLength(stepExecutionAttempts);
    for (const attempt of attempts.slice(0, -1))
      expect(attempt).toMatchObject({
        outcome: 'failed',
        retryClass: 'execution',
        next: { why: 'redelivery' },
        chargedHundredths: 0,
      });
    expect(attempts.at(-1)).toMatchObject({ outcome: 'failed', retryClass: 'none', chargedHundredths: 0 });
    expect(attempts.at(-1)?.next).toBeUndefined();
    // Another copy runs nothing, and the ledger holds nothing for the run.
    expect(await deliver(handler, [stepRecord(message, 1)])).toEqual([]);
    expect(executions).toHaveLength(stepExecutionAttempts);
    const ledger = await ledgerOf(stack.deps, t.teamId);
    expectBalanced(ledger);
    expect(ledger.held).toBe(0);
    expect(ledger.charged).toBe(failing === 'c' ? 2 : 0); // `a` and `b` ran before `c` failed
  });

  it('a model step whose worker dies on each execution fails once its claims are spent', async () => {
    const { t, jobId, root } = await startedRoot();
    const handler = stepHandler(stack.deps);
    expect(await deliver(handler, [stepRecord(root)])).toEqual([]);
    const released = await messagesOf(jobId);
    expect(await deliver(handler, [stepRecord(released.find((m) => m.nodeId === 'b') as StepMessage)])).toEqual([]);
    const c = released.find((m) => m.nodeId === 'c') as StepMessage;
    // Five workers claimed `c` and died, each lease running out before the next took it over.
    let clock = Date.now();
    for (let claim = 1; claim <= stepExecutionAttempts; claim++) {
      clock += (stepLeaseSeconds + 1) * 1000;
      const at: Deps = { ...stack.deps, now: () => new Date(clock) };
      expect(await claimStep(at, await runItemOf(jobId), 'c')).toEqual({
        claimed: true,
        attempt: claim,
        providerTries: 0,
      });
    }
    clock += (stepLeaseSeconds + 1) * 1000;
    const late = stepHandler({ ...stack.deps, now: () => new Date(clock) }, () => async () => {
      throw new Error('never runs');
    });
    expect(await deliver(late, [stepRecord(c)])).toEqual([]);
    const read = await getRunCall(stack.baseUrl, t.key, jobId);
    expect(read.body.status).toBe('failed');
    const view = read.body.steps as { node_id: string; status: string; error?: string }[];
    expect(view.find((s) => s.node_id === 'c')).toMatchObject({
      status: 'failed',
      error: executionsFailedError(stepExecutionAttempts),
    });
    expectBalanced(await ledgerOf(stack.deps, t.teamId));
  });
});

describe('failing steps', () => {
  it('a failing step fails the run: error recorded, downstream skipped, hold released once, lock freed', async () => {
    const t = await team(stack, 100);
    // `a` → `b` succeeds; `j` holds text that is not JSON, so `j` fails and `k` can never run.
    const steps = [
      { key: 'a', type: 'TextEntry', config: { text: 'fine' } },
      { key: 'b', type: 'TextConsole', inputs: ['a'] },
      { key: 'j', type: 'JsonLoader', config: { data: '{not json' } },
      { key: 'k', type: 'TextConsole', inputs: ['j'] },
    ];
    const { jobId, workflowId } = await startQueued(t, steps);
    // The real node executors: JsonLoader refuses the text.
    const handler = realStepHandler(stack.deps);
    const roots = await messagesOf(jobId);
    const byNode = (node: string) => roots.find((m) => m.nodeId === node) as StepMessage;
    expect(await deliver(handler, [stepRecord(byNode('a'))])).toEqual([]);
    // `a` is charged on the run; the team item settles once, when the run ends.
    expect((await runParts(stack.deps, jobId)).run).toMatchObject({ heldHundredths: 3, chargedHundredths: 1 });
    expect(await ledgerOf(stack.deps, t.teamId)).toMatchObject({ held: 4, charged: 0, balance: 10_000 - 4 });
    expect(await deliver(handler, [stepRecord(byNode('j'))])).toEqual([]);
    // `b` was released by `a` before the failure; it finds the run ended and never runs.
    const late = await messagesOf(jobId);
    expect(late.map((m) => m.nodeId)).toEqual(['b']);
    expect(await deliver(handler, stepRecords(late))).toEqual([]);
    // The failing message again, and a stray one for `k`: nothing moves.
    expect(
      await deliver(handler, [stepRecord(byNode('j'), 2), stepRecord({ jobId, workflowId, nodeId: 'k' })]),
    ).toEqual([]);

    const read = await getRunCall(stack.baseUrl, t.key, jobId);
    expect(read.body).toMatchObject({ jobId, status: 'failed', progress: 25, output: [] });
    const stepsView = read.body.steps as { node_id: string; status: string; error?: string }[];
    expect(Object.fromEntries(stepsView.map((s) => [s.node_id, s.status]))).toEqual({
      a: 'completed',
      b: 'skipped',
      j: 'failed',
      k: 'skipped',
    });
    expect(stepsView.find((s) => s.node_id === 'j')?.error).toMatch(/JSON/);
    expect(stepsView.filter((s) => s.error !== undefined)).toHaveLength(1);
    // Released exactly once: only `a` charged, nothing held.
    expect(await ledgerOf(stack.deps, t.teamId)).toEqual({ balance: 9_999, held: 0, charged: 1, granted: 10_000 });
    const { run, charges } = await runParts(stack.deps, jobId);
    expect(run).toMatchObject({ status: 'failed', heldHundredths: 0, chargedHundredths: 1 });
    expect([...charges.keys()]).toEqual(['a']);
    // The lock is free: a new run of the same workflow is accepted.
    const next = await startRunCall(stack.baseUrl, t.key, workflowId);
    expect(next.status).toBe(200);
  });

  it('a node that always throws fails its run visibly, and its message leaves the queue, not for the DLQ', async () => {
    const poisonStack = await startTestStack();
    try {
      const t = await team(poisonStack, 100);
      const workflowId = await createWorkflow(poisonStack, t);
      const started = await startRunCall(poisonStack.baseUrl, t.key, workflowId);
      const jobId = started.body.jobId as string;
      const poller = startStepWorkers(poisonStack, {
        definition: { ...stepsQueue, visibilityTimeoutSeconds: 1 },
        executors: () => async () => {
          throw new Error('provider exploded');
        },
      });
      try {
        // Five receives, one second apart: the fifth execution fails the run.
        expect((await waitForEnd(poisonStack.baseUrl, t.key, jobId)).body.status).toBe('failed');
      } finally {
        await poller.stop(); // returns once its last batch was handled and deleted
      }
      // The failure is recorded, so the message was processed: deleted, not left for the DLQ.
      expect(await queueContents(poisonStack.resources, 'Steps')).toEqual([]);
      expect(await queueContents(poisonStack.resources, 'Steps', { dlq: true })).toEqual([]);
      const read = await getRunCall(poisonStack.baseUrl, t.key, jobId);
      expect(read.body).toMatchObject({ status: 'failed', progress: 0, output: [] });
      expect(read.body.steps).toEqual([
        {
          node_id: 'topic',
          step_type: 'TextEntry',
          status: 'failed',
          error: executionsFailedError(stepExecutionAttempts),
        },
        { node_id: 'prompt', step_type: 'PromptBuilder', status: 'skipped' },
        { node_id: 'llm', step_type: 'LlmWorker', status: 'skipped' },
        { node_id: 'show', step_type: 'TextConsole', status: 'skipped' },
      ]);
      const ledger = await ledgerOf(poisonStack.deps, t.teamId);
      expect(ledger).toEqual({ balance: 10_000, held: 0, charged: 0, granted: 10_000 });
    } finally {
      await poisonStack.close();
    }
  });
});
