import './support/test-providers.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildOpenApiDocument } from '../functions/docs/openapi.ts';
import { readPngMark, readWavMark } from '../functions/nodes/media/marks.ts';
import { decodePng } from '../functions/nodes/media/png.ts';
import { setConnection } from '../functions/store/connections.ts';
import { createAgent, createProject, setPerStepLimit } from '../functions/store/tenancy.ts';
import { expectValidResponse } from './support/openapi-validator.ts';
import { expectBalanced, ledgerOf, runParts } from './support/runs.ts';
import { call, createWorkflow, seedTeam, startWorkingStack, type TestStack, waitForRun } from './support/stack.ts';

let stack: TestStack;
beforeAll(async () => {
  stack = await startWorkingStack();
});
afterAll(() => stack.close());

const run = async (steps: unknown[], body: Record<string, unknown> = {}, credits = 100) => {
  const team = await seedTeam(stack.deps, { credits });
  const workflowId = await createWorkflow(stack, team, steps);
  const started = await call(stack.baseUrl, `/workflows/${workflowId}/runs`, { key: team.key, method: 'POST', body });
  return { team, workflowId, started };
};

describe('run outputs: files, marks, licence and lineage (spec 2.3)', () => {
  it('stores generated files in the library, marked inside and linked for two hours', async () => {
    const { team, started } = await run([
      { key: 'prompt', type: 'TextEntry', config: { text: 'a lighthouse' } },
      { key: 'image', type: 'ImageGen', inputs: ['prompt'] },
      { key: 'sound', type: 'AudioGen', inputs: ['prompt'] },
    ]);
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    const done = await waitForRun(stack, team.key, started.body.jobId as string);
    expect(done.body.status, JSON.stringify(done.body)).toBe('completed');
    expectValidResponse(buildOpenApiDocument(), {
      method: 'GET',
      path: `/runs/${started.body.jobId}`,
      status: 200,
      body: done.body,
    });
    const outputs = done.body.output as {
      node_id: string;
      result: unknown;
      ai_generated: boolean;
      generated_by?: unknown[];
      licence?: { commercial_use: string; models: unknown[] };
    }[];
    const image = outputs.find((o) => o.node_id === 'image');
    const sound = outputs.find((o) => o.node_id === 'sound');
    expect(image?.ai_generated).toBe(true);
    expect(image?.generated_by).toEqual([{ node_id: 'image', provider: 'sandbox', model: expect.any(String) }]);
    expect(image?.licence?.models).toHaveLength(1);
    const files = JSON.stringify(outputs).match(/"url":"([^"]+)"/g) ?? [];
    expect(files.length).toBeGreaterThanOrEqual(2);
    const findFile = (value: unknown): { url: string; availability: string; expiresAt: string } | undefined => {
      if (value && typeof value === 'object') {
        if ('availability' in value) return value as never;
        for (const inner of Object.values(value)) {
          const found = findFile(inner);
          if (found) return found;
        }
      }
      return undefined;
    };
    const png = findFile(image?.result);
    const wav = findFile(sound?.result);
    expect(png?.availability).toBe('ready');
    expect(Date.parse(png?.expiresAt ?? '') - Date.now()).toBeGreaterThan(7_100_000);
    const pngBytes = new Uint8Array(await (await fetch(png?.url ?? '')).arrayBuffer());
    expect(readPngMark(pngBytes)).toBeTruthy();
    const wavBytes = new Uint8Array(await (await fetch(wav?.url ?? '')).arrayBuffer());
    expect(readWavMark(wavBytes)).toBeTruthy();
  });

  it('lets a later step read a stored file: ImageCropper crops the generated image and keeps its mark', async () => {
    const { team, started } = await run([
      { key: 'prompt', type: 'TextEntry', config: { text: 'a lighthouse' } },
      { key: 'image', type: 'ImageGen', inputs: ['prompt'] },
      { key: 'crop', type: 'ImageCropper', config: { width: 4, height: 4 }, inputs: ['image'] },
    ]);
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    const done = await waitForRun(stack, team.key, started.body.jobId as string);
    expect(done.body.status, JSON.stringify(done.body)).toBe('completed');
    const crop = (done.body.output as { node_id: string; result: unknown }[]).find((o) => o.node_id === 'crop');
    const url = /"url":"([^"]+)"/.exec(JSON.stringify(crop?.result))?.[1];
    const png = new Uint8Array(await (await fetch(url ?? '')).arrayBuffer());
    expect(decodePng(png)).toMatchObject({ width: 4, height: 4 });
    expect(readPngMark(png)).toBeTruthy();
  });

  it('marks outputs without a model step as not AI-generated, with no licence', async () => {
    const { team, started } = await run([
      { key: 'a', type: 'TextEntry', config: { text: 'world' } },
      { key: 'greet', type: 'PromptBuilder', config: { template: 'Hello {{0}}' }, inputs: ['a'] },
      { key: 'show', type: 'TextConsole', inputs: ['greet'] },
    ]);
    const done = await waitForRun(stack, team.key, started.body.jobId as string);
    const [output] = done.body.output as { ai_generated: boolean; licence?: unknown; generated_by?: unknown }[];
    expect(output).toMatchObject({ ai_generated: false });
    expect(output?.licence).toBeUndefined();
    expect(output?.generated_by).toBeUndefined();
  });

  it('refuses a step on a provider barred for the API before anything is held, unless the team has its own key', async () => {
    const steps = [
      { key: 'prompt', type: 'TextEntry', config: { text: 'x' } },
      { key: 'llm', type: 'LlmWorker', config: { provider: 'studio-x' }, inputs: ['prompt'] },
    ];
    const { team, workflowId, started } = await run(steps);
    expect(started.status).toBe(422);
    expect(started.body).toMatchObject({ providers: ['studio-x'], level: 'app_only' });
    expect(String(started.body.error)).toMatch(
      /^LlmWorker runs on studio-x, which is not available through the API without your own key/,
    );
    const { getTeam } = await import('../functions/store/tenancy.ts');
    expect((await getTeam(stack.deps, team.teamId))?.held).toBe(0);
    await setConnection(stack.deps, team.teamId, 'studio-x', { secretRef: 'env:STUDIO_X_TEST_KEY' });
    const retried = await call(stack.baseUrl, `/workflows/${workflowId}/runs`, { key: team.key, method: 'POST' });
    expect(retried.status).not.toBe(422);
  });

  it('makes draft cheaper than production for models not priced per run', async () => {
    const steps = [
      { key: 'prompt', type: 'TextEntry', config: { text: 'x' } },
      { key: 'llm', type: 'LlmWorker', inputs: ['prompt'] },
    ];
    const team = await seedTeam(stack.deps);
    const first = await createWorkflow(stack, team, steps, 'A');
    const second = await createWorkflow(stack, team, steps, 'B');
    const production = await call(stack.baseUrl, `/workflows/${first}/runs`, { key: team.key, method: 'POST' });
    const draft = await call(stack.baseUrl, `/workflows/${second}/runs`, {
      key: team.key,
      method: 'POST',
      body: { mode: 'draft' },
    });
    expect(draft.body.estimatedCredits as number).toBeLessThan(production.body.estimatedCredits as number);
    const [a, b] = await Promise.all([
      waitForRun(stack, team.key, production.body.jobId as string),
      waitForRun(stack, team.key, draft.body.jobId as string),
    ]);
    const text = (r: typeof a) => JSON.stringify((r.body.output as { result: unknown }[])[0]?.result);
    expect(text(b).length).toBeLessThan(text(a).length);
  });
});

describe('prices that follow the work', () => {
  // 4 variations of 512² at 60 steps: per image 400 × (512² / 1024²) × (60 / 30) = 200, so 800,
  // plus the TextEntry's 1. The same step with its defaults (one 256² image, 30 steps) is 25.
  const scaled = [
    { key: 'prompt', type: 'TextEntry', config: { text: 'a lighthouse' } },
    {
      key: 'image',
      type: 'ImageGen',
      config: { variations: 4, steps: 60, width: 512, height: 512 },
      inputs: ['prompt'],
    },
  ];
  const plain = [
    { key: 'prompt', type: 'TextEntry', config: { text: 'a lighthouse' } },
    { key: 'image', type: 'ImageGen', inputs: ['prompt'] },
  ];

  it('a scaled ImageGen is estimated for its work, and a completed run is charged exactly its 200 estimate', async () => {
    const { team, started } = await run(scaled);
    expect([started.status, started.body.estimatedCredits]).toEqual([200, 8.01]);
    const done = await waitForRun(stack, team.key, started.body.jobId as string);
    expect(done.body.status, JSON.stringify(done.body)).toBe('completed');
    const image = (done.body.output as { node_id: string; result: unknown }[]).find((o) => o.node_id === 'image');
    expect(image?.result).toHaveLength(4);
    const { run: item, steps } = await runParts(stack.deps, started.body.jobId as string);
    expect(item).toMatchObject({
      estimateHundredths: 801,
      chargedHundredths: 801,
      heldHundredths: 0,
      priceMultiplier: 1,
    });
    expect(item?.stepEstimates).toEqual({ prompt: 1, image: 800 });
    expect([steps.get('prompt')?.chargeHundredths, steps.get('image')?.chargeHundredths]).toEqual([1, 800]);
    const ledger = await ledgerOf(stack.deps, team.teamId);
    expect(ledger).toEqual({ balance: 10_000 - 801, held: 0, charged: 801, granted: 10_000 });
    expectBalanced(ledger);
    // The plain step is estimated at its default provider's size (Bedrock: 1024²), but the sandbox
    // standing in for it makes 256² and is charged that work: the rest of the hold is released.
    const small = await run(plain);
    expect(small.started.body.estimatedCredits).toBe(4.01);
    const smallDone = await waitForRun(stack, small.team.key, small.started.body.jobId as string);
    expect(smallDone.body.status).toBe('completed');
    const smallLedger = await ledgerOf(stack.deps, small.team.teamId);
    expect(smallLedger).toMatchObject({ charged: 26, held: 0 });
    expectBalanced(smallLedger);
  });

  it('the per-step limit, the project hard cap and the balance check the scaled estimate', async () => {
    const team = await seedTeam(stack.deps, { credits: 100 });
    const workflowId = await createWorkflow(stack, team, scaled, 'Scaled');
    const start = () => call(stack.baseUrl, `/workflows/${workflowId}/runs`, { key: team.key, method: 'POST' });
    // A limit of 5 credits a step: the unscaled ImageGen (0.25) would pass it, the scaled one (8) does not.
    await setPerStepLimit(stack.deps, team.teamId, 500);
    const perStep = await start();
    expect([perStep.status, perStep.body]).toMatchObject([
      402,
      { nodeType: 'ImageGen', estimatedCharge: 8, ceiling: 5 },
    ]);
    await setPerStepLimit(stack.deps, team.teamId, null);

    const { projectId } = await createProject(stack.deps, {
      teamId: team.teamId,
      name: 'Capped',
      hardCapHundredths: 500,
    });
    const { agentId } = await createAgent(stack.deps, { teamId: team.teamId, projectId, name: 'In capped' });
    const capped = await createWorkflow(stack, { ...team, agentId }, scaled, 'Capped');
    const hardCap = await call(stack.baseUrl, `/workflows/${capped}/runs`, { key: team.key, method: 'POST' });
    expect([hardCap.status, hardCap.body]).toEqual([
      402,
      { error: 'Project hard cap exceeded', hardCap: 5, spent: 0, estimate: 8.01, balance: expect.any(Number) },
    ]);

    const poor = await seedTeam(stack.deps, { credits: 5 });
    const poorFlow = await createWorkflow(stack, poor, scaled, 'Poor');
    const insufficient = await call(stack.baseUrl, `/workflows/${poorFlow}/runs`, { key: poor.key, method: 'POST' });
    expect([insufficient.status, insufficient.body]).toEqual([
      402,
      { error: 'Insufficient credits', required: 8.01, balance: 5 },
    ]);
    expect(await ledgerOf(stack.deps, poor.teamId)).toMatchObject({ balance: 500, held: 0, charged: 0 });
  });

  it('draft prices the work draft does: one variation, a third of the steps, at half price', async () => {
    const { team, started } = await run(scaled, { mode: 'draft' });
    // One 512² image of 20 steps: ceil(400 × 0.25 × 20 / 30) = 67, halved = 34; plus the TextEntry.
    expect(started.body.estimatedCredits).toBe(0.35);
    const done = await waitForRun(stack, team.key, started.body.jobId as string);
    expect(done.body.status).toBe('completed');
    expect((await ledgerOf(stack.deps, team.teamId)).charged).toBe(35);
  });
});
