/**
 * The run the cost model prices: a `chainLength`-step chain started over HTTP with a callbackUrl,
 * executed by the real step executor from the steps queue, ended by its signed webhook delivered
 * by the real webhook worker to an https receiver on loopback. Everything runs on the emulators
 * through the same handlers `npm start` serves, metered by bench/cost-meter.ts.
 */
import { makeHandler as makeStepExecutor } from '../functions/workers/step-executor.ts';
import { makeHandler as makeWebhookDelivery } from '../functions/workers/webhook-delivery.ts';
import { stepsQueue, webhooksQueue } from '../lib/definitions.ts';
import { startLocalApi } from '../local/api-gateway.ts';
import { startQueuePoller } from '../local/event-source.ts';
import { localDeps } from '../local/local-deps.ts';
import type { LocalResources } from '../local/provision.ts';
import { receiverCa, startReceiver } from '../test/support/webhook-receiver.ts';
import {
  invocationsSettled,
  type Meter,
  meterDynamoDb,
  meterInvocation,
  meterSqs,
  meterSqsHandler,
  newMeter,
  resetMeter,
} from './cost-meter.ts';
import { createChainWorkflows, seedRunsTeam } from './seed.ts';

export interface ChainRunCost {
  /** Counts over the measured runs (divide by `runs`). */
  meter: Meter;
  runs: number;
  chainLength: number;
  /** What one GET /runs/{jobId} of a finished run costs, measured the same way. */
  pollMeter: Meter;
}

/**
 * Starts `runs + 1` runs one after another (the first warms the caches a warm Lambda instance has,
 * and is not counted) and meters the rest from the start request to the webhook's arrival.
 */
export const measureChainRunCost = async (
  resources: LocalResources,
  options: { runs: number; chainLength: number },
): Promise<ChainRunCost> => {
  const meter = newMeter();
  const deps = localDeps(resources);
  const reader = localDeps(resources).ddb;
  meterDynamoDb(deps.ddb, meter, reader);
  meterSqs(deps.sqs, meter);
  const api = await startLocalApi({ deps, port: 0, host: '127.0.0.1' });
  const waiting = new Map<string, () => void>();
  const arrived = new Set<string>();
  const receiver = await startReceiver([], ({ body }) => {
    const { jobId } = JSON.parse(body) as { jobId: string };
    arrived.add(jobId);
    waiting.get(jobId)?.();
  });
  const pollers = [
    startQueuePoller({
      endpoint: resources.sqsS3Endpoint,
      queueUrl: resources.queueUrls.Steps,
      definition: stepsQueue,
      handler: meterSqsHandler(meter, 'StepExecutor', makeStepExecutor(deps) as never),
      waitSeconds: 1,
    }),
    startQueuePoller({
      endpoint: resources.sqsS3Endpoint,
      queueUrl: resources.queueUrls.Webhooks,
      definition: webhooksQueue,
      handler: meterSqsHandler(
        meter,
        'WebhookDelivery',
        makeWebhookDelivery(deps, { fetchOptions: { allowLoopback: true, ca: receiverCa } }) as never,
      ),
      waitSeconds: 1,
    }),
  ];
  try {
    const team = await seedRunsTeam(deps, 1_000);
    const [workflowId] = await createChainWorkflows(deps, api.baseUrl, team, 1, options.chainLength);
    const headers = { authorization: `Bearer ${team.key}`, 'content-type': 'application/json' };
    const runOnce = async () => {
      const response = await meterInvocation(meter, 'StartRun', () =>
        fetch(`${api.baseUrl}/workflows/${workflowId}/runs`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ callbackUrl: receiver.url, callbackSecret: 'bench-secret' }),
        }),
      );
      const body = (await response.json()) as { jobId?: string };
      if (response.status !== 200 || !body.jobId) throw new Error(`start answered ${response.status}`);
      const jobId = body.jobId;
      await new Promise<void>((resolve, reject) => {
        if (arrived.has(jobId)) return resolve();
        const timer = setTimeout(() => reject(new Error(`no webhook for run ${jobId} within 30 s`)), 30_000);
        waiting.set(jobId, () => {
          clearTimeout(timer);
          resolve();
        });
      });
      return jobId;
    };
    await runOnce();
    // The webhook worker's invocation ends after the receiver answered: let the warm-up's finish.
    await invocationsSettled();
    resetMeter(meter);
    let lastJobId = '';
    for (let i = 0; i < options.runs; i++) lastJobId = await runOnce();
    await invocationsSettled();
    const counted = structuredClone(meter);
    resetMeter(meter);
    await meterInvocation(meter, 'GetRun', () => fetch(`${api.baseUrl}/runs/${lastJobId}`, { headers }));
    return { meter: counted, runs: options.runs, chainLength: options.chainLength, pollMeter: structuredClone(meter) };
  } finally {
    for (const poller of pollers) await poller.stop();
    await receiver.close();
    await api.close();
    deps.ddb.destroy();
    reader.destroy();
  }
};
