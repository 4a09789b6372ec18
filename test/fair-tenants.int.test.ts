/**
 * Fair tenants (docs/operations.md, "Fair tenants"): every step message names its run's team as its
 * SQS message group (a fair queue's tenant), and the step executor runs at most `teamStepsInFlight`
 * steps of one team at once, giving a step past the cap back to the queue. The steps run on the
 * real step-executor handler against the emulators; the node executors answer at once.
 *
 * fauxqs (2.4.1) takes a MessageGroupId on a standard queue and ignores it: it delivers in the
 * order sent, so the fair queue's reordering is not rehearsed here, only the cap. The sends are
 * read off the SQS client for the group.
 */
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { SQSEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import type { Deps } from '../functions/deps.ts';
import { slotKeyOf, slotLease } from '../functions/domain/team-steps.ts';
import { StepFailedError } from '../functions/nodes/executors/types.ts';
import { runKey, teamStepsKey } from '../functions/store/keys.ts';
import { startQueuePoller } from '../local/event-source.ts';
import { stepsQueue } from '../platform/definitions.ts';
import {
  cancelRunCall,
  deliver,
  drainSteps,
  instantExecutor,
  pairSteps,
  stepHandler,
  stepRecord,
  takeStepMessages,
} from './support/runs.ts';
import { createWorkflow, seedUnthrottledTeam, stackPerFile, startRunOk, waitForRun } from './support/stack.ts';

// Each test's team is fresh; the fan-out's comes last, as it leaves its team's steps queued.
const { stack, closers } = stackPerFile({ teamStepsInFlight: 2 });

/** Node `boom` fails; every other node answers at once. */
const executors = () => async (context: Parameters<typeof instantExecutor>[0]) => {
  if (context.node.id === 'boom') throw new StepFailedError('boom failed on purpose');
  return instantExecutor(context);
};
const handler = () => stepHandler(stack.deps, executors);

const slotsOf = async (deps: Deps, teamId: string) => {
  const { Item } = await deps.ddb.send(
    new GetCommand({ TableName: deps.tableName, Key: teamStepsKey(teamId), ConsistentRead: true }),
  );
  return (Item?.slots ?? {}) as Record<string, string>;
};
const seedSlots = (deps: Deps, teamId: string, slots: Record<string, string>) =>
  deps.ddb.send(new PutCommand({ TableName: deps.tableName, Item: { ...teamStepsKey(teamId), slots } }));
const runItem = async (deps: Deps, jobId: string) =>
  (await deps.ddb.send(new GetCommand({ TableName: deps.tableName, Key: runKey(jobId), ConsistentRead: true })))
    .Item as Record<string, unknown>;

/** The step messages on the queue once there are some (a generous deadline), taken off it. */
const nextStepMessages = async (deps: Deps) => {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const messages = await takeStepMessages(deps);
    if (messages.length > 0 || Date.now() > deadline) return messages;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
};

/** Every SendMessage(Batch) entry the deps' SQS client sends from now: its body and its group. */
const recordSends = (deps: Deps) => {
  const sent: { body: Record<string, unknown>; group: string | undefined }[] = [];
  const name = `fair-tenants-${Math.random()}`;
  deps.sqs.middlewareStack.add(
    (next) => async (args) => {
      const input = args.input as {
        MessageBody?: string;
        MessageGroupId?: string;
        Entries?: { MessageBody?: string; MessageGroupId?: string }[];
      };
      for (const entry of input.Entries ?? (input.MessageBody ? [input] : [])) {
        sent.push({ body: JSON.parse(entry.MessageBody ?? '{}'), group: entry.MessageGroupId });
      }
      return next(args);
    },
    { step: 'initialize', name },
  );
  return { sent, stop: () => deps.sqs.middlewareStack.remove(name) };
};

describe('a team at its cap', () => {
  it('a step past the cap does not start: sent again later in its team’s group, no attempt counted, nothing charged', async () => {
    const team = await seedUnthrottledTeam(stack.deps);
    const workflowId = await createWorkflow(stack, team, pairSteps);
    const jobId = await startRunOk(stack, team.key, workflowId);
    const [root] = await takeStepMessages(stack.deps);
    const live = slotLease(new Date(Date.now() + 60_000), 'other-worker');
    await seedSlots(stack.deps, team.teamId, { [slotKeyOf('x', '1')]: live, [slotKeyOf('x', '2')]: live });
    const sends = recordSends(stack.deps);
    const before = await runItem(stack.deps, jobId);
    try {
      expect(await deliver(handler(), [stepRecord(root as never)])).toEqual([]);
    } finally {
      sends.stop();
    }
    // Given back: the same step, its team named, one deferral more, in the team's group.
    expect(sends.sent).toEqual([
      { body: { jobId, workflowId, nodeId: 'in', teamId: team.teamId, deferred: 1 }, group: team.teamId },
    ]);
    const after = await runItem(stack.deps, jobId);
    expect(after).toMatchObject({ status: before.status, heldHundredths: before.heldHundredths, stepsCompleted: 0 });
    expect(await slotsOf(stack.deps, team.teamId)).toEqual({
      [slotKeyOf('x', '1')]: live,
      [slotKeyOf('x', '2')]: live,
    });

    // A slot whose lease ran out (its worker died) is freed by the next start, which then runs.
    await seedSlots(stack.deps, team.teamId, {
      [slotKeyOf('x', '1')]: live,
      [slotKeyOf('x', '2')]: slotLease(new Date(Date.now() - 1_000), 'dead-worker'),
    });
    // The message given back comes back after its delay (1 or 2 s): deliver it then.
    const back = await nextStepMessages(stack.deps);
    expect(back).toEqual([expect.objectContaining({ jobId, nodeId: 'in', deferred: 1 })]);
    expect(
      await deliver(
        handler(),
        back.map((m) => stepRecord(m)),
      ),
    ).toEqual([]);
    await drainSteps(stack.deps, handler());
    expect((await waitForRun(stack, team.key, jobId)).body.status).toBe('completed');
    expect(await slotsOf(stack.deps, team.teamId)).toEqual({ [slotKeyOf('x', '1')]: live });
  });
});

describe('the slot is given back on every end path', () => {
  it('completed: every message in its team’s group, every slot given back', async () => {
    const team = await seedUnthrottledTeam(stack.deps);
    const workflowId = await createWorkflow(stack, team, pairSteps);
    const sends = recordSends(stack.deps);
    let jobId: string;
    try {
      jobId = await startRunOk(stack, team.key, workflowId);
      await drainSteps(stack.deps, handler());
    } finally {
      sends.stop();
    }
    expect((await waitForRun(stack, team.key, jobId)).body.status).toBe('completed');
    const steps = sends.sent.filter((s) => s.body.jobId === jobId);
    expect(steps.length).toBeGreaterThan(0);
    for (const step of steps) expect(step).toMatchObject({ group: team.teamId, body: { teamId: team.teamId } });
    expect(await slotsOf(stack.deps, team.teamId)).toEqual({});
  });

  it('failed: the failing step gives its slot back', async () => {
    const team = await seedUnthrottledTeam(stack.deps);
    const workflowId = await createWorkflow(stack, team, [
      { key: 'in', type: 'TextEntry', config: { text: 'hi' } },
      { key: 'boom', type: 'TextConsole', inputs: ['in'] },
    ]);
    const jobId = await startRunOk(stack, team.key, workflowId);
    await drainSteps(stack.deps, handler());
    expect((await waitForRun(stack, team.key, jobId)).body.status).toBe('failed');
    expect(await slotsOf(stack.deps, team.teamId)).toEqual({});
  });

  it('cancelled: a step of a run cancelled before it ran gives its slot back', async () => {
    const team = await seedUnthrottledTeam(stack.deps);
    const workflowId = await createWorkflow(stack, team, pairSteps);
    const jobId = await startRunOk(stack, team.key, workflowId);
    expect((await cancelRunCall(stack.baseUrl, team.key, jobId)).status).toBe(200);
    await drainSteps(stack.deps, handler());
    expect((await waitForRun(stack, team.key, jobId)).body.status).toBe('cancelled');
    expect(await slotsOf(stack.deps, team.teamId)).toEqual({});
  });

  it('redelivered and duplicated: a step counts once against the cap, and its slot is given back', async () => {
    const team = await seedUnthrottledTeam(stack.deps);
    const workflowId = await createWorkflow(stack, team, pairSteps);
    const jobId = await startRunOk(stack, team.key, workflowId);
    const [root] = await takeStepMessages(stack.deps);
    // Its first delivery still holds the step's slot, beside another step of the team: the team is at
    // its cap, yet the redelivery runs (the slot is its step's), taking the slot over.
    const live = slotLease(new Date(Date.now() + 60_000), 'first-delivery');
    await seedSlots(stack.deps, team.teamId, { [slotKeyOf(jobId, 'in')]: live, [slotKeyOf('x', '1')]: live });
    expect(await deliver(handler(), [stepRecord(root as never, 2)])).toEqual([]);
    expect(await slotsOf(stack.deps, team.teamId)).toEqual({ [slotKeyOf('x', '1')]: live });
    // Two copies of the next step in one batch, the team one slot from its cap: both run (one counts
    // the step, the other finds it done), neither is given back, and the slot is free after.
    const [next] = await takeStepMessages(stack.deps);
    expect(next).toMatchObject({ nodeId: 'out', teamId: team.teamId });
    const sends = recordSends(stack.deps);
    try {
      expect(await deliver(handler(), [stepRecord(next as never), stepRecord(next as never)])).toEqual([]);
    } finally {
      sends.stop();
    }
    expect(sends.sent.filter((s) => s.body.deferred !== undefined)).toEqual([]);
    expect((await waitForRun(stack, team.key, jobId)).body.status).toBe('completed');
    expect(await slotsOf(stack.deps, team.teamId)).toEqual({ [slotKeyOf('x', '1')]: live });
  });
});

describe('steps of different teams cannot starve each other', () => {
  it("team B's one-step run completes within the first 60 step batches while A's 500-step fan-out is still mostly queued", async () => {
    const a = await seedUnthrottledTeam(stack.deps, 100);
    const b = await seedUnthrottledTeam(stack.deps, 100);
    // A: one root and 499 steps reading it; B: one step.
    const fanOut = [
      { key: 'root', type: 'TextEntry', config: { text: 'otters' } },
      ...Array.from({ length: 499 }, (_, i) => ({ key: `p${i}`, type: 'PromptBuilder', inputs: ['root'] })),
    ];
    const workflowA = await createWorkflow(stack, a, fanOut, 'Fan-out');
    const workflowB = await createWorkflow(stack, b, [{ key: 'only', type: 'TextEntry', config: { text: 'hi' } }]);

    // A's root runs first, by hand: its end queues the 499 steps, all ahead of B's.
    const jobA = await startRunOk(stack, a.key, workflowA);
    const roots = await takeStepMessages(stack.deps);
    expect(roots).toEqual([expect.objectContaining({ jobId: jobA, nodeId: 'root', teamId: a.teamId })]);
    for (const root of roots) expect(await deliver(handler(), [stepRecord(root)])).toEqual([]);
    const jobB = await startRunOk(stack, b.key, workflowB);

    // The local event source mapping, counting its batches and which batch ran B's step.
    let batches = 0;
    let batchOfB: number | undefined;
    let aCompletedThen: number | undefined;
    // The cap at 1 here, so the bound below is in A's steps run: at most one of A's at a time.
    let running = 0;
    let mostRunning = 0;
    const counted = () => async (context: Parameters<typeof instantExecutor>[0]) => {
      if (context.jobId !== jobA) return instantExecutor(context);
      running += 1;
      mostRunning = Math.max(mostRunning, running);
      try {
        await new Promise((resolve) => setTimeout(resolve, 5));
        return await instantExecutor(context);
      } finally {
        running -= 1;
      }
    };
    const real = stepHandler({ ...stack.deps, teamStepsInFlight: 1 }, counted);
    const counting = async (event: SQSEvent) => {
      const batch = ++batches;
      const result = await real(event);
      if (batchOfB === undefined && event.Records.some((r) => JSON.parse(r.body).jobId === jobB)) {
        batchOfB = batch;
        aCompletedThen = Number((await runItem(stack.deps, jobA)).stepsCompleted);
      }
      return result;
    };
    const poller = startQueuePoller({
      endpoint: stack.resources.sqsS3Endpoint,
      queueUrl: stack.resources.queueUrls.Steps,
      definition: stepsQueue,
      handler: counting as never,
      waitSeconds: 1,
    });
    closers.push(() => poller.stop());

    const done = await waitForRun(stack, b.key, jobB, 240_000);
    await poller.stop();
    expect(done.body.status).toBe('completed');
    // The bound: B's message sat behind A's 499 (fauxqs delivers in the order sent, 10 a batch),
    // so it ran in the 51st batch at the latest; A never had more than its cap of steps running, and
    // its steps past the cap were only given back, so when B's batch ended more than 400 of A's
    // 500 steps had still not run.
    expect(batchOfB).toBeDefined();
    expect(batchOfB).toBeLessThanOrEqual(60);
    expect(mostRunning).toBe(1);
    expect(500 - (aCompletedThen ?? 0)).toBeGreaterThan(400);
    expect((await runItem(stack.deps, jobA)).status).not.toBe('completed');
  }, 300_000);
});
