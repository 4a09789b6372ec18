/**
 * The local stack's Python pool is fair between teams, through the path `npm start` uses: the step
 * executor's Lambda client (`pythonInvoker`) over the local Lambda Invoke API to the PythonRunner
 * handler over the local runner (local/python-runner.ts). One team queues many steps; another
 * team's one step takes the next free place, not the place after the flood.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pythonInvoker } from '../functions/clients/lambda.ts';
import { startLambdaEmulator } from '../local/lambda-emulator.ts';
import { startLocalPythonRunner } from '../local/python-runner.ts';

const { runner, handler } = startLocalPythonRunner({ PYTHON_SNAPSHOTS: 'true', PYTHON_LOCAL_RUNS: '1' });
const lambda = await startLambdaEmulator({ PythonRunner: handler });
const invoke = pythonInvoker({
  functionName: 'PythonRunner',
  endpoint: lambda.endpoint,
  settings: { AWS_REGION: 'us-east-1', AWS_ACCESS_KEY_ID: 'local', AWS_SECRET_ACCESS_KEY: 'local' },
});

beforeAll(() => runner.warm(), 120_000);
afterAll(async () => {
  await lambda.stop();
  await runner.close();
});

const until = async (ready: () => boolean) => {
  while (!ready()) await new Promise((resolve) => setTimeout(resolve, 20));
};

describe('the local Python pool serves teams in turn', { timeout: 180_000 }, () => {
  it("starts a second team's one step before a flooding team's waiting steps", async () => {
    const started: string[] = [];
    const step = (team: string, name: string, code: string, timeoutMs = 10_000) =>
      invoke({ code, inputs: [], timeoutMs, teamId: team }).then((answer) => {
        started.push(name);
        return answer;
      });
    // Team A holds the one place with a step that runs until its limit.
    const first = step('team-a', 'a1', 'while True:\n    pass', 3_000);
    await until(() => runner.running === 1);
    // Team A floods: four more steps wait, in order.
    const flood: Promise<unknown>[] = [];
    for (let n = 2; n <= 5; n++) {
      flood.push(step('team-a', `a${n}`, `result = ${n}`));
      await until(() => runner.queued === n - 1);
    }
    // Team B's one step comes last.
    const other = step('team-b', 'b1', 'result = sum([1, 2])');
    await until(() => runner.queued === 5);
    expect(await first).toMatchObject({ ok: false, error: 'timeout' });
    expect(await other).toMatchObject({ ok: true, result: 3 });
    await Promise.all(flood);
    // One place: each step ends before the next starts, so the order they ended is the order they started.
    expect(started).toEqual(['a1', 'b1', 'a2', 'a3', 'a4', 'a5']);
  });

  it('runs a team’s own waiting steps in the order they came', async () => {
    const ended: number[] = [];
    const hold = invoke({ code: 'while True:\n    pass', inputs: [], timeoutMs: 2_000, teamId: 'team-c' });
    await until(() => runner.running === 1);
    const waiting: Promise<unknown>[] = [];
    for (let n = 1; n <= 3; n++) {
      waiting.push(
        invoke({ code: `result = ${n}`, inputs: [], timeoutMs: 10_000, teamId: 'team-c' }).then(() => ended.push(n)),
      );
      await until(() => runner.queued === n);
    }
    await hold;
    await Promise.all(waiting);
    expect(ended).toEqual([1, 2, 3]);
  });
});
