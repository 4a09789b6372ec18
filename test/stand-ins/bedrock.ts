/**
 * A stand-in of the Amazon Bedrock Runtime REST-JSON protocol, for the real SDK to talk to over HTTP
 * (`AWS_ENDPOINT_URL_BEDROCK_RUNTIME`, or a client's `endpoint`). The SDK's Bedrock Runtime client
 * speaks HTTP/2 (its default handler is `NodeHttp2Handler`), so this is a `node:http2` server, without
 * TLS (an `http://` endpoint: HTTP/2 by prior knowledge). It implements `InvokeModel`,
 * `POST /model/{modelId}/invoke` with the model id URL-encoded, as the service documents it (sources
 * in functions/nodes/providers/bedrock.ts, read 2026-11-26):
 * - a SigV4 `Authorization` header scoped to the signing name `bedrock` must be present (the
 *   signature itself is not checked);
 * - each model family answers its own documented body, with deterministic content: PNG images,
 *   embeddings of the asked size, text that says what arrived;
 * - an error is the status code, an `x-amzn-ErrorType` header and a JSON `{"message": …}` body, which
 *   is how the SDK finds the exception's name and message.
 * Requests are recorded for assertions; `failNextWith` injects an error, `holdNext` an answer that never comes.
 */
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type Http2ServerResponse, type Http2Session, type IncomingHttpHeaders } from 'node:http2';
import type { AddressInfo } from 'node:net';
import {
  decodePng,
  encodePng,
  makeImage,
  type RgbaImage,
  removeBackground,
  upscale,
} from '../../functions/nodes/media/index.ts';

export interface BedrockStandInRequest {
  /** The model id as the SDK sent it, decoded (`us.anthropic.claude-…:0`). */
  modelId: string;
  /** The raw path, still encoded. */
  path: string;
  headers: IncomingHttpHeaders;
  /** The parsed JSON body (undefined when it was not JSON). */
  body: Record<string, unknown> | undefined;
}

export interface BedrockStandIn {
  /** `http://127.0.0.1:<port>`: the endpoint to give the SDK. */
  url: string;
  requests: BedrockStandInRequest[];
  /** The next request is answered with this exception (e.g. `ThrottlingException`, 429). */
  failNextWith(name: string, status: number, options?: { message?: string; headers?: Record<string, string> }): void;
  /** The next request is recorded and never answered (until the caller gives up or the stand-in closes). */
  holdNext(): void;
  /**
   * The next Nova Canvas answer carries these files' bytes as its images, unchanged: what a model
   * that signs its images (a C2PA manifest in each file) sends.
   */
  imagesNext(images: Uint8Array[]): void;
  close(): Promise<void>;
}

class AwsError extends Error {
  readonly errorType: string;
  readonly status: number;
  constructor(errorType: string, status: number, message: string) {
    super(message);
    this.errorType = errorType;
    this.status = status;
  }
}

const malformed = (detail: string) =>
  new AwsError(
    'ValidationException',
    400,
    `Malformed input request: ${detail}, please reformat your input and try again.`,
  );

const requireKeys = (body: Record<string, unknown>, keys: string[]) => {
  for (const key of keys) if (body[key] === undefined) throw malformed(`#: required key [${key}] not found`);
};

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const png = (image: RgbaImage) => Buffer.from(encodePng(image)).toString('base64');

/** A solid image whose colour follows `seed`. */
const solid = (width: number, height: number, seed: number) =>
  makeImage(width, height, () => [seed & 0xff, (seed >> 8) & 0xff, (seed >> 16) & 0xff, 255]);

const inputImage = (value: unknown, field = 'image'): RgbaImage => {
  if (typeof value !== 'string') throw malformed(`#: required key [${field}] not found`);
  try {
    return decodePng(new Uint8Array(Buffer.from(value, 'base64')));
  } catch {
    throw new AwsError('ValidationException', 400, `The ${field} is not a valid PNG, JPEG or WebP image.`);
  }
};

/** A deterministic vector of `size` numbers from `text`, normalised. */
const vectorOf = (text: string, size: number): number[] => {
  const hash = createHash('sha256').update(text).digest();
  const raw = Array.from({ length: size }, (_, i) => ((hash[i % hash.length] as number) ^ (i & 0xff)) / 255 - 0.5);
  const norm = Math.hypot(...raw) || 1;
  return raw.map((x) => x / norm);
};

const stabilityAnswer = (images: RgbaImage[], seed: number) => ({
  seeds: images.map(() => seed),
  finish_reasons: images.map(() => null),
  images: images.map(png),
});

/** What the user turn of a Claude or Nova message carries: its text and its images' sizes. */
const describe = (text: string, images: RgbaImage[]) =>
  images.length ? `${text} [saw ${images.map((i) => `${i.width}x${i.height}`).join(', ')}]` : text;

/**
 * Claude Haiku 5.5 as Anthropic documents it (platform.claude.com models/haiku-5-5/migration-guide,
 * read 2026-12-07): sampling parameters are an error, adaptive thinking is on by default (a thinking
 * block comes before the text), and a safety classifier may decline (`stop_reason: "refusal"`),
 * which this stand-in does for a prompt saying `decline this`.
 */
const claudeWithoutSampling = /^anthropic\.claude-haiku-5-5/;

const claude = (model: string, body: Record<string, unknown>) => {
  requireKeys(body, ['anthropic_version', 'max_tokens', 'messages']);
  if (body.anthropic_version !== 'bedrock-2023-05-31') throw malformed('#/anthropic_version: unknown version');
  const thinks = claudeWithoutSampling.test(model);
  if (thinks) {
    for (const key of ['temperature', 'top_p', 'top_k'])
      if (key in body) throw malformed(`#/${key}: not supported by this model`);
  }
  const messages = body.messages as { role: string; content: unknown }[];
  const last = messages.at(-1);
  const blocks =
    typeof last?.content === 'string' ? [{ type: 'text', text: last.content }] : (last?.content as unknown[]);
  let text = '';
  const images: RgbaImage[] = [];
  for (const block of blocks.filter(isObject)) {
    if (block.type === 'text') text += String(block.text);
    else if (block.type === 'image' && isObject(block.source)) {
      if (block.source.type !== 'base64' || block.source.media_type !== 'image/png')
        throw malformed('#/messages/0/content: image source must be base64 image/png here');
      images.push(inputImage(block.source.data, 'source.data'));
    }
  }
  const answer = `claude ${body.system ? `(${String(body.system)}) ` : ''}heard: ${describe(text, images)}`;
  const declined = thinks && text.includes('decline this');
  return {
    id: 'msg_bdrk_standin',
    type: 'message',
    role: 'assistant',
    model,
    content: declined
      ? []
      : [
          ...(thinks ? [{ type: 'thinking', thinking: 'The user wants an answer.', signature: 'c2lnbmF0dXJl' }] : []),
          { type: 'text', text: answer },
        ],
    stop_reason: declined ? 'refusal' : 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: text.length, output_tokens: answer.length },
  };
};

const nova = (body: Record<string, unknown>) => {
  requireKeys(body, ['messages']);
  const messages = body.messages as { role: string; content: Record<string, unknown>[] }[];
  let text = '';
  const images: RgbaImage[] = [];
  for (const block of messages.at(-1)?.content ?? []) {
    if (typeof block.text === 'string') text += block.text;
    if (isObject(block.image)) {
      const source = block.image.source;
      if (block.image.format !== 'png' || !isObject(source))
        throw malformed('#/messages/0/content/0/image: png bytes expected here');
      images.push(inputImage(source.bytes, 'image.source.bytes'));
    }
  }
  const system = Array.isArray(body.system) && isObject(body.system[0]) ? `(${String(body.system[0].text)}) ` : '';
  const answer = `nova ${system}heard: ${describe(text, images)}`;
  return {
    output: { message: { role: 'assistant', content: [{ text: answer }] } },
    stopReason: 'end_turn',
    usage: { inputTokens: text.length, outputTokens: answer.length, totalTokens: text.length + answer.length },
  };
};

const llama = (body: Record<string, unknown>) => {
  requireKeys(body, ['prompt']);
  const prompt = String(body.prompt);
  const user = /<\|start_header_id\|>user<\|end_header_id\|>\n\n([\s\S]*?)<\|eot_id\|>/.exec(prompt)?.[1] ?? prompt;
  const generation = `llama heard: ${user}`;
  return {
    generation,
    prompt_token_count: prompt.length,
    generation_token_count: generation.length,
    stop_reason: 'stop',
  };
};

const titanEmbed = (body: Record<string, unknown>) => {
  requireKeys(body, ['inputText']);
  const dimensions = body.dimensions ?? 1024;
  if (![256, 512, 1024].includes(dimensions as number))
    throw malformed(`#/dimensions: ${String(dimensions)} is not a valid enum value`);
  const text = String(body.inputText);
  return { embedding: vectorOf(text, dimensions as number), inputTextTokenCount: text.split(/\s+/).length };
};

const cohereEmbed = (body: Record<string, unknown>) => {
  requireKeys(body, ['texts', 'input_type']);
  const texts = body.texts as string[];
  texts.forEach((text, i) => {
    if (text.length > 2048) throw malformed(`#/texts/${i}: expected maxLength: 2048, actual: ${text.length}`);
  });
  return {
    id: 'standin-embedding',
    response_type: 'embeddings_floats',
    texts,
    embeddings: texts.map((text) => vectorOf(text, 1024)),
  };
};

const stabilityTextToImage = (body: Record<string, unknown>) => {
  requireKeys(body, ['prompt']);
  const seed = typeof body.seed === 'number' ? body.seed : 0;
  // A prompt that asks for it is filtered, as the service answers a filtered one: no image, a reason.
  if (String(body.prompt).includes('forbidden')) return { seeds: [seed], finish_reasons: ['Filter reason: prompt'] };
  if (body.mode === 'image-to-image') {
    requireKeys(body, ['image', 'strength']);
    const source = inputImage(body.image);
    return stabilityAnswer([solid(source.width, source.height, seed)], seed);
  }
  const [w, h] = String(body.aspect_ratio ?? '1:1')
    .split(':')
    .map(Number);
  return stabilityAnswer([solid(w ?? 1, h ?? 1, seed)], seed);
};

const novaCanvas = (body: Record<string, unknown>) => {
  requireKeys(body, ['taskType']);
  if (body.taskType !== 'TEXT_IMAGE' || !isObject(body.textToImageParams))
    throw malformed('#/taskType: TEXT_IMAGE expected');
  if (typeof body.textToImageParams.text !== 'string')
    throw malformed('#/textToImageParams: required key [text] not found');
  const config = isObject(body.imageGenerationConfig) ? body.imageGenerationConfig : {};
  const count = Number(config.numberOfImages ?? 1);
  const width = Number(config.width ?? 1024);
  const height = Number(config.height ?? 1024);
  const seed = Number(config.seed ?? 12);
  // Small stand-ins of the size asked: one pixel per 64.
  return {
    images: Array.from({ length: count }, (_, i) =>
      png(solid(Math.max(1, Math.round(width / 64)), Math.max(1, Math.round(height / 64)), seed + i)),
    ),
  };
};

const imageService = (id: string, body: Record<string, unknown>) => {
  const source = inputImage(body.image);
  if (body.output_format !== undefined && !['jpeg', 'png', 'webp'].includes(String(body.output_format)))
    throw malformed('#/output_format: not one of jpeg, png, webp');
  const needsPrompt = !/fast-upscale|remove-background/.test(id);
  if (needsPrompt) requireKeys(body, ['prompt']);
  const seed = typeof body.seed === 'number' ? body.seed : 7;
  if (id.includes('upscale')) return stabilityAnswer([upscale(source, 4)], seed);
  if (id.includes('remove-background')) return stabilityAnswer([removeBackground(source)], seed);
  // Control: an image the size of the guide, its shade from the control strength.
  const strength = typeof body.control_strength === 'number' ? body.control_strength : 0.7;
  return stabilityAnswer([solid(source.width, source.height, Math.round(strength * 255))], seed);
};

const answerFor = (modelId: string, body: Record<string, unknown>, images?: Uint8Array[]): unknown => {
  const id = modelId.replace(/^(us|eu|apac|global)\./, '');
  if (id.startsWith('anthropic.')) return claude(id, body);
  if (id.startsWith('amazon.nova-canvas-')) {
    const answer = novaCanvas(body);
    return images ? { images: images.map((image) => Buffer.from(image).toString('base64')) } : answer;
  }
  if (id.startsWith('amazon.nova-')) return nova(body);
  if (id.startsWith('meta.llama')) return llama(body);
  if (id === 'amazon.titan-embed-text-v2:0') return titanEmbed(body);
  if (id.startsWith('cohere.embed-')) return cohereEmbed(body);
  if (/^stability\.(stable-image-core|stable-image-ultra|sd3-5-large)-/.test(id)) return stabilityTextToImage(body);
  if (
    /^stability\.(stable-(fast|conservative|creative)-upscale|stable-image-remove-background|stable-image-control-(sketch|structure))-v1:0$/.test(
      id,
    )
  )
    return imageService(id, body);
  throw new AwsError('ValidationException', 400, 'The provided model identifier is invalid.');
};

const sigV4 =
  /^AWS4-HMAC-SHA256 Credential=[^/]+\/\d{8}\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=[^,]+, ?Signature=[0-9a-f]{64}$/;

export const startBedrockStandIn = async (): Promise<BedrockStandIn> => {
  const requests: BedrockStandInRequest[] = [];
  const failures: { name: string; status: number; message?: string; headers?: Record<string, string> }[] = [];
  let hold = false;
  let nextImages: Uint8Array[] | undefined;

  const send = (res: Http2ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}) =>
    res
      .writeHead(status, {
        'content-type': 'application/json',
        'x-amzn-RequestId': '6f1c2a8e-0000-4000-8000-000000000000',
        ...headers,
      })
      .end(JSON.stringify(value));
  const sendError = (res: Http2ServerResponse, error: AwsError, headers: Record<string, string> = {}) =>
    send(res, error.status, { message: error.message }, { 'x-amzn-ErrorType': error.errorType, ...headers });

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const path = req.url ?? '';
      const match = /^\/model\/([^/]+)\/invoke$/.exec(path);
      let body: Record<string, unknown> | undefined;
      try {
        const parsed: unknown = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        body = isObject(parsed) ? parsed : undefined;
      } catch {
        body = undefined;
      }
      const modelId = match ? decodeURIComponent(match[1] as string) : '';
      requests.push({ modelId, path, headers: req.headers, body });
      if (hold) {
        hold = false;
        return;
      }
      const failure = failures.shift();
      if (failure)
        return sendError(
          res,
          new AwsError(failure.name, failure.status, failure.message ?? `${failure.name} from the stand-in`),
          failure.headers,
        );
      if (req.method !== 'POST' || !match)
        return sendError(res, new AwsError('UnknownOperationException', 404, 'No such operation.'));
      const authorization = req.headers.authorization;
      if (!authorization)
        return sendError(res, new AwsError('MissingAuthenticationTokenException', 403, 'Missing Authentication Token'));
      const scope = sigV4.exec(authorization);
      if (!scope || !req.headers['x-amz-date'])
        return sendError(res, new AwsError('InvalidSignatureException', 403, 'The request signature is malformed.'));
      if (scope[2] !== 'bedrock')
        return sendError(
          res,
          new AwsError('InvalidSignatureException', 403, "Credential should be scoped to correct service: 'bedrock'."),
        );
      if (!String(req.headers['content-type']).startsWith('application/json'))
        return sendError(
          res,
          new AwsError('ValidationException', 400, 'You must specify application/json as the content type.'),
        );
      if (!body) return sendError(res, malformed('#: the body is not a JSON object'));
      try {
        const images = /nova-canvas-/.test(modelId) ? nextImages : undefined;
        if (images) nextImages = undefined;
        send(res, 200, answerFor(modelId, body, images));
      } catch (error) {
        if (error instanceof AwsError) return sendError(res, error);
        sendError(res, new AwsError('InternalServerException', 500, 'The stand-in failed.'));
      }
    });
  });
  const sessions = new Set<Http2Session>();
  server.on('session', (session) => {
    sessions.add(session);
    session.on('close', () => sessions.delete(session));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    failNextWith: (name, status, options = {}) => failures.push({ name, status, ...options }),
    holdNext: () => {
      hold = true;
    },
    imagesNext: (images) => {
      nextImages = images;
    },
    close: async () => {
      for (const session of sessions) session.destroy();
      server.close();
      await once(server, 'close');
    },
  };
};
