/**
 * A chain's next step run in its predecessor's invocation (functions/app/step/run-step.ts, the step loop's next turn):
 * the real step-executor handler, given a Lambda context with time left, runs a chain of cheap
 * steps from one message; a model step, a short budget or a failing node hands the step to the
 * queue; and a worker killed anywhere in the chain is recovered by its message's redelivery with
 * every step charged once (spec 3.1; docs/architecture.md, "Executing a step").
 */
import type { SQSEvent } from 'aws-lambda';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Deps } from '../functions/deps.ts';
import { settleMarginMs } from '../functions/domain/step-plan.ts';
import { type NodeExecutor, StepFailedError } from '../functions/nodes/executors/types.ts';
import type { RunItem } from '../functions/store/items/runs.ts';
import { finishStepItem } from '../functions/store/run/index.ts';
import { makeHandler } from '../functions/workers/step-executor.ts';
import { invokedAs } from '../local/invocation.ts';
import { lambdaContext } from '../local/lambda-context.ts';
import {
  cancelRunCall,
  deliver,
  drainSteps,
  expectBalanced,
  expectRunCompletedOnce,
  faultyDeps,
  instantExecutor,
  instantExecutorFor,
  ledgerOf,
  runParts,
  type StepHandler,
  type StepMessage,
  startRunCall,
  stepRecord,
  stepRecords,
  sumCharges,
  takeStepMessages,
} from './support/runs.ts';
import { createWorkflow, type SeededTeam, seedUnthrottledTeam, stackPerFile } from './support/stack.ts';

const { stack } = stackPerFile();

const stepTimeoutMs = 5_000;

/** The step executor as Lambda invokes it: with a context whose clock shows `remainingMs` left. */
const contextHandler = (
  deps: Deps,
  options: { executors?: () => NodeExecutor; remainingMs?: number } = {},
): StepHandler => {
  const handler = invokedAs(
    'StepExecutor',
    makeHandler({ ...deps, executors: options.executors ?? instantExecutorFor }, { stepTimeoutMs }),
  );
  return ((event: SQSEvent) =>
    handler(event, lambdaContext('StepExecutor', options.remainingMs ?? 60_000))) as StepHandler;
};

/** `a` → `b` → … : a TextEntry, then TextConsoles, each step 1 hundredth. */
const chain = (length: number) =>
  Array.from({ length }, (_, i) => {
    const key = String.fromCharCode(97 + i);
    return i === 0
      ? { key, type: 'TextEntry', config: { text: 'otters' } }
      : { key, type: 'TextConsole', inputs: [String.fromCharCode(96 + i)] };
  });

/** A diamond whose join feeds a chain: a → (b, c) → d → e → f → g; `c` is a model step. */
const diamondThenChain = [
  { key: 'a', type: 'TextEntry', config: { text: 'otters' } },
  { key: 'b', type: 'PromptBuilder', inputs: ['a'] },
  { key: 'c', type: 'LlmWorker', inputs: ['a'] },
  { key: 'd', type: 'PromptBuilder', inputs: ['b', 'c'] },
  { key: 'e', type: 'TextConsole', inputs: ['d'] },
  { key: 'f', type: 'TextConsole', inputs: ['e'] },
  { key: 'g', type: 'TextConsole', inputs: ['f'] },
];
const diamondThenChainPrices: Record<string, number> = { a: 1, b: 1, c: 200, d: 1, e: 1, f: 1, g: 1 };

const team = () => seedUnthrottledTeam(stack.deps);

/** Starts a run over HTTP and takes its root message(s) off the queue (nobody polls it here). */
const started = async (steps: unknown[]) => {
  const t = await team();
  const workflowId = await createWorkflow(stack, t, steps);
  const answer = await startRunCall(stack.baseUrl, t.key, workflowId);
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  const jobId = answer.body.jobId as string;
  const roots = (await takeStepMessages(stack.deps)).filter((m) => m.jobId === jobId);
  return { t, jobId, workflowId, roots };
};

/** The step messages of one run now on the queue. */
const messagesOf = async (jobId: string) => (await takeStepMessages(stack.deps)).filter((m) => m.jobId === jobId);

/** The run completed, each step completed and charged once at `prices`, the team's ledger balanced and settled. */
const expectCompletedOnce = (t: SeededTeam, jobId: string, prices: Record<string, number>) =>
  expectRunCompletedOnce(stack.deps, t.teamId, jobId, prices);

const pricesOf = (steps: { key: string }[]) => Object.fromEntries(steps.map((s) => [s.key, 1]));

describe('a chain runs on in the invocation of its first step', () => {
  it('a chain of cheap steps runs from one message: no other step message, each step charged once', async () => {
    const steps = chain(8);
    const { t, jobId, roots } = await started(steps);
    expect(roots.map((m) => m.nodeId)).toEqual(['a']);
    expect(await deliver(contextHandler(stack.deps), stepRecords(roots))).toEqual([]);
    expect(await messagesOf(jobId)).toEqual([]);
    await expectCompletedOnce(t, jobId, pricesOf(steps));
    // Each step took its predecessor's outputs as that turn wrote them (not read again): all arrived.
    const { steps: items } = await runParts(stack.deps, jobId);
    expect(Object.values(items.get('h')?.outputs ?? {})).toEqual(['h(g(f(e(d(c(b(a())))))))']);
  });

  it('a model step keeps its own message; the chain after it runs on in its invocation', async () => {
    const steps = [
      { key: 'a', type: 'TextEntry', config: { text: 'otters' } },
      { key: 'b', type: 'LlmWorker', inputs: ['a'] },
      { key: 'c', type: 'TextConsole', inputs: ['b'] },
      { key: 'd', type: 'TextConsole', inputs: ['c'] },
    ];
    const { t, jobId, roots } = await started(steps);
    const handler = contextHandler(stack.deps);
    expect(await deliver(handler, stepRecords(roots))).toEqual([]);
    const [b, ...others] = await messagesOf(jobId);
    expect([b?.nodeId, others]).toEqual(['b', []]);
    expect(await deliver(handler, [stepRecord(b as StepMessage)])).toEqual([]);
    expect(await messagesOf(jobId)).toEqual([]);
    await expectCompletedOnce(t, jobId, { a: 1, b: 200, c: 1, d: 1 });
  });

  it('without time left for a whole node timeout and the step’s end, the next step goes through the queue', async () => {
    const steps = chain(3);
    const { t, jobId, roots } = await started(steps);
    const short = contextHandler(stack.deps, { remainingMs: stepTimeoutMs + settleMarginMs - 1 });
    let pending = roots;
    for (const next of ['b', 'c']) {
      expect(await deliver(short, stepRecords(pending))).toEqual([]);
      pending = await messagesOf(jobId);
      expect(pending.map((m) => m.nodeId)).toEqual([next]);
    }
    expect(await deliver(short, stepRecords(pending))).toEqual([]);
    await expectCompletedOnce(t, jobId, pricesOf(steps));
  });

  it('a node that throws when run inline is not counted as an execution: its message is sent, and its delivery runs it', async () => {
    const steps = chain(4);
    const { t, jobId, roots } = await started(steps);
    let thrown = 0;
    const flaky = () => async (context: Parameters<NodeExecutor>[0]) => {
      if (context.node.id === 'c' && thrown++ === 0) throw new Error('connection reset');
      return instantExecutor(context);
    };
    const handler = contextHandler(stack.deps, { executors: flaky });
    expect(await deliver(handler, stepRecords(roots))).toEqual([]);
    expect(thrown).toBe(1);
    const { steps: items, run } = await runParts(stack.deps, jobId);
    expect(items.get('c')).toBeUndefined(); // no failed execution counted
    expect(run).toMatchObject({ status: 'processing', stepsCompleted: 2 });
    const pending = await messagesOf(jobId);
    expect(pending.map((m) => m.nodeId)).toEqual(['c']);
    expect(await deliver(handler, stepRecords(pending))).toEqual([]);
    expect(await messagesOf(jobId)).toEqual([]);
    await expectCompletedOnce(t, jobId, pricesOf(steps));
  });
  it('a step run inline that another delivery finished meanwhile (a read that missed its end): its message is sent, and that delivery counts it once', async () => {
    const steps = chain(4);
    const { t, jobId, roots } = await started(steps);
    let raced = 0;
    // While `c` runs here, another delivery records its end: this turn's finish is refused.
    const racing = () => async (context: Parameters<NodeExecutor>[0]) => {
      const outcome = await instantExecutor(context);
      if (context.node.id === 'c' && raced++ === 0) {
        const { run } = await runParts(stack.deps, jobId);
        const other = {
          status: 'completed' as const,
          outputs: outcome.outputs,
          model: undefined,
          licence: undefined,
          chargeHundredths: 1,
        };
        expect(await finishStepItem(stack.deps, run as RunItem, 'c', null, other)).toBeTruthy();
      }
      return outcome;
    };
    const handler = contextHandler(stack.deps, { executors: racing });
    expect(await deliver(handler, stepRecords(roots))).toEqual([]);
    expect(raced).toBe(1);
    const pending = await messagesOf(jobId);
    expect(pending.map((m) => m.nodeId)).toEqual(['c']);
    expect((await runParts(stack.deps, jobId)).run).toMatchObject({ status: 'processing', stepsCompleted: 2 });
    // Its delivery reads strongly consistent, finds `c` finished and uncounted, and counts it (its
    // node is not run again); a recount sends its successor from a read, as a redelivery's does.
    expect(await deliver(handler, stepRecords(pending))).toEqual([]);
    expect(raced).toBe(1);
    const next = await messagesOf(jobId);
    expect(next.map((m) => m.nodeId)).toEqual(['d']);
    expect(await deliver(handler, stepRecords(next))).toEqual([]);
    expect(await messagesOf(jobId)).toEqual([]);
    await expectCompletedOnce(t, jobId, pricesOf(steps));
  });
});

/** The writes a delivery makes to the run item: UpdateItems of it, and transactions that name it. */
const recordingRunWrites = (jobId: string) => {
  const writes: string[] = [];
  const namesRun = (key: unknown) =>
    (key as { PK?: string; SK?: string } | undefined)?.SK === 'RUN' && (key as { PK?: string }).PK === `RUN#${jobId}`;
  const deps = faultyDeps(stack, {
    failDynamo: (command, input) => {
      const i = input as { Key?: unknown; TransactItems?: { Update?: { Key?: unknown } }[] };
      if (command.startsWith('Update') && namesRun(i.Key)) writes.push(command);
      if (command.startsWith('Transact') && i.TransactItems?.some((t) => namesRun(t.Update?.Key))) writes.push(command);
      return false;
    },
  });
  return { deps, writes };
};

describe('an inline chain carries its counts to its next count', () => {
  it('a chain of cheap steps writes its run item once: the transaction that ends the run counts every step', async () => {
    const steps = chain(8);
    const { t, jobId, roots } = await started(steps);
    const { deps, writes } = recordingRunWrites(jobId);
    expect(await deliver(contextHandler(deps), stepRecords(roots))).toEqual([]);
    // Before: one count per step, 7 UpdateItems and the end.
    expect(writes).toEqual(['TransactWriteItemsCommand']);
    await expectCompletedOnce(t, jobId, pricesOf(steps));
  });

  it('a node still running after the start mark’s delay writes the counts carried to it meanwhile', async () => {
    const steps = chain(4);
    const { t, jobId, roots } = await started(steps);
    let seen: unknown;
    const slow = () => async (context: Parameters<NodeExecutor>[0]) => {
      if (context.node.id === 'c') {
        // Waits (a bounded number of looks) until its run shows `a` and `b` counted.
        for (let look = 0; look < 200; look++) {
          const { run } = await runParts(stack.deps, jobId);
          seen = {
            status: run?.status,
            stepsCompleted: run?.stepsCompleted,
            chargedHundredths: run?.chargedHundredths,
          };
          if (run?.stepsCompleted === 2) break;
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      }
      return instantExecutor(context);
    };
    expect(await deliver(contextHandler(stack.deps, { executors: slow }), stepRecords(roots))).toEqual([]);
    expect(seen).toEqual({ status: 'processing', stepsCompleted: 2, chargedHundredths: 2 });
    expect(await messagesOf(jobId)).toEqual([]);
    await expectCompletedOnce(t, jobId, pricesOf(steps));
  });

  it('a step that fails after carried steps: they are counted and charged before the run fails', async () => {
    const steps = chain(4);
    const { t, jobId, roots } = await started(steps);
    const failing = () => async (context: Parameters<NodeExecutor>[0]) => {
      if (context.node.id === 'c') throw new StepFailedError('the otters refused');
      return instantExecutor(context);
    };
    expect(await deliver(contextHandler(stack.deps, { executors: failing }), stepRecords(roots))).toEqual([]);
    const { run, steps: items, charges } = await runParts(stack.deps, jobId);
    expect(run).toMatchObject({ status: 'failed', heldHundredths: 0, chargedHundredths: 2, stepsCompleted: 2 });
    expect(items.get('a')?.status).toBe('completed');
    expect(items.get('b')?.status).toBe('completed');
    expect(sumCharges(charges)).toBe(2);
    const ledger = await ledgerOf(stack.deps, t.teamId);
    expectBalanced(ledger);
    expect(ledger).toMatchObject({ held: 0, charged: 2 });
  });

  it('a run cancelled mid-chain: every step left completed is charged once, the others never; the ledger exact', async () => {
    const steps = chain(5);
    const { t, jobId, roots } = await started(steps);
    const cancelling = () => async (context: Parameters<NodeExecutor>[0]) => {
      if (context.node.id === 'c') expect((await cancelRunCall(stack.baseUrl, t.key, jobId)).status).toBe(200);
      return instantExecutor(context);
    };
    expect(await deliver(contextHandler(stack.deps, { executors: cancelling }), stepRecords(roots))).toEqual([]);
    const { run, steps: items, charges } = await runParts(stack.deps, jobId);
    expect(run).toMatchObject({ status: 'cancelled', heldHundredths: 0 });
    // Carried, `a` and `b` were not counted when the cancel came: like `c`, they finished after it.
    expect([...items.values()].map((s) => s.status).filter((s) => s === 'completed')).toHaveLength(charges.size);
    expect(run?.chargedHundredths).toBe(sumCharges(charges));
    expect(run?.finalChargedHundredths).toBe(sumCharges(charges));
    const ledger = await ledgerOf(stack.deps, t.teamId);
    expectBalanced(ledger);
    expect(ledger).toMatchObject({ held: 0, charged: sumCharges(charges) });
    expect(await messagesOf(jobId)).toEqual([]);
  });
});

describe('a worker killed in an inline chain', () => {
  it('killed at any write of the chain, with no message sent: the redelivery of the first message finishes the run, each step charged once', {
    timeout: 120_000,
  }, async () => {
    const steps = chain(5);
    // The chain's writes from one message: per step its end, then the run's end, which counts every
    // step (the chain carried their counts to it); a kill at each of them in turn (and one past them
    // all). A kill before the end loses the carried counts with the worker: the redelivery counts them.
    const chainWrites = steps.length + 1;
    for (let kill = 1; kill <= chainWrites + 1; kill++) {
      const { t, jobId, roots } = await started(steps);
      let writes = 0;
      const dying = faultyDeps(stack, {
        failDynamo: (command) =>
          command.startsWith('Update') || command.startsWith('Transact') ? ++writes >= kill : false,
        // Nothing reaches the queue: a fallback send fails too, so the failure escapes the record.
        failSqs: (command) => command.startsWith('SendMessage'),
      });
      const records = stepRecords(roots);
      const failed = await deliver(contextHandler(dying), records);
      expect(failed, `kill at write ${kill}`).toEqual(kill <= chainWrites ? records.map((r) => r.messageId) : []);
      // SQS redelivers the first message to a healthy worker; the queue is drained as the event source would.
      const healthy = contextHandler(stack.deps);
      expect(
        await deliver(
          healthy,
          roots.map((m) => stepRecord(m, 2)),
        ),
        `kill at write ${kill}`,
      ).toEqual([]);
      await drainSteps(stack.deps, healthy);
      await expectCompletedOnce(t, jobId, pricesOf(steps));
    }
  });

  it('step messages delivered 1–3 times, in any order, some at once, inline on: one charge per distinct step', {
    timeout: 120_000,
  }, async () => {
    const handler = contextHandler(stack.deps);
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          copies: fc.dictionary(fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f', 'g'), fc.integer({ min: 1, max: 3 })),
          order: fc.array(fc.nat(), { minLength: 40, maxLength: 40 }),
        }),
        async ({ copies, order }) => {
          const { t, jobId, roots } = await started(diamondThenChain);
          const pending: StepMessage[] = [];
          const seen = new Set<string>();
          const arrive = (messages: StepMessage[]) => {
            for (const message of messages) {
              const times = seen.has(message.nodeId) ? 1 : (copies[message.nodeId] ?? 1);
              seen.add(message.nodeId);
              for (let i = 0; i < times; i++) pending.push(message);
            }
          };
          arrive(roots);
          for (let round = 0; pending.length > 0; round++) {
            expect(round).toBeLessThan(100);
            const pick = (order[round % order.length] ?? 0) % pending.length;
            const group = pending.splice(pick, 1 + (pick % 2)); // one delivery, or two at once
            const failed = (await Promise.all(group.map((m) => deliver(handler, [stepRecord(m)])))).flat();
            expect(failed).toEqual([]);
            arrive(await messagesOf(jobId));
          }
          await expectCompletedOnce(t, jobId, diamondThenChainPrices);
        },
      ),
      { numRuns: 4 },
    );
  });
});
