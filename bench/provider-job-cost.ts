/**
 * What a model step that is a job at an asynchronous provider costs us: the same chain as
 * the cost section's, its second step an LlmWorker on Replicate's stand-in (test/stand-ins/replicate.ts,
 * Replicate's own protocol and webhook signatures), the job ending after `jobSeconds` of real time.
 * Everything is metered as bench/cost-run.ts meters it: the run start over HTTP, every step
 * executor invocation off the steps queue (the submit, each poll, the look the webhook sends), the
 * provider's webhook to our route, and every DynamoDB and SQS call. Nothing holds a Lambda while
 * the provider works: the wait costs polls, not GB-seconds.
 */
import { createExecutorRegistry, executorDeps } from '../functions/nodes/executors/index.ts';
import { stageProvidersFromEnv } from '../functions/nodes/providers/stage.ts';
import { makeHandler as makeStepExecutor } from '../functions/workers/step-executor.ts';
import { startLocalApi } from '../local/api-gateway.ts';
import { startQueuePoller } from '../local/event-source.ts';
import { localDeps } from '../local/local-deps.ts';
import type { LocalResources } from '../local/provision.ts';
import { freePort } from '../local/rehearse/providers.ts';
import { stepsQueue } from '../platform/definitions.ts';
import { startReplicateStandIn } from '../test/stand-ins/replicate.ts';
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
import { chainSteps, seedCostTeam } from './seed.ts';

/** The chain of `chainSteps` with its second step a text model's job on Replicate (its answer feeds the rest). */
export const chainWithJobStep = (length: number) =>
  chainSteps(length).map((step, i) =>
    i === 1
      ? {
          key: step.key,
          type: 'LlmWorker',
          inputs: ['s0'],
          config: { provider: 'replicate', model: 'meta/meta-llama-3-8b-instruct' },
        }
      : step,
  );

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export interface JobRunCost {
  jobSeconds: number;
  meter: Meter;
  /** Step executor invocations that looked at the job: its polls, and the look its webhook sent. */
  looks: number;
}

/**
 * One warm-up run (a 1 s job), then one metered run per entry of `jobSeconds`. Each metered run is
 * counted from its start request until the last poll its job scheduled has been delivered (a poll
 * in flight when the job ends still arrives, finds the step done, and is paid for).
 */
export const measureJobRunCosts = async (
  resources: LocalResources,
  options: { chainLength: number; jobSeconds: readonly number[] },
): Promise<JobRunCost[]> => {
  const apiKey = 'r8_bench_key';
  const replicate = await startReplicateStandIn({ apiKey });
  const port = await freePort();
  const env = {
    ...process.env,
    PROVIDER_REPLICATE_API_KEY: apiKey,
    PROVIDER_REPLICATE_BASE_URL: replicate.url,
    ALLOW_PRIVATE_CALLBACKS: '1',
    PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
  };
  const meter = newMeter();
  const deps = localDeps(resources, {
    executors: createExecutorRegistry(executorDeps({ env })),
    providers: stageProvidersFromEnv(env),
  });
  const reader = localDeps(resources).ddb;
  meterDynamoDb(deps.ddb, meter, reader);
  meterSqs(deps.sqs, meter);
  const api = await startLocalApi({ deps, port, host: '127.0.0.1' });
  const looked = new Set<string>();
  const executor = makeStepExecutor(deps) as never as Parameters<typeof meterSqsHandler>[2];
  const poller = startQueuePoller({
    endpoint: resources.sqsS3Endpoint,
    queueUrl: resources.queueUrls.Steps,
    definition: stepsQueue,
    handler: meterSqsHandler(meter, 'StepExecutor', async (event, context) => {
      for (const record of event.Records) if (record.body.includes('"check"')) looked.add(record.messageId);
      return executor(event, context);
    }),
    waitSeconds: 1,
  });
  try {
    const { workflowId, headers } = await seedCostTeam(
      deps,
      api.baseUrl,
      options.chainLength,
      chainWithJobStep(options.chainLength),
    );
    const runOnce = async (jobSeconds: number) => {
      const startedAt = Date.now();
      meter.api.requests++;
      const started = await meterInvocation(meter, 'RunWorkflow', () =>
        fetch(`${api.baseUrl}/workflows/${workflowId}/runs`, { method: 'POST', headers, body: '{}' }),
      );
      const { jobId } = (await started.json()) as { jobId: string };
      if (started.status !== 200) throw new Error(`start answered ${started.status}`);
      const prediction = await (async () => {
        for (;;) {
          const found = [...replicate.jobs.values()].find((j) => String(j.prediction.webhook ?? '').includes(jobId));
          if (found) return found.prediction;
          if (Date.now() - startedAt > 30_000) throw new Error('the job was never submitted');
          await sleep(20);
        }
      })();
      await sleep(Math.max(0, startedAt + jobSeconds * 1000 - Date.now()));
      // The provider ends the job and posts its signed webhook to our route: one route invocation.
      const webhookStarted = performance.now();
      // A language model's answer on Replicate: a list of text tokens.
      const sent = await replicate.complete(prediction.id, ['a ', 'lighthouse']);
      if (sent?.status !== 202) throw new Error(`the webhook was answered ${sent?.status}`);
      meter.lambda.invocations++;
      meter.lambda.byFunction.ProviderWebhook = (meter.lambda.byFunction.ProviderWebhook ?? 0) + 1;
      meter.lambda.msByFunction.ProviderWebhook =
        (meter.lambda.msByFunction.ProviderWebhook ?? 0) + (performance.now() - webhookStarted);
      meter.lambda.ms += performance.now() - webhookStarted;
      meter.api.requests++;
      for (;;) {
        const run = (await (await fetch(`${api.baseUrl}/runs/${jobId}`, { headers })).json()) as { status: string };
        if (run.status === 'completed') break;
        if (['failed', 'cancelled', 'stopped'].includes(run.status)) {
          throw new Error(`the run ended ${run.status}: ${JSON.stringify(run).slice(0, 500)}`);
        }
        if (Date.now() - startedAt > jobSeconds * 1000 + 60_000) {
          throw new Error(`the run never ended: ${JSON.stringify(run).slice(0, 500)}`);
        }
        await sleep(50);
      }
      // The polls the job scheduled: 5 s, then twice as long each, up to 2 minutes; the one after its end
      // still comes. Wait for it (its delay at most 20 % shorter than the schedule's).
      let due = 0;
      for (let poll = 0, at = 0; at <= jobSeconds; poll++) {
        at += Math.min(5 * 2 ** poll, 120);
        due = at;
      }
      await sleep(Math.max(0, startedAt + (due + 3) * 1000 - Date.now()));
      await invocationsSettled();
    };
    await runOnce(1);
    const costs: JobRunCost[] = [];
    for (const jobSeconds of options.jobSeconds) {
      resetMeter(meter);
      looked.clear();
      await runOnce(jobSeconds);
      costs.push({ jobSeconds, meter: structuredClone(meter), looks: looked.size });
    }
    return costs;
  } finally {
    await poller.stop();
    await api.close();
    await replicate.close();
    deps.ddb.destroy();
    reader.destroy();
  }
};
