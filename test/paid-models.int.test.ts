/**
 * The models a stage pays for (`PAID_MODELS`, from `-c paidModels`) through the real path: HTTP to
 * the local API (whose run start routes and prices on the stage's list), the step executor's
 * handler over the emulators, and Replicate's stand-in speaking its own protocol, on the stage's key
 * and on a team's own (a connection). A model the list does not name is refused on the stage's key
 * and runs on the team's; a listed model is estimated and charged at its own price; a job that ran
 * to its end is charged its price even when its answer cannot be used, once, however often its
 * webhook or a poll comes again.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { encodePng, makeImage } from '../functions/nodes/media/png.ts';
import { stageProvidersFromEnv } from '../functions/nodes/providers/stage.ts';
import { setConnection } from '../functions/store/connections.ts';
import { envNames } from '../platform/definitions.ts';
import { messages } from '../schemas/error-messages.ts';
import { startFileServer } from './stand-ins/http.ts';
import { type ReplicateStandIn, startReplicateStandIn } from './stand-ins/replicate.ts';
import { closeWithStack, overrideProcessEnv, stageStepExecutor } from './support/provider-steps.ts';
import {
  deliver,
  drainSteps,
  expectBalanced,
  ledgerOf,
  runParts,
  type StepHandler,
  stepRecord,
} from './support/runs.ts';
import { call, createWorkflow, jobsStackPerFile, type SeededTeam, seedTeam } from './support/stack.ts';

const stageKey = 'r8_paid_models_stage_key';
const teamKey = 'r8_paid_models_team_key';
/** A model the stage lists at a flat 2.50 credits a step. */
const priced = 'acme/priced-painter';
/** A model no list names: a tenant's own, say. */
const unlisted = 'tenant/own-model';

/** The stage: Replicate on its key, no sandbox, and a closed list naming one model at its own price. */
const stageEnv: NodeJS.ProcessEnv = {
  PROVIDER_REPLICATE_API_KEY: stageKey,
  [envNames.sandboxProviders]: 'false',
  [envNames.paidModels]: `replicate:${priced}=250`,
};

let replicate: ReplicateStandIn;
let replicateTeam: ReplicateStandIn;
let files: Awaited<ReturnType<typeof startFileServer>>;
const settings = (): NodeJS.ProcessEnv => ({
  ...stageEnv,
  PROVIDER_REPLICATE_BASE_URL: replicate.url,
  ALLOW_PRIVATE_CALLBACKS: '1',
});

const { stack, closers } = jobsStackPerFile(settings, stageProvidersFromEnv(stageEnv));

beforeAll(async () => {
  replicate = await startReplicateStandIn({ apiKey: stageKey });
  replicateTeam = await startReplicateStandIn({ apiKey: teamKey });
  files = await startFileServer({
    '/out.png': { body: encodePng(makeImage(8, 8, () => [10, 120, 200, 255])), contentType: 'image/png' },
  });
  // A team's connection names its key as an `env:` reference (the local default's secret store).
  closeWithStack(closers, replicate, replicateTeam, files, overrideProcessEnv({ TEAM_REPLICATE_KEY: teamKey }));
});

const stepExecutor = () => stageStepExecutor(stack.deps, settings(), { baseUrl: stack.baseUrl }).handler;
const drain = (handler: StepHandler) => drainSteps(stack.deps, handler, { dropPolls: true });

/** A prompt into an ImageGen step on Replicate's `model`. */
const imageSteps = (model: string) => [
  { key: 'prompt', type: 'TextEntry', config: { text: 'a lighthouse at dusk' } },
  { key: 'image', type: 'ImageGen', inputs: ['prompt'], config: { provider: 'replicate', model } },
];

const startRun = (team: SeededTeam, workflowId: string) =>
  call(stack.baseUrl, `/workflows/${workflowId}/runs`, { key: team.key, method: 'POST', body: {} });

/** The prediction a run's step submitted to `standIn`. */
const predictionOf = (standIn: ReplicateStandIn, jobId: string) => {
  const found = [...standIn.jobs.values()].filter((job) => String(job.prediction.webhook).includes(`/${jobId}/`));
  expect(found).toHaveLength(1);
  return found[0]?.prediction as unknown as { id: string; model: string; webhook: string };
};

describe('a stage that lists the models it pays for', { timeout: 120_000 }, () => {
  it('refuses a model not on the list on its own key with the provider 422, before anything is held', async () => {
    const team = await seedTeam(stack.deps, { credits: 100 });
    const workflowId = await createWorkflow(stack, team, imageSteps(unlisted));
    const before = replicate.jobs.size;
    const refused = await startRun(team, workflowId);
    expect(refused.status, JSON.stringify(refused.body)).toBe(422);
    expect(refused.body).toEqual({
      error: messages.modelNotPaid('ImageGen', `replicate:${unlisted}`),
      providers: ['replicate'],
      level: 'byok_only',
    });
    expect(replicate.jobs.size).toBe(before);
    const ledger = await ledgerOf(stack.deps, team.teamId);
    expectBalanced(ledger);
    expect(ledger).toMatchObject({ held: 0, charged: 0, balance: 10_000 });
  });

  it("runs a model not on the list on the team's own key (a connection), never the stage's", async () => {
    const handler = stepExecutor();
    const team = await seedTeam(stack.deps, { credits: 100 });
    await setConnection(stack.deps, team.teamId, 'replicate', {
      secretRef: 'env:TEAM_REPLICATE_KEY',
      endpoint: replicateTeam.url,
    });
    const workflowId = await createWorkflow(stack, team, imageSteps(unlisted));
    const before = replicate.jobs.size;
    const started = await startRun(team, workflowId);
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    const jobId = started.body.jobId as string;
    await drain(handler);
    const prediction = predictionOf(replicateTeam, jobId);
    expect(prediction.model).toBe(unlisted);
    expect(replicate.jobs.size).toBe(before);
    expect((await replicateTeam.complete(prediction.id, [`${files.url}/out.png`]))?.status).toBe(202);
    await drain(handler);
    const run = await call(stack.baseUrl, `/runs/${jobId}`, { key: team.key });
    expect(run.body.status, JSON.stringify(run.body)).toBe('completed');
    expectBalanced(await ledgerOf(stack.deps, team.teamId));
  });

  it('estimates, holds and charges a listed model at its own price', async () => {
    const handler = stepExecutor();
    const team = await seedTeam(stack.deps, { credits: 100 });
    const workflowId = await createWorkflow(stack, team, imageSteps(priced));
    const started = await startRun(team, workflowId);
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    const jobId = started.body.jobId as string;
    const { run: held } = await runParts(stack.deps, jobId);
    const stepEstimates = held?.stepEstimates as Record<string, number>;
    expect(stepEstimates.image).toBe(250);
    expect(started.body.estimatedCredits).toBe((250 + (stepEstimates.prompt ?? 0)) / 100);
    await drain(handler);
    const prediction = predictionOf(replicate, jobId);
    expect(prediction.model).toBe(priced);
    expect((await replicate.complete(prediction.id, [`${files.url}/out.png`]))?.status).toBe(202);
    await drain(handler);
    const { run, steps } = await runParts(stack.deps, jobId);
    expect(run).toMatchObject({ status: 'completed', heldHundredths: 0 });
    expect(steps.get('image')).toMatchObject({ status: 'completed', chargeHundredths: 250 });
    const ledger = await ledgerOf(stack.deps, team.teamId);
    expectBalanced(ledger);
    expect(ledger).toMatchObject({ held: 0, charged: 250 + (stepEstimates.prompt ?? 0) });
  });

  it('charges a job that ran to its end with an unusable answer its price, once under redelivery', async () => {
    const handler = stepExecutor();
    const team = await seedTeam(stack.deps, { credits: 100 });
    const workflowId = await createWorkflow(stack, team, imageSteps(priced));
    const started = await startRun(team, workflowId);
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    const jobId = started.body.jobId as string;
    await drain(handler);
    const prediction = predictionOf(replicate, jobId);
    // The provider says succeeded; its output names no file the step can store.
    const sent = await replicate.complete(prediction.id, 'not a file at all');
    expect(sent?.status).toBe(202);
    await drain(handler);

    const read = await call(stack.baseUrl, `/runs/${jobId}`, { key: team.key });
    expect(read.body.status, JSON.stringify(read.body)).toBe('failed');
    const { run, steps } = await runParts(stack.deps, jobId);
    const prompt = (steps.get('prompt')?.chargeHundredths as number | undefined) ?? 0;
    expect(steps.get('image')).toMatchObject({ status: 'failed', chargeHundredths: 250 });
    expect(run).toMatchObject({ status: 'failed', heldHundredths: 0, finalChargedHundredths: 250 + prompt });
    // The run list says what the run charged in all.
    const listed = await call(stack.baseUrl, '/runs', { key: team.key });
    const summary = (listed.body.runs as { jobId: string; chargedCredits: number }[]).find((r) => r.jobId === jobId);
    expect(summary?.chargedCredits).toBe((250 + prompt) / 100);
    const charged = { held: 0, charged: 250 + prompt };
    expect(await ledgerOf(stack.deps, team.teamId)).toMatchObject(charged);

    // The provider's webhook delivered again, and a poll that was due: nothing more is charged.
    const webhook = replicate.webhooks.find((w) => w.url === prediction.webhook);
    if (!webhook) throw new Error('no webhook was sent');
    expect((await replicate.resend(webhook)).status).toBeLessThan(300);
    expect(
      await deliver(handler, [
        stepRecord(JSON.stringify({ jobId, workflowId, nodeId: 'image', check: 'poll', poll: 3 })),
      ]),
    ).toEqual([]);
    await drain(handler);
    const ledger = await ledgerOf(stack.deps, team.teamId);
    expectBalanced(ledger);
    expect(ledger).toMatchObject(charged);
    expect((await runParts(stack.deps, jobId)).run).toMatchObject({ finalChargedHundredths: 250 + prompt });
  });
});
