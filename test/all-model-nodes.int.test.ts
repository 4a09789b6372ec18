/**
 * Every model node type on its catalogue default, through its real adapter, over the real path: HTTP
 * to the local API, the step executor's handler over the emulators, and the provider stand-ins over
 * HTTP. The Bedrock types call `InvokeModel` through the real SDK (SigV4, HTTP/2) on the Bedrock
 * Runtime stand-in (test/stand-ins/bedrock.ts); the fal types submit a job to the fal stand-in
 * (test/stand-ins/fal.ts), which ends it with the model's documented answer (its files on a local
 * file host) and posts its signed webhook to our route. No step names a provider: each runs on the
 * default the catalogue names (functions/nodes/catalogue/models.ts).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { readGlb } from '../functions/nodes/media/glb.ts';
import { readGlbMark, readPngMark, readWavMark } from '../functions/nodes/media/marks.ts';
import { decodePng, isPng, pixelAt } from '../functions/nodes/media/png.ts';
import { bedrockDefaultModels } from '../platform/providers.ts';
import { type BedrockStandIn, type BedrockStandInRequest, startBedrockStandIn } from './stand-ins/bedrock.ts';
import { type FalStandIn, type StandInRequest, startFalStandIn } from './stand-ins/fal.ts';
import { falAnswers, falColours, falFiles } from './stand-ins/fal-answers.ts';
import { startFileServer } from './stand-ins/http.ts';
import { bedrockProcessEnv, closeWithStack, fakeAwsCredentials, stageStepExecutor } from './support/provider-steps.ts';
import { drainSteps, runParts, type StepHandler } from './support/runs.ts';
import { call, createWorkflow, jobsStackPerFile, type SeededTeam, seedTeam, startRunOk } from './support/stack.ts';

const falKey = '5e0c7a1b-2d3f-4a5b-8c9d-0e1f2a3b4c5d:9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d';

let bedrock: BedrockStandIn;
let fal: FalStandIn;
let files: Awaited<ReturnType<typeof startFileServer>>;

/** Each default fal model's answer (fal-answers.ts), its files on the file host. */
const falAnswer = (appId: string): unknown => falAnswers(files.url)(appId);

const settings = (): NodeJS.ProcessEnv => ({
  AWS_ENDPOINT_URL_BEDROCK_RUNTIME: bedrock.url,
  AWS_REGION: fakeAwsCredentials.AWS_REGION,
  PROVIDER_FAL_API_KEY: falKey,
  PROVIDER_FAL_BASE_URL: fal.url,
  PROVIDER_FAL_JWKS_URL: fal.jwksUrl,
  ALLOW_PRIVATE_CALLBACKS: '1',
});

const { stack, closers } = jobsStackPerFile(settings);

beforeAll(async () => {
  bedrock = await startBedrockStandIn();
  fal = await startFalStandIn({ apiKey: falKey });
  files = await startFileServer(falFiles);
  closeWithStack(closers, bedrock, fal, files, bedrockProcessEnv(bedrock.url));
});

/** The step executor as Lambda runs it, with Bedrock and fal on, webhooks to the local API. */
const stepExecutor = () => stageStepExecutor(stack.deps, settings(), { baseUrl: stack.baseUrl }).handler;
const drain = (handler: StepHandler) => drainSteps(stack.deps, handler, { dropPolls: true });

interface RunBody {
  status: string;
  output: { node_id: string; result: unknown; generated_by?: unknown[] }[];
}
const runOf = async (key: string, jobId: string) =>
  (await call(stack.baseUrl, `/runs/${jobId}`, { key })).body as unknown as RunBody;

/**
 * Runs the workflow's steps until the run ends: each fal job this run submitted is ended by the
 * stand-in with its model's answer, which arrives through the signed webhook. Returns the run and
 * the fal jobs it submitted, in order.
 */
const runToEnd = async (handler: StepHandler, team: SeededTeam, workflowId: string) => {
  const jobId = await startRunOk(stack, team.key, workflowId);
  const submitted: StandInRequest[] = [];
  for (let round = 0; round < 6; round++) {
    await drain(handler);
    const run = await runOf(team.key, jobId);
    if (!['queued', 'claimed', 'processing'].includes(run.status)) return { jobId, run, submitted };
    const pending = [...fal.jobs.values()].filter((job) => !job.outcome && job.webhook?.includes(`/${jobId}/`));
    if (pending.length === 0) throw new Error(`the run waits with no job at fal to end: ${JSON.stringify(run)}`);
    for (const job of pending) {
      submitted.push(job);
      const sent = await fal.complete(job.requestId, falAnswer(job.appId));
      expect(sent?.status, `fal's webhook for ${job.appId}`).toBe(202);
    }
  }
  throw new Error(`run ${jobId} never ended`);
};

/** The stored copy of a file in a run's output: in the library, its bytes of `contentType`. */
const fileBytes = async (value: unknown, contentType: string): Promise<Uint8Array> => {
  expect(value).toMatchObject({ availability: 'ready', contentType });
  const response = await fetch((value as { url: string }).url);
  expect(response.status).toBe(200);
  return new Uint8Array(await response.arrayBuffer());
};

const storedKeys = (value: unknown): string[] => {
  if (Array.isArray(value)) return value.flatMap(storedKeys);
  if (typeof value !== 'object' || value === null) return [];
  const record = value as Record<string, unknown>;
  if (record.kind === 'file' && typeof record.key === 'string') return [record.key];
  return Object.values(record).flatMap(storedKeys);
};

const prompt = 'a brass lantern on a wooden table';
const question = 'What is on the table?';
const promptStep = { key: 'prompt', type: 'TextEntry', config: { text: prompt } };
const questionStep = { key: 'question', type: 'TextEntry', config: { text: question } };
/** An image made before the model step, offline (the sandbox provider named on purpose). */
const imageStep = {
  key: 'src',
  type: 'ImageGen',
  inputs: ['prompt'],
  config: { provider: 'sandbox', width: 64, height: 64 },
};
const into = (from: string, targetHandle: string) => ({ from, targetHandle });

/** What a case's checks get: the run's model output, the step items, the requests the stand-ins took. */
interface Seen {
  result: unknown;
  steps: Map<string, Record<string, unknown>>;
  teamId: string;
  bedrock: BedrockStandInRequest[];
  fal: StandInRequest[];
}

interface Case {
  type: string;
  provider: 'bedrock' | 'fal';
  model: string;
  /** The steps before the model step (`prompt`, `src`, …). */
  before: unknown[];
  inputs: unknown[];
  check: (seen: Seen) => Promise<void> | void;
}

/** The one Bedrock request of the step: `InvokeModel` at `/model/{model id, URL-encoded}/invoke`. */
const bedrockRequest = (seen: Seen, model: string): Record<string, unknown> => {
  expect(seen.bedrock.map((r) => r.path)).toEqual([`/model/${encodeURIComponent(model)}/invoke`]);
  const [request] = seen.bedrock;
  expect(request?.modelId).toBe(model);
  expect(request?.headers['content-type']).toBe('application/json');
  return request?.body ?? {};
};

/** A base64 image field of a Bedrock body: the 64×64 PNG the `src` step made. */
const expectSrcImage = (base64: unknown) => {
  const bytes = new Uint8Array(Buffer.from(String(base64), 'base64'));
  expect(isPng(bytes)).toBe(true);
  const image = decodePng(bytes);
  expect([image.width, image.height]).toEqual([64, 64]);
};

const expectMarkedPng = async (value: unknown) => {
  const bytes = await fileBytes(value, 'image/png');
  expect(readPngMark(bytes)?.digitalSourceType).toMatch(/trainedAlgorithmicMedia$/);
  return decodePng(bytes);
};

const expectMarkedGlb = async (value: unknown) => {
  const bytes = await fileBytes(value, 'model/gltf-binary');
  expect(readGlbMark(bytes)?.digitalSourceType).toMatch(/trainedAlgorithmicMedia$/);
  return readGlb(bytes).json.asset as { extras?: Record<string, unknown> };
};

/** The one fal job of the step: submitted to `{base}/{app id}` with our webhook, the input as the body. */
const falJob = (seen: Seen, model: string): Record<string, unknown> => {
  const job = seen.fal.find((j) => j.appId === model && j.webhook?.includes('/model/'));
  expect(job, `a job at fal for ${model}`).toBeDefined();
  expect(job?.webhook).toMatch(/\/api\/v1\/provider-webhooks\/fal\/[\w-]+\/model\/[\w-]{20,}$/);
  return job?.input as Record<string, unknown>;
};

/** An input file handed to fal: a short-lived URL of the step's own stored copy, never a public object. */
const expectFileUrlOf = (url: unknown, seen: Seen, step: string, handle: string) => {
  const outputs = (seen.steps.get(step)?.outputs ?? {}) as Record<string, { key?: string } | undefined>;
  const key = outputs[handle]?.key ?? '';
  expect(key.startsWith(`teams/${seen.teamId}/`)).toBe(true);
  const parsed = new URL(String(url));
  expect(decodeURIComponent(parsed.pathname).endsWith(`/${key}`)).toBe(true);
  expect(parsed.searchParams.get('X-Amz-Signature')).toMatch(/^[0-9a-f]{64}$/);
};

/**
 * A Bedrock image edit: its one request to `model` holds the `src` PNG, and `expectBody` of the rest;
 * the step's answer is a marked PNG (returned).
 */
const expectBedrockEdit = async (seen: Seen, model: string, expectBody: (body: Record<string, unknown>) => void) => {
  const body = bedrockRequest(seen, model);
  expectBody(body);
  expectSrcImage(body.image);
  return expectMarkedPng(seen.result);
};
const imageAlone = (body: Record<string, unknown>) =>
  expect(Object.keys(body).sort()).toEqual(['image', 'output_format']);

/** The one fal job of an image step: the `src` image handed as `image_url`; its input. */
const falImageJob = (seen: Seen, model: string) => {
  const input = falJob(seen, model);
  expectFileUrlOf(input.image_url, seen, 'src', 'image');
  return input;
};

/** A mesh from Trellis, for `src`: the model's GLB, marked. */
const expectTrellisMesh = async (seen: Seen) => {
  falImageJob(seen, 'fal-ai/trellis');
  expect((await expectMarkedGlb(seen.result)).extras?.source).toBe('trellis');
};

const cases: Case[] = [
  {
    type: 'LlmWorker',
    provider: 'bedrock',
    model: bedrockDefaultModels.text,
    before: [promptStep],
    inputs: ['prompt'],
    check: (seen) => {
      const body = bedrockRequest(seen, bedrockDefaultModels.text);
      expect(body).toMatchObject({
        anthropic_version: 'bedrock-2023-05-31',
        messages: [{ role: 'user', content: [{ type: 'text', text: prompt }] }],
      });
      expect(seen.result).toBe(`claude heard: ${prompt}`);
    },
  },
  {
    type: 'VisionInterrogator',
    provider: 'bedrock',
    model: bedrockDefaultModels.vision,
    before: [promptStep, imageStep, questionStep],
    inputs: ['src', into('question', 'question')],
    check: (seen) => {
      const body = bedrockRequest(seen, bedrockDefaultModels.vision);
      const [image, text] = (body.messages as { content: Record<string, unknown>[] }[])[0]?.content ?? [];
      expect(image).toMatchObject({ type: 'image', source: { type: 'base64', media_type: 'image/png' } });
      expectSrcImage((image?.source as { data?: unknown } | undefined)?.data);
      expect(text).toEqual({ type: 'text', text: question });
      expect(seen.result).toBe(`claude heard: ${question} [saw 64x64]`);
    },
  },
  {
    type: 'Embedder',
    provider: 'bedrock',
    model: bedrockDefaultModels.embedding,
    before: [promptStep],
    inputs: ['prompt'],
    check: (seen) => {
      expect(bedrockRequest(seen, bedrockDefaultModels.embedding)).toEqual({ inputText: prompt });
      const vector = seen.result as number[];
      expect(vector).toHaveLength(1024);
      expect(vector.every((x) => typeof x === 'number' && Number.isFinite(x))).toBe(true);
    },
  },
  {
    type: 'ImageGen',
    provider: 'bedrock',
    model: bedrockDefaultModels.image,
    before: [promptStep],
    inputs: ['prompt'],
    check: async (seen) => {
      expect(bedrockRequest(seen, bedrockDefaultModels.image)).toMatchObject({
        prompt,
        output_format: 'png',
        aspect_ratio: '1:1',
      });
      await expectMarkedPng(seen.result);
    },
  },
  {
    type: 'DiffusionWorker',
    provider: 'bedrock',
    model: bedrockDefaultModels.diffusion,
    before: [promptStep, imageStep],
    inputs: ['prompt', into('src', 'image')],
    check: async (seen) => {
      const image = await expectBedrockEdit(seen, bedrockDefaultModels.diffusion, (body) =>
        expect(body).toMatchObject({ prompt, mode: 'image-to-image', output_format: 'png' }),
      );
      expect([image.width, image.height]).toEqual([64, 64]);
    },
  },
  {
    type: 'Upscaler',
    provider: 'bedrock',
    model: bedrockDefaultModels.upscale,
    before: [promptStep, imageStep],
    inputs: ['src'],
    check: async (seen) => {
      const image = await expectBedrockEdit(seen, bedrockDefaultModels.upscale, imageAlone);
      // Stable Fast Upscale makes it four times larger.
      expect([image.width, image.height]).toEqual([256, 256]);
    },
  },
  {
    type: 'BackgroundRemover',
    provider: 'bedrock',
    model: bedrockDefaultModels.removeBackground,
    before: [promptStep, imageStep],
    inputs: ['src'],
    check: async (seen) => {
      await expectBedrockEdit(seen, bedrockDefaultModels.removeBackground, imageAlone);
    },
  },
  {
    type: 'ControlNetFilter',
    provider: 'bedrock',
    model: bedrockDefaultModels.control,
    before: [promptStep, imageStep],
    inputs: ['src', into('prompt', 'prompt')],
    check: async (seen) => {
      const image = await expectBedrockEdit(seen, bedrockDefaultModels.control, (body) =>
        expect(body).toMatchObject({ prompt, output_format: 'png' }),
      );
      expect([image.width, image.height]).toEqual([64, 64]);
    },
  },
  {
    type: 'DepthEstimator',
    provider: 'fal',
    model: 'fal-ai/image-preprocessors/depth-anything/v2',
    before: [promptStep, imageStep],
    inputs: ['src'],
    check: async (seen) => {
      falImageJob(seen, 'fal-ai/image-preprocessors/depth-anything/v2');
      const depth = await expectMarkedPng(seen.result);
      expect(pixelAt(depth, 0, 0).slice(0, 3)).toEqual(falColours.depth);
    },
  },
  {
    type: 'PbrSynthesizer',
    provider: 'fal',
    model: 'fal-ai/patina/material/extract',
    before: [promptStep, imageStep],
    inputs: ['src'],
    check: async (seen) => {
      const input = falImageJob(seen, 'fal-ai/patina/material/extract');
      // The endpoint requires a prompt naming what to extract; the node has none, so it names the surface.
      expect(typeof input.prompt).toBe('string');
      expect(String(input.prompt).length).toBeGreaterThan(0);
      expect(input.maps).toEqual(['basecolor', 'normal', 'roughness']);
      // Each map by its map_type (the extracted texture, without one, is none of them).
      const maps = seen.result as Record<string, unknown>;
      expect(Object.keys(maps).sort()).toEqual(['albedo', 'normal', 'roughness']);
      const colours = {
        albedo: falColours.basecolor,
        normal: falColours.normal,
        roughness: falColours.roughness,
      };
      for (const [name, colour] of Object.entries(colours)) {
        const image = await expectMarkedPng(maps[name]);
        expect(pixelAt(image, 0, 0).slice(0, 3), name).toEqual(colour);
      }
    },
  },
  {
    type: 'TwoDToThreeD',
    provider: 'fal',
    model: 'fal-ai/trellis',
    before: [promptStep, imageStep],
    inputs: ['src'],
    check: expectTrellisMesh,
  },
  {
    type: '3DTransform',
    provider: 'fal',
    model: 'fal-ai/trellis',
    before: [promptStep, imageStep],
    inputs: ['src', into('prompt', 'prompt')],
    check: expectTrellisMesh,
  },
  {
    type: 'AutoRigger',
    provider: 'fal',
    model: 'fal-ai/meshy/rigging',
    before: [promptStep, imageStep, { key: 'mesh', type: 'TwoDToThreeD', inputs: ['src'] }],
    inputs: ['mesh'],
    check: async (seen) => {
      // The mesh came from TwoDToThreeD's own job on its default, before the rigging job.
      expect(seen.fal.map((j) => j.appId)).toEqual(['fal-ai/trellis', 'fal-ai/meshy/rigging']);
      const input = falJob(seen, 'fal-ai/meshy/rigging');
      expectFileUrlOf(input.model_url, seen, 'mesh', 'mesh');
      // The rigged character's GLB: not its FBX, not an animation.
      expect((await expectMarkedGlb(seen.result)).extras?.source).toBe('rigged');
    },
  },
  {
    type: 'AudioGen',
    provider: 'fal',
    model: 'fal-ai/stable-audio',
    before: [promptStep],
    inputs: ['prompt'],
    check: async (seen) => {
      expect(falJob(seen, 'fal-ai/stable-audio')).toMatchObject({ prompt });
      const bytes = await fileBytes(seen.result, 'audio/wav');
      expect(readWavMark(bytes)?.digitalSourceType).toMatch(/trainedAlgorithmicMedia$/);
    },
  },
];

describe('every model node type on its default provider and model, through its real adapter', {
  timeout: 60_000,
}, () => {
  it('covers every model node type, each on the default the catalogue names', async () => {
    const { modelNodes } = await import('../functions/nodes/catalogue/models.ts');
    expect(cases.map((c) => c.type).sort()).toEqual(Object.keys(modelNodes).sort());
    for (const c of cases) {
      const spec = modelNodes[c.type as keyof typeof modelNodes].model;
      expect({ type: c.type, provider: spec.provider, model: spec.model }).toEqual({
        type: c.type,
        provider: c.provider,
        model: c.model,
      });
    }
  });

  it.each(cases)('$type runs on $provider $model', async (c) => {
    const handler = stepExecutor();
    const team = await seedTeam(stack.deps, { credits: 100 });
    const workflowId = await createWorkflow(stack, team, [
      ...c.before,
      { key: 'model', type: c.type, inputs: c.inputs },
    ]);
    const bedrockBefore = bedrock.requests.length;
    const falBefore = new Set(fal.jobs.keys());
    const { jobId, run, submitted } = await runToEnd(handler, team, workflowId);
    expect(run.status, JSON.stringify(run)).toBe('completed');

    const output = run.output.find((o) => o.node_id === 'model');
    expect(output?.generated_by).toContainEqual({ node_id: 'model', provider: c.provider, model: c.model });
    // A provider's file URL never reaches the caller.
    expect(JSON.stringify(run)).not.toContain(files.url);
    const { steps } = await runParts(stack.deps, jobId);
    expect(steps.get('model')).toMatchObject({ status: 'completed', model: { provider: c.provider, model: c.model } });
    // Its files are the team's library copies.
    for (const key of storedKeys(steps.get('model')?.outputs))
      expect(key.startsWith(`teams/${team.teamId}/`)).toBe(true);

    const falJobs = [...fal.jobs.values()].filter((j) => !falBefore.has(j.requestId));
    expect(falJobs.map((j) => j.requestId)).toEqual(submitted.map((j) => j.requestId));
    if (c.provider === 'bedrock') expect(falJobs).toEqual([]);
    else expect(bedrock.requests.length).toBe(bedrockBefore);
    await c.check({
      result: output?.result,
      steps,
      teamId: team.teamId,
      bedrock: bedrock.requests.slice(bedrockBefore),
      fal: falJobs,
    });
  });

  it("sends fal's key only in its Authorization header, and Bedrock only SigV4 requests scoped to bedrock", () => {
    for (const request of fal.requests.filter((r) => r.path !== '/.well-known/jwks.json')) {
      expect(request.headers.authorization).toBe(`Key ${falKey}`);
      expect(JSON.stringify({ ...request, headers: { ...request.headers, authorization: '' } })).not.toContain(
        falKey.split(':')[1],
      );
    }
    for (const request of bedrock.requests) {
      expect(request.headers.authorization).toMatch(
        new RegExp(
          `^AWS4-HMAC-SHA256 Credential=${fakeAwsCredentials.AWS_ACCESS_KEY_ID}/\\d{8}/${fakeAwsCredentials.AWS_REGION}/bedrock/aws4_request`,
        ),
      );
    }
  });
});
