/**
 * GET /runs/{jobId}/steps/{nodeId} through the real path: HTTP to the local API, the step executor's
 * handler over the emulators, and Replicate's stand-in (test/stand-ins/replicate.ts) speaking
 * Replicate's protocol. A step the provider refused with a 429 (and its `Retry-After`) and then ran
 * shows both attempts and one charge; the provider's `logs` are kept; another team's run and a
 * step the workflow does not have read as 404.
 */
import { describe, expect, it } from 'vitest';
import { stepLogCapBytes } from '../functions/domain/step-history.ts';
import { encodePng, makeImage } from '../functions/nodes/media/png.ts';
import { createClient, NotFoundError } from '../packages/client/src/index.ts';
import type { RunStepDetails } from '../schemas/run-steps.ts';
import { startFileServer } from './stand-ins/http.ts';
import { type ReplicateStandIn, startReplicateStandIn } from './stand-ins/replicate.ts';
import { runCli } from './support/cli.ts';
import { stageStepExecutor } from './support/provider-steps.ts';
import { drainSteps, expectBalanced, ledgerOf, runParts, type StepHandler } from './support/runs.ts';
import { call, createWorkflow, jobsStackPerFile, seedTeam } from './support/stack.ts';

const apiKey = 'r8_step_details_test_key_never_logged';
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

const executor = () => stageStepExecutor(stack.deps, settings(), { baseUrl: stack.baseUrl });
const drain = (handler: StepHandler) => drainSteps(stack.deps, handler, { dropPolls: true });

const steps = [
  { key: 'prompt', type: 'TextEntry', config: { text: 'a lighthouse at dusk' } },
  {
    key: 'image',
    type: 'ImageGen',
    inputs: ['prompt'],
    config: { provider: 'replicate', model: 'black-forest-labs/flux-schnell' },
  },
];

const startRun = async () => {
  await started;
  const team = await seedTeam(stack.deps, { credits: 100 });
  const workflowId = await createWorkflow(stack, team, steps);
  const response = await call(stack.baseUrl, `/workflows/${workflowId}/runs`, {
    key: team.key,
    method: 'POST',
    body: {},
  });
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  return { team, jobId: response.body.jobId as string };
};

const stepOf = async (key: string, jobId: string, nodeId: string) => {
  const response = await call(stack.baseUrl, `/runs/${jobId}/steps/${nodeId}`, { key });
  return { status: response.status, body: response.body as RunStepDetails };
};

describe('GET /runs/{jobId}/steps/{nodeId}', { timeout: 120_000 }, () => {
  it("a step refused with a 429 and then run shows two attempts, the refusal's wait, and one charge", async () => {
    const handler = executor().handler;
    const before = standIn.jobs.size;
    // Replicate's 429 with `Retry-After: 1` on the prediction's create.
    standIn.failNextWith(429, 1, 'Request was throttled.', /predictions$/);
    const { team, jobId } = await startRun();
    await drain(handler);
    expect(standIn.jobs.size).toBe(before);
    // While it waits: one failed attempt, charged nothing, with the wait its retry was given.
    const waiting = await stepOf(team.key, jobId, 'image');
    expect(waiting.status).toBe(200);
    expect(waiting.body).toMatchObject({ status: 'processing', stepType: 'ImageGen', chargedCredits: 0 });
    expect(waiting.body.attempts).toHaveLength(1);
    const refused = waiting.body.attempts[0];
    if (!refused?.next || !refused.startedAt) throw new Error('the refused attempt has no wait or start');
    expect(refused).toMatchObject({
      outcome: 'failed',
      reason: 'provider_unavailable',
      retryClass: 'busy-provider',
      provider: 'replicate',
      model: 'black-forest-labs/flux-schnell',
      chargedHundredths: 0,
      next: { retryAfterSeconds: 1 },
    });
    expect(refused.error).toContain('Request was throttled.');
    expect(refused.error).not.toContain(apiKey);
    // At least the provider's Retry-After; said to be set by it only when the backoff was no longer.
    expect(refused.next.afterSeconds).toBeGreaterThanOrEqual(1);
    expect(refused.next.why).toBe(refused.next.afterSeconds === 1 ? 'retry-after' : 'backoff');
    expect(Date.parse(refused.endedAt)).toBeGreaterThanOrEqual(Date.parse(refused.startedAt));

    // The retry's message becomes visible after its delay; its submit is accepted.
    for (let waited = 0; standIn.jobs.size === before && waited < 15_000; waited += 250) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      await drain(handler);
    }
    expect(standIn.jobs.size).toBe(before + 1);
    const prediction = [...standIn.jobs.values()].at(-1)?.prediction as { id: string };
    // The model's own log, longer than the cap: its tail is kept, marked as cut.
    const logs = `${'x'.repeat(stepLogCapBytes)}\nusing seed 42\n`;
    await standIn.complete(prediction.id, [`${files.url}/out.png`], logs);
    await drain(handler);

    const done = await stepOf(team.key, jobId, 'image');
    expect(done.body.status).toBe('completed');
    expect(done.body.attempts).toHaveLength(2);
    const [first, second] = done.body.attempts;
    if (!second) throw new Error('no second attempt');
    expect(first).toEqual(refused);
    expect(second).toMatchObject({
      outcome: 'completed',
      provider: 'replicate',
      model: 'black-forest-labs/flux-schnell',
      providerJobId: prediction.id,
    });
    expect(second.error).toBeUndefined();
    // One charge: the completed attempt's, the step's, and the run's only charge for it.
    const { charges } = await runParts(stack.deps, jobId);
    const charged = charges.get('image');
    expect(charged).toBeDefined();
    expect(second.chargedHundredths).toBeGreaterThan(0);
    expect(done.body.chargedCredits * 100).toBe(second.chargedHundredths);
    const run = (await call(stack.baseUrl, `/runs/${jobId}`, { key: team.key })).body;
    expect(run.status).toBe('completed');
    expectBalanced(await ledgerOf(stack.deps, team.teamId));
    // One charge in all: the image step's attempts plus the prompt step's hundredth.
    expect((await ledgerOf(stack.deps, team.teamId)).charged).toBe(second.chargedHundredths + 1);
    expect(done.body.logs.provider).toEqual({
      text: expect.stringMatching(/using seed 42\n$/),
      truncated: true,
      bytes: Buffer.byteLength(logs),
    });
    expect(Buffer.byteLength(done.body.logs.provider?.text ?? '')).toBeLessThanOrEqual(stepLogCapBytes);

    // A step that needs no provider: one attempt, no logs.
    const prompt = await stepOf(team.key, jobId, 'prompt');
    expect(prompt.body).toMatchObject({ status: 'completed', stepType: 'TextEntry', logs: {} });
    expect(prompt.body.attempts).toEqual([expect.objectContaining({ outcome: 'completed', chargedHundredths: 1 })]);
  });

  it("reads another team's run, and a step its workflow does not have, as 404", async () => {
    const { team, jobId } = await startRun();
    const other = await seedTeam(stack.deps, { credits: 1 });
    const foreign = await stepOf(other.key, jobId, 'image');
    expect(foreign.status).toBe(404);
    expect(foreign.body).toEqual({ error: 'Run not found' });
    const unknown = await stepOf(team.key, jobId, 'no-such-step');
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ error: 'Step not found' });
    // A step of the workflow not started yet: queued, nothing tried.
    const queued = await stepOf(team.key, jobId, 'image');
    expect(queued.status, JSON.stringify(queued.body)).toBe(200);
    expect(queued.body).toMatchObject({ status: 'queued', attempts: [], logs: {}, startedAt: null, endedAt: null });
  });

  it('the client and the CLI read it', async () => {
    const { team, jobId } = await startRun();
    await drain(executor().handler);
    const client = createClient({ baseUrl: stack.baseUrl, apiKey: team.key });
    const step = await client.runStep(jobId, 'prompt');
    expect(step).toMatchObject({ jobId, nodeId: 'prompt', status: 'completed', chargedCredits: 0.01 });
    expect(step.attempts).toEqual([expect.objectContaining({ outcome: 'completed', chargedHundredths: 1 })]);
    await expect(client.runStep(jobId, 'nope')).rejects.toBeInstanceOf(NotFoundError);
    const api = { baseUrl: stack.baseUrl, key: team.key };
    const printed = await runCli(api, ['runs', 'step', jobId, 'prompt']);
    expect(printed.code, printed.stderr).toBe(0);
    expect(printed.stdout).toMatch(/^status: completed$/m);
    expect(printed.stdout).toMatch(/^attempt 1: completed charged 0\.01$/m);
    const json = await runCli(api, ['runs', 'step', jobId, 'prompt', '--json']);
    expect(JSON.parse(json.stdout)).toEqual(step);
    expect((await runCli(api, ['runs', 'step', jobId])).code).toBe(2);
  });
});
