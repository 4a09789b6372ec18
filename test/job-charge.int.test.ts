/**
 * A job step (Replicate) is charged for the work its provider did, measured as a synchronous step's
 * is, never above its estimate; and a job submitted but not recorded before a crash is found and
 * cancelled when its step is retried, within the claim's lease. Through the real path: an upload PUT
 * to the presigned URL, the run started over HTTP, the step executor's handler over the emulators, and
 * Replicate's stand-in (test/stand-ins/replicate.ts) over HTTP.
 */
import { describe, expect, it } from 'vitest';
import { decodePng, encodePng, makeImage } from '../functions/nodes/media/png.ts';
import { startFileServer } from './stand-ins/http.ts';
import { type ReplicateStandIn, startReplicateStandIn } from './stand-ins/replicate.ts';
import { stageStepExecutor } from './support/provider-steps.ts';
import { drainSteps, expectBalanced, ledgerOf, runParts, type StepHandler } from './support/runs.ts';
import { call, createWorkflow, jobsStackPerFile, seedTeam } from './support/stack.ts';
import * as files from './support/upload-files.ts';

const apiKey = 'r8_job_charge_test_key_never_logged';
/** What the upscaler answers for a 128 × 96 upload at its default scale 2. */
const upscaled = encodePng(makeImage(256, 192, () => [200, 90, 30, 255]));

let standIn: ReplicateStandIn;
let served: Awaited<ReturnType<typeof startFileServer>>;
const settings = (): NodeJS.ProcessEnv => ({
  PROVIDER_REPLICATE_API_KEY: apiKey,
  PROVIDER_REPLICATE_BASE_URL: standIn.url,
  ALLOW_PRIVATE_CALLBACKS: '1',
});

const { stack, closers } = jobsStackPerFile(settings);
const started = (async () => {
  standIn = await startReplicateStandIn({ apiKey });
  served = await startFileServer({ '/up.png': { body: upscaled, contentType: 'image/png' } });
  closers.push(
    () => standIn.close(),
    () => served.close(),
  );
})();

const stepExecutor = (options: { now?: () => Date } = {}) =>
  stageStepExecutor(stack.deps, settings(), { baseUrl: stack.baseUrl, ...options });
const drain = (handler: StepHandler) => drainSteps(stack.deps, handler, { dropPolls: true });

/** ImageLoader (its apiInputKey `photo`) → Upscaler on Replicate (scale 2, the default). */
const upscaleSteps = [
  { key: 'photo', type: 'ImageLoader', config: { apiInputKey: 'photo' } },
  {
    key: 'up',
    type: 'Upscaler',
    config: { provider: 'replicate', model: 'nightmareai/real-esrgan' },
    inputs: ['photo'],
  },
];

/** Uploads a 128 × 96 PNG through the presigned URL and starts the upscale workflow on it. */
const startUpscale = async () => {
  await started;
  const team = await seedTeam(stack.deps, { credits: 100 });
  const workflowId = await createWorkflow(stack, team, upscaleSteps);
  const bytes = files.png(128, 96);
  const declared = await call(stack.baseUrl, '/files', {
    key: team.key,
    method: 'POST',
    body: { name: 'photo.png', contentType: 'image/png', size: bytes.length },
  });
  expect(declared.status, JSON.stringify(declared.body)).toBe(201);
  const upload = declared.body.upload as { method: string; url: string; headers: Record<string, string> };
  const { 'content-length': _, ...headers } = upload.headers;
  expect((await fetch(upload.url, { method: upload.method, headers, body: bytes })).status).toBe(200);
  const response = await call(stack.baseUrl, `/workflows/${workflowId}/runs`, {
    key: team.key,
    method: 'POST',
    body: { inputs: { photo: declared.body.fileId } },
  });
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  return { team, workflowId, jobId: response.body.jobId as string };
};

/** The prediction the stand-in holds for `jobId`'s step `nodeId`, by its webhook URL. */
const predictionsOf = (jobId: string, nodeId: string) =>
  [...standIn.jobs.values()]
    .map((j) => j.prediction)
    .filter((p) => String(p.webhook ?? '').includes(`/${jobId}/${nodeId}/`));

describe('a job step is charged for the work its provider did', { timeout: 120_000 }, () => {
  it('charges ImageLoader → Upscaler on a 128 × 96 upload for the 256 × 192 image made, not the 4096² estimate', async () => {
    const executor = stepExecutor();
    const { team, jobId } = await startUpscale();
    await drain(executor.handler);
    const [prediction] = predictionsOf(jobId, 'up');
    if (!prediction) throw new Error('the Upscaler submitted no job');
    expect(prediction.input).toMatchObject({ scale: 2 });
    expect((await standIn.complete(prediction.id, `${served.url}/up.png`))?.status).toBe(202);
    await drain(executor.handler);

    const { run, steps, charges } = await runParts(stack.deps, jobId);
    expect(run).toMatchObject({ status: 'completed', heldHundredths: 0 });
    const stored = steps.get('up')?.outputs as { image: { key: string } };
    expect(stored.image.key).toContain(`/${jobId}/`);
    // The estimate held the largest image an ImageLoader can carry, upscaled: 4096² at 1.00 a 1024² = 16.00.
    expect(run?.estimateHundredths).toBe(1 + 1600);
    // Charged the image made: 256 × 192 = 49,152 pixels, 100 × 49,152 / 1024² rounded up = 5 hundredths,
    // as the sandbox charges the same step (0.06 with the loader's 0.01).
    expect(charges.get('up')?.hundredths).toBe(5);
    expect(charges.get('photo')?.hundredths).toBe(1);
    const ledger = await ledgerOf(stack.deps, team.teamId);
    expectBalanced(ledger);
    expect(ledger).toMatchObject({ held: 0, charged: 6 });
    // What was stored is what was measured.
    const image = await call(stack.baseUrl, `/runs/${jobId}`, { key: team.key });
    const output = (image.body.output as { node_id: string; result: { url: string } }[]).find(
      (o) => o.node_id === 'up',
    );
    const bytes = new Uint8Array(await (await fetch(output?.result.url ?? '')).arrayBuffer());
    expect(decodePng(bytes)).toMatchObject({ width: 256, height: 192 });
  });

  it('never charges above the estimate, whatever the provider made', async () => {
    const big = encodePng(makeImage(4096, 4096, () => [1, 2, 3, 255]));
    const bigServer = await startFileServer({ '/big.png': { body: big, contentType: 'image/png' } });
    closers.push(() => bigServer.close());
    const executor = stepExecutor();
    const { team, jobId } = await startUpscale();
    await drain(executor.handler);
    const [prediction] = predictionsOf(jobId, 'up');
    if (!prediction) throw new Error('the Upscaler submitted no job');
    // Two images of the largest size: twice the estimate's work, charged the estimate.
    expect(
      (await standIn.complete(prediction.id, [`${bigServer.url}/big.png`, `${bigServer.url}/big.png?2`]))?.status,
    ).toBe(202);
    await drain(executor.handler);
    const { run, charges } = await runParts(stack.deps, jobId);
    expect(run).toMatchObject({ status: 'completed', heldHundredths: 0 });
    expect(charges.get('up')?.hundredths).toBe(1600);
    expectBalanced(await ledgerOf(stack.deps, team.teamId));
  });
});
