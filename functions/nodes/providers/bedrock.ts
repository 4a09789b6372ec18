/**
 * Amazon Bedrock, through the Bedrock Runtime `InvokeModel` operation with each model family's own
 * JSON body. Authentication is the function's IAM role (SigV4, signing name `bedrock`); no key.
 * Sources, all read 2026-11-26:
 * - InvokeModel and its errors: https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_InvokeModel.html
 *   (the same shapes as botocore's `bedrock-runtime/2023-09-30/service-2.json`).
 * - Claude (Messages): https://docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-anthropic-claude-messages-request-response.html;
 *   Claude Haiku 5.5 (read 2026-12-07, https://platform.claude.com/docs/en/models/haiku-5-5/migration-guide):
 *   temperature, top_p and top_k return errors, answers may open with thinking blocks (select the
 *   text blocks by type), and a safety classifier may answer `stop_reason: "refusal"`.
 * - Nova (understanding): https://docs.aws.amazon.com/nova/latest/userguide/complete-request-schema.html
 * - Llama: https://docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-meta.html and AWS's
 *   example python/example_code/bedrock-runtime/models/meta_llama/llama3/invoke_model.py (awsdocs/aws-doc-sdk-examples).
 * - Titan Text Embeddings V2: https://docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-titan-embed-text.html
 * - Cohere Embed v3: https://docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-embed-v3.html
 * - Stable Image Core / Ultra / SD3.5 Large: https://docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-diffusion-stable-image-core-text-image-request-response.html,
 *   …-stable-ultra-text-image-request-response.html, …-diffusion-3-5-large.html
 * - Stability AI Image Services: https://docs.aws.amazon.com/bedrock/latest/userguide/stable-image-services.html
 * - Nova Canvas: https://docs.aws.amazon.com/nova/latest/userguide/image-gen-req-resp-structure.html
 * - The endpoint override: https://docs.aws.amazon.com/sdkref/latest/guide/feature-ss-endpoints.html — the
 *   SDK itself reads `AWS_ENDPOINT_URL_BEDROCK_RUNTIME` (service id "Bedrock Runtime"), so a stand-in
 *   needs no option here.
 * The client makes one attempt (`maxAttempts: 1`): the step queue retries what `ProviderError.retryable` allows.
 */
import { BedrockRuntimeClient, InvokeModelCommand } from '@aws-sdk/client-bedrock-runtime';
import { isRecord } from '../../is-record.ts';
import { sniffContentType } from '../media/marks.ts';
import {
  type EmbedRequest,
  type ImageEditRequest,
  type ImageRequest,
  type MediaFile,
  type Provider,
  ProviderError,
  parseRetryAfter,
  type TextRequest,
} from './types.ts';

export interface BedrockProviderOptions {
  /** A client of your own (tests point one at a stand-in); else one for `region`, one attempt per call. */
  client?: BedrockRuntimeClient;
  /** Defaults to the SDK's own (`AWS_REGION`). */
  region?: string;
}

/** The model ids this adapter speaks, per capability (base ids; a `us.`, `eu.`, `apac.` or `global.` profile prefix is allowed too). */
export const bedrockModels = {
  /** By prefix: Claude (`anthropic.*`), the Nova understanding models (`amazon.nova-*`, not canvas, reel, sonic), Llama (`meta.llama*`). */
  text: ['anthropic.*', 'amazon.nova-*', 'meta.llama*'],
  /** Cohere by prefix (`cohere.embed-*`); the v3 ids are the ones its documented body was read for. */
  embed: ['amazon.titan-embed-text-v2:0', 'cohere.embed-english-v3', 'cohere.embed-multilingual-v3'],
  image: [
    'stability.stable-image-core-v1:1',
    'stability.stable-image-ultra-v1:1',
    'stability.sd3-5-large-v1:0',
    'amazon.nova-canvas-v1:0',
  ],
  upscale: [
    'stability.stable-fast-upscale-v1:0',
    'stability.stable-conservative-upscale-v1:0',
    'stability.stable-creative-upscale-v1:0',
  ],
  remove_background: ['stability.stable-image-remove-background-v1:0'],
  control: ['stability.stable-image-control-sketch-v1:0', 'stability.stable-image-control-structure-v1:0'],
} as const;

const profilePrefix = /^(us|eu|apac|global)\./;

/** The model id without its cross-Region inference profile prefix (`us.anthropic.…` → `anthropic.…`). */
export const bedrockBaseModelId = (model: string): string => model.replace(profilePrefix, '');

const key = 'bedrock';
const base64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64');
const fromBase64 = (text: string) => new Uint8Array(Buffer.from(text, 'base64'));
const refuse = (message: string) => new ProviderError(`${key}: ${message}`, undefined, { retryable: false });

/** How each exception of the service is classified; its status is the service model's. */
const awsErrors: Record<string, { httpStatus: number; retryable: boolean }> = {
  ThrottlingException: { httpStatus: 429, retryable: true },
  ServiceUnavailableException: { httpStatus: 503, retryable: true },
  InternalServerException: { httpStatus: 500, retryable: true },
  ModelTimeoutException: { httpStatus: 408, retryable: true },
  ModelNotReadyException: { httpStatus: 429, retryable: true },
  ValidationException: { httpStatus: 400, retryable: false },
  AccessDeniedException: { httpStatus: 403, retryable: false },
  ResourceNotFoundException: { httpStatus: 404, retryable: false },
  ServiceQuotaExceededException: { httpStatus: 400, retryable: false },
  ModelErrorException: { httpStatus: 424, retryable: false },
};

/**
 * AWS's message, made safe to show a team: one line, 300 characters, no access key id, no
 * account number, nothing token-like (a signature error can quote the signed headers).
 */
const safeAwsMessage = (message: string): string =>
  (message.split('\n')[0] ?? '')
    .replace(/The Canonical String[\s\S]*$/, '')
    .replace(/\b(AKIA|ASIA)[A-Z0-9]{16}\b/g, '[key id]')
    .replace(/(arn:aws[\w-]*:[\w-]*:[\w-]*:)\d{12}/g, '$1[account]')
    .replace(/[A-Za-z0-9+/=]{40,}/g, '[redacted]')
    .trim()
    .slice(0, 300);

interface SdkError {
  name?: string;
  message?: string;
  $metadata?: { httpStatusCode?: number };
  $response?: { headers?: Record<string, string | undefined> };
}

/** A failed `InvokeModel` as a ProviderError; an abort by the caller is passed on as it is. */
const providerError = (error: unknown, model: string, signal: AbortSignal): unknown => {
  if (signal.aborted) return error;
  const e = (isRecord(error) ? error : {}) as SdkError;
  const name = e.name ?? 'Error';
  const status = e.$metadata?.httpStatusCode;
  const retryAfter = parseRetryAfter(e.$response?.headers?.['retry-after'], new Date());
  const known = awsErrors[name];
  if (known) {
    const detail = safeAwsMessage(e.message ?? '');
    return new ProviderError(
      `${key} ${model} answered ${name} (${status ?? known.httpStatus})${detail ? `: ${detail}` : ''}`,
      status ?? known.httpStatus,
      { retryable: known.retryable, retryAfterSeconds: retryAfter },
    );
  }
  // Signature and token errors may quote what was signed: their text is never passed on.
  if (status !== undefined) return new ProviderError(`${key} ${model} answered ${name} (${status})`, status);
  if (name === 'CredentialsProviderError') return refuse('no AWS credentials could be loaded');
  // No answer at all (refused, reset, timed out): the service may answer when asked again.
  return new ProviderError(`${key} could not be reached: ${safeAwsMessage(e.message ?? name)}`, undefined, {
    retryable: true,
  });
};

// --- text ---------------------------------------------------------------------------------------

/** The image types Claude and Nova take, with Nova's `format` name. */
const imageFormats: Record<string, string> = {
  'image/png': 'png',
  'image/jpeg': 'jpeg',
  'image/gif': 'gif',
  'image/webp': 'webp',
};

const imageFormat = (image: MediaFile, model: string): string => {
  const format = imageFormats[image.contentType];
  if (!format) throw refuse(`${model} takes PNG, JPEG, GIF or WebP images, not ${image.contentType}`);
  return format;
};

type TextFamily = 'claude' | 'nova' | 'llama';

/** Claude models that refuse sampling parameters (a request with `temperature` is an error). */
const claudeWithoutSampling = /^anthropic\.claude-haiku-5-5/;

const textFamily = (model: string): TextFamily | undefined => {
  const id = bedrockBaseModelId(model);
  if (id.startsWith('anthropic.')) return 'claude';
  if (/^amazon\.nova-(?!canvas|reel|sonic)/.test(id) && !id.includes('embed')) return 'nova';
  if (id.startsWith('meta.llama')) return 'llama';
  return undefined;
};

/** Meta's Llama 3 chat template: a system turn when there is one, the user turn, the assistant's header. */
const llamaPrompt = (system: string | undefined, user: string): string =>
  [
    '<|begin_of_text|>',
    system ? `<|start_header_id|>system<|end_header_id|>\n\n${system}<|eot_id|>` : '',
    `<|start_header_id|>user<|end_header_id|>\n\n${user}<|eot_id|>`,
    '<|start_header_id|>assistant<|end_header_id|>\n\n',
  ].join('');

const textBody = (family: TextFamily, request: TextRequest): Record<string, unknown> => {
  const text = [request.prompt, ...(request.context ?? [])].join('\n\n');
  const images = request.images ?? [];
  if (family === 'claude') {
    if (request.temperature !== undefined && claudeWithoutSampling.test(bedrockBaseModelId(request.model)))
      throw refuse(`${request.model} takes no temperature: leave it unset`);
    const content = [
      ...images.map((image) => {
        imageFormat(image, request.model);
        return { type: 'image', source: { type: 'base64', media_type: image.contentType, data: base64(image.body) } };
      }),
      { type: 'text', text },
    ];
    return {
      anthropic_version: 'bedrock-2023-05-31',
      max_tokens: request.maxTokens ?? 1024,
      ...(request.system ? { system: request.system } : {}),
      messages: [{ role: 'user', content }],
      ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
    };
  }
  if (family === 'nova') {
    const content = [
      ...images.map((image) => ({
        image: { format: imageFormat(image, request.model), source: { bytes: base64(image.body) } },
      })),
      { text },
    ];
    const inferenceConfig: Record<string, number> = {};
    if (request.maxTokens !== undefined) inferenceConfig.maxTokens = request.maxTokens;
    if (request.temperature !== undefined) inferenceConfig.temperature = request.temperature;
    return {
      schemaVersion: 'messages-v1',
      ...(request.system ? { system: [{ text: request.system }] } : {}),
      messages: [{ role: 'user', content }],
      inferenceConfig,
    };
  }
  // Llama 3.2's vision prompt format is not one this adapter writes: an image is refused, not dropped.
  if (images.length) throw refuse(`${request.model} is sent no images by this adapter; use a Claude or Nova model`);
  return {
    prompt: llamaPrompt(request.system, text),
    max_gen_len: request.maxTokens ?? 512,
    ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
  };
};

/** The text blocks of an answer's `content`, joined. */
const joinText = (content: unknown, field: 'text'): string | undefined => {
  if (!Array.isArray(content)) return undefined;
  const parts = content.filter(isRecord).map((block) => block[field]);
  if (parts.length === 0 || !parts.every((part) => typeof part === 'string')) return undefined;
  return parts.join('');
};

/** Claude's text blocks, joined: thinking blocks (and any other type) before them are not the answer. */
const claudeText = (content: unknown): string | undefined => {
  if (!Array.isArray(content)) return undefined;
  const texts = content.filter((block) => isRecord(block) && block.type === 'text');
  return texts.length ? joinText(texts, 'text') : undefined;
};

const textAnswer = (family: TextFamily, json: Record<string, unknown>, model: string): string | undefined => {
  if (family === 'claude') {
    if (json.stop_reason === 'refusal') throw refuse(`${model} declined the request (stop_reason refusal)`);
    return claudeText(json.content);
  }
  if (family === 'nova') {
    const message = isRecord(json.output) && isRecord(json.output.message) ? json.output.message : undefined;
    return message ? joinText(message.content, 'text') : undefined;
  }
  return typeof json.generation === 'string' ? json.generation : undefined;
};

// --- images -------------------------------------------------------------------------------------

const stabilityTextToImage = /^stability\.(stable-image-core|stable-image-ultra|sd3-5-large)-/;
const novaCanvas = /^amazon\.nova-canvas-/;

/** The aspect ratios Stability's models take (`aspect_ratio`), nearest to width/height wins. */
const aspectRatios = ['21:9', '16:9', '3:2', '5:4', '1:1', '4:5', '2:3', '9:16', '9:21'] as const;
const ratioValue = (ratio: string) => {
  const [w = 1, h = 1] = ratio.split(':').map(Number);
  return w / h;
};
const nearestAspectRatio = (width: number, height: number): string => {
  const target = Math.log(width / height);
  let best: string = '1:1';
  for (const ratio of aspectRatios) {
    if (Math.abs(Math.log(ratioValue(ratio)) - target) < Math.abs(Math.log(ratioValue(best)) - target)) best = ratio;
  }
  return best;
};

/** A seed in a model's range (Stability 0–4294967294, Nova Canvas 0–858993459), one further per variation. */
const seedIn = (seed: number | undefined, index: number, size: number): number | undefined =>
  seed === undefined ? undefined : (Math.abs(Math.trunc(seed)) + index) % size;

/** The images of a Stability answer; a finish reason (a filter, an inference error) is a refusal. */
const stabilityImages = (json: Record<string, unknown>, model: string): MediaFile[] => {
  const reasons = Array.isArray(json.finish_reasons) ? json.finish_reasons : [];
  const reason = reasons.find((r) => r !== null);
  if (reason !== undefined) throw refuse(`${model} returned no image: ${String(reason).slice(0, 200)}`);
  return imagesOf(json, model);
};

const imagesOf = (json: Record<string, unknown>, model: string): MediaFile[] => {
  const images = Array.isArray(json.images) ? json.images : [];
  if (images.length === 0 || !images.every((image) => typeof image === 'string')) {
    const error = typeof json.error === 'string' ? `: ${safeAwsMessage(json.error)}` : '';
    throw refuse(`${model} answered without images${error}`);
  }
  return images.map((image: string) => {
    const body = fromBase64(image);
    const contentType = sniffContentType(body);
    if (!contentType?.startsWith('image/')) throw refuse(`${model} answered with bytes that are no image`);
    return { body, contentType };
  });
};

// --- image services -----------------------------------------------------------------------------

/** The Image Services model an edit runs on: the step's when it is one of the operation's, the control mode's for `control`. */
const imageServiceModel = (request: ImageEditRequest): string => {
  const prefix = profilePrefix.exec(request.model)?.[0] ?? '';
  const id = bedrockBaseModelId(request.model);
  const { operation } = request;
  if (operation === 'control') {
    if (!(bedrockModels.control as readonly string[]).includes(id))
      throw refuse(`${request.model} is not a control model (${bedrockModels.control.join(', ')})`);
    const sketch = request.controlMode === 'scribble' || request.controlMode === 'sketch';
    return `${prefix}${bedrockModels.control[sketch ? 0 : 1]}`;
  }
  if (operation === 'upscale' || operation === 'remove_background') {
    const models: readonly string[] = bedrockModels[operation];
    if (!models.includes(id))
      throw refuse(`${request.model} is not one of the ${operation} models (${models.join(', ')})`);
    return request.model;
  }
  // Depth and the material maps have no model on Bedrock: the capability is absent for them.
  throw new ProviderError(`${key} has no model for ${operation}`, undefined, { retryable: false });
};

const imageServiceBody = (model: string, request: ImageEditRequest): Record<string, unknown> => {
  const id = bedrockBaseModelId(model);
  const body: Record<string, unknown> = { image: base64(request.image.body), output_format: 'png' };
  // Fast upscale and background removal take the image alone; the others need a prompt.
  if (id === bedrockModels.upscale[0] || id === bedrockModels.remove_background[0]) return body;
  if (!request.prompt) throw refuse(`${model} needs a prompt`);
  body.prompt = request.prompt;
  if (request.operation === 'control' && request.strength !== undefined) body.control_strength = request.strength;
  if (request.seed !== undefined) body.seed = seedIn(request.seed, 0, 4294967295);
  return body;
};

// --- the provider -------------------------------------------------------------------------------

export const createBedrockProvider = (options: BedrockProviderOptions = {}): Provider => {
  const client = options.client ?? new BedrockRuntimeClient({ region: options.region, maxAttempts: 1 });

  const invoke = async (model: string, body: unknown, signal: AbortSignal): Promise<Record<string, unknown>> => {
    let bytes: Uint8Array;
    try {
      const output = await client.send(
        new InvokeModelCommand({
          modelId: model,
          contentType: 'application/json',
          accept: 'application/json',
          body: JSON.stringify(body),
        }),
        { abortSignal: signal },
      );
      bytes = output.body;
    } catch (error) {
      throw providerError(error, model, signal);
    }
    let json: unknown;
    try {
      json = JSON.parse(Buffer.from(bytes).toString('utf8'));
    } catch {
      json = undefined;
    }
    if (!isRecord(json)) throw refuse(`${model} answered with something that is not a JSON object`);
    return json;
  };

  return {
    key,

    async generateText(request: TextRequest): Promise<string> {
      const family = textFamily(request.model);
      if (!family)
        throw refuse(`${request.model} is no text model this adapter speaks (${bedrockModels.text.join(', ')})`);
      const json = await invoke(request.model, textBody(family, request), request.signal);
      const text = textAnswer(family, json, request.model);
      if (text === undefined) throw refuse(`${request.model} answered without text`);
      return text;
    },

    async embed(request: EmbedRequest): Promise<number[]> {
      const id = bedrockBaseModelId(request.model);
      let body: Record<string, unknown>;
      if (id.startsWith('amazon.titan-embed-text-v2:0')) {
        if (request.dimensions !== undefined && ![256, 512, 1024].includes(request.dimensions))
          throw refuse(`${request.model} makes 256, 512 or 1024 dimensions, not ${request.dimensions}`);
        body = { inputText: request.text, ...(request.dimensions ? { dimensions: request.dimensions } : {}) };
      } else if (id.startsWith('cohere.embed-')) {
        body = { texts: [request.text], input_type: 'search_document' };
      } else {
        throw refuse(`${request.model} is no embedding model this adapter speaks (${bedrockModels.embed.join(', ')})`);
      }
      const json = await invoke(request.model, body, request.signal);
      // Titan answers `embedding`; Cohere `embeddings`, a list per text (or by type, `embeddings.float`).
      const cohere = isRecord(json.embeddings) ? json.embeddings.float : json.embeddings;
      const vector = 'inputText' in body ? json.embedding : Array.isArray(cohere) ? cohere[0] : undefined;
      if (!Array.isArray(vector) || vector.length === 0 || !vector.every((x) => typeof x === 'number'))
        throw refuse(`${request.model} answered without an embedding`);
      if (request.dimensions !== undefined && vector.length !== request.dimensions)
        throw refuse(`${request.model} made ${vector.length} dimensions, ${request.dimensions} were asked`);
      return vector as number[];
    },

    async generateImage(request: ImageRequest): Promise<MediaFile[]> {
      const id = bedrockBaseModelId(request.model);
      if (novaCanvas.test(id)) {
        if (request.reference) throw refuse(`${request.model} is sent no reference image by this adapter`);
        const config: Record<string, number> = {
          numberOfImages: request.variations,
          width: request.width,
          height: request.height,
        };
        const seed = seedIn(request.seed, 0, 858993460);
        if (seed !== undefined) config.seed = seed;
        if (request.guidance !== undefined) config.cfgScale = request.guidance;
        const json = await invoke(
          request.model,
          {
            taskType: 'TEXT_IMAGE',
            textToImageParams: {
              text: request.prompt,
              ...(request.negativePrompt ? { negativeText: request.negativePrompt } : {}),
            },
            imageGenerationConfig: config,
          },
          request.signal,
        );
        return imagesOf(json, request.model);
      }
      if (!stabilityTextToImage.test(id))
        throw refuse(`${request.model} is no image model this adapter speaks (${bedrockModels.image.join(', ')})`);
      // Of these, only SD3.5 Large documents image-to-image.
      const imageToImage = request.reference !== undefined;
      if (imageToImage && !id.startsWith('stability.sd3-5-large-'))
        throw refuse(`${request.model} takes no reference image; stability.sd3-5-large-v1:0 does`);
      // One image per call: each variation is its own call, with its own seed when one is set.
      const calls = Array.from({ length: Math.max(1, request.variations) }, async (_, index) => {
        const body: Record<string, unknown> = { prompt: request.prompt, output_format: 'png' };
        if (request.negativePrompt) body.negative_prompt = request.negativePrompt;
        if (request.reference) {
          body.mode = 'image-to-image';
          body.image = base64(request.reference.body);
          body.strength = request.strength ?? 0.5;
        } else {
          body.aspect_ratio = nearestAspectRatio(request.width, request.height);
        }
        const seed = seedIn(request.seed, index, 4294967295);
        if (seed !== undefined) body.seed = seed;
        return stabilityImages(await invoke(request.model, body, request.signal), request.model);
      });
      return (await Promise.all(calls)).flat();
    },

    async editImage(request: ImageEditRequest): Promise<MediaFile> {
      const model = imageServiceModel(request);
      const json = await invoke(model, imageServiceBody(model, request), request.signal);
      const [image] = stabilityImages(json, model);
      return image as MediaFile;
    },
  };
};
