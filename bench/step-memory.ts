/**
 * How much memory the step executor needs: its bundle's source run alone in a child process
 * (bench/step-worker.ts) polling the steps queue, fed 10 runs started at once (so one batch of 10
 * records runs in parallel, as Lambda's event source hands them over), for each workload; the
 * child's peak resident memory (`process.resourceUsage().maxRSS`) is what a Lambda memory size must
 * hold. The source runs through Node's type stripping, not the esbuild bundle: close, not equal.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { startLocalApi } from '../local/api-gateway.ts';
import { localDeps } from '../local/local-deps.ts';
import type { LocalResources } from '../local/provision.ts';
import { chainSteps, createChainWorkflows, seedRunsTeam } from './seed.ts';

const workerScript = new URL('./step-worker.ts', import.meta.url).pathname;

export interface StepWorkload {
  name: string;
  steps: unknown[];
}

/** The workloads: cheap chains, a text model step, an image model step at 1024² with 4 variations. */
export const stepWorkloads: StepWorkload[] = [
  { name: '10-step chains of cheap steps', steps: chainSteps(10) },
  {
    name: 'a text model step (LlmWorker)',
    steps: [
      { key: 's0', type: 'TextEntry', config: { text: 'a lighthouse at dusk' } },
      { key: 's1', type: 'LlmWorker', inputs: ['s0'], config: { maxTokens: 800 } },
      { key: 's2', type: 'TextConsole', inputs: ['s1'] },
    ],
  },
  {
    name: 'an image model step (ImageGen 1024×1024, 4 variations)',
    steps: [
      { key: 's0', type: 'TextEntry', config: { text: 'a lighthouse at dusk' } },
      { key: 's1', type: 'ImageGen', inputs: ['s0'], config: { width: 1024, height: 1024, variations: 4 } },
    ],
  },
];

const startWorker = async (resources: LocalResources) => {
  const child: ChildProcess = spawn(process.execPath, [workerScript], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    env: { ...process.env, BENCH_RESOURCES: JSON.stringify(resources) },
  });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the step worker did not start within 30 s')), 30_000);
    child.once('exit', (code) => reject(new Error(`the step worker exited with code ${code}`)));
    child.on('message', (message: { type?: string }) => {
      if (message.type === 'ready') {
        clearTimeout(timer);
        resolve();
      }
    });
  });
  const peak = () =>
    new Promise<number>((resolve) => {
      child.once('message', (message: { maxRssBytes: number }) => resolve(message.maxRssBytes));
      child.send({ type: 'peak' });
    });
  const stop = async () => {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    if (child.connected) child.disconnect();
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5000))]);
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  };
  return { peak, stop };
};

/** Peak resident memory of a fresh step executor idle, then of one per workload with 10 runs at once. */
export const measureStepExecutorMemory = async (resources: LocalResources, runs = 10) => {
  const deps = localDeps(resources);
  const api = await startLocalApi({ deps, port: 0, host: '127.0.0.1' });
  const results: { name: string; peakBytes: number; seconds: number }[] = [];
  try {
    const team = await seedRunsTeam(deps, 100_000);
    const headers = { authorization: `Bearer ${team.key}`, 'content-type': 'application/json' };
    const idle = await startWorker(resources);
    await new Promise((resolve) => setTimeout(resolve, 2000));
    results.push({ name: 'idle (imported, polling an empty queue)', peakBytes: await idle.peak(), seconds: 0 });
    await idle.stop();
    for (const workload of stepWorkloads) {
      const workflowIds = await createChainWorkflows(
        deps,
        api.baseUrl,
        team,
        runs,
        workload.steps.length,
        workload.steps,
      );
      const worker = await startWorker(resources);
      const started = performance.now();
      try {
        const jobIds = await Promise.all(
          workflowIds.map(async (workflowId) => {
            const response = await fetch(`${api.baseUrl}/workflows/${workflowId}/runs`, { method: 'POST', headers });
            const body = (await response.json()) as { jobId?: string };
            if (response.status !== 200 || !body.jobId) throw new Error(`start answered ${response.status}`);
            return body.jobId;
          }),
        );
        for (const jobId of jobIds) {
          for (;;) {
            const run = (await (await fetch(`${api.baseUrl}/runs/${jobId}`, { headers })).json()) as { status: string };
            if (run.status === 'completed') break;
            if (['failed', 'cancelled', 'stopped'].includes(run.status)) throw new Error(`run ${jobId} ${run.status}`);
            if (performance.now() - started > 300_000) throw new Error(`run ${jobId} still ${run.status}`);
            await new Promise((resolve) => setTimeout(resolve, 200));
          }
        }
        results.push({
          name: workload.name,
          peakBytes: await worker.peak(),
          seconds: (performance.now() - started) / 1000,
        });
      } finally {
        await worker.stop();
      }
    }
    return results;
  } finally {
    await api.close();
    deps.ddb.destroy();
    deps.sqs.destroy();
    deps.s3.destroy();
  }
};
