/**
 * Long model work that holds no Lambda, through the real path: HTTP to the local API, the step
 * executor's handler over the emulators, and Replicate's stand-in (test/stand-ins/replicate.ts) over
 * HTTP, speaking Replicate's own protocol and signing its webhooks as Replicate does. A step submits
 * its job and ends its invocation; the job's end comes by the signed webhook or by polling, and is
 * applied and charged once.
 */
import { describe, expect, it } from 'vitest';
import { jobDeadlineMinutes } from '../functions/domain/provider-jobs.ts';
import { readPngMark } from '../functions/nodes/media/marks.ts';
import { encodePng, makeImage } from '../functions/nodes/media/png.ts';
import { stepLeaseSeconds } from '../functions/store/run/steps.ts';
import { makeHandler } from '../functions/workers/step-executor.ts';
import { runAdmin } from '../local/admin.ts';
import { invokedAs } from '../local/invocation.ts';
import { postWebhook, startFileServer } from './stand-ins/http.ts';
import { type ReplicateStandIn, startReplicateStandIn } from './stand-ins/replicate.ts';
import { stageStepExecutor } from './support/provider-steps.ts';
import {
  deliver,
  drainSteps,
  expectBalanced,
  ledgerOf,
  runParts,
  type StepHandler,
  stepRecord,
  takeStepMessages,
} from './support/runs.ts';
import { call, createWorkflow, jobsStackPerFile, seedTeam } from './support/stack.ts';

const apiKey = 'r8_provider_jobs_test_key_never_logged';
const png = encodePng(makeImage(8, 8, () => [10, 120, 200, 255]));

let standIn: ReplicateStandIn;
let files: Awaited<ReturnType<typeof startFileServer>>;
const settings = (): NodeJS.ProcessEnv => ({
  PROVIDER_REPLICATE_API_KEY: apiKey,
  PROVIDER_REPLICATE_BASE_URL: standIn.url,
  ALLOW_PRIVATE_CALLBACKS: '1',
});

const { stack, closers } = jobsStackPerFile(settings);
const started = (async () => {
  standIn = await startReplicateStandIn({ apiKey });
  files = await startFileServer({ '/out.png': { body: png, contentType: 'image/png' } });
  closers.push(
    () => standIn.close(),
    () => files.close(),
  );
})();

/** The step executor as Lambda runs it, with Replicate on, webhooks to the local API or none. */
const stepExecutor = (options: { webhooks: boolean; now?: () => Date }) =>
  stageStepExecutor(stack.deps, settings(), { ...(options.webhooks && { baseUrl: stack.baseUrl }), now: options.now });
const drain = (handler: StepHandler) => drainSteps(stack.deps, handler, { dropPolls: true });

const imageStep = {
  key: 'image',
  type: 'ImageGen',
  inputs: ['prompt'],
  config: { provider: 'replicate', model: 'black-forest-labs/flux-schnell' },
};
const steps = [{ key: 'prompt', type: 'TextEntry', config: { text: 'a lighthouse at dusk' } }, imageStep];

/** A new team runs a new workflow of `workflowSteps` (on a stack whose stage has Replicate on). */
const startRun = async (workflowSteps: unknown[] = steps) => {
  await started;
  const team = await seedTeam(stack.deps, { credits: 100 });
  const workflowId = await createWorkflow(stack, team, workflowSteps);
  const response = await call(stack.baseUrl, `/workflows/${workflowId}/runs`, {
    key: team.key,
    method: 'POST',
    body: {},
  });
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  return { team, workflowId, jobId: response.body.jobId as string };
};

/** Starts a run of a prompt and a Replicate image step; delivers until the job is submitted. */
const startJob = async (executor: ReturnType<typeof stepExecutor>) => {
  const before = standIn.jobs.size;
  const { team, workflowId, jobId } = await startRun();
  await drain(executor.handler);
  expect(standIn.jobs.size).toBe(before + 1);
  const prediction = [...standIn.jobs.values()].at(-1)?.prediction as unknown as {
    id: string;
    webhook?: string;
    input: unknown;
  };
  return { team, jobId, workflowId, prediction };
};

const runOf = async (key: string, jobId: string) => (await call(stack.baseUrl, `/runs/${jobId}`, { key })).body;

describe('a model step on Replicate: a job that holds no Lambda', { timeout: 120_000 }, () => {
  it('submits once with a webhook, waits with no invocation, and completes from the signed webhook, charged once', async () => {
    const executor = stepExecutor({ webhooks: true });
    const { team, jobId, prediction } = await startJob(executor);
    // Replicate's documented request: the model's input, our step's webhook, completed events only.
    expect(prediction.webhook).toMatch(new RegExp(`/api/v1/provider-webhooks/replicate/${jobId}/image/[\\w-]{20,}$`));
    expect(prediction.input).toMatchObject({ prompt: 'a lighthouse at dusk', output_format: 'png' });
    const waiting = await runOf(team.key, jobId);
    expect(waiting.status).toBe('processing');
    // The operators' view of the run while its job waits (npm run admin -- run show): the job, not its token.
    const shown = await runAdmin(['run', 'show', jobId, '--json'], stack.deps);
    expect(JSON.parse(shown.output).providerJobs).toEqual([
      expect.objectContaining({ nodeId: 'image', provider: 'replicate', providerJobId: prediction.id, claim: 1 }),
    ]);
    expect(shown.output).not.toMatch(/tokenHash|r8_provider/);
    // Far longer than the old 25 s node timeout: nothing waits meanwhile (no invocation, no message but the
    // job's first poll, delayed about 5 s, which a slow machine may already see).
    expect((await takeStepMessages(stack.deps)).filter((m) => !('check' in m && m.check === 'poll'))).toEqual([]);

    // Replicate ends the prediction and posts its signed webhook to our route.
    await standIn.complete(prediction.id, [`${files.url}/out.png`]);
    const sent = standIn.webhooks.at(-1);
    if (!sent) throw new Error('the stand-in sent no webhook');
    expect(sent.status).toBe(202);
    await drain(executor.handler);
    const done = await runOf(team.key, jobId);
    expect(done.status, JSON.stringify(done)).toBe('completed');
    const image = (done.output as { node_id: string; result: { url: string }; generated_by: unknown[] }[]).find(
      (o) => o.node_id === 'image',
    );
    expect(image?.generated_by).toEqual([
      { node_id: 'image', provider: 'replicate', model: 'black-forest-labs/flux-schnell' },
    ]);
    // The file was copied into the library and marked; the provider's URL never reaches the caller.
    expect(JSON.stringify(done)).not.toContain(files.url);
    const stored = new Uint8Array(await (await fetch(image?.result.url ?? '')).arrayBuffer());
    expect(readPngMark(stored)).toBeTruthy();

    // A duplicate delivery (Replicate retries) and the same one replayed change nothing.
    expect((await standIn.resend(sent)).status).toBe(202);
    await drain(executor.handler);
    const { charges, run } = await runParts(stack.deps, jobId);
    expect(run).toMatchObject({ status: 'completed', heldHundredths: 0 });
    expect([...charges.keys()]).toEqual(['image', 'prompt'].filter((k) => charges.has(k)));
    expectBalanced(await ledgerOf(stack.deps, team.teamId));
    expect(standIn.jobs.size).toBeGreaterThan(0);
  });

  it('completes by polling when the webhook never comes', async () => {
    const executor = stepExecutor({ webhooks: false });
    const { team, jobId, workflowId, prediction } = await startJob(executor);
    expect(prediction.webhook).toBeUndefined();
    // The first poll is on the queue, delayed about 5 s: still running at the provider, it schedules the next.
    const poll = { jobId, workflowId, nodeId: 'image' };
    expect(await deliver(executor.handler, [stepRecord({ ...poll, check: 'poll', poll: 0 } as never)])).toEqual([]);
    expect((await runOf(team.key, jobId)).status).toBe('processing');
    await standIn.complete(prediction.id, [`${files.url}/out.png`]);
    expect(await deliver(executor.handler, [stepRecord({ ...poll, check: 'poll', poll: 1 } as never)])).toEqual([]);
    await drain(executor.handler);
    expect((await runOf(team.key, jobId)).status).toBe('completed');
    expectBalanced(await ledgerOf(stack.deps, team.teamId));
  });

  it('refuses forged and late webhooks; a genuine one under another token is answered 202 and cancels nothing', async () => {
    const executor = stepExecutor({ webhooks: true });
    const { team, jobId, prediction } = await startJob(executor);
    const url = prediction.webhook as string;
    // Forged signature, and a true one 6 minutes old (a replay): 401, nothing happens.
    expect((await postWebhook(url, standIn.delivery(prediction.id, { forge: true }))).status).toBe(401);
    const old = Math.floor(Date.now() / 1000) - 6 * 60;
    expect((await postWebhook(url, standIn.delivery(prediction.id, { timestampSeconds: old }))).status).toBe(401);
    expect(
      (
        await postWebhook(
          url,
          standIn.delivery(prediction.id, { tamper: (b) => b.replace('"status":"', '"status":"x') }),
        )
      ).status,
    ).toBe(401);
    // Nothing was queued by them; the job's own first poll (due about 5 s after the submit) may be, on a slow machine.
    expect((await takeStepMessages(stack.deps)).filter((m) => !('check' in m && m.check === 'poll'))).toEqual([]);
    // Signed, but not this step's token: no submission of the step, so nothing is cancelled (a delivery
    // only names a job), and 2xx so that Replicate does not send it again.
    const wrongToken = url.replace(/[^/]+$/, 'not-the-token-of-this-step-000');
    const genuine = standIn.delivery(prediction.id);
    const refused = await fetch(wrongToken, { method: 'POST', headers: genuine.headers, body: genuine.body });
    expect(refused.status).toBe(202);
    expect(standIn.cancels).not.toContain(prediction.id);
    expect((await runOf(team.key, jobId)).status).toBe('processing');
  });

  it('asks a busy provider again after its Retry-After, submitting the job once', async () => {
    const executor = stepExecutor({ webhooks: true });
    const before = standIn.jobs.size;
    standIn.failNextWith(429, 1, 'Request was throttled.', /predictions$/);
    const { team, jobId } = await startRun();
    await drain(executor.handler);
    // Refused: nothing accepted, the step waits for its retry (a delayed message of at least 1 s).
    expect(standIn.jobs.size).toBe(before);
    const { steps: items } = await runParts(stack.deps, jobId);
    expect(items.get('image')).toMatchObject({ status: 'processing', providerTries: 1 });
    // The retry's message becomes visible after its jittered delay (1 to 5 s here).
    for (let waited = 0; standIn.jobs.size === before && waited < 10_000; waited += 250) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      await drain(executor.handler);
    }
    expect(standIn.jobs.size).toBe(before + 1);
    const prediction = [...standIn.jobs.values()].at(-1)?.prediction as { id: string };
    await standIn.complete(prediction.id, [`${files.url}/out.png`]);
    await drain(executor.handler);
    expect((await runOf(team.key, jobId)).status).toBe('completed');
    expect(standIn.jobs.size).toBe(before + 1);
    expectBalanced(await ledgerOf(stack.deps, team.teamId));
  });

  it("fails the step at once on the provider's 4xx, with its message, charging nothing", async () => {
    const executor = stepExecutor({ webhooks: true });
    standIn.failNextWith(422, undefined, 'Invalid input: prompt is too long.', /predictions$/);
    const { team, jobId } = await startRun();
    await drain(executor.handler);
    const failed = await runOf(team.key, jobId);
    expect(failed.status).toBe('failed');
    expect(JSON.stringify(failed)).toContain('prompt is too long');
    const { charges } = await runParts(stack.deps, jobId);
    expect(charges.has('image')).toBe(false);
    // Only the prompt step's hundredth: the failed model step is charged nothing.
    expect(await ledgerOf(stack.deps, team.teamId)).toMatchObject({ held: 0, charged: 1 });
  });

  it('fails with "timed out at replicate" at the deadline, and cancels the job there', async () => {
    const executor = stepExecutor({ webhooks: true });
    const { team, jobId, workflowId, prediction } = await startJob(executor);
    const later = new Date(Date.now() + (jobDeadlineMinutes.ImageGen + 1) * 60_000);
    const afterDeadline = stepExecutor({ webhooks: true, now: () => later });
    const poll = { jobId, workflowId, nodeId: 'image', check: 'poll', poll: 6 };
    expect(await deliver(afterDeadline.handler, [stepRecord(poll as never)])).toEqual([]);
    const failed = await runOf(team.key, jobId);
    expect(failed.status).toBe('failed');
    expect(JSON.stringify(failed)).toContain('timed out at replicate');
    expect(standIn.cancels).toContain(prediction.id);
    expect(await ledgerOf(stack.deps, team.teamId)).toMatchObject({ held: 0, charged: 1 });
  });

  it("cancelling the run cancels its job at the provider and settles the run's hold", async () => {
    const executor = stepExecutor({ webhooks: true });
    const { team, jobId, prediction } = await startJob(executor);
    const cancelled = await call(stack.baseUrl, `/runs/${jobId}/cancel`, { key: team.key, method: 'POST' });
    expect(cancelled.status, JSON.stringify(cancelled.body)).toBe(200);
    await drain(executor.handler);
    expect(standIn.cancels).toContain(prediction.id);
    const { run, steps: items } = await runParts(stack.deps, jobId);
    expect(items.get('image')?.status).toBe('skipped');
    expect(run).toMatchObject({ heldHundredths: 0 });
    expect(run?.finalizedAt).toBeDefined();
    const ledger = await ledgerOf(stack.deps, team.teamId);
    expectBalanced(ledger);
    expect(ledger.held).toBe(0);
  });

  it('after a crash between the submit and its record, retries within the lease and cancels the orphan before submitting anew, charged once', async () => {
    await started;
    const executor = stepExecutor({ webhooks: true });
    const { team, workflowId, jobId } = await startRun();
    // The worker dies as it records the job's id: the provider accepted it, the step does not know it.
    const sendDdb = executor.deps.ddb.send.bind(executor.deps.ddb);
    const sendSqs = executor.deps.sqs.send.bind(executor.deps.sqs);
    // What the dying worker put on the steps queue, as SQS was asked (a record, passed through unchanged).
    const queued: { body: Record<string, unknown>; delaySeconds: number }[] = [];
    const dying = {
      ...executor.deps,
      ddb: Object.assign(Object.create(executor.deps.ddb), {
        send: (command: { input?: { ConditionExpression?: string } }, ...rest: unknown[]) => {
          // The write of the job's id (functions/store/run/provider-jobs.ts, recordJobSubmitted).
          if (command.input?.ConditionExpression?.includes('attribute_not_exists(providerJob.id)')) {
            throw new Error('worker died');
          }
          return (sendDdb as (...args: unknown[]) => unknown)(command, ...rest);
        },
      }),
      sqs: Object.assign(Object.create(executor.deps.sqs), {
        send: (command: { input?: { MessageBody?: string; DelaySeconds?: number } }, ...rest: unknown[]) => {
          if (command.input?.MessageBody)
            queued.push({ body: JSON.parse(command.input.MessageBody), delaySeconds: command.input.DelaySeconds ?? 0 });
          return (sendSqs as (...args: unknown[]) => unknown)(command, ...rest);
        },
      }),
    };
    const dyingHandler = invokedAs('StepExecutor', makeHandler(dying as never, { stepTimeoutMs: 20_000 }));
    const before = standIn.jobs.size;
    for (let round = 0; round < 5; round++) {
      const messages = await takeStepMessages(stack.deps);
      if (messages.length === 0) break;
      for (const message of messages) {
        await deliver(message.nodeId === 'image' ? dyingHandler : executor.handler, [stepRecord(message)]);
      }
    }
    expect(standIn.jobs.size).toBe(before + 1);
    const first = [...standIn.jobs.values()].at(-1)?.prediction as { id: string };
    // Its step is tried again just after the claim's lease, by a message of its own: not left to the
    // queue's visibility timeout (360 s), whose redelivery would come minutes after the lease.
    const retries = queued.filter((m) => m.body.nodeId === 'image' && m.body.check === undefined);
    expect(retries).toHaveLength(1);
    const [retry] = retries;
    if (!retry) throw new Error('no retry was queued');
    expect(retry.delaySeconds).toBeGreaterThan(stepLeaseSeconds);
    expect(retry.delaySeconds).toBeLessThanOrEqual(stepLeaseSeconds + 5);

    // That message, delivered when it is due (the clock just past the lease), takes the step over.
    const dueAt = new Date(Date.now() + (retry.delaySeconds + 1) * 1000);
    const replacement = stepExecutor({ webhooks: true, now: () => dueAt });
    expect(await deliver(replacement.handler, [stepRecord(JSON.stringify(retry.body))])).toEqual([]);
    await drain(replacement.handler);
    expect(standIn.jobs.size).toBe(before + 2);
    const second = [...standIn.jobs.values()].at(-1)?.prediction as { id: string };
    // The orphan was found at Replicate (its webhook's token) and cancelled before the new job was created.
    const requests = standIn.requests.map((r) => `${r.method} ${r.path}`);
    const cancelled = requests.indexOf(`POST /v1/predictions/${first.id}/cancel`);
    const created = requests.findLastIndex((r) => /^POST \/v1\/models\/.+\/predictions$/.test(r));
    expect(cancelled).toBeGreaterThan(-1);
    expect(cancelled).toBeLessThan(created);
    expect(standIn.jobs.get(first.id)?.prediction.status).toBe('canceled');
    // The new claim recorded the lost one's submission (its token's hash; its id was never known) as superseded.
    const { steps: supersededItems } = await runParts(stack.deps, jobId);
    expect(supersededItems.get('image')?.supersededJobs).toEqual([
      expect.objectContaining({ provider: 'replicate', attempt: 1, tokenHash: expect.any(String) }),
    ]);
    await standIn.idle();

    expect((await standIn.complete(second.id, [`${files.url}/out.png`]))?.status).toBe(202);
    await drain(replacement.handler);
    expect((await runOf(team.key, jobId)).status).toBe('completed');
    const charged = async () => {
      const { charges } = await runParts(stack.deps, jobId);
      const ledger = await ledgerOf(stack.deps, team.teamId);
      expectBalanced(ledger);
      return { image: charges.get('image'), ledger };
    };
    const settled = await charged();
    expect(settled.image).toBeDefined();
    expect(settled.ledger.held).toBe(0);

    // Redelivered, the retry message and the crashed delivery's own message change nothing.
    const muchLater = new Date(Date.now() + 10 * 60_000);
    const redelivery = stepExecutor({ webhooks: true, now: () => muchLater });
    const image = { jobId, workflowId, nodeId: 'image' };
    expect(await deliver(redelivery.handler, [stepRecord(JSON.stringify(retry.body))])).toEqual([]);
    expect(await deliver(redelivery.handler, [stepRecord(image)])).toEqual([]);
    await drain(redelivery.handler);
    expect(standIn.jobs.size).toBe(before + 2);
    expect(await charged()).toEqual(settled);
  });

  it("never puts the provider's key in a response, a step item or a request but its Authorization header", async () => {
    const everything = JSON.stringify(
      standIn.requests.map((r) => ({ ...r, headers: { ...r.headers, authorization: '' } })),
    );
    expect(everything).not.toContain(apiKey);
    for (const request of standIn.requests.filter((r) => r.path.startsWith('/v1/'))) {
      expect(request.headers.authorization).toBe(`Bearer ${apiKey}`);
    }
    const table = JSON.stringify(
      await stack.deps.ddb.send(
        new (await import('@aws-sdk/lib-dynamodb')).ScanCommand({ TableName: stack.deps.tableName }),
      ),
    );
    expect(table).not.toContain(apiKey);
  });

  it("runs the steps after a job's step in the look's own invocation as its own steps (a chain with a Lambda context)", async () => {
    const executor = stepExecutor({ webhooks: true });
    const { team, jobId } = await startRun([
      ...steps,
      { key: 'crop', type: 'ImageCropper', config: { width: 4, height: 4 }, inputs: ['image'] },
    ]);
    await drain(executor.handler);
    const prediction = [...standIn.jobs.values()].find((j) => String(j.prediction.webhook ?? '').includes(jobId));
    if (!prediction) throw new Error('not submitted');
    expect((await standIn.complete(prediction.prediction.id, [`${files.url}/out.png`]))?.status).toBe(202);
    // As Lambda runs it: with time left, a chain's next step runs in the same invocation as the look.
    const context = { getRemainingTimeInMillis: () => 600_000 } as never;
    const [look] = (await takeStepMessages(stack.deps)).filter((m) => 'check' in m);
    if (!look) throw new Error('no look was queued');
    const answer = (await executor.handler({ Records: [stepRecord(look)] } as never, context)) as {
      batchItemFailures: unknown[];
    };
    expect(answer.batchItemFailures).toEqual([]);
    await drain(executor.handler);
    const done = await runOf(team.key, jobId);
    expect(done.status, JSON.stringify(done)).toBe('completed');
    expect((done.steps as { status: string }[]).map((s) => s.status)).toEqual(['completed', 'completed', 'completed']);
  });
});
