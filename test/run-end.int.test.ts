/**
 * A run that has ended takes nothing more in (docs/decisions/runs.md, "A run that has ended takes nothing
 * more in"): a step that finishes after its run was cancelled publishes no output and no file, reads
 * `unknown` and is never charged; the run keeps its workflow's lock and its hold while a model step
 * is in flight, so a start → cancel loop cannot run provider work in parallel for free. Runs start
 * and are cancelled over HTTP; steps run on the real step-executor handler and node executors (the
 * sandbox provider), fed the messages the service queued. The provider edge is held on a latch, and
 * a DynamoDB client middleware lands the cancel between two of the executor's calls: no sleeps.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { documentClient } from '../functions/clients/dynamodb.ts';
import type { Deps, ExecutorLookup, LateStep } from '../functions/deps.ts';
import type { NodeExecutor } from '../functions/nodes/executors/types.ts';
import type { RunItem } from '../functions/store/items/runs.ts';
import { workflowLockKey } from '../functions/store/keys.ts';
import { claimStep, readRunItem } from '../functions/store/run/index.ts';
import { localAwsConfig } from '../local/emulators.ts';
import { localDeps } from '../local/local-deps.ts';
import {
  cancelRunCall,
  deliver,
  dispatcherHandler,
  expectBalanced,
  faultyDeps,
  getRunCall,
  ledgerOf,
  realStepHandler,
  runBody,
  runParts,
  type StepHandler,
  type StepMessage,
  startRunCall,
  stepRecord,
  takeStepMessages,
} from './support/runs.ts';
import { createWorkflow, type SeededTeam, seedUnthrottledTeam, stackPerFile } from './support/stack.ts';

const { stack } = stackPerFile();

const granted = 100_000; // 1,000 credits, in hundredths

const team = () => seedUnthrottledTeam(stack.deps, granted / 100);

/** The reproduction: a prompt, then an image model asked for 4 variations. */
const imageSteps = [
  { key: 'prompt', type: 'TextEntry', config: { text: 'a lighthouse at dusk' } },
  { key: 'image', type: 'ImageGen', config: { variations: 4 }, inputs: ['prompt'] },
];

/** A one-shot gate: `open` lets whoever awaits `opened` go on. */
const latch = () => {
  let open = () => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { open, opened };
};

/**
 * The real node executors, with the image model's answer held: the provider has drawn and the
 * executor stored its files (`reached`), and the step returns only once `gate` opens, as a slow
 * provider would. Counts the image calls, and the most in flight at once.
 */
const heldImages = (gate: Promise<void>, reached: () => void) => {
  const calls = { started: 0, inFlight: 0, most: 0 };
  const executors: ExecutorLookup = (type) => {
    const real = stack.deps.executors(type);
    if (type !== 'ImageGen') return real;
    const held: NodeExecutor = async (context) => {
      calls.started += 1;
      calls.inFlight += 1;
      calls.most = Math.max(calls.most, calls.inFlight);
      try {
        const outcome = await real(context);
        reached();
        await gate;
        return outcome;
      } finally {
        calls.inFlight -= 1;
      }
    };
    return held;
  };
  return { executors, calls };
};

/** The step messages of one run now on the queue (others' are dropped). */
const messagesOf = async (jobId: string) => (await takeStepMessages(stack.deps)).filter((m) => m.jobId === jobId);

const onlyMessage = async (jobId: string, nodeId: string) => {
  const messages = await messagesOf(jobId);
  expect(messages.map((m) => m.nodeId)).toEqual([nodeId]);
  return messages[0] as StepMessage;
};

const lockOf = async (workflowId: string) =>
  (
    await stack.deps.ddb.send(
      new GetCommand({ TableName: stack.deps.tableName, Key: workflowLockKey(workflowId), ConsistentRead: true }),
    )
  ).Item;

/** Each step's price as the run holds it (its estimate), from the run item. */
const pricesOf = async (jobId: string) => {
  const { run } = await runParts(stack.deps, jobId);
  return run?.stepEstimates as Record<string, number>;
};

/** The run's team paid only the prompt, holds nothing, and the ledger balances. */
const expectOnlyPromptCharged = async (t: SeededTeam, prices: Record<string, number>) => {
  const ledger = await ledgerOf(stack.deps, t.teamId);
  expectBalanced(ledger);
  expect(ledger).toEqual({ balance: granted - (prices.prompt as number), held: 0, charged: prices.prompt, granted });
};

/** The objects a step stored in the library bucket. */
const storedFiles = async (t: SeededTeam, jobId: string, nodeId: string) => {
  const { Contents = [] } = await stack.deps.s3.send(
    new ListObjectsV2Command({ Bucket: stack.deps.bucket, Prefix: `teams/${t.teamId}/runs/${jobId}/${nodeId}/` }),
  );
  return Contents.map((o) => o.Key);
};

/** A run of `imageSteps` for a new team whose prompt step `handler` ran: its image step's message is next. */
const runAtItsImage = async (handler: StepHandler) => {
  const t = await team();
  const workflowId = await createWorkflow(stack, t, imageSteps);
  const jobId = (await startRunCall(stack.baseUrl, t.key, workflowId)).body.jobId as string;
  const prices = await pricesOf(jobId);
  expect(await deliver(handler, [stepRecord(await onlyMessage(jobId, 'prompt'))])).toEqual([]);
  return { t, workflowId, jobId, prices, image: await onlyMessage(jobId, 'image') };
};

const busy = (jobId: string) => ({ error: 'This workflow already has a run in progress', activeJobId: jobId });

describe('a step that finishes after its run ended', () => {
  it('publishes no output and no file, reads unknown, is never charged; the lock and hold wait for it', async () => {
    const gate = latch();
    const reached = latch();
    const { executors, calls } = heldImages(gate.opened, reached.open);
    const cancelled: LateStep[] = [];
    const handler = realStepHandler({
      ...stack.deps,
      executors,
      cancelProviderJob: async (step) => {
        cancelled.push(step);
      },
    });
    const { t, workflowId, jobId, prices, image: imageMessage } = await runAtItsImage(handler);
    const estimate = (prices.prompt as number) + (prices.image as number);
    const late = deliver(handler, [stepRecord(imageMessage)]);
    await reached.opened; // the model answered and its 4 files are stored; the step has not finished
    expect(await storedFiles(t, jobId, 'image')).toHaveLength(4);

    const stopped = await cancelRunCall(stack.baseUrl, t.key, jobId);
    expect(stopped.body).toEqual(runBody(jobId, 'stopped', 50, imageSteps, ['completed', 'unknown']));
    // The image step is in flight: the workflow stays locked and the whole estimate stays held.
    const again = await startRunCall(stack.baseUrl, t.key, workflowId);
    expect([again.status, again.body]).toEqual([409, busy(jobId)]);
    expect(await ledgerOf(stack.deps, t.teamId)).toEqual({
      balance: granted - estimate,
      held: estimate,
      charged: 0,
      granted,
    });

    gate.open();
    expect(await late).toEqual([]);
    expect(calls.started).toBe(1);
    const read = await getRunCall(stack.baseUrl, t.key, jobId);
    expect(read.body).toEqual(stopped.body);
    expect(JSON.stringify(read.body)).not.toMatch(/url/);
    const { run, steps } = await runParts(stack.deps, jobId);
    const image = steps.get('image') as Record<string, unknown>;
    expect(image).toMatchObject({ status: 'unknown', chargeHundredths: 0 });
    expect(Object.keys(image)).not.toContain('outputs');
    // Its files stay in the bucket, named by no item (so never signed), until its lifecycle rule.
    expect(await storedFiles(t, jobId, 'image')).toHaveLength(4);
    expect(cancelled).toEqual([{ jobId, nodeId: 'image', model: expect.objectContaining({ provider: 'sandbox' }) }]);
    // Settled by the late step: only the prompt charged, the rest released, the workflow free.
    expect(run).toMatchObject({
      status: 'stopped',
      heldHundredths: 0,
      chargedHundredths: prices.prompt,
      finalChargedHundredths: prices.prompt,
      finalizedAt: expect.any(String),
    });
    await expectOnlyPromptCharged(t, prices);
    expect(await lockOf(workflowId)).toBeUndefined();
    expect((await startRunCall(stack.baseUrl, t.key, workflowId)).status).toBe(200);
  });

  it('its redelivery after a crash publishes and charges nothing, before and after it settles the run', async () => {
    const handler = realStepHandler(stack.deps);
    const { t, workflowId, jobId, prices, image } = await runAtItsImage(handler);
    // The run is cancelled while the image is drawn, and the worker dies right after recording the
    // step's end (its every count on the run refused): the item holds the outputs, uncounted.
    const isCount = (command: string, input: unknown) =>
      command === 'UpdateItemCommand' && JSON.stringify(input).includes('doneSteps');
    const crashing = faultyDeps(
      stack,
      { failDynamo: isCount },
      {
        executors: (type) => async (context) => {
          if (type === 'ImageGen') expect((await cancelRunCall(stack.baseUrl, t.key, jobId)).status).toBe(200);
          return stack.deps.executors(type)(context);
        },
        sleep: async () => {},
      },
    );
    expect(await deliver(realStepHandler(crashing), [stepRecord(image)])).toHaveLength(1);
    const crashed = await runParts(stack.deps, jobId);
    expect(crashed.steps.get('image')).toMatchObject({ status: 'completed', outputs: expect.any(Object) });
    // Only the run's count publishes an output: the uncounted one is not the run's.
    const read = await getRunCall(stack.baseUrl, t.key, jobId);
    expect(read.body).toMatchObject({ status: 'stopped', output: [] });
    expect((read.body.steps as { node_id: string; status: string }[])[1]).toMatchObject({ status: 'unknown' });
    expect(JSON.stringify(read.body)).not.toMatch(/url/);

    // SQS hands the message back: it retires the step and settles the run; later copies change nothing.
    for (const receiveCount of [2, 3]) {
      expect(await deliver(handler, [stepRecord(image, receiveCount)])).toEqual([]);
      const { run, steps } = await runParts(stack.deps, jobId);
      expect(steps.get('image')).toMatchObject({ status: 'unknown', chargeHundredths: 0 });
      expect(Object.keys(steps.get('image') ?? {})).not.toContain('outputs');
      expect(run).toMatchObject({ status: 'stopped', heldHundredths: 0, chargedHundredths: prices.prompt });
      await expectOnlyPromptCharged(t, prices);
      expect(await lockOf(workflowId)).toBeUndefined();
      expect((await getRunCall(stack.baseUrl, t.key, jobId)).body).toEqual(read.body);
    }
    expect(await messagesOf(jobId)).toEqual([]);
  });
});

describe('start → cancel loops', () => {
  it('run no model work in parallel and get none of it: each start waits for the cancelled step to settle', async () => {
    const t = await team();
    const workflowId = await createWorkflow(stack, t, imageSteps);
    const loops = 4;
    let charged = 0;
    let calls = { started: 0, inFlight: 0, most: 0 };
    for (let i = 0; i < loops; i++) {
      const started = await startRunCall(stack.baseUrl, t.key, workflowId);
      expect(started.status).toBe(200);
      const jobId = started.body.jobId as string;
      const prices = await pricesOf(jobId);
      const gate = latch();
      const reached = latch();
      const held = heldImages(gate.opened, reached.open);
      const handler = realStepHandler({ ...stack.deps, executors: held.executors });
      expect(await deliver(handler, [stepRecord(await onlyMessage(jobId, 'prompt'))])).toEqual([]);
      const late = deliver(handler, [stepRecord(await onlyMessage(jobId, 'image'))]);
      await reached.opened;
      expect((await cancelRunCall(stack.baseUrl, t.key, jobId)).body.status).toBe('stopped');
      // The loop's next start, at once: refused while the provider still works for the last run.
      for (let retry = 0; retry < 3; retry++) {
        const refused = await startRunCall(stack.baseUrl, t.key, workflowId);
        expect([refused.status, refused.body]).toEqual([409, busy(jobId)]);
      }
      gate.open();
      expect(await late).toEqual([]);
      calls = {
        started: calls.started + held.calls.started,
        inFlight: 0,
        most: Math.max(calls.most, held.calls.most),
      };
      const read = await getRunCall(stack.baseUrl, t.key, jobId);
      expect(read.body).toMatchObject({ status: 'stopped', output: [] });
      expect((read.body.steps as { status: string }[]).map((s) => s.status)).toEqual(['completed', 'unknown']);
      charged += prices.prompt as number; // the finished prompt only: the contract charges finished steps
    }
    expect(calls).toEqual({ started: loops, inFlight: 0, most: 1 });
    const ledger = await ledgerOf(stack.deps, t.teamId);
    expectBalanced(ledger);
    expect(ledger).toEqual({ balance: granted - charged, held: 0, charged, granted });
  });
});

/** Deps whose DynamoDB client lands `before` once, just before the first call `when` picks. */
const landingBefore = (when: (command: string, input: unknown) => boolean, before: () => Promise<void>): Deps => {
  const ddb = documentClient(new DynamoDBClient({ ...localAwsConfig, endpoint: stack.resources.dynamoDbEndpoint }));
  let landed = false;
  ddb.middlewareStack.add(
    (next, context) => async (args) => {
      if (!landed && when(context.commandName ?? '', args.input)) {
        landed = true;
        await before();
      }
      return next(args);
    },
    { step: 'initialize', name: 'testInterleaving' },
  );
  return localDeps(stack.resources, { ddb });
};

describe('a cancel that lands while a model step is being claimed', () => {
  const cases = [
    {
      // The worker read the run in progress; the cancel ends and settles it before the claim.
      name: 'before the claim',
      when: (command: string, input: unknown) =>
        command === 'UpdateItemCommand' && JSON.stringify(input).includes('ADD #attempts'),
      lockedUntilTheStepGivesUp: false,
    },
    {
      // The claim is written; the cancel ends the run before the worker reads it again, sees the
      // claim, and leaves the settling to the step.
      name: 'between the claim and its check of the run',
      when: (command: string, input: unknown) =>
        command === 'GetItemCommand' && JSON.stringify(input).includes('"SK":"RUN"'),
      lockedUntilTheStepGivesUp: true,
    },
  ];
  for (const { name, when, lockedUntilTheStepGivesUp } of cases) {
    it(`${name}: no provider is called, and the run settles exactly once`, async () => {
      const t = await team();
      const workflowId = await createWorkflow(stack, t, [
        { key: 'prompt', type: 'TextEntry', config: { text: 'a haiku' } },
        { key: 'llm', type: 'LlmWorker', inputs: ['prompt'] },
      ]);
      const jobId = (await startRunCall(stack.baseUrl, t.key, workflowId)).body.jobId as string;
      const prices = await pricesOf(jobId);
      expect(await deliver(realStepHandler(stack.deps), [stepRecord(await onlyMessage(jobId, 'prompt'))])).toEqual([]);
      let providerCalls = 0;
      let lockedAtCancel: unknown;
      const deps = landingBefore(when, async () => {
        expect((await cancelRunCall(stack.baseUrl, t.key, jobId)).body.status).toBe('stopped');
        lockedAtCancel = await lockOf(workflowId);
      });
      const handler = realStepHandler({
        ...deps,
        executors: () => async () => {
          providerCalls += 1;
          return { outputs: { text: 'never' } };
        },
      });
      expect(await deliver(handler, [stepRecord(await onlyMessage(jobId, 'llm'))])).toEqual([]);
      expect(providerCalls).toBe(0);
      expect(lockedAtCancel !== undefined).toBe(lockedUntilTheStepGivesUp);
      const read = await getRunCall(stack.baseUrl, t.key, jobId);
      expect(read.body).toMatchObject({ status: 'stopped', output: [] });
      expect((read.body.steps as { status: string }[]).map((s) => s.status)).toEqual(['completed', 'skipped']);
      await expectOnlyPromptCharged(t, prices);
      expect(await lockOf(workflowId)).toBeUndefined();
    });
  }
});

describe('a run ended with a model step whose worker died', () => {
  it('keeps its lock and hold until the lease runs out, then the sweep settles it', async () => {
    const handler = realStepHandler(stack.deps);
    const { t, workflowId, jobId, prices, image } = await runAtItsImage(handler);
    // A worker claims the image step and dies while the provider draws: its claim stays, leased.
    const run = await readRunItem(stack.deps, jobId);
    expect((await claimStep(stack.deps, run as RunItem, image.nodeId)).claimed).toBe(true);
    expect((await cancelRunCall(stack.baseUrl, t.key, jobId)).body.status).toBe('stopped');
    expect(await lockOf(workflowId)).toMatchObject({ jobId });

    // A sweep before the lease ran out settles nothing; one after it does, through a step message.
    const sweepAt = async (minutes: number) => {
      const at: Deps = { ...stack.deps, now: () => new Date(Date.now() + minutes * 60_000) };
      const swept = await dispatcherHandler(at)();
      // The sweep settles the ended run itself: it queues no step of it.
      expect(await messagesOf(jobId)).toEqual([]);
      return swept.settled;
    };
    await sweepAt(1);
    expect(await lockOf(workflowId)).toMatchObject({ jobId });
    expect((await ledgerOf(stack.deps, t.teamId)).held).toBe((prices.prompt as number) + (prices.image as number));
    await sweepAt(3);
    expect(await lockOf(workflowId)).toBeUndefined();
    await expectOnlyPromptCharged(t, prices);
    const read = await getRunCall(stack.baseUrl, t.key, jobId);
    expect(read.body).toMatchObject({ status: 'stopped', output: [] });
    expect((read.body.steps as { status: string }[]).map((s) => s.status)).toEqual(['completed', 'unknown']);
  });
});
