/**
 * `Prefer: wait=N` through the real path: the run starts, the resume and GET /runs/{jobId} over the
 * local API against the emulators, the real step executor running the steps. Where a test needs
 * time to pass, its API's clock is the test's: each pause of the wait advances it at once (and,
 * where the run should move, first delivers the queued steps to the real step executor), so no
 * test waits on or asserts the wall clock.
 */
import './support/test-providers.ts';
import { afterEach, describe, expect, it } from 'vitest';
import type { Deps } from '../functions/deps.ts';
import { waitLookTimesMs } from '../functions/domain/prefer-wait.ts';
import { StepFailedError } from '../functions/nodes/executors/types.ts';
import { maxWaitSeconds } from '../platform/run-wait.ts';
import {
  api,
  drainSteps,
  getRunCall,
  realStepHandler,
  startSecondApi,
  startStepWorkers,
  stepHandler,
  takeStepMessages,
} from './support/runs.ts';
import { addKey, createWorkflow, seedTeam, seedUnthrottledTeam, stackPerFile } from './support/stack.ts';

const { stack, closers } = stackPerFile();

/** One step: its output is the run input `topic`. */
const oneStep = [{ key: 'topic', type: 'TextEntry', config: { text: 'otters', apiInputKey: 'topic' } }];
const threeSteps = [
  ...oneStep,
  { key: 'prompt', type: 'PromptBuilder', config: { template: 'About {{0}}' }, inputs: ['topic'] },
  { key: 'show', type: 'TextConsole', inputs: ['prompt'] },
];

/**
 * Deliveries of the queued steps a waiting route asks for, made by a pump of the test's own: the
 * command log files an AWS call under the function whose invocation, or whose handler file on the
 * call stack (async frames included), it runs in, and the route never receives step messages.
 */
const stepPump = () => {
  const asked: (() => void)[] = [];
  let busy = false;
  const timer = setInterval(() => {
    if (busy || asked.length === 0) return;
    busy = true;
    const waiting = asked.splice(0);
    void (async () => {
      try {
        await drainSteps(stack.deps, realStepHandler(stack.deps));
      } finally {
        busy = false;
        for (const done of waiting) done();
      }
    })();
  }, 5);
  closers.push(async () => clearInterval(timer));
  return () => new Promise<void>((resolve) => asked.push(resolve));
};

/**
 * A second local API over the stack whose clock moves only when a wait pauses: by the pause, at
 * once. With `moving`, each pause first delivers the queued steps to the real step executor (the
 * run moves while the request waits, as the step executor's own Lambda would move it).
 */
const clockedApi = async (options: { moving?: boolean } = {}) => {
  const clock = { ms: Date.now(), pauses: [] as number[] };
  const moveSteps = options.moving ? stepPump() : undefined;
  const deps: Deps = {
    ...stack.deps,
    now: () => new Date(clock.ms),
    sleep: async (ms: number) => {
      clock.pauses.push(ms);
      await moveSteps?.();
      clock.ms += ms;
    },
  };
  const server = await startSecondApi(deps);
  closers.push(() => server.close());
  return { baseUrl: server.baseUrl, clock, elapsed: () => clock.pauses.reduce((sum, ms) => sum + ms, 0) };
};

const startCall = (baseUrl: string, key: string, workflowId: string, body: unknown, headers: Record<string, string>) =>
  api(baseUrl, 'POST', `/workflows/${workflowId}/runs`, { key, body, headers });

afterEach(async () => {
  // Each test starts on an empty steps queue: a run another test left queued never moves here.
  await takeStepMessages(stack.deps);
});

describe('Prefer: wait on a run start', () => {
  it('answers a one-step run with its output in one request (Prefer: wait=10), with Location and Preference-Applied', async () => {
    const team = await seedUnthrottledTeam(stack.deps);
    const workflowId = await createWorkflow(stack, team, oneStep);
    // The real step executor polls the steps queue meanwhile, as its Lambda's event source does.
    const workers = startStepWorkers(stack);
    try {
      const started = await startCall(
        stack.baseUrl,
        team.key,
        workflowId,
        { inputs: { topic: 'sea otters' } },
        { prefer: 'wait=10' },
      );
      expect(started.status, JSON.stringify(started.body)).toBe(200);
      const jobId = started.body.jobId as string;
      expect(started.headers.get('preference-applied')).toBe('wait=10');
      expect(started.headers.get('location')).toBe(`${stack.deps.publicBaseUrl}/api/v1/runs/${jobId}`);
      const run = started.body.run as Record<string, unknown>;
      expect(run).toMatchObject({ jobId, status: 'completed', progress: 100 });
      expect(run.output).toEqual([expect.objectContaining({ node_id: 'topic', result: 'sea otters' })]);
      // Exactly the Run GET /runs/{jobId} answers.
      expect(run).toEqual((await getRunCall(stack.baseUrl, team.key, jobId)).body);
    } finally {
      await workers.stop();
    }
  });

  it('answers a run that does not end within N seconds without `run`, after N seconds of looks on the schedule', async () => {
    const team = await seedUnthrottledTeam(stack.deps);
    const workflowId = await createWorkflow(stack, team, oneStep);
    const still = await clockedApi();
    const started = await startCall(still.baseUrl, team.key, workflowId, {}, { prefer: 'wait=3' });
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    expect(started.body).not.toHaveProperty('run');
    expect(started.body.status).toBe('queued');
    expect(started.headers.get('preference-applied')).toBe('wait=3');
    expect(still.elapsed()).toBe(3_000);
    // One look at once, then one after each pause.
    expect(still.clock.pauses).toHaveLength(waitLookTimesMs(3_000).length - 1);
  });

  it('waits for a run the step executor ends during the wait, and answers it as GET does', async () => {
    const team = await seedUnthrottledTeam(stack.deps);
    const workflowId = await createWorkflow(stack, team, threeSteps);
    const moving = await clockedApi({ moving: true });
    const started = await startCall(
      moving.baseUrl,
      team.key,
      workflowId,
      { inputs: { topic: 'owls' } },
      {
        prefer: 'wait=25',
      },
    );
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    const run = started.body.run as Record<string, unknown>;
    expect(run.status).toBe('completed');
    expect(run.output).toEqual([expect.objectContaining({ node_id: 'show', result: 'About owls' })]);
    // It answered at the first look after the end, long before the 25 s.
    expect(moving.elapsed()).toBeLessThan(2_000);
  });

  it('gives an Idempotency-Key retry the Run again, as it is now; a retry without the header the answer remembered', async () => {
    const team = await seedUnthrottledTeam(stack.deps);
    const workflowId = await createWorkflow(stack, team, oneStep);
    const moving = await clockedApi({ moving: true });
    const headers = { prefer: 'wait=10', 'idempotency-key': `wait-${team.teamId}` };
    const first = await startCall(moving.baseUrl, team.key, workflowId, { inputs: { topic: 'a' } }, headers);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect((first.body.run as { status: string }).status).toBe('completed');
    const pausesBefore = moving.clock.pauses.length;
    const again = await startCall(moving.baseUrl, team.key, workflowId, { inputs: { topic: 'a' } }, headers);
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get('preference-applied')).toBe('wait=10');
    // The run had ended: the first look saw it, no pause.
    expect(moving.clock.pauses).toHaveLength(pausesBefore);
    const plain = await startCall(
      moving.baseUrl,
      team.key,
      workflowId,
      { inputs: { topic: 'a' } },
      {
        'idempotency-key': headers['idempotency-key'],
      },
    );
    const { run: _run, ...remembered } = first.body;
    expect(plain.body).toEqual(remembered);
    expect(plain.headers.get('preference-applied')).toBeNull();
  });

  it('answers a deferred start at once: 202, Location of the deferred run, no Preference-Applied', async () => {
    const team = await seedUnthrottledTeam(stack.deps);
    const workflowId = await createWorkflow(stack, team, oneStep);
    const still = await clockedApi();
    const deferred = await startCall(still.baseUrl, team.key, workflowId, { defer: true }, { prefer: 'wait=10' });
    expect(deferred.status, JSON.stringify(deferred.body)).toBe(202);
    expect(deferred.headers.get('location')).toMatch(
      new RegExp(`/api/v1/deferred-runs/${deferred.body.deferredJobId as string}$`),
    );
    expect(deferred.headers.get('preference-applied')).toBeNull();
    expect(still.clock.pauses).toEqual([]);
  });

  it('ignores a malformed or zero wait, serves a wait over 25 s as 25, and does not wait for a key that may not read runs', async () => {
    const team = await seedUnthrottledTeam(stack.deps);
    const workflowId = await createWorkflow(stack, team, oneStep);
    const still = await clockedApi();
    for (const prefer of [
      'wait=abc',
      'wait=-1',
      'wait=1.5',
      'wait=0',
      'wait',
      'respond-async',
      `wait=${'9'.repeat(400)}`,
    ]) {
      const answer = await startCall(still.baseUrl, team.key, workflowId, {}, { prefer });
      if (prefer.startsWith('wait=9')) {
        // A huge N is a large one: served as 25 s.
        expect(answer.status, prefer).toBe(200);
        expect(answer.headers.get('preference-applied')).toBe(`wait=${maxWaitSeconds}`);
        expect(still.elapsed()).toBe(maxWaitSeconds * 1_000);
        await api(still.baseUrl, 'POST', `/runs/${answer.body.jobId as string}/cancel`, { key: team.key });
        continue;
      }
      expect(answer.status, `${prefer}: ${JSON.stringify(answer.body)}`).toBe(200);
      expect(answer.headers.get('preference-applied'), prefer).toBeNull();
      expect(answer.body).not.toHaveProperty('run');
      expect(still.clock.pauses, prefer).toEqual([]);
      await api(still.baseUrl, 'POST', `/runs/${answer.body.jobId as string}/cancel`, { key: team.key });
    }
    const starter = await addKey(stack.deps, team.teamId, { scopes: ['runs:create'], rateLimitPerMinute: 100_000 });
    const unread = await startCall(still.baseUrl, starter.key, workflowId, {}, { prefer: 'wait=5' });
    expect(unread.status).toBe(200);
    expect(unread.headers.get('preference-applied')).toBeNull();
    expect(unread.body).not.toHaveProperty('run');
    expect(still.elapsed()).toBe(maxWaitSeconds * 1_000);
  });
});

describe('Prefer: wait on GET /runs/{jobId} and the resume', () => {
  it('answers GET when the run ends, and after N seconds when it does not', async () => {
    const team = await seedUnthrottledTeam(stack.deps);
    const workflowId = await createWorkflow(stack, team, threeSteps);
    const started = await startCall(stack.baseUrl, team.key, workflowId, {}, {});
    const jobId = started.body.jobId as string;
    const still = await clockedApi();
    const waited = await api(still.baseUrl, 'GET', `/runs/${jobId}`, { key: team.key, headers: { prefer: 'wait=4' } });
    expect(waited.status).toBe(200);
    expect(waited.body.status).toBe('queued');
    expect(waited.headers.get('preference-applied')).toBe('wait=4');
    expect(still.elapsed()).toBe(4_000);

    const moving = await clockedApi({ moving: true });
    const ended = await api(moving.baseUrl, 'GET', `/runs/${jobId}`, { key: team.key, headers: { prefer: 'wait=20' } });
    expect(ended.body.status).toBe('completed');
    expect(moving.elapsed()).toBeLessThan(2_000);
    // An ended run is answered at the first read.
    const again = await api(moving.baseUrl, 'GET', `/runs/${jobId}`, { key: team.key, headers: { prefer: 'wait=20' } });
    expect(again.body).toEqual(ended.body);
    expect(moving.elapsed()).toBeLessThan(2_000);
  });

  it('answers another team’s run 404 at once, without waiting', async () => {
    const team = await seedUnthrottledTeam(stack.deps);
    const other = await seedUnthrottledTeam(stack.deps);
    const workflowId = await createWorkflow(stack, team, oneStep);
    const started = await startCall(stack.baseUrl, team.key, workflowId, {}, {});
    const still = await clockedApi();
    const foreign = await api(still.baseUrl, 'GET', `/runs/${started.body.jobId as string}`, {
      key: other.key,
      headers: { prefer: 'wait=10' },
    });
    expect(foreign.status).toBe(404);
    expect(still.clock.pauses).toEqual([]);
  });

  it('waits on a resume as on a start', async () => {
    const team = await seedUnthrottledTeam(stack.deps);
    const workflowId = await createWorkflow(stack, team, oneStep);
    const started = await startCall(stack.baseUrl, team.key, workflowId, {}, {});
    const jobId = started.body.jobId as string;
    // Its one step fails, as a refused provider call ends a step: the run can be resumed.
    await drainSteps(
      stack.deps,
      stepHandler(stack.deps, () => async () => {
        throw new StepFailedError('the provider refused the request');
      }),
    );
    expect((await getRunCall(stack.baseUrl, team.key, jobId)).body.status).toBe('failed');
    const moving = await clockedApi({ moving: true });
    const resumed = await api(moving.baseUrl, 'POST', `/runs/${jobId}/resume`, {
      key: team.key,
      body: {},
      headers: { prefer: 'wait=10' },
    });
    expect(resumed.status, JSON.stringify(resumed.body)).toBe(200);
    expect(resumed.headers.get('preference-applied')).toBe('wait=10');
    expect(resumed.headers.get('location')).toMatch(new RegExp(`/api/v1/runs/${resumed.body.jobId as string}$`));
    expect(resumed.body.run).toMatchObject({ jobId: resumed.body.jobId, status: 'completed', resumedFrom: jobId });
  });

  it('counts a waiting request once against the rate limit', async () => {
    const team = await seedTeam(stack.deps, { key: { rateLimitPerMinute: 3 } });
    const workflowId = await createWorkflow(
      stack,
      { ...team, key: (await addKey(stack.deps, team.teamId)).key },
      oneStep,
    );
    const still = await clockedApi();
    const started = await startCall(still.baseUrl, team.key, workflowId, {}, { prefer: 'wait=5' });
    expect(started.status).toBe(200);
    const jobId = started.body.jobId as string;
    const waited = await api(still.baseUrl, 'GET', `/runs/${jobId}`, { key: team.key, headers: { prefer: 'wait=5' } });
    expect(waited.status).toBe(200);
    // Two waits of 5 s made 2 × 9 looks, yet counted 2 requests: a third is admitted, a fourth is not.
    expect(still.clock.pauses.length).toBeGreaterThan(10);
    expect((await api(still.baseUrl, 'GET', `/runs/${jobId}`, { key: team.key })).status).toBe(200);
    expect((await api(still.baseUrl, 'GET', `/runs/${jobId}`, { key: team.key })).status).toBe(429);
  });
});
