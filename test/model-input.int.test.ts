/**
 * `config.modelInput` never buys unpriced work, through the real path: HTTP to the local API, the
 * step executor's handler over the emulators, and Replicate's stand-in (test/stand-ins/replicate.ts).
 * A field that drives cost is refused (422 naming it) when the workflow is created and when a run of
 * a stored one starts, with nothing held; a field that adds no work reaches the model, next to the
 * priced settings the step always sends, and the run is charged what it held.
 */
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { canvasKey } from '../functions/store/keys.ts';
import { type ReplicateStandIn, startReplicateStandIn } from './stand-ins/replicate.ts';
import { stageStepExecutor } from './support/provider-steps.ts';
import { drainSteps, expectBalanced, ledgerOf, runParts } from './support/runs.ts';
import { call, createWorkflow, jobsStackPerFile, seedTeam } from './support/stack.ts';

const apiKey = 'r8_model_input_test_key_never_logged';
let standIn: ReplicateStandIn;
const settings = (): NodeJS.ProcessEnv => ({
  PROVIDER_REPLICATE_API_KEY: apiKey,
  PROVIDER_REPLICATE_BASE_URL: standIn.url,
  ALLOW_PRIVATE_CALLBACKS: '1',
});
const { stack, closers } = jobsStackPerFile(settings);
const started = (async () => {
  standIn = await startReplicateStandIn({ apiKey });
  closers.push(() => standIn.close());
})();

/** A model Replicate hosts that the registry has no mapping of its own for. */
const otherModel = 'someone/their-model';
const prompt = { key: 'prompt', type: 'TextEntry', config: { text: 'a lighthouse at dusk' } };
/** The ImageGen: priced at 64², 1 step, 1 image; its modelInput asks 2048², 150 steps, 4 images. */
const dearImage = {
  key: 'image',
  type: 'ImageGen',
  inputs: ['prompt'],
  config: {
    provider: 'replicate',
    model: otherModel,
    width: 64,
    height: 64,
    steps: 1,
    variations: 1,
    modelInput: { width: 2048, height: 2048, num_inference_steps: 150, num_outputs: 4 },
  },
};
/** The LlmWorker: priced at 10 tokens of answer; its modelInput asks 32,000. */
const longAnswer = (modelInput: Record<string, unknown>) => ({
  key: 'llm',
  type: 'LlmWorker',
  inputs: ['prompt'],
  config: { provider: 'replicate', model: otherModel, maxTokens: 10, modelInput },
});

const createCall = (team: Awaited<ReturnType<typeof seedTeam>>, steps: unknown[]) =>
  call(stack.baseUrl, '/workflows', {
    key: team.key,
    method: 'POST',
    body: { name: 'Flow', steps, agentId: team.agentId },
  });

describe('modelInput through the API and the Replicate stand-in', { timeout: 120_000 }, () => {
  it('refuses a workflow whose modelInput sets work the price does not cover, naming each field; nothing is held', async () => {
    await started;
    const team = await seedTeam(stack.deps, { credits: 100 });
    const before = await ledgerOf(stack.deps, team.teamId);
    const image = await createCall(team, [prompt, dearImage]);
    expect(image.status).toBe(422);
    expect(image.body).toMatchObject({ error: 'Workflow validation failed' });
    expect(
      (image.body.errors as { key: string; path: string; message: string }[]).map((e) => [e.path, e.message]),
    ).toEqual([
      ['config.modelInput.width', 'modelInput.width drives cost: set config.width instead'],
      ['config.modelInput.height', 'modelInput.height drives cost: set config.height instead'],
      ['config.modelInput.num_inference_steps', 'modelInput.num_inference_steps drives cost: set config.steps instead'],
      ['config.modelInput.num_outputs', 'modelInput.num_outputs drives cost: set config.variations instead'],
    ]);
    const llm = await createCall(team, [
      prompt,
      longAnswer({ max_tokens: 32_000, lora_weights: 'https://x.example/w' }),
    ]);
    expect(llm.status).toBe(422);
    expect(llm.body.errors).toEqual([
      expect.objectContaining({
        code: 'invalid_config',
        key: 'llm',
        path: 'config.modelInput.max_tokens',
        message: 'modelInput.max_tokens drives cost: set config.maxTokens instead',
      }),
      expect.objectContaining({
        path: 'config.modelInput.lora_weights',
        message: expect.stringMatching(/not a field/),
      }),
    ]);
    expect(await ledgerOf(stack.deps, team.teamId)).toEqual(before);
  });

  it('refuses to start a stored workflow whose modelInput drives cost (written before the rule), holding nothing', async () => {
    await started;
    const team = await seedTeam(stack.deps, { credits: 100 });
    const workflowId = await createWorkflow(stack, team, [prompt, longAnswer({ temperature: 0.2 })]);
    // As a workflow stored before the rule: its canvas carries a field the creation now refuses.
    await stack.deps.ddb.send(
      new UpdateCommand({
        TableName: stack.deps.tableName,
        Key: canvasKey(workflowId),
        UpdateExpression: 'SET canvas.nodes[1].config.modelInput = :input',
        ExpressionAttributeValues: { ':input': { max_tokens: 32_000 } },
      }),
    );
    const before = await ledgerOf(stack.deps, team.teamId);
    const jobsBefore = standIn.jobs.size;
    const response = await call(stack.baseUrl, `/workflows/${workflowId}/runs`, {
      key: team.key,
      method: 'POST',
      body: {},
    });
    expect(response.status).toBe(422);
    expect(response.body.errors).toEqual([
      expect.objectContaining({ path: 'config.modelInput.max_tokens', message: expect.stringMatching(/drives cost/) }),
    ]);
    expect(await ledgerOf(stack.deps, team.teamId)).toEqual(before);
    expect(standIn.jobs.size).toBe(jobsBefore);
  });

  it('passes a field that adds no work; the model gets the priced bound, and the run is charged the tokens answered, within what it held', async () => {
    await started;
    const team = await seedTeam(stack.deps, { credits: 100 });
    const workflowId = await createWorkflow(stack, team, [prompt, longAnswer({ temperature: 0.2, seed: 7 })]);
    const response = await call(stack.baseUrl, `/workflows/${workflowId}/runs`, {
      key: team.key,
      method: 'POST',
      body: {},
    });
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    // 10 tokens of an LlmWorker at 200 a thousand: 2 hundredths; the prompt 1.
    expect(response.body.estimatedCredits).toBe(0.03);
    const jobId = response.body.jobId as string;
    const executor = stageStepExecutor(stack.deps, settings(), { baseUrl: stack.baseUrl });
    const jobsBefore = standIn.jobs.size;
    await drainSteps(stack.deps, executor.handler, { dropPolls: true });
    expect(standIn.jobs.size).toBe(jobsBefore + 1);
    const prediction = [...standIn.jobs.values()].at(-1)?.prediction as unknown as {
      id: string;
      input: Record<string, unknown>;
    };
    expect(prediction.input).toEqual({ prompt: 'a lighthouse at dusk', max_tokens: 10, temperature: 0.2, seed: 7 });

    await standIn.complete(prediction.id, ['A lighthouse', ' stands.']);
    await drainSteps(stack.deps, executor.handler, { dropPolls: true });
    const { run, charges } = await runParts(stack.deps, jobId);
    // A job step is charged the work its provider reports (a few tokens answered: 1 hundredth),
    // never above the 2 its bound priced.
    expect(run).toMatchObject({ status: 'completed', heldHundredths: 0, chargedHundredths: 2 });
    expect(charges.get('llm')).toEqual({ hundredths: 1 });
    const ledger = await ledgerOf(stack.deps, team.teamId);
    expectBalanced(ledger);
    expect(ledger).toMatchObject({ charged: 2, held: 0 });
  });
});
