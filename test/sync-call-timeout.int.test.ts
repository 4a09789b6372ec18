/**
 * A synchronous call that outlives its step's deadline, through the real path: a run started over
 * the local API, the step executor's handler fed the messages the service put on the steps queue,
 * and at the edge a Bedrock stand-in (the real SDK over HTTP/2) or a PythonRunner stand-in that
 * answers only after the deadline. The deadline is injected (a fraction of a second), never waited
 * out. The cut call ends as a `timeout` try: the step's message is sent again with a delay (never
 * left to the queue's visibility timeout, never read as a lost worker), and the retry that
 * answers is charged once.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { PythonInvoke } from '../functions/clients/lambda.ts';
import { failureReasonOf } from '../functions/domain/failure-reasons.ts';
import { maxRetryDelaySeconds } from '../functions/domain/provider-jobs.ts';
import { StepTimeoutError } from '../functions/domain/step-attempts.ts';
import { createExecutorRegistry, executorDepsFromEnv } from '../functions/nodes/executors/index.ts';
import { syncTextMaxTokens } from '../functions/nodes/executors/sync-call-budget.ts';
import { stageProvidersFromEnv } from '../functions/nodes/providers/stage.ts';
import type { PythonAnswer } from '../functions/python/protocol.ts';
import { makeHandler } from '../functions/workers/step-executor.ts';
import { invokedAs } from '../local/invocation.ts';
import { envNames } from '../platform/definitions.ts';
import { bedrockDefaultModels } from '../platform/providers.ts';
import { type BedrockStandIn, startBedrockStandIn } from './stand-ins/bedrock.ts';
import { bedrockProcessEnv, closeWithStack, fakeAwsCredentials, stageStepExecutor } from './support/provider-steps.ts';
import { queueContents } from './support/queue-contents.ts';
import {
  deliver,
  expectBalanced,
  ledgerOf,
  runParts,
  type StepHandler,
  type StepMessage,
  stepRecord,
  takeStepMessages,
} from './support/runs.ts';
import { createWorkflow, jobsStackPerFile, seedTeam, startRunOk } from './support/stack.ts';

/**
 * The deadline the step executor is given here. Both stand-ins hold their answer until the abort, so
 * the test waits this out once a call; it is long enough that a loaded machine (lazy SDK imports, the
 * claim's writes) reaches the provider before the cut, which 300 ms was not on a busy CI machine.
 */
const deadlineMs = 4_000;
/** The deadline of the deliveries that must answer in time, whatever the machine's load. */
const relaxedDeadlineMs = 20_000;

const stageEnv: NodeJS.ProcessEnv = { PROVIDER_BEDROCK: 'on', [envNames.sandboxProviders]: 'false' };
let bedrock: BedrockStandIn;
const settings = (): NodeJS.ProcessEnv => ({
  ...stageEnv,
  ...fakeAwsCredentials,
  AWS_ENDPOINT_URL_BEDROCK_RUNTIME: bedrock.url,
});
const { stack, closers } = jobsStackPerFile(settings, stageProvidersFromEnv(stageEnv));

beforeAll(async () => {
  bedrock = await startBedrockStandIn();
  closeWithStack(closers, bedrock, bedrockProcessEnv(bedrock.url));
});

/** The one step message of `jobId` now visible on the queue, for `nodeId`. */
const takeMessage = async (jobId: string, nodeId: string): Promise<StepMessage> => {
  const taken = (await takeStepMessages(stack.deps)).filter((m) => m.jobId === jobId);
  expect(taken.map((m) => m.nodeId)).toEqual([nodeId]);
  return taken[0] as StepMessage;
};

/** The step's message waiting on the queue with a delay: its body, as a later delivery would carry it. */
const delayedRetry = async (jobId: string, nodeId: string) => {
  const queued = (await queueContents(stack.resources, 'Steps')).filter((m) => {
    const body = JSON.parse(m.body) as StepMessage;
    return body.jobId === jobId && body.nodeId === nodeId;
  });
  expect(queued).toHaveLength(1);
  const [retry] = queued;
  expect(retry?.state).toBe('delayed');
  expect(retry?.delaySeconds).toBeGreaterThanOrEqual(1);
  expect(retry?.delaySeconds).toBeLessThanOrEqual(maxRetryDelaySeconds);
  return JSON.parse(retry?.body ?? '{}') as StepMessage;
};

/** Delivers the run's root message, the step under test's message, and returns the latter. */
const runUpTo = async (handler: StepHandler, jobId: string, root: string, nodeId: string) => {
  expect(await deliver(handler, [stepRecord(await takeMessage(jobId, root))])).toEqual([]);
  return takeMessage(jobId, nodeId);
};

describe('a synchronous call cut by its step deadline', { timeout: 60_000 }, () => {
  it('a model call is a timeout try: retried by a delayed message, not a lost worker, charged once when it answers', async () => {
    const handler = stageStepExecutor(stack.deps, settings(), { stepTimeoutMs: deadlineMs }).handler;
    // The retry's deliveries get a deadline a loaded machine cannot miss: only the cut is under test.
    const relaxed = stageStepExecutor(stack.deps, settings(), { stepTimeoutMs: relaxedDeadlineMs }).handler;
    const team = await seedTeam(stack.deps, { credits: 100 });
    const workflowId = await createWorkflow(stack, team, [
      { key: 'prompt', type: 'TextEntry', config: { text: 'a lighthouse at dusk' } },
      { key: 'answer', type: 'LlmWorker', inputs: ['prompt'], config: { maxTokens: 32_000 } },
    ]);
    const jobId = await startRunOk(stack, team.key, workflowId);
    const message = await runUpTo(handler, jobId, 'prompt', 'answer');

    // Bedrock holds its answer past the deadline: the delivery ends without a batch failure (so
    // SQS does not hold the message for its visibility timeout), and the step's retry waits on the
    // queue with a delay.
    bedrock.holdNext();
    const invoked = () => bedrock.requests.filter((r) => r.modelId === bedrockDefaultModels.text).length;
    const before = invoked();
    expect(await deliver(handler, [stepRecord(message)])).toEqual([]);
    expect(invoked()).toBe(before + 1);
    const retry = await delayedRetry(jobId, 'answer');
    expect(retry).toMatchObject({ jobId, workflowId, nodeId: 'answer' });
    // Counted as the provider's try, its claim given back: not a lost worker, nothing charged.
    let parts = await runParts(stack.deps, jobId);
    expect(parts.run).toMatchObject({ status: 'processing', chargedHundredths: 1 });
    expect(parts.steps.get('answer')).toMatchObject({ status: 'processing', attempts: 1, providerTries: 1 });
    expect(Date.parse(String(parts.steps.get('answer')?.leaseUntil))).toBe(0);

    // The retry's delivery (after its delay): Bedrock answers, the step completes, the run ends.
    expect(await deliver(relaxed, [stepRecord(retry)])).toEqual([]);
    expect(invoked()).toBe(before + 2);
    // The call asked for what its deadline can generate, not the step's 32,000.
    const asked = bedrock.requests.filter((r) => r.modelId === bedrockDefaultModels.text).at(-1)?.body;
    expect(asked?.max_tokens ?? (asked?.inferenceConfig as { maxTokens?: number })?.maxTokens).toBe(
      syncTextMaxTokens(),
    );
    parts = await runParts(stack.deps, jobId);
    expect(parts.steps.get('answer')).toMatchObject({ status: 'completed', attempts: 2, providerTries: 1 });
    expect(parts.run).toMatchObject({ status: 'completed', heldHundredths: 0 });
    const charged = (parts.run?.chargedHundredths as number) ?? 0;
    expect([...parts.charges.keys()].sort()).toEqual(['answer', 'prompt']);

    // A copy of the retry (SQS is at least once): nothing runs, nothing is charged again.
    expect(await deliver(relaxed, [stepRecord(retry, 2)])).toEqual([]);
    expect(invoked()).toBe(before + 2);
    const ledger = await ledgerOf(stack.deps, team.teamId);
    expectBalanced(ledger);
    expect(ledger).toMatchObject({ held: 0, charged });
  });

  it('a Python call is a timed-out execution: retried by a delayed message, charged once when it answers', async () => {
    // The PythonRunner function's stand-in: its first invocation answers only after the deadline.
    let calls = 0;
    const python: PythonInvoke = async (_request, signal) => {
      calls += 1;
      if (calls === 1) {
        return new Promise<PythonAnswer>((_, reject) =>
          signal?.addEventListener('abort', () => reject(signal.reason), { once: true }),
        );
      }
      return { ok: true, result: 42, stdout: '', stderr: '' };
    };
    const executors = createExecutorRegistry({ ...executorDepsFromEnv({}), python });
    const handler = invokedAs('StepExecutor', makeHandler({ ...stack.deps, executors }, { stepTimeoutMs: deadlineMs }));
    const relaxed = invokedAs(
      'StepExecutor',
      makeHandler({ ...stack.deps, executors }, { stepTimeoutMs: relaxedDeadlineMs }),
    );
    const team = await seedTeam(stack.deps, { credits: 100 });
    const workflowId = await createWorkflow(stack, team, [
      { key: 'numbers', type: 'JsonLoader', config: { data: [1, 2] } },
      { key: 'python', type: 'PythonSandbox', config: { code: 'result = 42' }, inputs: ['numbers'] },
    ]);
    const jobId = await startRunOk(stack, team.key, workflowId);
    // The loader runs the PythonSandbox step in its own invocation only with time for a whole
    // deadline left: the handler knows no time left here, so the step is queued.
    const message = await runUpTo(handler, jobId, 'numbers', 'python');

    expect(await deliver(handler, [stepRecord(message)])).toEqual([]);
    expect(calls).toBe(1);
    const retry = await delayedRetry(jobId, 'python');
    let parts = await runParts(stack.deps, jobId);
    expect(parts.run).toMatchObject({ status: 'processing' });
    expect(parts.steps.get('python')).toMatchObject({ status: 'processing', failures: 1 });

    expect(await deliver(relaxed, [stepRecord(retry)])).toEqual([]);
    expect(await deliver(relaxed, [stepRecord(retry, 2)])).toEqual([]);
    expect(calls).toBe(2);
    parts = await runParts(stack.deps, jobId);
    expect(parts.run).toMatchObject({ status: 'completed', heldHundredths: 0 });
    expect(parts.steps.get('python')).toMatchObject({ status: 'completed', outputs: { result: 42 } });
    const ledger = await ledgerOf(stack.deps, team.teamId);
    expectBalanced(ledger);
    expect(ledger).toMatchObject({ held: 0, charged: parts.run?.chargedHundredths });
    expect([...parts.charges.keys()].sort()).toEqual(['numbers', 'python']);
  });

  it('a step whose every try is cut fails as a timeout, named so', () => {
    expect(failureReasonOf(new StepTimeoutError(deadlineMs))).toBe('timeout');
  });
});
