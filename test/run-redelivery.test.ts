/**
 * The step executor under SQS's at-least-once delivery (spec 3.1; docs/architecture.md, "Executing a step"): the real
 * handler is fed SQS records built from the messages the service put on the steps queue (taken off
 * it with the SDK), duplicated, reordered, delivered at once, after a crash, and as a poison message.
 */
import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Deps } from '../functions/deps.ts';
import { workflowLockKey } from '../functions/store/keys.ts';
import { claimStep, stepLeaseSeconds } from '../functions/store/run-steps.ts';
import { stepsQueue } from '../lib/definitions.ts';
import {
  cancelRunCall,
  deliver,
  diamondPrices,
  diamondSteps,
  drainSteps,
  expectBalanced,
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
  sumCharges,
  takeStepMessages,
  transactionConflict,
  waitForEnd,
} from './support/runs.ts';
import { addKey, createWorkflow, type SeededTeam, seedTeam, startTestStack, type TestStack } from './support/stack.ts';

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack();
});
afterAll(() => stack.close());

const diamondTotal = Object.values(diamondPrices).reduce((a, b) => a + b, 0);

const team = async (stackToUse: TestStack, credits = 100): Promise<SeededTeam> => {
  const seeded = await seedTeam(stackToUse.deps, { credits });
  const added = await addKey(stackToUse.deps, seeded.teamId, { rateLimitPerMinute: 100_000 });
  return { ...seeded, key: added.key, keyId: added.keyId };
};

/** Starts a run over HTTP; its root step messages are on the steps queue (no worker polls it here). */
const startQueued = async (t: SeededTeam, steps: unknown[] = diamondSteps) => {
  const workflowId = await createWorkflow(stack, t, steps);
  const started = await startRunCall(stack.baseUrl, t.key, workflowId);
  expect(started.status, JSON.stringify(started.body)).toBe(200);
  return { workflowId, jobId: started.body.jobId as string };
};

/** The step messages of one run now on the queue (others' are dropped: their runs ended). */
const messagesOf = async (jobId: string) => (await takeStepMessages(stack.deps)).filter((m) => m.jobId === jobId);

/** A team with its diamond run started, and the run's root message (`a`) taken off the queue. */
const startedRoot = async () => {
  const t = await team(stack, 100);
  const { jobId, workflowId } = await startQueued(t);
  const [root] = await messagesOf(jobId);
  expect(root?.nodeId).toBe('a');
  return { t, jobId, workflowId, root: root as StepMessage };
};

/** Deterministic pseudo-random numbers from a seed (mulberry32). */
const randomFrom = (seed: number) => {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
};

/** The run ended `completed`, every step completed and charged once at its price, the ledger balanced. */
const expectCompletedOnce = async (t: SeededTeam, jobId: string, prices: Record<string, number>) => {
  const { run, steps, charges } = await runParts(stack.deps, jobId);
  const total = Object.values(prices).reduce((a, b) => a + b, 0);
  expect(run).toMatchObject({ status: 'completed', heldHundredths: 0, chargedHundredths: total });
  expect(Object.fromEntries([...steps].map(([node, s]) => [node, s.status]))).toEqual(
    Object.fromEntries(Object.keys(prices).map((node) => [node, 'completed'])),
  );
  expect(Object.fromEntries([...charges].map(([node, c]) => [node, c.hundredths]))).toEqual(prices);
  const ledger = await ledgerOf(stack.deps, t.teamId);
  expectBalanced(ledger);
  expect(ledger).toMatchObject({ held: 0, charged: sumCharges(charges) });
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
          const random = randomFrom(seed);
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
    expect(
      await deliver(
        handler,
        forE.map((m) => stepRecord(m)),
      ),
    ).toEqual([]);
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
    expect(await claimStep(stack.deps, jobId, 'c')).toEqual({ claimed: true, attempt: 1 });
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
    expect(steps.get('a')).toMatchObject({ status: 'completed', chargeHundredths: 0 });
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
    expect(
      await deliver(
        handler,
        late.map((m) => stepRecord(m)),
      ),
    ).toEqual([]);
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

  it('a poison message ends in the DLQ and its run fails visibly', async () => {
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
        // Five receives, one second apart: the fifth fails the run, the sixth moves the message to the DLQ.
        expect((await waitForEnd(poisonStack.baseUrl, t.key, jobId)).body.status).toBe('failed');
        const { Messages = [] } = await poisonStack.deps.sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: poisonStack.resources.dlqUrls.Steps,
            WaitTimeSeconds: 5,
            MessageSystemAttributeNames: ['All'],
          }),
        );
        expect(Messages.map((m) => JSON.parse(m.Body ?? '{}'))).toEqual([{ jobId, workflowId, nodeId: 'topic' }]);
      } finally {
        await poller.stop();
      }
      const read = await getRunCall(poisonStack.baseUrl, t.key, jobId);
      expect(read.body).toMatchObject({ status: 'failed', progress: 0, output: [] });
      expect(read.body.steps).toEqual([
        {
          node_id: 'topic',
          step_type: 'TextEntry',
          status: 'failed',
          error: `Step could not be executed after ${stepsQueue.maxReceiveCount} attempts`,
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
