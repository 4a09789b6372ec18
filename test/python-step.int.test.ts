/**
 * A PythonSandbox step through the real path: a run started over the local API, the step executor
 * polling the steps queue, the Lambda SDK's Invoke to the suite's emulator, and the PythonRunner
 * handler running the code in Pyodide, in a process of its own. A failed Python step fails the run
 * and is charged as any failed step is: nothing, its hold released.
 */
import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { createExecutorRegistry, executorDeps } from '../functions/nodes/executors/index.ts';
import { withAwsCommandLog } from '../local/aws-command-log.ts';
import { localAwsConfig } from '../local/emulators.ts';
import { envNames } from '../platform/definitions.ts';
import type { RunStepDetails } from '../schemas/run-steps.ts';
import { ledgerOf } from './support/runs.ts';
import {
  call,
  createWorkflow,
  type SeededTeam,
  seedTeam,
  startRunOk,
  startWorkingStack,
  type TestStack,
  waitForRun,
} from './support/stack.ts';

let stack: TestStack;
let team: SeededTeam;

beforeAll(async () => {
  const settings = {
    [envNames.pythonRunner]: 'PythonRunner',
    AWS_ENDPOINT_URL_LAMBDA: inject('lambda').endpoint,
    AWS_REGION: localAwsConfig.region,
    AWS_ACCESS_KEY_ID: localAwsConfig.credentials.accessKeyId,
    AWS_SECRET_ACCESS_KEY: localAwsConfig.credentials.secretAccessKey,
  };
  // The step executor's Lambda client carries the AWS command log, as its other clients do.
  const executors = createExecutorRegistry(executorDeps({ env: settings, onClient: (c) => withAwsCommandLog(c) }));
  stack = await startWorkingStack({ executors });
  // waitForRun polls every 100 ms with this key: a first step's Pyodide load on a loaded machine,
  // then four runs, would pass the default 60 requests a minute (a 429 on createWorkflow).
  team = await seedTeam(stack.deps, { credits: 100, key: { rateLimitPerMinute: 10_000 } });
  // Lambda gives the runner its own CPU; here it shares a machine that may be loaded, where a first
  // step's cold Pyodide load can outlast the step executor's 25 s node timeout. An invocation of its
  // own loads it first, as a warm environment has.
  const lambda = new LambdaClient({ ...localAwsConfig, endpoint: inject('lambda').endpoint });
  const warm = await lambda.send(
    new InvokeCommand({
      FunctionName: 'PythonRunner',
      Payload: JSON.stringify({ code: 'result = 1', inputs: [], timeoutMs: 10_000 }),
    }),
  );
  lambda.destroy();
  if (warm.FunctionError) throw new Error(`the PythonRunner failed: ${new TextDecoder().decode(warm.Payload)}`);
}, 180_000);
afterAll(() => stack?.close());

const pythonFlow = (code: string, timeoutMs?: number) => [
  { key: 'numbers', type: 'JsonLoader', config: { data: [1, 2, 3] } },
  { key: 'word', type: 'TextEntry', config: { text: 'otters' } },
  {
    key: 'python',
    type: 'PythonSandbox',
    config: { code, ...(timeoutMs ? { timeoutMs } : {}) },
    inputs: [
      { from: 'numbers', targetHandle: 'values' },
      { from: 'word', targetHandle: 'values' },
    ],
  },
];

const runFlow = async (steps: unknown[]) => {
  const workflowId = await createWorkflow(stack, team, steps);
  return (await waitForRun(stack, team.key, await startRunOk(stack, team.key, workflowId), 120_000)).body;
};

describe('a PythonSandbox step', () => {
  it('runs its code on the PythonRunner function and answers its result, charged its price', async () => {
    const before = await ledgerOf(stack.deps, team.teamId);
    const run = await runFlow(
      pythonFlow('numbers, word = inputs\nprint("seen", word)\nresult = {"total": sum(numbers), "word": word.upper()}'),
    );
    expect(run).toMatchObject({ status: 'completed' });
    const output = (run.output as { node_id: string; result: unknown }[]).find((o) => o.node_id === 'python');
    expect(output?.result).toEqual({ total: 6, word: 'OTTERS' });
    const after = await ledgerOf(stack.deps, team.teamId);
    expect(after.held).toBe(0);
    // Each step its flat price, in hundredths: the two loaders 1 each, PythonSandbox 5.
    expect(after.charged - before.charged).toBe(7);
    expect(after.balance + after.charged).toBe(before.balance + before.charged);
  }, 180_000);

  it("keeps its print output and stderr, readable with the step's attempts (GET /runs/{jobId}/steps/{nodeId})", async () => {
    const code =
      'import sys\nprint("hello from python")\nprint("careful", file=sys.stderr)\n' +
      'print("y" * 20000)\nprint("the end")\nresult = 1';
    const run = await runFlow(pythonFlow(code));
    expect(run).toMatchObject({ status: 'completed' });
    const read = (await call(stack.baseUrl, `/runs/${run.jobId}/steps/python`, { key: team.key })) as unknown as {
      status: number;
      body: RunStepDetails;
    };
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ status: 'completed', stepType: 'PythonSandbox', chargedCredits: 0.05 });
    // One completed attempt, charged the step's price; on a loaded machine a cold runner may first
    // have outlasted the step's deadline: each such attempt failed, charged nothing, and was retried.
    const attempts = read.body.attempts as { outcome: string; chargedHundredths: number; retryClass?: string }[];
    expect(attempts.at(-1)).toMatchObject({ outcome: 'completed', chargedHundredths: 5 });
    for (const earlier of attempts.slice(0, -1))
      expect(earlier).toMatchObject({ outcome: 'failed', retryClass: 'deadline', chargedHundredths: 0 });
    // stdout is over the 16 KB cap: its tail is kept and it is marked as cut; stderr is whole.
    const { stdout, stderr } = read.body.logs;
    expect(stdout).toMatchObject({ truncated: true, bytes: 'hello from python\n'.length + 20001 + 'the end\n'.length });
    expect(stdout?.text).toMatch(/y\nthe end\n$/);
    expect(stderr).toEqual({ text: 'careful\n', truncated: false, bytes: 8 });
    // A step that printed and then raised keeps what it printed, beside its error.
    const failed = await runFlow(pythonFlow('print("before the fall")\nresult = inputs[0][10]'));
    expect(failed).toMatchObject({ status: 'failed' });
    const fell = (await call(stack.baseUrl, `/runs/${failed.jobId}/steps/python`, { key: team.key })) as unknown as {
      body: RunStepDetails;
    };
    expect(fell.body.logs.stdout).toEqual({ text: 'before the fall\n', truncated: false, bytes: 16 });
    expect(fell.body.attempts.at(-1)).toMatchObject({
      outcome: 'failed',
      retryClass: 'none',
      reason: 'code',
      chargedHundredths: 0,
    });
  }, 180_000);

  it.each([
    ['an exception', 'result = inputs[0][10]', undefined, 'PythonSandbox: raised IndexError: list index out of range'],
    ['its time limit', 'while True: pass', 500, 'PythonSandbox: timed out after 500 ms'],
    ['its memory limit', 'data = bytearray(10**9)', undefined, 'PythonSandbox: exceeded the 256 MB memory limit'],
    // Buffers of `to_js` are outside the interpreter's memory and V8's heap: its process's limit ends it.
    [
      'the to_js buffer bomb',
      'from pyodide.ffi import to_js\nkeep = []\nfor i in range(200):\n    keep.append(to_js(b"x" * 10**7))',
      undefined,
      'PythonSandbox: exceeded the 640 MB memory limit of its process',
    ],
    // At once, never retried (it would be as large again): the run fails on the first answer.
    [
      'a result over 256 KB',
      'result = "x" * 10_000_000',
      undefined,
      'PythonSandbox: the result is 9765.6 KB of JSON, over the 256 KB limit',
    ],
  ])(
    'fails the run on %s, charging the failed step nothing',
    async (_, code, timeoutMs, error) => {
      const before = await ledgerOf(stack.deps, team.teamId);
      const run = await runFlow(pythonFlow(code, timeoutMs));
      expect(run).toMatchObject({ status: 'failed' });
      const step = (run.steps as { node_id: string; status: string; error?: string }[]).find(
        (s) => s.node_id === 'python',
      );
      expect(step).toMatchObject({ status: 'failed', error });
      // The run may read failed a moment before its hold is settled: wait for the settle, not the first read.
      const after = await vi.waitFor(
        async () => {
          const ledger = await ledgerOf(stack.deps, team.teamId);
          expect(ledger.held).toBe(0);
          return ledger;
        },
        { timeout: 60_000, interval: 100 },
      );
      // Only the two loaders that completed are charged; the failed step's estimate is released.
      const loaders = after.charged - before.charged;
      expect(after.balance).toBe(before.balance - loaders);
      expect(loaders).toBeLessThan(5);
    },
    180_000,
  );
});
