/**
 * Executors of the AI model nodes. Each calls its provider through the one Provider interface
 * (config.provider ?? the stage's default for the node type ?? the catalogue's), stores the files it gets (marked as AI-generated) and
 * reports the model it ran on in `StepOutcome.model`, which the orchestrator stamps into lineage.
 *
 * What a run mode changes in a model call (`modeSettings`) is in functions/nodes/catalogue/run-modes.ts.
 */

import { isJobProtocol, providerEntry } from '../../../platform/providers.ts';
import type { NodeType } from '../../../schemas/workflow-words.ts';
import { imageSize, modeSettings } from '../catalogue/run-modes.ts';
import { glbAsObj } from '../media/glb.ts';
import { pngPixels } from '../media/png.ts';
import { openAiCompatibleDefaultModels } from '../providers/openai-compatible.ts';
import { routeProvider, stepProvider } from '../providers/registry.ts';
import {
  type ImageOperation,
  type MediaFile,
  type Provider,
  type ProviderCapability,
  ProviderError,
} from '../providers/types.ts';
import {
  allInputs,
  type ExecutorDeps,
  fail,
  filesIn,
  firstInput,
  perFile,
  readMedia,
  store,
  toText,
} from './helpers.ts';
import { jobRequest } from './jobs.ts';
import { type ModelWork, maxEmbedTokens, maxImagePixels, maxImagesPerStep, tokensOf } from './model-work.ts';
import { syncTextMaxTokens } from './sync-call-budget.ts';
import type { NodeExecutor, StepContext, StepOutcome } from './types.ts';

const capabilityText: Record<ProviderCapability, string> = {
  generateText: 'generate text',
  generateImage: 'generate images',
  editImage: 'edit images',
  generateAudio: 'generate audio',
  generateMesh: 'generate meshes',
  embed: 'make embeddings',
};

const defaultModel = (deps: ExecutorDeps, provider: string, capability: ProviderCapability): string => {
  if (provider !== 'openai-compatible') return 'default';
  const models = openAiCompatibleDefaultModels(deps.env);
  return capability === 'generateText' ? models.text : capability === 'embed' ? models.embedding : models.image;
};

/** What a model call produced, and the work it did when that can be less than asked (priced at settle). */
interface ModelResult {
  outputs: Record<string, unknown>;
  work?: ModelWork;
}

/** The provider a step resolved to and the model it runs there. */
interface ResolvedModel {
  provider: Provider;
  model: string;
}

/** The model a step runs on the sandbox standing in for its provider: the catalogue's stand-in. */
const standInModel = (context: StepContext): string => context.spec.model?.sandboxModel ?? 'default';

/**
 * Resolves the step's provider and model (`routeProvider`: the team's own key, the stage's
 * credentials, or the sandbox standing in on a sandbox stage), runs `call`, and reports the model
 * used: a step the sandbox ran reports provider `sandbox`, so its output's lineage and licence say so.
 */
const runModel = async (
  context: StepContext,
  deps: ExecutorDeps,
  capability: ProviderCapability,
  call: (model: ResolvedModel) => Promise<ModelResult>,
): Promise<StepOutcome> => {
  const use =
    stepProvider(context.node, context.spec, deps.stage.modelDefaults) ?? fail(context, 'is not a model step');
  const entry = providerEntry(use.provider) ?? fail(context, `unknown provider ${use.provider}`);
  const connection = entry.protocol === 'sandbox' ? undefined : await context.connection?.(use.provider);
  const route = routeProvider(use.provider, deps.stage, connection !== undefined, use.model);
  // Defence in depth: the run start refuses these with the provider 422 before anything is held.
  if (route.refused) {
    if (route.unpaid !== undefined)
      return fail(context, `runs ${route.unpaid}, which this deployment does not run on its own key`);
    return fail(context, `runs on ${use.provider}, which is not available through the API without your own key`);
  }
  const runsOnEntry = providerEntry(route.runsOn);
  if (runsOnEntry && isJobProtocol(runsOnEntry.protocol)) {
    // A job: the step executor submits it and the step ends when the job does (functions/app/provider-job.ts).
    const model = use.model ?? fail(context, `names no model for ${route.runsOn} (config.model)`);
    return {
      outputs: {},
      model: { provider: route.runsOn, model },
      job: await jobRequest(context, runsOnEntry.protocol, model, route.credentials === 'team' ? 'team' : 'stage'),
    };
  }
  const provider =
    (await deps.providers(route.runsOn, route.credentials === 'team' ? connection : undefined)) ??
    fail(context, `unknown provider ${route.runsOn}`);
  if (!provider[capability]) fail(context, `provider ${route.runsOn} cannot ${capabilityText[capability]}`);
  const model =
    route.runsOn === use.provider ? (use.model ?? defaultModel(deps, use.provider, capability)) : standInModel(context);
  try {
    const { outputs, work } = await call({ provider, model });
    return { outputs, model: { provider: route.runsOn, model }, ...(work ? { work } : {}) };
  } catch (error) {
    // A busy provider is asked again later (run-step's retry); any other refusal fails the step now.
    if (error instanceof ProviderError && !error.retryable) return fail(context, error.message, error);
    throw error;
  }
};

const num = (value: unknown): number | undefined => (typeof value === 'number' ? value : undefined);
const upscaleFactor = (context: StepContext): number => num(context.node.config.scale) ?? 2;
const text = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

/** Stores one or several generated images under `name`, `name-2`, … */
const storeAll = async (context: StepContext, name: string, files: MediaFile[]) => {
  const stored = await Promise.all(
    files.map((f, i) => store(context, i ? `${name}-${i + 1}` : name, f, true, 'image')),
  );
  if (stored.length === 0) return fail(context, 'the provider returned no file');
  return stored.length === 1 ? stored[0] : stored;
};

/** The first input file's bytes, or undefined when no file arrived. */
const optionalMedia = async (context: StepContext, handle: string): Promise<MediaFile | undefined> => {
  const [file] = filesIn(firstInput(context, handle));
  return file ? readMedia(context, file) : undefined;
};

const requiredMedia = async (context: StepContext, handle: string): Promise<MediaFile> =>
  (await optionalMedia(context, handle)) ?? fail(context, `no file arrived on ${handle}`);

/** An input image's pixels from its header; one the header does not tell is counted at the largest size. */
const inputPixels = (image: MediaFile): number => pngPixels(image.body) ?? maxImagePixels;

/**
 * An image-to-image step over each incoming image (a list of variations gives a list), up to
 * `maxImagesPerStep` of them: its estimate covers no more. Its work is the output pixels, from
 * each input's size (`outputPixels`, the same size unless it scales).
 */
const imageEdit =
  (
    deps: ExecutorDeps,
    operation: ImageOperation,
    input: string,
    output: string,
    extra: (c: StepContext) => object = () => ({}),
    outputPixels: (c: StepContext, pixels: number) => number = (_, pixels) => pixels,
  ): NodeExecutor =>
  (context) =>
    runModel(context, deps, 'editImage', async ({ provider, model }) => {
      const value = firstInput(context, input);
      const count = filesIn(value).length;
      if (count > maxImagesPerStep) fail(context, `takes at most ${maxImagesPerStep} images, ${count} arrived`);
      let pixels = 0;
      const result = await perFile(context, value, async (file, index) => {
        const image = await readMedia(context, file);
        pixels += outputPixels(context, inputPixels(image));
        const edited = await provider.editImage!({
          model,
          mode: context.mode,
          signal: context.signal,
          operation,
          image,
          ...extra(context),
        });
        return store(context, index ? `${output}-${index + 1}` : output, edited, true, 'image');
      });
      return { outputs: { [output]: result }, work: { kind: 'pixels', pixels } };
    });

/** A GLB mesh from a provider, written as OBJ text when `config.format` is `obj`. */
const meshFile = (context: StepContext, glb: MediaFile): MediaFile =>
  context.node.config.format === 'obj' ? glbAsObj(glb.body) : glb;

const meshFromImage =
  (deps: ExecutorDeps, withPrompt: boolean): NodeExecutor =>
  (context) =>
    runModel(context, deps, 'generateMesh', async ({ provider, model }) => {
      const image = await requiredMedia(context, 'image');
      const prompt = withPrompt ? text(firstInput(context, 'prompt')) : undefined;
      const glb = await provider.generateMesh!({
        model,
        mode: context.mode,
        signal: context.signal,
        seed: num(context.node.config.seed),
        operation: 'generate',
        image,
        prompt,
      });
      return { outputs: { mesh: await store(context, 'mesh', meshFile(context, glb), true, 'mesh') } };
    });

/** ImageGen (`variations` from its config) and DiffusionWorker (one image: its schema has no `variations`). */
const imageGeneration =
  (deps: ExecutorDeps, referenceHandle: string, hasVariations: boolean): NodeExecutor =>
  (context) =>
    runModel(context, deps, 'generateImage', async ({ provider, model }) => {
      const config = context.node.config;
      const settings = modeSettings(context.mode, config, hasVariations);
      const { width, height } = imageSize(config, provider.key);
      const files = await provider.generateImage!({
        model,
        mode: context.mode,
        signal: context.signal,
        seed: num(config.seed),
        prompt: toText(firstInput(context, 'prompt')),
        negativePrompt: text(config.negativePrompt),
        width,
        height,
        steps: settings.steps,
        variations: settings.variations,
        reference: await optionalMedia(context, referenceHandle),
        strength: num(config.strength),
        guidance: num(config.guidance),
      });
      const images = Math.min(files.length, settings.variations);
      return {
        outputs: { image: await storeAll(context, 'image', files) },
        work: { kind: 'sampling', images, pixels: width * height, steps: settings.steps },
      };
    });

export const modelExecutors = (deps: ExecutorDeps) =>
  ({
    ImageGen: imageGeneration(deps, 'reference', true),
    DiffusionWorker: imageGeneration(deps, 'image', false),

    AudioGen: (context) =>
      runModel(context, deps, 'generateAudio', async ({ provider, model }) => {
        const audio = await provider.generateAudio!({
          model,
          mode: context.mode,
          signal: context.signal,
          seed: num(context.node.config.seed),
          prompt: toText(firstInput(context, 'prompt')),
          durationSeconds: num(context.node.config.durationSeconds) ?? 4,
        });
        return { outputs: { audio: await store(context, 'audio', audio, true, 'audio') } };
      }),

    LlmWorker: (context) =>
      runModel(context, deps, 'generateText', async ({ provider, model }) => {
        const config = context.node.config;
        // A synchronous call asks for no more than its step's deadline can generate.
        const maxTokens = Math.min(modeSettings(context.mode, config).maxTokens, syncTextMaxTokens());
        const answer = await provider.generateText!({
          model,
          mode: context.mode,
          signal: context.signal,
          prompt: toText(firstInput(context, 'prompt')),
          system: text(config.system),
          context: allInputs(context, 'context').map(toText),
          maxTokens,
          temperature: num(config.temperature),
        });
        return { outputs: { text: answer }, work: { kind: 'tokens', tokens: Math.min(maxTokens, tokensOf(answer)) } };
      }),

    VisionInterrogator: (context) =>
      runModel(context, deps, 'generateText', async ({ provider, model }) => {
        const image = await requiredMedia(context, 'image');
        const question = text(firstInput(context, 'question')) ?? 'Describe this image.';
        const maxTokens = Math.min(modeSettings(context.mode, context.node.config).maxTokens, syncTextMaxTokens());
        const answer = await provider.generateText!({
          model,
          mode: context.mode,
          signal: context.signal,
          prompt: question,
          images: [image],
          maxTokens,
        });
        return { outputs: { text: answer }, work: { kind: 'tokens', tokens: Math.min(maxTokens, tokensOf(answer)) } };
      }),

    ControlNetFilter: imageEdit(deps, 'control', 'image', 'image', (context) => ({
      controlMode: text(context.node.config.mode) ?? 'canny',
      strength: num(context.node.config.strength),
      prompt: text(firstInput(context, 'prompt')),
    })),
    DepthEstimator: imageEdit(deps, 'depth', 'image', 'depth'),
    Upscaler: imageEdit(
      deps,
      'upscale',
      'image',
      'image',
      (context) => ({ scale: upscaleFactor(context) }),
      (context, pixels) => Math.min(pixels * upscaleFactor(context) ** 2, maxImagePixels),
    ),
    BackgroundRemover: imageEdit(deps, 'remove_background', 'image', 'image'),

    PbrSynthesizer: (context) =>
      runModel(context, deps, 'editImage', async ({ provider, model }) => {
        // Its first image only, three maps of its size.
        const image = await requiredMedia(context, 'image');
        const maps = ['albedo', 'normal', 'roughness'] as const;
        const edited = await Promise.all(
          maps.map((operation) =>
            provider.editImage!({ model, mode: context.mode, signal: context.signal, operation, image }),
          ),
        );
        const stored = await Promise.all(
          edited.map((file, i) => store(context, maps[i] as string, file, true, 'image')),
        );
        return {
          outputs: { albedo: stored[0], normal: stored[1], roughness: stored[2] },
          work: { kind: 'pixels', pixels: inputPixels(image) },
        };
      }),

    '3DTransform': meshFromImage(deps, true),
    TwoDToThreeD: meshFromImage(deps, false),

    AutoRigger: (context) =>
      runModel(context, deps, 'generateMesh', async ({ provider, model }) => {
        const mesh = await requiredMedia(context, 'mesh');
        const rig = await provider.generateMesh!({
          model,
          mode: context.mode,
          signal: context.signal,
          operation: 'rig',
          mesh,
          skeleton: text(context.node.config.skeleton) ?? 'humanoid',
        });
        return { outputs: { rig: await store(context, 'rig', rig, true, 'mesh') } };
      }),

    Embedder: (context) =>
      runModel(context, deps, 'embed', async ({ provider, model }) => {
        const input = toText(firstInput(context, 'text'));
        const tokens = tokensOf(input);
        // Its estimate covers this many tokens; a longer text is refused before any provider call.
        if (tokens > maxEmbedTokens) fail(context, `takes at most ${maxEmbedTokens} tokens of text, ${tokens} arrived`);
        const embedding = await provider.embed!({
          model,
          mode: context.mode,
          signal: context.signal,
          text: input,
          dimensions: num(context.node.config.dimensions),
        });
        return { outputs: { embedding }, work: { kind: 'tokens', tokens } };
      }),
  }) satisfies Partial<Record<NodeType, NodeExecutor>>;
