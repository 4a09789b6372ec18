/**
 * A run's trail in the workers' log lines (item 5): the real worker handlers, handed SQS
 * records built from the messages the service put on its queues (taken off them with the SDK), with
 * a Lambda context as the runtime builds one; their JSON lines captured off stdout.
 */
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import type { NodeExecutor } from '../functions/nodes/executors/types.ts';
import { logger } from '../functions/observability/logger.ts';
import { lambdaContext } from '../local/lambda-context.ts';
import { receiveWebhookRecords } from './support/queue-contents.ts';
import {
  dispatcherHandler,
  instantExecutor,
  loopbackWebhookHandler,
  type StepMessage,
  startRunCall,
  stepHandler,
  stepRecord,
  takeStepMessages,
  waitForEnd,
} from './support/runs.ts';
import { createWorkflow, type SeededTeam, seedUnthrottledTeam, stackPerFile } from './support/stack.ts';
import { startReceiver } from './support/webhook-receiver.ts';

const { stack, closers } = stackPerFile();

type Line = Record<string, unknown>;

/** The JSON lines the service's logger writes (at INFO) while `work` runs, and what `work` returned. */
const captureLines = async <T>(work: () => Promise<T>): Promise<{ lines: Line[]; result: T }> => {
  const written: string[] = [];
  const capture = (chunk: unknown) => {
    written.push(...String(chunk).split('\n').filter(Boolean));
    return true;
  };
  const stdout = vi.spyOn(process.stdout, 'write').mockImplementation(capture);
  const stderr = vi.spyOn(process.stderr, 'write').mockImplementation(capture);
  logger.setLogLevel('INFO');
  try {
    const result = await work();
    return { lines: written.map((line) => JSON.parse(line) as Line), result };
  } finally {
    logger.setLogLevel('SILENT');
    stdout.mockRestore();
    stderr.mockRestore();
  }
};

/** A node that fails every time it runs: the provider edge, down. */
const failing: NodeExecutor = async () => {
  throw new Error('stand-in provider is down');
};

/** A node that fails the first time it runs and then works: a transient failure. */
const failingOnce = (): NodeExecutor => {
  let failed = false;
  return async (context) => {
    if (failed) return instantExecutor(context);
    failed = true;
    throw new Error('stand-in provider hiccup');
  };
};

/** Starts a one-step run (its step named `nodeId`) of a new workflow, callback to `callbackUrl` if any; its root message, taken off the queue. */
const startOneStep = async (team: SeededTeam, nodeId: string, callbackUrl?: string) => {
  const workflowId = await createWorkflow(stack, team, [{ key: nodeId, type: 'TextEntry', config: { text: nodeId } }]);
  const started = await startRunCall(stack.baseUrl, team.key, workflowId, callbackUrl ? { callbackUrl } : {});
  expect(started.status, JSON.stringify(started.body)).toBe(200);
  return started.body.jobId as string;
};

const rootsOf = async (jobIds: string[]) => {
  const messages = await takeStepMessages(stack.deps);
  return jobIds.map((jobId) => {
    const found = messages.find((m) => m.jobId === jobId);
    if (!found) throw new Error(`no step message of ${jobId}`);
    return found;
  });
};

/** The step executor's answer to one batch, as the event source hands it over, with a Lambda context. */
const runBatch = (executor: NodeExecutor, records: SQSRecord[], requestId: string) =>
  stepHandler(stack.deps, () => executor)(
    { Records: records } as SQSEvent,
    lambdaContext('trail-step-executor', 60_000, requestId),
  ) as Promise<SQSBatchResponse>;

let team: SeededTeam;
beforeAll(async () => {
  team = await seedUnthrottledTeam(stack.deps);
});

describe("the workers' batches", () => {
  it('a one-record batch whose step fails transiently answers its batch item failure and does not throw; its redelivery runs it', async () => {
    const jobId = await startOneStep(team, 'lone');
    const [root] = await rootsOf([jobId]);
    const executor = failingOnce();
    const first = stepRecord(root as StepMessage, 1);
    // Powertools' default would throw FullBatchFailureError here: a Lambda error for one step's hiccup.
    await expect(runBatch(executor, [first], 'transient-1')).resolves.toEqual({
      batchItemFailures: [{ itemIdentifier: first.messageId }],
    });
    expect(await runBatch(executor, [stepRecord(root as StepMessage, 2)], 'transient-2')).toEqual({
      batchItemFailures: [],
    });
    expect((await waitForEnd(stack.baseUrl, team.key, jobId)).body.status).toBe('completed');
  });
});

describe("a run's trail in the log lines", () => {
  it('records of two jobs processed in parallel: every line carries the jobId of the record it was logged for, and the Lambda context', async () => {
    const receiver = await startReceiver();
    closers.push(() => receiver.close());
    // Two runs whose steps are named apart, so a line says by itself which record logged it.
    const jobs = {
      alpha: await startOneStep(team, 'alpha', receiver.url),
      beta: await startOneStep(team, 'beta', receiver.url),
    };
    const [alpha, beta] = (await rootsOf([jobs.alpha, jobs.beta])) as [StepMessage, StepMessage];

    // Five executions fail each step for good (functions/domain/step-attempts.ts): a batch of both, five times.
    const { lines } = await captureLines(async () => {
      for (let delivery = 1; delivery <= 5; delivery++) {
        const records = [stepRecord(alpha, delivery), stepRecord(beta, delivery)];
        const answer = await runBatch(failing, records, `parallel-${delivery}`);
        expect(answer.batchItemFailures).toHaveLength(delivery < 5 ? 2 : 0);
      }
    });
    const stepLines = lines.filter((line) => line.nodeId === 'alpha' || line.nodeId === 'beta');
    expect(stepLines.map((line) => line.message).sort()).toEqual([
      'run failed',
      'run failed',
      'step failed on its last execution',
      'step failed on its last execution',
    ]);
    for (const line of stepLines) {
      expect(line.jobId, JSON.stringify(line)).toBe(jobs[line.nodeId as keyof typeof jobs]);
      expect(line).toMatchObject({
        function_name: 'trail-step-executor',
        function_request_id: 'parallel-5',
        cold_start: false,
      });
    }
    // The failed-runs-by-reason query reads it: a node that kept throwing is the code's failure.
    expect(stepLines.find((line) => line.message === 'run failed' && line.nodeId === 'alpha')).toMatchObject({
      level: 'WARN',
      reason: 'code',
      error: expect.stringContaining('5'),
    });
    for (const jobId of Object.values(jobs)) {
      expect((await waitForEnd(stack.baseUrl, team.key, jobId)).body.status).toBe('failed');
    }

    // Their run.failed webhooks, delivered in one batch: each line carries its own record's keys and the context.
    const webhookRecords = await receiveWebhookRecords(stack.deps, Object.values(jobs), { take: true });
    const webhook = loopbackWebhookHandler(stack.deps);
    const delivered = await captureLines(() =>
      webhook({ Records: webhookRecords } as SQSEvent, lambdaContext('trail-webhook-delivery', 30_000, 'webhooks-1')),
    );
    expect(delivered.result).toEqual({ batchItemFailures: [] });
    const attempts = delivered.lines.filter((line) => line.message === 'webhook attempt');
    expect(attempts).toHaveLength(2);
    for (const line of attempts) {
      const record = webhookRecords.find((r) => r.messageId === line.messageId);
      expect(JSON.parse(record?.body ?? '{}').jobId, JSON.stringify(line)).toBe(line.jobId);
      expect(line).toMatchObject({
        webhookEvent: 'run.failed',
        function_name: 'trail-webhook-delivery',
        function_request_id: 'webhooks-1',
      });
    }
  });

  it("the dispatcher's tick line carries the Lambda context, and an invocation's keys end with it", async () => {
    const tick = dispatcherHandler(stack.deps);
    const { lines } = await captureLines(async () => {
      await tick(undefined, lambdaContext('trail-dispatcher', 50_000, 'tick-1'));
      await tick(undefined, lambdaContext('trail-dispatcher', 50_000, 'tick-2'));
      await tick();
    });
    const ticks = lines.filter((line) => line.message === 'dispatcher tick');
    expect(ticks.map((line) => line.function_request_id)).toEqual(['tick-1', 'tick-2', undefined]);
    expect(ticks[0]).toMatchObject({ function_name: 'trail-dispatcher', cold_start: false });
    // A tick with no context (the local schedule's tests) carries no earlier tick's.
    expect(ticks[2]?.function_name).toBeUndefined();
  });
});
