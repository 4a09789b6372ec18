/**
 * Which provider job a verified webhook may stop, through the real path: the local API's provider
 * webhook route, the step executor's handler over the emulators, and the Replicate and fal
 * stand-ins over HTTP, each signing its deliveries as the provider does. A delivery only names a
 * job; the service cancels a job only when it recorded that job as one its step's newer submission
 * replaced. Any other genuine delivery for no step is answered 2xx (Replicate retries a final
 * webhook answered 4xx or 5xx) and changes nothing.
 */
import { describe, expect, it } from 'vitest';
import { jobDeadlineMinutes } from '../functions/domain/provider-jobs.ts';
import { encodePng, makeImage } from '../functions/nodes/media/png.ts';
import { runAdmin } from '../local/admin.ts';
import { type FalStandIn, startFalStandIn } from './stand-ins/fal.ts';
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

const replicateKey = 'r8_webhook_cancel_test_key_never_logged';
const falKey = 'fal-key-id:webhook-cancel-secret';
const png = encodePng(makeImage(8, 8, () => [200, 60, 10, 255]));

let replicate: ReplicateStandIn;
let fal: FalStandIn;
let files: Awaited<ReturnType<typeof startFileServer>>;
const settings = (): NodeJS.ProcessEnv => ({
  PROVIDER_REPLICATE_API_KEY: replicateKey,
  PROVIDER_REPLICATE_BASE_URL: replicate.url,
  PROVIDER_FAL_API_KEY: falKey,
  PROVIDER_FAL_BASE_URL: fal.url,
  PROVIDER_FAL_JWKS_URL: fal.jwksUrl,
  ALLOW_PRIVATE_CALLBACKS: '1',
});

const { stack, closers } = jobsStackPerFile(settings);
const started = (async () => {
  replicate = await startReplicateStandIn({ apiKey: replicateKey });
  fal = await startFalStandIn({ apiKey: falKey });
  files = await startFileServer({ '/out.png': { body: png, contentType: 'image/png' } });
  closers.push(
    () => replicate.close(),
    () => fal.close(),
    () => files.close(),
  );
})();

const stepExecutor = (now?: () => Date) => stageStepExecutor(stack.deps, settings(), { baseUrl: stack.baseUrl, now });
const drain = (handler: StepHandler) => drainSteps(stack.deps, handler, { dropPolls: true });
const runOf = async (key: string, jobId: string) => (await call(stack.baseUrl, `/runs/${jobId}`, { key })).body;

/** One provider as the tests drive it: its stand-in's jobs, deliveries and cancels, in its own words. */
interface Provider {
  key: 'replicate' | 'fal';
  model: string;
  /** Ids of the jobs submitted so far, oldest first. */
  jobIds(): string[];
  webhookOf(id: string): string;
  /** Ends the job with one image; resolves with our route's answer to its webhook. */
  complete(id: string): Promise<{ status?: number } | undefined>;
  /** The signed delivery of an ended (fal) or any (Replicate) job, not sent. */
  delivery(id: string): { headers: Record<string, string>; body: string };
  cancels(): string[];
  /** Paths of every cancel request that reached the stand-in. */
  cancelCalls(): string[];
}

const providers: Provider[] = [
  {
    key: 'replicate',
    model: 'black-forest-labs/flux-schnell',
    jobIds: () => [...replicate.jobs.keys()],
    webhookOf: (id) => String(replicate.jobs.get(id)?.prediction.webhook),
    complete: (id) => replicate.complete(id, [`${files.url}/out.png`]),
    delivery: (id) => replicate.delivery(id),
    cancels: () => replicate.cancels,
    cancelCalls: () => replicate.requests.filter((r) => r.path.includes('/cancel')).map((r) => r.path),
  },
  {
    key: 'fal',
    model: 'fal-ai/flux/schnell',
    jobIds: () => [...fal.jobs.keys()],
    webhookOf: (id) => String(fal.jobs.get(id)?.webhook),
    complete: (id) => fal.complete(id, { images: [{ url: `${files.url}/out.png`, content_type: 'image/png' }] }),
    delivery: (id) => fal.delivery(id),
    cancels: () => fal.cancels,
    cancelCalls: () => fal.requests.filter((r) => r.path.includes('/cancel')).map((r) => r.path),
  },
];

/** A new team runs a prompt and an image step on `provider`; delivered until its job is submitted. */
const startJob = async (provider: Provider, handler: StepHandler) => {
  await started;
  const before = provider.jobIds().length;
  const team = await seedTeam(stack.deps, { credits: 100 });
  const workflowId = await createWorkflow(stack, team, [
    { key: 'prompt', type: 'TextEntry', config: { text: 'a lighthouse at dusk' } },
    { key: 'image', type: 'ImageGen', inputs: ['prompt'], config: { provider: provider.key, model: provider.model } },
  ]);
  const response = await call(stack.baseUrl, `/workflows/${workflowId}/runs`, {
    key: team.key,
    method: 'POST',
    body: {},
  });
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  const jobId = response.body.jobId as string;
  await drain(handler);
  expect(provider.jobIds().length).toBe(before + 1);
  return { team, workflowId, jobId, providerJobId: provider.jobIds().at(-1) as string };
};

const post = (url: string, delivery: { headers: Record<string, string>; body: string }) =>
  fetch(url, { method: 'POST', headers: delivery.headers, body: delivery.body });

describe.each(providers)('a verified $key webhook stops only a job its step superseded', (provider) => {
  it('a delivery naming a job no step recorded (another run’s, or under another token) is answered 202 and cancels nothing', async () => {
    const executor = stepExecutor();
    const victim = await startJob(provider, executor.handler);
    const caller = await startJob(provider, executor.handler);
    const cancelsBefore = provider.cancelCalls().length;
    // The victim's job ends as usual (fal signs only an ended request's delivery): its own webhook completes it.
    expect((await provider.complete(victim.providerJobId))?.status).toBe(202);
    // Genuine and signed, but naming the victim's job at the caller's step (its URL and token): not that step's job.
    const named = await post(provider.webhookOf(caller.providerJobId), provider.delivery(victim.providerJobId));
    // The victim's job again, at a URL whose token no submission was given.
    const otherToken = provider.webhookOf(caller.providerJobId).replace(/[^/]+$/, 'not-a-token-of-this-step-0000');
    const refused = await postWebhook(otherToken, provider.delivery(victim.providerJobId));
    // No cancel reached the provider; the caller's step still waits on its own job.
    expect(provider.cancels()).not.toContain(victim.providerJobId);
    expect(provider.cancels()).not.toContain(caller.providerJobId);
    expect(provider.cancelCalls().length).toBe(cancelsBefore);
    // Answered 2xx, so the provider does not send it again.
    expect(named.status).toBe(202);
    expect(await named.json()).toEqual({ accepted: true });
    expect(refused.status).toBe(202);
    expect(
      (await takeStepMessages(stack.deps)).filter(
        (m) => m.nodeId === 'image' && m.jobId === caller.jobId && !('check' in m && m.check === 'poll'),
      ),
    ).toEqual([]);
    expect((await runOf(caller.team.key, caller.jobId)).status).toBe('processing');
    // The caller's job ends: its own webhook completes its step, charged once.
    expect((await provider.complete(caller.providerJobId))?.status).toBe(202);
    await drain(executor.handler);
    expect((await runOf(caller.team.key, caller.jobId)).status).toBe('completed');
    expectBalanced(await ledgerOf(stack.deps, caller.team.teamId));
  });

  it('a delivery for the job its step submitted again in place of is cancelled at the provider, never counted', async () => {
    const first = stepExecutor();
    const { team, workflowId, jobId, providerJobId: superseded } = await startJob(provider, first.handler);
    // The worker waiting on the job is lost past its deadline and lease (no poll cancelled it): SQS hands
    // the step's message back and a new claim submits the step again.
    const later = new Date(Date.now() + (jobDeadlineMinutes.ImageGen + 6) * 60_000);
    const replacement = stepExecutor(() => later);
    expect(await deliver(replacement.handler, [stepRecord({ jobId, workflowId, nodeId: 'image' })])).toEqual([]);
    const current = provider.jobIds().at(-1) as string;
    expect(current).not.toBe(superseded);
    // The step records the job it replaced (the service's own record, not anything a delivery says).
    const { steps } = await runParts(stack.deps, jobId);
    expect(steps.get('image')?.supersededJobs).toEqual([
      expect.objectContaining({ provider: provider.key, id: superseded, attempt: 1 }),
    ]);
    expect(steps.get('image')?.providerJob).toMatchObject({ id: current, attempt: 2 });
    // The operators' view (npm run admin -- run show) lists both, the replaced one marked.
    const shown = JSON.parse((await runAdmin(['run', 'show', jobId, '--json'], stack.deps)).output);
    expect(shown.providerJobs).toEqual([
      expect.objectContaining({ providerJobId: current, claim: 2, superseded: false }),
      expect.objectContaining({ providerJobId: superseded, claim: 1, superseded: true }),
    ]);
    // The replaced job ends and announces itself at its own (old) URL: cancelled there, answered 202.
    const answered = await provider.complete(superseded);
    expect(answered?.status).toBe(202);
    expect(provider.cancels()).toContain(superseded);
    expect(provider.cancels()).not.toContain(current);
    // The current job completes the step, charged once.
    expect((await provider.complete(current))?.status).toBe(202);
    await drain(replacement.handler);
    expect((await runOf(team.key, jobId)).status).toBe('completed');
    const { charges } = await runParts(stack.deps, jobId);
    expect(charges.get('image')).toBeDefined();
    expectBalanced(await ledgerOf(stack.deps, team.teamId));
  });
});
