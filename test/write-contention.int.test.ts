/**
 * Contention on every write path (functions/store/write.ts; docs/api.md, "When the service is
 * busy"): DynamoDB Local never answers TransactionConflict nor throttles, so a middleware on the
 * deps' DynamoDB client fails the first k matching commands with each class DynamoDB answers
 * contention with. Fewer failures than the helper's tries: retried and written once. As many:
 * the API answers 503 with Retry-After (never a 500), a worker reports its record failed so the
 * queue delivers it again, the operators' CLI says so; and in every case nothing is lost, nothing
 * is charged twice, and the team's ledger balances.
 */
import { describe, expect, it } from 'vitest';
import type { Deps } from '../functions/deps.ts';
import { getDeferredRun } from '../functions/store/deferred-runs.ts';
import { setLiveMultiplier } from '../functions/store/price-multiplier.ts';
import { activeJobOf, readRunItem } from '../functions/store/run/index.ts';
import { writeRetry } from '../functions/store/write.ts';
import { runAdmin } from '../local/admin.ts';
import {
  api,
  cancelRunCall,
  deliver,
  dispatcherHandler,
  drainSteps,
  expectBalanced,
  faultyDeps,
  ledgerOf,
  pairPrice,
  pairSteps,
  runParts,
  type StepMessage,
  startRunCall,
  startSecondApi,
  stepHandler,
  stepRecord,
  sumCharges,
  takeStepMessages,
  transactionConflict,
} from './support/runs.ts';
import { call, createWorkflow, type SeededTeam, seedUnthrottledTeam, stackPerFile } from './support/stack.ts';

const { stack, closers } = stackPerFile();

/** An error as the SDK throws a DynamoDB service error. */
const serviceError = (name: string) =>
  Object.assign(new Error(`${name} (injected)`), { name, $fault: 'client', $metadata: { httpStatusCode: 400 } });

/**
 * The classes of contention, each as DynamoDB answers it to one write and to a transaction: a
 * transaction meeting another is cancelled with the reason `TransactionConflict`; a single write,
 * `TransactionConflictException`; throttling is its own exception either way.
 */
const classes = [
  {
    name: 'TransactionConflict',
    kind: 'transactionConflict',
    error: (command: string, input: unknown) =>
      command.startsWith('TransactWrite') ? transactionConflict(input) : serviceError('TransactionConflictException'),
  },
  ...['ProvisionedThroughputExceededException', 'ThrottlingException', 'RequestLimitExceeded'].map((name) => ({
    name,
    kind: 'throttled',
    error: () => serviceError(name),
  })),
];
type ContentionClass = (typeof classes)[number];

/** A write the middleware picks: the command's name and its input as JSON. */
type Matcher = (command: string, text: string) => boolean;

/**
 * Deps on the stack's resources whose DynamoDB client fails the first `k` commands `matches`
 * picks with `contention`'s error; the waits between tries are recorded and return at once.
 */
const contended = (k: number, matches: Matcher, contention: ContentionClass) => {
  const fault = { left: k, injected: 0, waits: [] as number[], command: '' };
  const deps = faultyDeps(
    stack,
    {
      failDynamo: (command, input) => {
        if (fault.left === 0 || !matches(command, JSON.stringify(input))) return false;
        fault.left--;
        fault.injected++;
        fault.command = command;
        return true;
      },
      error: (input) => contention.error(fault.command, input),
    },
    {
      sleep: async (ms) => {
        fault.waits.push(ms);
      },
    },
  );
  return { deps, fault };
};

/** An API over `deps` (the same route table and handlers), closed after the file. */
const apiOver = async (deps: Deps) => {
  const second = await startSecondApi(deps);
  closers.push(() => second.close());
  return second.baseUrl;
};

const tries = writeRetry.tries;

/** Retried: every injected failure was followed by a backoff no longer than the documented bound. */
const expectRetried = (fault: { injected: number; waits: number[] }, k: number) => {
  expect(fault.injected).toBe(k);
  expect(fault.waits).toHaveLength(k);
  fault.waits.forEach((ms, i) => {
    expect(ms).toBeGreaterThanOrEqual(0);
    expect(ms).toBeLessThan(writeRetry.baseMs * 2 ** i);
  });
};

/** Contention on every try: no more tries than the helper's, and a backoff between each. */
const expectGaveUp = (fault: { injected: number; waits: number[] }) => {
  expect(fault.injected).toBe(tries);
  expect(fault.waits).toHaveLength(tries - 1);
};

/** What the operators' CLI prints when a write met contention on every try. */
const busyOutput = (contention: ContentionClass) =>
  `DynamoDB is busy (${contention.kind}); nothing was written, try again`;

const expectBusy = (answer: { status: number; body: unknown; headers: Headers }) => {
  expect([answer.status, answer.body]).toEqual([503, { error: 'Service busy; try again shortly' }]);
  expect(answer.headers.get('retry-after')).toBe('1');
};

const team = (credits = 100) => seedUnthrottledTeam(stack.deps, credits);

/** A team whose pair workflow (two steps, 2 hundredths) exists. */
const teamWithWorkflow = async () => {
  const t = await team();
  const workflowId = await createWorkflow(stack, t, pairSteps);
  return { t, workflowId };
};

/** Starts the pair workflow over the stack's own API; its root message is taken off the steps queue. */
const startedPair = async () => {
  const { t, workflowId } = await teamWithWorkflow();
  const started = await startRunCall(stack.baseUrl, t.key, workflowId);
  expect(started.status, JSON.stringify(started.body)).toBe(200);
  const jobId = started.body.jobId as string;
  const [root] = await messagesOf(jobId);
  expect(root?.nodeId).toBe('in');
  return { t, workflowId, jobId, root: root as StepMessage };
};

/** The job holding the workflow's run lock, if any. */
const readLock = (workflowId: string) => activeJobOf(stack.deps, workflowId);

/** The step messages of one run now on the queue (others' are dropped: nothing here runs them). */
const messagesOf = async (jobId: string) => (await takeStepMessages(stack.deps)).filter((m) => m.jobId === jobId);

/** The run ended completed, each step counted once and charged its price, the hold settled. */
const expectCompletedOnce = async (t: SeededTeam, jobId: string) => {
  const parts = await runParts(stack.deps, jobId);
  expect(parts.run).toMatchObject({ status: 'completed', stepsCompleted: 2, heldHundredths: 0 });
  expect(parts.run?.doneSteps).toEqual(new Set(['in', 'out']));
  expect(parts.run?.chargedHundredths).toBe(pairPrice);
  expect(sumCharges(parts.charges)).toBe(pairPrice);
  const ledger = await ledgerOf(stack.deps, t.teamId);
  expectBalanced(ledger);
  expect(ledger).toEqual({ balance: 10_000 - pairPrice, held: 0, charged: pairPrice, granted: 10_000 });
};

const isStart: Matcher = (command, text) => command.startsWith('TransactWrite') && text.includes('WFLOCK#');
const isCount: Matcher = (command, text) =>
  command === 'UpdateItemCommand' && text.includes('"SK":"RUN"') && text.includes('doneSteps');
const isEnd: Matcher = (command, text) => command.startsWith('TransactWrite') && text.includes('finalizedAt');
/** A cancel's (or failure's) end of the run item, before its settlement (`isEnd`). */
const isClose: Matcher = (command, text) => command === 'UpdateItemCommand' && text.includes('#GSI1PK = :set_GSI1PK');
const isWorkflowCreate: Matcher = (command, text) =>
  command.startsWith('TransactWrite') && text.includes('"type":"Workflow"');
const isRevoke: Matcher = (command, text) => command === 'UpdateItemCommand' && text.includes('revokedAt');
const isGrant: Matcher = (command, text) => command === 'UpdateItemCommand' && text.includes('granted');

describe.each(classes.map((c) => [c.name, c] as const))('%s on every write path', (_name, contention) => {
  it('run start: retried and started once; on every try 503, nothing held, and a retry starts it', async () => {
    const { t, workflowId } = await teamWithWorkflow();
    const retried = contended(tries - 1, isStart, contention);
    const started = await startRunCall(await apiOver(retried.deps), t.key, workflowId);
    expect([started.status, started.body.status]).toEqual([200, 'queued']);
    expectRetried(retried.fault, tries - 1);
    expect(await ledgerOf(stack.deps, t.teamId)).toMatchObject({ balance: 10_000 - pairPrice, held: pairPrice });
    await cancelRunCall(stack.baseUrl, t.key, started.body.jobId as string);

    const before = await ledgerOf(stack.deps, t.teamId);
    const busy = contended(tries, isStart, contention);
    const headers = { 'idempotency-key': `start-${workflowId}` };
    expectBusy(await startRunCall(await apiOver(busy.deps), t.key, workflowId, undefined, headers));
    expectGaveUp(busy.fault);
    expect(await ledgerOf(stack.deps, t.teamId)).toEqual(before);
    // The same request again, as the 503 says: started once, held once.
    const again = await startRunCall(stack.baseUrl, t.key, workflowId, undefined, headers);
    expect(again.status).toBe(200);
    const ledger = await ledgerOf(stack.deps, t.teamId);
    expectBalanced(ledger);
    expect(ledger).toMatchObject({ held: pairPrice, balance: before.balance - pairPrice });
  });

  it('step count: retried and counted once; on every try the record fails, and its redelivery counts it once', async () => {
    const first = await startedPair();
    const retried = contended(tries - 1, isCount, contention);
    expect(await deliver(stepHandler(retried.deps), [stepRecord(first.root)])).toEqual([]);
    expectRetried(retried.fault, tries - 1);
    await drainSteps(stack.deps, stepHandler(stack.deps));
    await expectCompletedOnce(first.t, first.jobId);

    const { t, jobId, root } = await startedPair();
    const busy = contended(tries, isCount, contention);
    const record = stepRecord(root);
    expect(await deliver(stepHandler(busy.deps), [record])).toEqual([record.messageId]);
    expectGaveUp(busy.fault);
    const parts = await runParts(stack.deps, jobId);
    expect(parts.steps.get('in')).toMatchObject({ status: 'completed' });
    expect(parts.run).toMatchObject({ stepsCompleted: 0, chargedHundredths: 0, heldHundredths: pairPrice });
    expect(await messagesOf(jobId)).toEqual([]);
    // SQS delivers the record again: the step is counted once and the run goes on.
    expect(await deliver(stepHandler(stack.deps), [stepRecord(root, 2)])).toEqual([]);
    await drainSteps(stack.deps, stepHandler(stack.deps));
    await expectCompletedOnce(t, jobId);
  });

  it('run end: retried and ended once; on every try the record fails, and its redelivery ends the run once', async () => {
    for (const k of [tries - 1, tries]) {
      const { t, jobId, root } = await startedPair();
      const normal = stepHandler(stack.deps);
      expect(await deliver(normal, [stepRecord(root)])).toEqual([]);
      const [last] = await messagesOf(jobId);
      expect(last?.nodeId).toBe('out');
      const { deps, fault } = contended(k, isEnd, contention);
      const record = stepRecord(last as StepMessage);
      const failed = await deliver(stepHandler(deps), [record]);
      if (k < tries) {
        expect(failed).toEqual([]);
        expectRetried(fault, k);
      } else {
        expect(failed).toEqual([record.messageId]);
        expectGaveUp(fault);
        const run = await readRunItem(stack.deps, jobId);
        expect(run).toMatchObject({ status: 'processing', stepsCompleted: 1, heldHundredths: 1 });
        expect(await deliver(normal, [stepRecord(last as StepMessage, 2)])).toEqual([]);
      }
      expect(await messagesOf(jobId)).toEqual([]);
      await expectCompletedOnce(t, jobId);
    }
  });

  it('cancel: retried and cancelled once; on every try 503, the hold kept, and a retry cancels', async () => {
    for (const k of [tries - 1, tries]) {
      const { t, workflowId } = await teamWithWorkflow();
      const started = await startRunCall(stack.baseUrl, t.key, workflowId);
      const jobId = started.body.jobId as string;
      const { deps, fault } = contended(k, isClose, contention);
      const answer = await cancelRunCall(await apiOver(deps), t.key, jobId);
      if (k < tries) {
        expect([answer.status, answer.body.status]).toEqual([200, 'cancelled']);
        expectRetried(fault, k);
      } else {
        expectBusy(answer);
        expectGaveUp(fault);
        expect(await readRunItem(stack.deps, jobId)).toMatchObject({ status: 'queued', heldHundredths: pairPrice });
        expect(await ledgerOf(stack.deps, t.teamId)).toMatchObject({ held: pairPrice });
        expect((await cancelRunCall(stack.baseUrl, t.key, jobId)).body.status).toBe('cancelled');
      }
      const ledger = await ledgerOf(stack.deps, t.teamId);
      expectBalanced(ledger);
      expect(ledger).toEqual({ balance: 10_000, held: 0, charged: 0, granted: 10_000 });
    }
  });

  it('cancel: its settlement retried and made once; on every try the run is cancelled all the same, settled by a later message', async () => {
    for (const k of [tries - 1, tries]) {
      const { t, workflowId } = await teamWithWorkflow();
      const jobId = (await startRunCall(stack.baseUrl, t.key, workflowId)).body.jobId as string;
      const { deps, fault } = contended(k, isEnd, contention);
      const answer = await cancelRunCall(await apiOver(deps), t.key, jobId);
      // The run's end is written before its settlement: a 503 now would have its retry told 409.
      expect([answer.status, answer.body.status]).toEqual([200, 'cancelled']);
      if (k < tries) {
        expectRetried(fault, k);
      } else {
        expectGaveUp(fault);
        expect(await readRunItem(stack.deps, jobId)).toMatchObject({ status: 'cancelled', heldHundredths: pairPrice });
        expect(await ledgerOf(stack.deps, t.teamId)).toMatchObject({ held: pairPrice });
        expect(await activeJobOf(stack.deps, workflowId)).toBe(jobId);
      }
      // Any message of the run (its root's, here; the sweep sends one) settles what is left, once.
      for (const message of await messagesOf(jobId)) {
        expect(await deliver(stepHandler(stack.deps), [stepRecord(message)])).toEqual([]);
      }
      expect(await activeJobOf(stack.deps, workflowId)).toBeUndefined();
      const ledger = await ledgerOf(stack.deps, t.teamId);
      expectBalanced(ledger);
      expect(ledger).toEqual({ balance: 10_000, held: 0, charged: 0, granted: 10_000 });
    }
  });

  it('deferred dispatch: retried and started once; on every try kept waiting, nothing held, and the next tick starts it', async () => {
    await setLiveMultiplier(stack.deps, 0.5);
    for (const k of [tries - 1, tries]) {
      const { t, workflowId } = await teamWithWorkflow();
      const deferred = await startRunCall(stack.baseUrl, t.key, workflowId, { defer: true });
      expect(deferred.status).toBe(202);
      const id = deferred.body.deferredJobId as string;
      const isDispatch: Matcher = (command, text) => isStart(command, text) && text.includes(id);
      const { deps, fault } = contended(k, isDispatch, contention);
      const report = await dispatcherHandler(deps)();
      if (k < tries) {
        expect(report.dispatched.map((d) => d.deferredJobId)).toEqual([id]);
        expectRetried(fault, k);
      } else {
        // The tick goes on with the others and logs this one; the next tick tries it again.
        expect([report.dispatched, report.keptWaiting]).toEqual([[], [id]]);
        expectGaveUp(fault);
        expect((await getDeferredRun(stack.deps, t.teamId, id)).status).toBe('waiting');
        expect(await ledgerOf(stack.deps, t.teamId)).toMatchObject({ held: 0, balance: 10_000 });
        expect((await dispatcherHandler(stack.deps)()).dispatched.map((d) => d.deferredJobId)).toEqual([id]);
      }
      const dispatched = await getDeferredRun(stack.deps, t.teamId, id);
      expect(dispatched.status).toBe('dispatched');
      const run = await readRunItem(stack.deps, dispatched.jobId as string);
      const ledger = await ledgerOf(stack.deps, t.teamId);
      expectBalanced(ledger);
      expect(ledger).toMatchObject({ held: run?.estimateHundredths, balance: 10_000 - (run?.estimateHundredths ?? 0) });
      expect((await dispatcherHandler(stack.deps)()).dispatched).toEqual([]);
      await messagesOf(dispatched.jobId as string);
    }
  });

  it('workflow create: retried and created once; on every try 503 and nothing stored', async () => {
    const t = await team();
    const listed = async () => (await api(stack.baseUrl, 'GET', '/workflows', { key: t.key })).body.workflows;
    for (const owner of [{ agentId: t.agentId }, { projectId: t.projectId, agentName: 'New agent' }]) {
      const body = { name: 'Contended', steps: pairSteps, ...owner };
      const retried = contended(tries - 1, isWorkflowCreate, contention);
      const created = await api(await apiOver(retried.deps), 'POST', '/workflows', { key: t.key, body });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      expectRetried(retried.fault, tries - 1);

      const before = await listed();
      const busy = contended(tries, isWorkflowCreate, contention);
      expectBusy(await api(await apiOver(busy.deps), 'POST', '/workflows', { key: t.key, body }));
      expectGaveUp(busy.fault);
      expect(await listed()).toEqual(before);
    }
    expect(await listed()).toHaveLength(2);
  });

  it('key revoke: retried and revoked; on every try the CLI says busy and the key still works', async () => {
    const t = await team();
    const busy = contended(tries, isRevoke, contention);
    const refused = await runAdmin(['key', 'revoke', '--key', t.keyId, '--json'], busy.deps);
    expect(refused).toEqual({ exitCode: 1, output: busyOutput(contention) });
    expectGaveUp(busy.fault);
    expect((await call(stack.baseUrl, '/workflows', { key: t.key })).status).toBe(200);

    const retried = contended(tries - 1, isRevoke, contention);
    expect((await runAdmin(['key', 'revoke', '--key', t.keyId, '--json'], retried.deps)).exitCode).toBe(0);
    expectRetried(retried.fault, tries - 1);
    expect((await call(stack.baseUrl, '/workflows', { key: t.key })).status).toBe(401);
  });

  it('credits: a grant retried is added once; on every try the CLI says busy and nothing is added', async () => {
    const t = await team();
    const busy = contended(tries, isGrant, contention);
    const refused = await runAdmin(['credits', 'add', '--team', t.teamId, '--amount', '5', '--json'], busy.deps);
    expect(refused).toEqual({ exitCode: 1, output: busyOutput(contention) });
    expectGaveUp(busy.fault);
    expect(await ledgerOf(stack.deps, t.teamId)).toEqual({ balance: 10_000, held: 0, charged: 0, granted: 10_000 });

    const retried = contended(tries - 1, isGrant, contention);
    const granted = await runAdmin(['credits', 'add', '--team', t.teamId, '--amount', '5', '--json'], retried.deps);
    expect([granted.exitCode, JSON.parse(granted.output)]).toEqual([0, { balance: 105 }]);
    expectRetried(retried.fault, tries - 1);
    const ledger = await ledgerOf(stack.deps, t.teamId);
    expectBalanced(ledger);
    expect(ledger).toEqual({ balance: 10_500, held: 0, charged: 0, granted: 10_500 });
  });
});

describe('a race lost on every try', () => {
  /** DynamoDB's answer when the project's spend moved between the start's read and its transaction. */
  const capMoved = (input: unknown) => {
    const items = (input as { TransactItems: unknown[] }).TransactItems;
    return Object.assign(new Error('Transaction cancelled (injected)'), {
      name: 'TransactionCanceledException',
      $fault: 'client',
      $metadata: { httpStatusCode: 400 },
      CancellationReasons: items.map((_, index) => ({ Code: index === 2 ? 'ConditionalCheckFailed' : 'None' })),
    });
  };
  const capMovedClass = {
    name: 'cap moved',
    kind: 'raceLost',
    error: (_command: string, input: unknown) => capMoved(input),
  };

  it('a start whose project spend keeps moving is read and decided again, then 503, nothing held', async () => {
    const { t, workflowId } = await teamWithWorkflow();
    const retried = contended(tries - 1, isStart, capMovedClass);
    expect((await startRunCall(await apiOver(retried.deps), t.key, workflowId)).status).toBe(200);
    expectRetried(retried.fault, tries - 1);
    await cancelRunCall(stack.baseUrl, t.key, (await readLock(workflowId)) ?? '');

    const busy = contended(tries, isStart, capMovedClass);
    expectBusy(await startRunCall(await apiOver(busy.deps), t.key, workflowId));
    expectGaveUp(busy.fault);
    const ledger = await ledgerOf(stack.deps, t.teamId);
    expectBalanced(ledger);
    expect(ledger).toEqual({ balance: 10_000, held: 0, charged: 0, granted: 10_000 });
    expect(await readLock(workflowId)).toBeUndefined();
  });
});
