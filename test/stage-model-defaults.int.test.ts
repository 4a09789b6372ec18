/**
 * A stage's own default models (`MODEL_DEFAULTS`, from `-c modelDefaults`) through the real path:
 * HTTP to the local API (whose run start routes on the stage's defaults), the step executor's handler
 * over the emulators, and the providers' stand-ins speaking their own protocols. Steps that name no
 * provider run on the pinned models, not the catalogue's: a model the registry does not know on
 * Replicate (its job gets the node type's generic input, its output's licence is `unchecked`), and a
 * Bedrock model through the real SDK.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { encodePng, makeImage } from '../functions/nodes/media/png.ts';
import { stageProvidersFromEnv } from '../functions/nodes/providers/stage.ts';
import { envNames } from '../platform/definitions.ts';
import { bedrockDefaultModels } from '../platform/providers.ts';
import { type BedrockStandIn, startBedrockStandIn } from './stand-ins/bedrock.ts';
import { startFileServer } from './stand-ins/http.ts';
import { type ReplicateStandIn, startReplicateStandIn } from './stand-ins/replicate.ts';
import { bedrockProcessEnv, closeWithStack, fakeAwsCredentials, stageStepExecutor } from './support/provider-steps.ts';
import { drainSteps, type StepHandler } from './support/runs.ts';
import { call, createWorkflow, jobsStackPerFile, seedTeam, startRunOk } from './support/stack.ts';

const apiKey = 'r8_stage_model_defaults_test_key';
/** Neither model is the catalogue's; the Replicate one is not in the registry either. */
const pinnedImage = 'acme/pixel-painter';
const pinnedEmbedding = 'cohere.embed-english-v3';

/**
 * The stage as every function reads it: Replicate and Bedrock on, no sandbox to stand in, and the
 * stage's own defaults for ImageGen (the catalogue's: Bedrock) and Embedder (Titan).
 */
const stageEnv: NodeJS.ProcessEnv = {
  PROVIDER_REPLICATE_API_KEY: apiKey,
  PROVIDER_BEDROCK: 'on',
  [envNames.sandboxProviders]: 'false',
  [envNames.modelDefaults]: `ImageGen=replicate:${pinnedImage},Embedder=bedrock:${pinnedEmbedding}`,
};

let replicate: ReplicateStandIn;
let bedrock: BedrockStandIn;
let files: Awaited<ReturnType<typeof startFileServer>>;
const settings = (): NodeJS.ProcessEnv => ({
  ...stageEnv,
  ...fakeAwsCredentials,
  PROVIDER_REPLICATE_BASE_URL: replicate.url,
  AWS_ENDPOINT_URL_BEDROCK_RUNTIME: bedrock.url,
  ALLOW_PRIVATE_CALLBACKS: '1',
});

const { stack, closers } = jobsStackPerFile(settings, stageProvidersFromEnv(stageEnv));

beforeAll(async () => {
  replicate = await startReplicateStandIn({ apiKey });
  bedrock = await startBedrockStandIn();
  files = await startFileServer({
    '/out.png': { body: encodePng(makeImage(8, 8, () => [10, 120, 200, 255])), contentType: 'image/png' },
  });
  closeWithStack(closers, replicate, bedrock, files, bedrockProcessEnv(bedrock.url));
});

const stepExecutor = () => stageStepExecutor(stack.deps, settings(), { baseUrl: stack.baseUrl }).handler;
const drain = (handler: StepHandler) => drainSteps(stack.deps, handler, { dropPolls: true });

interface RunBody {
  status: string;
  output: {
    node_id: string;
    result: unknown;
    generated_by?: unknown[];
    licence?: { commercial_use: string; models: { model: string; licence: string | null }[] };
  }[];
}

describe('a stage that pins its own default models', { timeout: 120_000 }, () => {
  it('runs the steps that name no provider on the pinned models, from the run start to their outputs', async () => {
    const handler = stepExecutor();
    const team = await seedTeam(stack.deps, { credits: 100 });
    const workflowId = await createWorkflow(stack, team, [
      { key: 'prompt', type: 'TextEntry', config: { text: 'a lighthouse at dusk' } },
      { key: 'image', type: 'ImageGen', inputs: ['prompt'] },
      { key: 'vector', type: 'Embedder', inputs: [{ from: 'prompt', targetHandle: 'text' }] },
    ]);
    const jobId = await startRunOk(stack, team.key, workflowId);
    await drain(handler);

    // Replicate received the pinned model (by its own route, /v1/models/{owner}/{name}/predictions),
    // with the node type's generic input (the registry has no mapping of its own for it): the prompt
    // and the priced settings, as the estimate read them (1024², 30 steps, one image).
    const submitted = [...replicate.jobs.values()].filter((job) =>
      String(job.prediction.webhook).includes(`/${jobId}/`),
    );
    expect(submitted.map((job) => [job.prediction.model, job.createdBy])).toEqual([[pinnedImage, 'model']]);
    expect(submitted[0]?.prediction.input).toEqual({
      prompt: 'a lighthouse at dusk',
      width: 1024,
      height: 1024,
      num_inference_steps: 30,
      num_outputs: 1,
    });
    // Bedrock received the pinned model, in its family's body, and never the catalogue's.
    const invoked = bedrock.requests.map((request) => request.modelId);
    expect(invoked).toContain(pinnedEmbedding);
    expect(invoked).not.toContain(bedrockDefaultModels.embedding);
    expect(invoked).not.toContain(bedrockDefaultModels.image);

    const prediction = submitted[0]?.prediction;
    if (!prediction) throw new Error('no prediction');
    const sent = await replicate.complete(prediction.id, [`${files.url}/out.png`]);
    expect(sent?.status).toBe(202);
    await drain(handler);
    const run = (await call(stack.baseUrl, `/runs/${jobId}`, { key: team.key })).body as unknown as RunBody;
    expect(run.status, JSON.stringify(run)).toBe('completed');
    const image = run.output.find((o) => o.node_id === 'image');
    const vector = run.output.find((o) => o.node_id === 'vector');
    expect(image?.generated_by).toEqual([{ node_id: 'image', provider: 'replicate', model: pinnedImage }]);
    expect(vector?.generated_by).toEqual([{ node_id: 'vector', provider: 'bedrock', model: pinnedEmbedding }]);
    // A model the registry does not know: no licence claimed.
    expect(image?.licence).toMatchObject({
      commercial_use: 'unchecked',
      models: [{ model: pinnedImage, licence: null }],
    });
    expect(Array.isArray(vector?.result) && (vector.result as unknown[]).length).toBeGreaterThan(0);
  });
});
