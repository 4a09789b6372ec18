/**
 * A fal job submitted but never recorded (the worker dies between fal's answer and the write of
 * its request id), through the real path: the step executor's handler over the emulators, the local
 * API's provider webhook route, and fal's stand-in over HTTP (test/stand-ins/fal.ts), which speaks
 * fal's queue protocol and signs its webhooks as fal does. fal lists no requests a caller can search
 * by its webhook URL, so the job is found when it announces its end under the submission's token:
 * before the step is taken over, that records it (no second submit); after, the step adopts it and
 * cancels the newer request. Either way fal runs the work once and the team is charged once.
 */
import { describe, expect, it } from 'vitest';
import { encodePng, makeImage } from '../functions/nodes/media/png.ts';
import { stepLeaseSeconds } from '../functions/store/run/steps.ts';
import { makeHandler } from '../functions/workers/step-executor.ts';
import { invokedAs } from '../local/invocation.ts';
import { type FalStandIn, startFalStandIn } from './stand-ins/fal.ts';
import { startFileServer } from './stand-ins/http.ts';
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

const falKey = 'fal-key-id:orphan-test-secret';
const png = encodePng(makeImage(8, 8, () => [30, 160, 90, 255]));

let fal: FalStandIn;
let files: Awaited<ReturnType<typeof startFileServer>>;
const settings = (): NodeJS.ProcessEnv => ({
  PROVIDER_FAL_API_KEY: falKey,
  PROVIDER_FAL_BASE_URL: fal.url,
  PROVIDER_FAL_JWKS_URL: fal.jwksUrl,
  ALLOW_PRIVATE_CALLBACKS: '1',
});

const { stack, closers } = jobsStackPerFile(settings);
const started = (async () => {
  fal = await startFalStandIn({ apiKey: falKey });
  files = await startFileServer({ '/out.png': { body: png, contentType: 'image/png' } });
  closers.push(
    () => fal.close(),
    () => files.close(),
  );
})();

const stepExecutor = (now?: () => Date) => stageStepExecutor(stack.deps, settings(), { baseUrl: stack.baseUrl, now });
const drain = (handler: StepHandler) => drainSteps(stack.deps, handler, { dropPolls: true });
const output = () => ({ images: [{ url: `${files.url}/out.png`, content_type: 'image/png' }] });

/**
 * A new team's run of a prompt and a fal image step, delivered until the image step's worker dies
 * as it writes fal's request id (fal accepted the request; the step does not know it). Returns the
 * run, fal's request id, and the guard message that worker queued (due just after the claim's lease).
 */
const crashAfterSubmit = async () => {
  await started;
  const team = await seedTeam(stack.deps, { credits: 100 });
  const workflowId = await createWorkflow(stack, team, [
    { key: 'prompt', type: 'TextEntry', config: { text: 'a lighthouse at dusk' } },
    { key: 'image', type: 'ImageGen', inputs: ['prompt'], config: { provider: 'fal', model: 'fal-ai/flux/schnell' } },
  ]);
  const response = await call(stack.baseUrl, `/workflows/${workflowId}/runs`, {
    key: team.key,
    method: 'POST',
    body: {},
  });
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  const jobId = response.body.jobId as string;
  const executor = stepExecutor();
  const sendDdb = executor.deps.ddb.send.bind(executor.deps.ddb);
  const sendSqs = executor.deps.sqs.send.bind(executor.deps.sqs);
  const queued: { body: Record<string, unknown>; delaySeconds: number }[] = [];
  const dying = {
    ...executor.deps,
    ddb: Object.assign(Object.create(executor.deps.ddb), {
      send: (command: { input?: { ConditionExpression?: string } }, ...rest: unknown[]) => {
        // The write of the job's id (functions/store/run/provider-jobs.ts, recordJobSubmitted).
        if (command.input?.ConditionExpression?.includes('attribute_not_exists(providerJob.id)'))
          throw new Error('worker died');
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
  const before = fal.jobs.size;
  for (let round = 0; round < 5; round++) {
    const messages = await takeStepMessages(stack.deps);
    if (messages.length === 0) break;
    for (const message of messages)
      await deliver(message.nodeId === 'image' ? dyingHandler : executor.handler, [stepRecord(message)]);
  }
  expect(fal.jobs.size).toBe(before + 1);
  const orphan = [...fal.jobs.keys()].at(-1) as string;
  const { steps } = await runParts(stack.deps, jobId);
  expect(steps.get('image')?.providerJob).not.toHaveProperty('id');
  const guard = queued.find((m) => m.body.nodeId === 'image' && m.body.guard !== undefined);
  if (!guard) throw new Error('no guard was queued');
  expect(guard.delaySeconds).toBeGreaterThan(stepLeaseSeconds);
  return { team, jobId, workflowId, orphan, guard, before };
};

const runOf = async (key: string, jobId: string) => (await call(stack.baseUrl, `/runs/${jobId}`, { key })).body;

/** fal's requests since `before`, by how they ended ('ok', 'canceled', or running). */
const outcomes = (before: number) => [...fal.jobs.values()].slice(before).map((job) => job.outcome?.kind ?? 'running');

describe('a fal job submitted but never recorded', { timeout: 120_000 }, () => {
  it('ending before the step is taken over, is recorded from its webhook: never submitted again, charged once', async () => {
    const { team, jobId, orphan, guard, before } = await crashAfterSubmit();
    // The request ends at fal and announces itself under the intent's token.
    expect((await fal.complete(orphan, output()))?.status).toBe(202);
    const { steps } = await runParts(stack.deps, jobId);
    expect(steps.get('image')?.providerJob).toMatchObject({ id: orphan, attempt: 1 });
    const executor = stepExecutor();
    await drain(executor.handler);
    expect((await runOf(team.key, jobId)).status).toBe('completed');
    // The guard, due after the lease, finds the job recorded: nothing is submitted again.
    const dueAt = new Date(Date.now() + (guard.delaySeconds + 1) * 1000);
    const late = stepExecutor(() => dueAt);
    expect(await deliver(late.handler, [stepRecord(JSON.stringify(guard.body))])).toEqual([]);
    await drain(late.handler);
    expect(fal.jobs.size).toBe(before + 1);
    expect(outcomes(before)).toEqual(['ok']);
    const { charges } = await runParts(stack.deps, jobId);
    expect(charges.get('image')).toBeDefined();
    const ledger = await ledgerOf(stack.deps, team.teamId);
    expectBalanced(ledger);
    expect(ledger.held).toBe(0);
  });

  it('ending after the step was taken over, is adopted and the newer request cancelled while queued: fal runs the work once, charged once', async () => {
    const { team, jobId, workflowId, orphan, guard, before } = await crashAfterSubmit();
    // Just past the lease the guard takes the step over; fal has no list to find the orphan in, so a
    // new request is submitted under a new token.
    const dueAt = new Date(Date.now() + (guard.delaySeconds + 1) * 1000);
    const replacement = stepExecutor(() => dueAt);
    expect(await deliver(replacement.handler, [stepRecord(JSON.stringify(guard.body))])).toEqual([]);
    await drain(replacement.handler);
    expect(fal.jobs.size).toBe(before + 2);
    const newer = [...fal.jobs.keys()].at(-1) as string;
    const { steps } = await runParts(stack.deps, jobId);
    expect(steps.get('image')?.providerJob).toMatchObject({ id: newer, attempt: 2 });
    expect(steps.get('image')?.supersededJobs).toEqual([
      expect.objectContaining({ provider: 'fal', attempt: 1, tokenHash: expect.any(String) }),
    ]);
    const lost = steps.get('image')?.supersededJobs as object[] | undefined;
    expect(lost?.[0]).not.toHaveProperty('id');

    // The orphan ends (it was queued first) and announces itself under the dead claim's token.
    expect((await fal.complete(orphan, output()))?.status).toBe(202);
    // The step adopted it, and the newer request, still queued, was cancelled: fal removes it.
    expect(fal.cancels).toEqual([newer]);
    expect(outcomes(before)).toEqual(['ok', 'canceled']);
    const adopted = (await runParts(stack.deps, jobId)).steps.get('image');
    expect(adopted?.providerJob).toMatchObject({ id: orphan, attempt: 2 });
    expect(adopted?.supersededJobs).toEqual([expect.objectContaining({ id: newer, attempt: 2 })]);
    await drain(replacement.handler);
    expect((await runOf(team.key, jobId)).status).toBe('completed');
    expect(fal.jobs.size).toBe(before + 2);
    const { charges } = await runParts(stack.deps, jobId);
    expect(charges.get('image')).toBeDefined();
    const ledger = await ledgerOf(stack.deps, team.teamId);
    expectBalanced(ledger);
    expect(ledger.held).toBe(0);
    // The crashed delivery's own message, back after the queue's visibility timeout, changes nothing.
    const muchLater = new Date(Date.now() + 10 * 60_000);
    const redelivery = stepExecutor(() => muchLater);
    const image = { jobId, workflowId, nodeId: 'image' };
    expect(await deliver(redelivery.handler, [stepRecord(image)])).toEqual([]);
    await drain(redelivery.handler);
    expect(fal.jobs.size).toBe(before + 2);
    expect(outcomes(before)).toEqual(['ok', 'canceled']);
  });
});
