/**
 * The Bedrock adapter through the real SDK (`@aws-sdk/client-bedrock-runtime`, SigV4 and all) to a
 * stand-in of the Bedrock Runtime protocol over HTTP, pointed at by `AWS_ENDPOINT_URL_BEDROCK_RUNTIME`
 * as a deployed function would be at Bedrock. Credentials are fake and static.
 */
import { BedrockRuntimeClient } from '@aws-sdk/client-bedrock-runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodePng, encodePng, makeImage, pixelAt } from '../functions/nodes/media/index.ts';
import { bedrockBaseModelId, createBedrockProvider } from '../functions/nodes/providers/bedrock.ts';
import { type MediaFile, ProviderError } from '../functions/nodes/providers/types.ts';
import { bedrockDefaultModels } from '../platform/providers.ts';
import type { RunMode } from '../schemas/run-words.ts';
import { type BedrockStandIn, startBedrockStandIn } from './stand-ins/bedrock.ts';
import { bedrockProcessEnv, fakeAwsCredentials } from './support/provider-steps.ts';

const { AWS_ACCESS_KEY_ID: accessKeyId, AWS_SECRET_ACCESS_KEY: secretAccessKey } = fakeAwsCredentials;
const signal = new AbortController().signal;
const call = (model: string) => ({ model, mode: 'production' as RunMode, signal });
const png = (width: number, height: number): MediaFile => ({
  body: encodePng(makeImage(width, height, (x, y) => [x * 40, y * 40, 200, 255])),
  contentType: 'image/png',
});
const sizeOf = (file: MediaFile) => {
  const image = decodePng(file.body);
  return `${image.width}x${image.height}`;
};
const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => expect.unreachable('it succeeded'),
    (e: unknown) => e,
  );

let standIn: BedrockStandIn;
let restoreEnv: () => void;

beforeAll(async () => {
  standIn = await startBedrockStandIn();
  restoreEnv = bedrockProcessEnv(standIn.url);
});
afterAll(async () => {
  restoreEnv();
  await standIn.close();
});

/** The provider as a function builds it: a region, the endpoint from the environment. */
const bedrock = () => createBedrockProvider({ region: 'us-west-2' });
const last = () => standIn.requests.at(-1)!;

describe('bedrock text (InvokeModel)', () => {
  it('reaches the endpoint AWS_ENDPOINT_URL_BEDROCK_RUNTIME names, SigV4-signed for bedrock, the model id URL-encoded', async () => {
    const text = await bedrock().generateText!({
      ...call('anthropic.claude-3-haiku-20240307-v1:0'),
      prompt: 'hi',
      context: ['more'],
      system: 'be brief',
      maxTokens: 50,
      temperature: 0.2,
    });
    expect(text).toBe('claude (be brief) heard: hi\n\nmore');
    const request = last();
    expect(request.path).toBe('/model/anthropic.claude-3-haiku-20240307-v1%3A0/invoke');
    expect(request.headers.authorization).toMatch(
      new RegExp(`^AWS4-HMAC-SHA256 Credential=${accessKeyId}/\\d{8}/us-west-2/bedrock/aws4_request`),
    );
    expect(request.headers['content-type']).toBe('application/json');
    expect(request.body).toEqual({
      anthropic_version: 'bedrock-2023-05-31',
      max_tokens: 50,
      system: 'be brief',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'hi\n\nmore' }] }],
      temperature: 0.2,
    });
  });

  it('Claude Haiku 5.5 (the catalogue default): the text block after its thinking, no temperature, a refusal is final', async () => {
    const model = bedrockDefaultModels.text;
    expect(model).toBe('us.anthropic.claude-haiku-5-5');
    const text = await bedrock().generateText!({ ...call(model), prompt: 'hi' });
    expect(text).toBe('claude heard: hi');
    expect(last().modelId).toBe(model);
    expect(last().body).not.toHaveProperty('temperature');
    // The model refuses sampling parameters; the adapter says so before calling.
    const sent = standIn.requests.length;
    await expect(bedrock().generateText!({ ...call(model), prompt: 'hi', temperature: 0.3 })).rejects.toMatchObject({
      message: `bedrock: ${model} takes no temperature: leave it unset`,
      retryable: false,
    });
    expect(standIn.requests.length).toBe(sent);
    await expect(bedrock().generateText!({ ...call(model), prompt: 'please decline this' })).rejects.toMatchObject({
      message: `bedrock: ${model} declined the request (stop_reason refusal)`,
      retryable: false,
    });
  });

  it('Claude sees images as base64 image blocks (VisionInterrogator), through an inference profile id', async () => {
    const image = png(3, 2);
    const text = await bedrock().generateText!({
      ...call('us.anthropic.claude-sonnet-4-20250514-v1:0'),
      prompt: 'what is this?',
      images: [image],
    });
    expect(text).toBe('claude heard: what is this? [saw 3x2]');
    expect(last().modelId).toBe('us.anthropic.claude-sonnet-4-20250514-v1:0');
    expect(last().body).toEqual({
      anthropic_version: 'bedrock-2023-05-31',
      max_tokens: 1024,
      messages: [
        {
          role: 'user',
          content: [
            {
              type: 'image',
              source: { type: 'base64', media_type: 'image/png', data: Buffer.from(image.body).toString('base64') },
            },
            { type: 'text', text: 'what is this?' },
          ],
        },
      ],
    });
    await expect(
      bedrock().generateText!({
        ...call('anthropic.claude-3-haiku-20240307-v1:0'),
        prompt: 'x',
        images: [{ body: new Uint8Array([1]), contentType: 'image/tiff' }],
      }),
    ).rejects.toThrow(
      'bedrock: anthropic.claude-3-haiku-20240307-v1:0 takes PNG, JPEG, GIF or WebP images, not image/tiff',
    );
  });

  it('Nova takes the messages-v1 schema with inferenceConfig and image blocks', async () => {
    const image = png(4, 4);
    const text = await bedrock().generateText!({
      ...call('amazon.nova-lite-v1:0'),
      prompt: 'describe',
      system: 'terse',
      images: [image],
      maxTokens: 64,
      temperature: 0.5,
    });
    expect(text).toBe('nova (terse) heard: describe [saw 4x4]');
    expect(last().body).toEqual({
      schemaVersion: 'messages-v1',
      system: [{ text: 'terse' }],
      messages: [
        {
          role: 'user',
          content: [
            { image: { format: 'png', source: { bytes: Buffer.from(image.body).toString('base64') } } },
            { text: 'describe' },
          ],
        },
      ],
      inferenceConfig: { maxTokens: 64, temperature: 0.5 },
    });
  });

  it('Llama takes the Llama 3 chat template as prompt, and max_gen_len', async () => {
    const text = await bedrock().generateText!({
      ...call('meta.llama3-8b-instruct-v1:0'),
      prompt: 'hello',
      system: 'you are kind',
      maxTokens: 99,
    });
    expect(text).toBe('llama heard: hello');
    expect(last().body).toEqual({
      prompt:
        '<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nyou are kind<|eot_id|>' +
        '<|start_header_id|>user<|end_header_id|>\n\nhello<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n',
      max_gen_len: 99,
    });
    await expect(
      bedrock().generateText!({ ...call('meta.llama3-2-11b-instruct-v1:0'), prompt: 'x', images: [png(1, 1)] }),
    ).rejects.toMatchObject({ retryable: false });
  });

  it('refuses a model of no family it speaks, before any call', async () => {
    const count = standIn.requests.length;
    const error = await failure(bedrock().generateText!({ ...call('mistral.mistral-7b-instruct-v0:2'), prompt: 'x' }));
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({ retryable: false });
    expect(standIn.requests.length).toBe(count);
    expect(bedrockBaseModelId('apac.amazon.nova-pro-v1:0')).toBe('amazon.nova-pro-v1:0');
  });
});

describe('bedrock embeddings', () => {
  it('Titan Text Embeddings V2 with the dimensions asked (256, 512, 1024 only)', async () => {
    const vector = await bedrock().embed!({ ...call('amazon.titan-embed-text-v2:0'), text: 'a fox', dimensions: 256 });
    expect(vector).toHaveLength(256);
    expect(Math.hypot(...vector)).toBeCloseTo(1, 6);
    expect(last().body).toEqual({ inputText: 'a fox', dimensions: 256 });
    expect(await bedrock().embed!({ ...call('amazon.titan-embed-text-v2:0'), text: 'a fox' })).toHaveLength(1024);
    expect(last().body).toEqual({ inputText: 'a fox' });
    const count = standIn.requests.length;
    await expect(
      bedrock().embed!({ ...call('amazon.titan-embed-text-v2:0'), text: 'a fox', dimensions: 100 }),
    ).rejects.toMatchObject({
      retryable: false,
      message: 'bedrock: amazon.titan-embed-text-v2:0 makes 256, 512 or 1024 dimensions, not 100',
    });
    expect(standIn.requests.length).toBe(count);
  });

  it('Cohere Embed takes texts and input_type, and answers embeddings', async () => {
    const vector = await bedrock().embed!({ ...call('cohere.embed-multilingual-v3'), text: 'ein Fuchs' });
    expect(vector).toHaveLength(1024);
    expect(last().body).toEqual({ texts: ['ein Fuchs'], input_type: 'search_document' });
  });
});

describe('bedrock images', () => {
  it('Stable Image Core: prompt, negative_prompt, aspect_ratio from the size, seed per variation, PNG', async () => {
    const images = await bedrock().generateImage!({
      ...call('stability.stable-image-core-v1:1'),
      prompt: 'a fox',
      negativePrompt: 'blur',
      width: 1344,
      height: 768,
      steps: 20,
      variations: 2,
      seed: 41,
    });
    expect(images.map((image) => [image.contentType, sizeOf(image)])).toEqual([
      ['image/png', '16x9'],
      ['image/png', '16x9'],
    ]);
    const bodies = standIn.requests.slice(-2).map((r) => r.body);
    expect(bodies).toEqual(
      expect.arrayContaining([
        { prompt: 'a fox', negative_prompt: 'blur', aspect_ratio: '16:9', seed: 41, output_format: 'png' },
        { prompt: 'a fox', negative_prompt: 'blur', aspect_ratio: '16:9', seed: 42, output_format: 'png' },
      ]),
    );
    await bedrock().generateImage!({
      ...call('stability.stable-image-ultra-v1:1'),
      prompt: 'tall',
      width: 640,
      height: 1536,
      steps: 1,
      variations: 1,
    });
    expect(last().body).toEqual({ prompt: 'tall', aspect_ratio: '9:21', output_format: 'png' });
  });

  it('a finish reason (a filtered prompt) is a refusal, not retried', async () => {
    const error = await failure(
      bedrock().generateImage!({
        ...call('stability.sd3-5-large-v1:0'),
        prompt: 'something forbidden',
        width: 1024,
        height: 1024,
        steps: 1,
        variations: 1,
      }),
    );
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({
      retryable: false,
      message: 'bedrock: stability.sd3-5-large-v1:0 returned no image: Filter reason: prompt',
    });
  });

  it('SD3.5 Large takes a reference image (image-to-image); Core refuses one', async () => {
    const reference = png(5, 3);
    const [image] = await bedrock().generateImage!({
      ...call('stability.sd3-5-large-v1:0'),
      prompt: 'repaint',
      width: 1024,
      height: 1024,
      steps: 1,
      variations: 1,
      reference,
      strength: 0.3,
    });
    expect(sizeOf(image!)).toBe('5x3');
    expect(last().body).toEqual({
      prompt: 'repaint',
      output_format: 'png',
      mode: 'image-to-image',
      image: Buffer.from(reference.body).toString('base64'),
      strength: 0.3,
    });
    await expect(
      bedrock().generateImage!({
        ...call('stability.stable-image-core-v1:1'),
        prompt: 'x',
        width: 64,
        height: 64,
        steps: 1,
        variations: 1,
        reference,
      }),
    ).rejects.toMatchObject({ retryable: false });
  });

  it('Nova Canvas: TEXT_IMAGE with textToImageParams and imageGenerationConfig', async () => {
    const images = await bedrock().generateImage!({
      ...call('amazon.nova-canvas-v1:0'),
      prompt: 'a lighthouse',
      negativePrompt: 'people',
      width: 1024,
      height: 512,
      steps: 1,
      variations: 2,
      seed: 7,
      guidance: 6.5,
    });
    expect(images.map(sizeOf)).toEqual(['16x8', '16x8']);
    expect(last().body).toEqual({
      taskType: 'TEXT_IMAGE',
      textToImageParams: { text: 'a lighthouse', negativeText: 'people' },
      imageGenerationConfig: { numberOfImages: 2, width: 1024, height: 512, seed: 7, cfgScale: 6.5 },
    });
  });
});

describe('bedrock image services (editImage)', () => {
  const image = png(4, 3);
  const data = Buffer.from(image.body).toString('base64');
  const edit = { mode: 'production' as RunMode, signal, image };

  it('upscale: fast takes the image alone; conservative and creative need a prompt', async () => {
    const fast = await bedrock().editImage!({
      ...edit,
      model: 'us.stability.stable-fast-upscale-v1:0',
      operation: 'upscale',
      scale: 4,
    });
    expect(sizeOf(fast)).toBe('16x12');
    expect(last().modelId).toBe('us.stability.stable-fast-upscale-v1:0');
    expect(last().body).toEqual({ image: data, output_format: 'png' });

    const count = standIn.requests.length;
    await expect(
      bedrock().editImage!({ ...edit, model: 'stability.stable-conservative-upscale-v1:0', operation: 'upscale' }),
    ).rejects.toMatchObject({
      retryable: false,
      message: 'bedrock: stability.stable-conservative-upscale-v1:0 needs a prompt',
    });
    expect(standIn.requests.length).toBe(count);

    await bedrock().editImage!({
      ...edit,
      model: 'stability.stable-creative-upscale-v1:0',
      operation: 'upscale',
      prompt: 'a sharp photo',
      seed: 5,
    });
    expect(last().body).toEqual({ image: data, output_format: 'png', prompt: 'a sharp photo', seed: 5 });
    await expect(
      bedrock().editImage!({ ...edit, model: 'stability.stable-image-core-v1:1', operation: 'upscale' }),
    ).rejects.toMatchObject({ retryable: false });
  });

  it('remove_background', async () => {
    // A red subject on a white ground.
    const subject = encodePng(
      makeImage(5, 5, (x, y) => (x % 4 === 0 || y % 4 === 0 ? [255, 255, 255, 255] : [220, 20, 20, 255])),
    );
    const cut = decodePng(
      (
        await bedrock().editImage!({
          ...edit,
          image: { body: subject, contentType: 'image/png' },
          model: 'stability.stable-image-remove-background-v1:0',
          operation: 'remove_background',
        })
      ).body,
    );
    expect([cut.width, pixelAt(cut, 0, 0)[3], pixelAt(cut, 2, 2)[3]]).toEqual([5, 0, 255]);
    expect(last().body).toEqual({ image: Buffer.from(subject).toString('base64'), output_format: 'png' });
  });

  it('control: sketch for scribble and sketch, structure otherwise, with control_strength', async () => {
    await bedrock().editImage!({
      ...edit,
      model: 'us.stability.stable-image-control-structure-v1:0',
      operation: 'control',
      controlMode: 'scribble',
      prompt: 'a castle',
      strength: 0.6,
    });
    expect(last().modelId).toBe('us.stability.stable-image-control-sketch-v1:0');
    expect(last().body).toEqual({ image: data, output_format: 'png', prompt: 'a castle', control_strength: 0.6 });
    const structured = await bedrock().editImage!({
      ...edit,
      model: 'stability.stable-image-control-sketch-v1:0',
      operation: 'control',
      controlMode: 'canny',
      prompt: 'a castle',
    });
    expect(sizeOf(structured)).toBe('4x3');
    expect(last().modelId).toBe('stability.stable-image-control-structure-v1:0');
    expect(last().body).toEqual({ image: data, output_format: 'png', prompt: 'a castle' });
  });

  it('depth and the material maps have no model on Bedrock', async () => {
    for (const operation of ['depth', 'albedo', 'normal', 'roughness'] as const) {
      const error = await failure(
        bedrock().editImage!({ ...edit, model: 'stability.stable-fast-upscale-v1:0', operation }),
      );
      expect(error).toBeInstanceOf(ProviderError);
      expect(error).toMatchObject({ retryable: false, message: `bedrock has no model for ${operation}` });
    }
  });
});

describe('bedrock errors', () => {
  const text = (model = 'anthropic.claude-3-haiku-20240307-v1:0', s = signal) =>
    bedrock().generateText!({ model, mode: 'production', signal: s, prompt: 'x' });

  it('throttling, unavailability, a server error, a model timeout and a model not ready are retryable', async () => {
    const cases = [
      ['ThrottlingException', 429],
      ['ServiceUnavailableException', 503],
      ['InternalServerException', 500],
      ['ModelTimeoutException', 408],
      ['ModelNotReadyException', 429],
    ] as const;
    for (const [name, status] of cases) {
      standIn.failNextWith(name, status, { message: 'Too many requests, please wait before trying again.' });
      const error = await failure(text());
      expect(error).toBeInstanceOf(ProviderError);
      expect(error).toMatchObject({
        status,
        retryable: true,
        message: `bedrock anthropic.claude-3-haiku-20240307-v1:0 answered ${name} (${status}): Too many requests, please wait before trying again.`,
      });
    }
    // Exactly one attempt each: the queue, not the SDK, retries.
    standIn.failNextWith('ThrottlingException', 429, { headers: { 'Retry-After': '12' } });
    const before = standIn.requests.length;
    const throttled = await failure(text());
    expect(standIn.requests.length).toBe(before + 1);
    expect(throttled).toMatchObject({ retryable: true, retryAfterSeconds: 12 });
  });

  it("validation, access and a missing model are not retryable, with AWS's message and the model named", async () => {
    const error = await failure(bedrock().embed!({ ...call('cohere.embed-english-v3'), text: 'x'.repeat(3000) }));
    expect(error).toMatchObject({
      status: 400,
      retryable: false,
      message:
        'bedrock cohere.embed-english-v3 answered ValidationException (400): Malformed input request: #/texts/0: expected maxLength: 2048, actual: 3000, please reformat your input and try again.',
    });
    standIn.failNextWith('AccessDeniedException', 403, {
      message:
        'User: arn:aws:sts::123456789012:assumed-role/step-executor/fn is not authorized to perform: bedrock:InvokeModel',
    });
    expect(await failure(text())).toMatchObject({
      status: 403,
      retryable: false,
      message:
        'bedrock anthropic.claude-3-haiku-20240307-v1:0 answered AccessDeniedException (403): User: arn:aws:sts::[account]:assumed-role/step-executor/fn is not authorized to perform: bedrock:InvokeModel',
    });
    standIn.failNextWith('ResourceNotFoundException', 404, { message: 'Model not found.' });
    expect(await failure(text('anthropic.claude-gone-v1:0'))).toMatchObject({ status: 404, retryable: false });
  });

  it('never passes on credentials: a signature or token error shows its name only', async () => {
    standIn.failNextWith('UnrecognizedClientException', 403, {
      message: `The security token included in the request is invalid. ${accessKeyId} ${secretAccessKey}`,
    });
    const error = (await failure(text())) as ProviderError;
    expect(error.message).toBe(
      'bedrock anthropic.claude-3-haiku-20240307-v1:0 answered UnrecognizedClientException (403)',
    );
    standIn.failNextWith('ValidationException', 400, { message: `bad ${accessKeyId} ${secretAccessKey}` });
    const quoted = (await failure(text())) as ProviderError;
    expect(quoted.message).not.toContain(accessKeyId);
    expect(quoted.message).not.toContain(secretAccessKey);
  });

  it('an endpoint that does not answer is retryable', async () => {
    const client = new BedrockRuntimeClient({
      region: 'us-west-2',
      endpoint: 'http://127.0.0.1:1',
      credentials: { accessKeyId, secretAccessKey },
      maxAttempts: 1,
    });
    const error = await failure(
      createBedrockProvider({ client }).generateText!({
        ...call('anthropic.claude-3-haiku-20240307-v1:0'),
        prompt: 'x',
      }),
    );
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({ retryable: true });
    expect((error as ProviderError).message).toMatch(/^bedrock could not be reached/);
  });

  it('stops when the step is aborted, passing the abort on', async () => {
    standIn.holdNext();
    const before = standIn.requests.length;
    const controller = new AbortController();
    const pending = failure(text('anthropic.claude-3-haiku-20240307-v1:0', controller.signal));
    const deadline = Date.now() + 30_000;
    while (standIn.requests.length === before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect(standIn.requests.length).toBe(before + 1);
    controller.abort();
    const error = await pending;
    expect(error).not.toBeInstanceOf(ProviderError);
    expect((error as Error).name).toBe('AbortError');
  });
});
