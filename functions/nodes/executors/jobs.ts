/**
 * A model step on an asynchronous provider (Replicate, fal), in two halves the step executor calls
 * at two different times: `jobRequest` turns the step into the model's input (its files as
 * short-lived URLs), which the step executor submits; `jobOutcome` turns the finished job's answer
 * into the step's outputs: every file copied into the team's library through the address guard,
 * checked by its bytes, capped by kind and marked as AI-generated, and the work the job did measured
 * from them (functions/nodes/executors/job-work.ts). A provider's URL never reaches a caller.
 */

import { isRecord } from '../../is-record.ts';
import { imageSize, modeSettings } from '../catalogue/run-modes.ts';
import { storedTypeOf } from '../media/file-sniff.ts';
import { glbAsObj } from '../media/glb.ts';
import { hostedModelInput, type JobParts, readJobAnswer } from '../providers/hosted-models.ts';
import { modelInputRefusals } from '../providers/model-input.ts';
import type { JobUsage, MediaFile } from '../providers/types.ts';
import { type ExecutorDeps, fail, filesIn, firstInput, httpCall, store, toText } from './helpers.ts';
import { type JobProduct, measuredJobWork } from './job-work.ts';
import { referenceAudioSeconds } from './model-work.ts';
import type { JobRequest, StepContext, StepOutcome } from './types.ts';

const num = (value: unknown): number | undefined => (typeof value === 'number' ? value : undefined);
const text = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

/** Largest file copied back, by the kind of the output it fills. */
export const maxJobFileBytes = { image: 50, audio: 100, mesh: 200 } as const;

/** A short-lived URL of the first file on a handle, or undefined. */
const fileUrlOn = async (context: StepContext, handle: string): Promise<string | undefined> => {
  const [file] = filesIn(firstInput(context, handle));
  if (!file) return undefined;
  if (!file.key.startsWith(`teams/${context.teamId}/`)) fail(context, "the input file is not in this team's library");
  if (!context.fileUrl) return fail(context, 'input files cannot be handed to a provider here');
  return context.fileUrl(file);
};

/** Most sampling steps a `draft` asks of a hosted model (within the draft's priced steps). */
const draftJobSteps = 4;

/**
 * The step's parts: its texts, its files as URLs, its settings. A priced setting is read only where
 * the node type has it and as the estimate reads it (functions/domain/model-pricing.ts `askedWork`:
 * the mode's rules, the same defaults), and always sent, so the model never falls back to a default
 * of its own that the estimate did not price.
 */
const jobParts = async (context: StepContext, provider: string): Promise<JobParts> => {
  const config = context.node.config;
  const has = (name: string) => Object.hasOwn(context.spec.configSchema.entries, name);
  const prompt = firstInput(context, 'prompt') ?? firstInput(context, 'question');
  const image = (await fileUrlOn(context, 'image')) ?? (await fileUrlOn(context, 'reference'));
  const words = firstInput(context, 'text');
  const type = context.spec.type;
  const sampling = type === 'ImageGen' || type === 'DiffusionWorker';
  const settings = modeSettings(context.mode, config, type === 'ImageGen');
  const size = imageSize(config, provider);
  return {
    prompt: prompt === undefined ? undefined : toText(prompt),
    negativePrompt: has('negativePrompt') ? text(config.negativePrompt) : undefined,
    image,
    mesh: await fileUrlOn(context, 'mesh'),
    text: words === undefined ? undefined : toText(words),
    seed: has('seed') ? num(config.seed) : undefined,
    ...(sampling && {
      width: size.width,
      height: size.height,
      steps: context.mode === 'draft' ? Math.min(settings.steps, draftJobSteps) : settings.steps,
      variations: settings.variations,
    }),
    maxTokens: type === 'LlmWorker' || type === 'VisionInterrogator' ? settings.maxTokens : undefined,
    durationSeconds: type === 'AudioGen' ? (num(config.durationSeconds) ?? referenceAudioSeconds) : undefined,
    scale: type === 'Upscaler' ? (num(config.scale) ?? 2) : undefined,
    strength: has('strength') ? num(config.strength) : undefined,
    skeleton: has('skeleton') ? text(config.skeleton) : undefined,
  };
};

/**
 * What to submit for this step: the model's input from its parts and `config.modelInput`. A
 * `modelInput` field that may not pass (functions/nodes/providers/model-input.ts) fails the step before
 * anything is submitted: the run start refuses it already, unless the stage's model changed since.
 */
export const jobRequest = async (
  context: StepContext,
  provider: 'replicate' | 'fal',
  model: string,
  credentials: JobRequest['credentials'],
): Promise<JobRequest> => {
  const modelInput = context.node.config.modelInput;
  const settings = new Set(Object.keys(context.spec.configSchema.entries));
  const [refused] = modelInputRefusals(provider, model, modelInput, settings);
  if (refused) fail(context, refused.message);
  return {
    provider,
    credentials,
    model,
    input: hostedModelInput(
      provider,
      model,
      await jobParts(context, provider),
      isRecord(modelInput) ? modelInput : undefined,
    ),
  };
};

/** An answer file typed by its whole bytes among its output's kind (the data URI's or server's type says nothing). */
const typedAnswer = async (context: StepContext, kind: keyof typeof maxJobFileBytes, body: Uint8Array) => {
  const verdict = await storedTypeOf(kind, body);
  if (!verdict.ok) return fail(context, `the provider's ${kind} file cannot be stored: ${verdict.reason}`);
  return { body, contentType: verdict.contentType };
};

/** Downloads one answer file through the guard, capped, typed by its bytes. */
const copyAnswerFile = async (
  deps: ExecutorDeps,
  context: StepContext,
  url: string,
  kind: keyof typeof maxJobFileBytes,
): Promise<MediaFile> => {
  const maxBytes = maxJobFileBytes[kind] * 1024 * 1024;
  if (url.startsWith('data:')) {
    const match = /^data:([^;,]*)(;base64)?,(.*)$/s.exec(url);
    if (!match) return fail(context, 'the provider answered a data URI that cannot be read');
    const body = match[2] ? Buffer.from(match[3] ?? '', 'base64') : Buffer.from(decodeURIComponent(match[3] ?? ''));
    if (body.byteLength > maxBytes) fail(context, `the provider's file is over ${maxJobFileBytes[kind]} MB`);
    return typedAnswer(context, kind, body);
  }
  // Through the node's one guarded call: a refused address reads the same whatever the reason.
  const response = await httpCall(context, deps, url, { method: 'GET' }, { timeoutMs: 120_000, maxBytes });
  if (response.status !== 200) fail(context, `the provider's file could not be fetched: HTTP ${response.status}`);
  return typedAnswer(context, kind, response.body);
};

/** A mesh as glb (checked by its bytes), or as OBJ text when `config.format` is `obj`. */
const meshOf = (context: StepContext, file: MediaFile): MediaFile => {
  if (file.contentType !== 'model/gltf-binary') fail(context, 'the provider answered a mesh that is not glb');
  return context.node.config.format === 'obj' ? glbAsObj(file.body) : file;
};

/**
 * The names under which fal's and Replicate's PBR, depth and rigging models answer each file. A
 * rigging answer holds other files too (its FBX, animation clips): the rig is its GLB.
 */
const namedFiles: Record<string, readonly string[]> = {
  albedo: ['albedo', 'basecolor', 'base_color', 'diffuse'],
  normal: ['normal', 'normal_map'],
  roughness: ['roughness', 'roughness_map'],
  depth: ['grey_depth', 'depth', 'depth_map', 'image'],
  rig: ['rigged_character_glb'],
};

/**
 * The step's outputs from the finished job's answer: each output handle of the node filled from
 * the answer by its kind (text, an embedding, files), files stored and marked. A handle the answer
 * does not fill fails the step with what was missing.
 */
export const jobOutcome = async (
  deps: ExecutorDeps,
  context: StepContext,
  answerOutput: unknown,
  usage?: JobUsage,
): Promise<Pick<StepOutcome, 'outputs' | 'work'>> => {
  const answer = readJobAnswer(answerOutput);
  const outputs: Record<string, unknown> = {};
  const product: JobProduct = { images: [], audio: [], text: undefined };
  const handles = context.spec.outputs;
  for (const handle of handles) {
    if (handle.kind === 'text') {
      const words = answer.text ?? fail(context, 'the provider answered no text');
      outputs[handle.name] = words;
      product.text = words;
    } else if (handle.kind === 'embedding') {
      outputs[handle.name] = answer.vector ?? fail(context, 'the provider answered no embedding');
    } else {
      const kind = handle.kind === 'mesh' ? 'mesh' : handle.kind === 'audio' ? 'audio' : 'image';
      const names = namedFiles[handle.name];
      const named = names?.map((name) => answer.named[name]).find((url) => url !== undefined);
      // A node of several file outputs takes each by its name; a node of one takes every file.
      const urls = handles.length > 1 ? (named ? [named] : []) : named ? [named] : answer.urls;
      if (urls.length === 0) fail(context, `the provider answered no file for ${handle.name}`);
      const stored = [];
      for (const [index, url] of urls.slice(0, 4).entries()) {
        let file = await copyAnswerFile(deps, context, url, kind);
        if (kind === 'mesh') file = meshOf(context, file);
        if (kind === 'image') product.images.push(file);
        if (kind === 'audio') product.audio.push(file);
        stored.push(await store(context, index ? `${handle.name}-${index + 1}` : handle.name, file, true, kind));
      }
      outputs[handle.name] = stored.length === 1 ? stored[0] : stored;
    }
  }
  const work = measuredJobWork(context, product, usage);
  return { outputs, ...(work && { work }) };
};
