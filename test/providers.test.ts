import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import type { Canvas } from '../functions/nodes/catalogue/canvas.ts';
import { getNodeSpec } from '../functions/nodes/catalogue/index.ts';
import { executorDepsFromEnv } from '../functions/nodes/executors/helpers.ts';
import { createExecutors } from '../functions/nodes/executors/index.ts';
import type { StepContext, StoredFile } from '../functions/nodes/executors/types.ts';
import {
  decodePng,
  encodePng,
  encodeWav,
  makeImage,
  readPngMark,
  readWavFormat,
} from '../functions/nodes/media/index.ts';
import {
  apiIntegrationMessage,
  checkApiIntegration,
  createOpenAiCompatibleProvider,
  createSandboxProvider,
  licenceFacts,
  ProviderError,
  providerResolverFromEnv,
  routeProvider,
  sandboxOptionsFromEnv,
  stageProvidersFromEnv,
  stepProvider,
} from '../functions/nodes/providers/index.ts';
import { integrationLevels, providerRegistry, registerProviders } from '../platform/providers.ts';
import type { RunMode } from '../schemas/run-words.ts';
import type { NodeType } from '../schemas/workflow-words.ts';
import { loopbackServer } from './support/loopback-server.ts';
import { testProviders } from './support/test-providers.ts';

const signal = new AbortController().signal;
const call = { model: 'm', mode: 'production' as RunMode, signal };

describe('sandbox provider', () => {
  const sandbox = createSandboxProvider();

  it('is deterministic and makes valid files of each kind', async () => {
    const request = { ...call, prompt: 'a fox', width: 32, height: 16, steps: 20, variations: 2 };
    const [a, b] = await Promise.all([sandbox.generateImage!(request), sandbox.generateImage!(request)]);
    expect(a).toHaveLength(2);
    expect(Buffer.from(a[0]!.body).equals(Buffer.from(b[0]!.body))).toBe(true);
    expect(Buffer.from(a[0]!.body).equals(Buffer.from(a[1]!.body))).toBe(false);
    expect(decodePng(a[0]!.body)).toMatchObject({ width: 32, height: 16 });
    const other = await sandbox.generateImage!({ ...request, prompt: 'a cat' });
    expect(Buffer.from(other[0]!.body).equals(Buffer.from(a[0]!.body))).toBe(false);

    const audio = await sandbox.generateAudio!({ ...call, prompt: 'rain', durationSeconds: 0.5 });
    expect(readWavFormat(audio.body)).toMatchObject({ channels: 1, bitsPerSample: 16 });
    const text = await sandbox.generateText!({ ...call, prompt: 'hello', maxTokens: 10 });
    expect(text.split(' ')).toHaveLength(10);
    expect(await sandbox.generateText!({ ...call, prompt: 'hello', maxTokens: 10 })).toBe(text);
    const vector = await sandbox.embed!({ ...call, text: 'hello', dimensions: 8 });
    expect(Math.hypot(...vector)).toBeCloseTo(1);
  });

  it('waits SANDBOX_LATENCY_MS and stops when aborted', async () => {
    expect(sandboxOptionsFromEnv({ SANDBOX_LATENCY_MS: '40' })).toEqual({ latencyMs: 40 });
    expect(sandboxOptionsFromEnv({})).toEqual({ latencyMs: 0 });
    const slow = createSandboxProvider({ latencyMs: 40 });
    const started = Date.now();
    await slow.generateText!({ ...call, prompt: 'x', maxTokens: 3 });
    expect(Date.now() - started).toBeGreaterThanOrEqual(35);
    const controller = new AbortController();
    const pending = slow.generateImage!({
      ...call,
      signal: controller.signal,
      prompt: 'x',
      width: 8,
      height: 8,
      steps: 1,
      variations: 1,
    });
    controller.abort(new Error('budget spent'));
    await expect(pending).rejects.toThrow('budget spent');
  });

  it('refuses an input that is not a PNG with a provider error', async () => {
    const image = { body: new Uint8Array([1, 2, 3]), contentType: 'image/jpeg' };
    await expect(sandbox.editImage!({ ...call, operation: 'upscale', image })).rejects.toBeInstanceOf(ProviderError);
  });
});

describe('openai-compatible provider against a local fake server', () => {
  const requests: { url: string; headers: IncomingMessage['headers']; body: Record<string, unknown> }[] = [];
  const png = encodePng(makeImage(4, 4, (x, y) => [x * 60, y * 60, 0, 255]));
  const wav = encodeWav(new Int16Array(800), 8000);

  const server = loopbackServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => {
      raw += c.toString();
    });
    req.on('end', () => {
      const body = JSON.parse(raw || '{}') as Record<string, unknown>;
      requests.push({ url: req.url ?? '', headers: req.headers, body });
      const json = (status: number, value: unknown) =>
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
      // The image link is public: the adapter must not send the key to it.
      if (req.url === '/img.png') return res.writeHead(200, { 'content-type': 'image/png' }).end(png);
      if (req.headers.authorization !== 'Bearer test-key') return json(401, { error: { message: 'bad key' } });
      // Failures by model name: a busy server (with Retry-After), one down, a bad request, no answer at all.
      if (body.model === 'busy')
        return res
          .writeHead(429, { 'content-type': 'application/json', 'retry-after': '7' })
          .end(JSON.stringify({ error: { message: 'Rate limit reached' } }));
      if (body.model === 'down') return json(503, { error: { message: 'overloaded' } });
      if (body.model === 'late') return json(408, { error: { message: 'request timeout' } });
      if (body.model === 'bad') return json(400, { error: { message: 'unknown parameter' } });
      if (body.model === 'silent') return;
      if (req.url === '/v1/audio/speech') {
        if (body.model === 'mp3-only')
          return res.writeHead(200, { 'content-type': 'audio/mpeg' }).end(Buffer.from([0xff, 0xfb, 0x90, 0x00]));
        return res.writeHead(200, { 'content-type': 'audio/wav' }).end(wav);
      }
      if (req.url === '/v1/chat/completions') {
        const messages = body.messages as { role: string; content: unknown }[];
        const user = messages.at(-1)?.content;
        const prompt = typeof user === 'string' ? user : JSON.stringify(user);
        return json(200, {
          choices: [
            {
              message: {
                role: 'assistant',
                content: `echo(${body.model}, max=${body.max_tokens ?? 'none'}): ${prompt}`,
              },
            },
          ],
        });
      }
      if (req.url === '/v1/images/generations') {
        const n = Number(body.n ?? 1);
        if (body.model === 'url-model') return json(200, { data: [{ url: `http://${req.headers.host}/img.png` }] });
        return json(200, {
          data: Array.from({ length: n }, () => ({ b64_json: Buffer.from(png).toString('base64') })),
        });
      }
      if (req.url === '/v1/embeddings') return json(200, { data: [{ embedding: [0.6, 0.8] }] });
      json(404, { error: { message: 'no route' } });
    });
  });

  /** The fake's OpenAI-style base URL. */
  const v1 = () => `${server.url}/v1`;
  const provider = () => createOpenAiCompatibleProvider({ baseUrl: v1(), apiKey: 'test-key', allowLoopback: true });

  it('speaks chat completions', async () => {
    const text = await provider().generateText!({
      ...call,
      prompt: 'hi',
      system: 'be brief',
      maxTokens: 7,
      temperature: 0.2,
    });
    expect(text).toBe('echo(m, max=7): hi');
    expect(requests.at(-1)?.body).toMatchObject({
      model: 'm',
      max_tokens: 7,
      temperature: 0.2,
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'hi' },
      ],
    });
  });

  it('generates images from b64_json, and from a URL by downloading it through the guard', async () => {
    const images = await provider().generateImage!({
      ...call,
      prompt: 'p',
      width: 256,
      height: 256,
      steps: 10,
      variations: 2,
    });
    expect(images).toHaveLength(2);
    expect(images[0]).toMatchObject({ contentType: 'image/png' });
    expect(requests.at(-1)?.body).toMatchObject({ n: 2, size: '256x256', response_format: 'b64_json' });
    // The model whose answer links its image rather than carrying it.
    const byLink = { ...call, model: 'url-model', prompt: 'p', width: 4, height: 4, steps: 1, variations: 1 };
    const linked = await provider().generateImage!(byLink);
    expect(Buffer.from(linked[0]!.body).equals(Buffer.from(png))).toBe(true);
    const guarded = createOpenAiCompatibleProvider({ baseUrl: v1(), apiKey: 'test-key', allowLoopback: false });
    await expect(guarded.generateImage!(byLink)).rejects.toThrow(/address was refused/);
    const vector = await provider().embed!({ ...call, text: 'x' });
    expect(vector).toEqual([0.6, 0.8]);
  });

  it('reports HTTP errors without the key, and a missing base URL', async () => {
    const wrong = createOpenAiCompatibleProvider({ baseUrl: v1(), apiKey: 'not-it' });
    const error = await wrong.generateText!({ ...call, prompt: 'x' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProviderError);
    expect((error as ProviderError).message).toBe('openai-compatible answered 401: bad key');
    expect((error as ProviderError).status).toBe(401);
    expect((error as ProviderError).retryable).toBe(false);
    // A provider that quotes the key back: the error (a step's error, shown to the team) never carries it.
    const quoting = createOpenAiCompatibleProvider({
      baseUrl: 'https://provider.example/v1',
      apiKey: 'sk-secret-123',
      fetch: async () =>
        new Response(JSON.stringify({ error: { message: 'Incorrect API key provided: sk-secret-123.' } }), {
          status: 401,
        }),
    });
    await expect(quoting.generateText!({ ...call, prompt: 'x' })).rejects.toThrow(
      'openai-compatible answered 401: Incorrect API key provided: [key].',
    );
    const unset = createOpenAiCompatibleProvider({ baseUrl: undefined, apiKey: undefined });
    await expect(unset.generateText!({ ...call, prompt: 'x' })).rejects.toThrow(/not configured/);
  });

  it('sends images to chat as image_url content parts with data URLs (vision)', async () => {
    const text = await provider().generateText!({
      ...call,
      prompt: 'what is this?',
      images: [{ body: png, contentType: 'image/png' }],
    });
    const content = [
      { type: 'text', text: 'what is this?' },
      { type: 'image_url', image_url: { url: `data:image/png;base64,${Buffer.from(png).toString('base64')}` } },
    ];
    expect(text).toBe(`echo(m, max=none): ${JSON.stringify(content)}`);
    expect(requests.at(-1)?.body).toEqual({ model: 'm', messages: [{ role: 'user', content }], n: 1 });
  });

  it('speaks /audio/speech and answers its WAV bytes as audio/wav', async () => {
    const audio = await provider().generateAudio!({
      ...call,
      model: 'tts-1',
      prompt: 'hello there',
      durationSeconds: 4,
    });
    expect(audio.contentType).toBe('audio/wav');
    expect(Buffer.from(audio.body).equals(Buffer.from(wav))).toBe(true);
    expect(readWavFormat(audio.body)).toMatchObject({ sampleRate: 8000 });
    const request = requests.at(-1);
    expect(request?.url).toBe('/v1/audio/speech');
    expect(request?.headers.accept).toBe('audio/wav');
    expect(request?.body).toEqual({ model: 'tts-1', input: 'hello there', voice: 'alloy', response_format: 'wav' });
    await expect(
      provider().generateAudio!({ ...call, model: 'mp3-only', prompt: 'x', durationSeconds: 1 }),
    ).rejects.toMatchObject({ retryable: false, message: 'openai-compatible answered with bytes that are no WAV' });
  });

  it('classifies failures: 408, 429 and 5xx (after Retry-After), timeouts and network errors are retryable', async () => {
    const error = (model: string, options = {}) =>
      createOpenAiCompatibleProvider({ baseUrl: v1(), apiKey: 'test-key', ...options }).generateText!({
        ...call,
        model,
        prompt: 'x',
      }).then(
        () => expect.unreachable('it succeeded'),
        (e: unknown) => e,
      );
    expect(await error('busy')).toMatchObject({
      status: 429,
      retryable: true,
      retryAfterSeconds: 7,
      message: 'openai-compatible answered 429: Rate limit reached',
    });
    expect(await error('down')).toMatchObject({ status: 503, retryable: true, retryAfterSeconds: undefined });
    expect(await error('late')).toMatchObject({ status: 408, retryable: true });
    expect(await error('bad')).toMatchObject({ status: 400, retryable: false });
    expect(await error('silent', { timeoutMs: 200 })).toMatchObject({
      retryable: true,
      message: 'openai-compatible did not answer within 200 ms',
    });
    // Nothing listens on the discard port.
    const unreachable = await createOpenAiCompatibleProvider({ baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'k' }).embed!({
      ...call,
      text: 'x',
    }).catch((e: unknown) => e);
    expect(unreachable).toBeInstanceOf(ProviderError);
    expect(unreachable).toMatchObject({
      retryable: true,
      message: expect.stringMatching(/^openai-compatible could not be reached/),
    });
    // The caller's own abort is passed on, not turned into a provider error.
    const controller = new AbortController();
    const aborted = createOpenAiCompatibleProvider({ baseUrl: v1(), apiKey: 'test-key' }).generateText!({
      ...call,
      model: 'silent',
      prompt: 'x',
      signal: controller.signal,
    }).catch((e: unknown) => e);
    controller.abort();
    expect(await aborted).not.toBeInstanceOf(ProviderError);
  });

  it('draft and production give different answers through the executors (env-configured)', async () => {
    const env = {
      OPENAI_COMPATIBLE_BASE_URL: v1(),
      OPENAI_COMPATIBLE_API_KEY: 'test-key',
      OPENAI_COMPATIBLE_TEXT_MODEL: 'chat-model',
      OPENAI_COMPATIBLE_IMAGE_MODEL: 'image-model',
    };
    const executors = createExecutors(executorDepsFromEnv(env));
    const stored: { name: string; body: Uint8Array; aiGenerated: boolean }[] = [];
    const context = (type: NodeType, config: Record<string, unknown>, prompt: string, mode: RunMode): StepContext => ({
      jobId: 'j',
      teamId: 't',
      node: { id: 'n', type, label: type, config, position: { x: 0, y: 0 } },
      spec: getNodeSpec(type),
      mode,
      inputs: { prompt: [prompt] },
      runInput: undefined,
      signal,
      storeFile: async ({ name, contentType, body, aiGenerated }): Promise<StoredFile> => {
        stored.push({ name, body, aiGenerated });
        return { kind: 'file', key: `k/${name}`, contentType, bytes: body.length, availability: 'ready', name };
      },
    });
    const llm = (mode: RunMode) =>
      executors.LlmWorker(context('LlmWorker', { provider: 'openai-compatible', maxTokens: 500 }, 'hi', mode));
    const production = await llm('production');
    const draft = await llm('draft');
    expect(production).toEqual({
      outputs: { text: 'echo(chat-model, max=500): hi' },
      model: { provider: 'openai-compatible', model: 'chat-model' },
      work: { kind: 'tokens', tokens: 8 },
    });
    expect(draft.outputs.text).toBe('echo(chat-model, max=64): hi');

    const image = await executors.ImageGen(
      context('ImageGen', { provider: 'openai-compatible', variations: 2 }, 'a fox', 'draft'),
    );
    expect(requests.at(-1)?.body).toMatchObject({ n: 1, quality: 'low', model: 'image-model' });
    expect(image.model).toEqual({ provider: 'openai-compatible', model: 'image-model' });
    // The provider's PNG is stored as our own copy, marked inside the file.
    expect(readPngMark(stored.at(-1)?.body as Uint8Array)).not.toBeNull();
    expect(stored.at(-1)?.aiGenerated).toBe(true);
  });

  it('the env resolver builds each registry provider; team connections supply the key', async () => {
    const resolve = providerResolverFromEnv({ PROVIDER_BYOK_Y_BASE_URL: v1() });
    expect((await resolve('sandbox', undefined))?.key).toBe('sandbox');
    expect(await resolve('nobody', undefined)).toBeUndefined();
    const byok = await resolve('byok-y', { key: 'byok-y', secret: 'test-key' });
    expect(byok?.key).toBe('byok-y');
    expect(await byok?.generateText?.({ ...call, prompt: 'via team key' })).toBe('echo(m, max=none): via team key');
    expect(requests.at(-1)?.headers.authorization).toBe('Bearer test-key');
  });
});

describe('provider registry', () => {
  const canvas = (nodes: { type: NodeType; config?: Record<string, unknown> }[]): Canvas => ({
    nodes: nodes.map((n, i) => ({
      id: `n${i}`,
      type: n.type,
      label: n.type,
      config: n.config ?? {},
      position: { x: 0, y: 0 },
    })),
    edges: [],
  });

  it('ships real providers only, all at api level; the tests add barred providers of every other level', () => {
    const shipped = providerRegistry().filter((p) => !testProviders.some((t) => t.key === p.key));
    expect(shipped.map((p) => p.key).sort()).toEqual(['bedrock', 'fal', 'openai-compatible', 'replicate', 'sandbox']);
    expect(new Set(shipped.map((p) => p.level))).toEqual(new Set(['api']));
    expect(shipped.every((p) => !(p.baseUrl ?? '').includes('.example'))).toBe(true);
    const levels = new Set(providerRegistry().map((p) => p.level));
    expect([...levels].sort()).toEqual([...integrationLevels].sort());
    expect(() => registerProviders([{ ...testProviders[0]!, key: 'bedrock' }])).toThrow(/shipped/);
  });

  it('gives licence facts per model, falling back to the provider, and none for unknown providers', () => {
    expect(licenceFacts('sandbox', 'sandbox-image-1')).toMatchObject({ licence: 'CC0-1.0', commercialUse: 'yes' });
    expect(licenceFacts('byok-y', 'y-research-1')).toMatchObject({
      commercialUse: 'no',
      termsUrl: 'https://byok-y.example/terms',
    });
    expect(licenceFacts('byok-y', 'other')).toMatchObject({ commercialUse: 'yes' });
    expect(licenceFacts('nobody', 'x')).toEqual({
      licence: null,
      licenceUrl: null,
      commercialUse: null,
      termsUrl: null,
    });
  });

  it('stepProvider: config.provider and config.model win; non-model steps have none', () => {
    const spec = getNodeSpec('ImageGen');
    expect(stepProvider({ config: {} }, spec)).toEqual({
      provider: 'bedrock',
      model: 'stability.stable-image-core-v1:1',
    });
    expect(stepProvider({ config: { provider: 'studio-x' } }, spec)).toEqual({ provider: 'studio-x', model: null });
    expect(stepProvider({ config: { provider: 'studio-x', model: 'x2' } }, spec)).toEqual({
      provider: 'studio-x',
      model: 'x2',
    });
    expect(stepProvider({ config: { provider: 'studio-x' } }, getNodeSpec('TextEntry'))).toBeNull();
  });

  const sandboxStage = { configured: [], sandbox: true };

  it('checkApiIntegration refuses barred providers unless the team has its own key', () => {
    const ok = canvas([
      { type: 'TextEntry' },
      { type: 'ImageGen' },
      { type: 'LlmWorker', config: { provider: 'openai-compatible' } },
    ]);
    expect(checkApiIntegration(ok, new Set(), sandboxStage)).toBeNull();
    const studio = canvas([{ type: 'TextEntry' }, { type: 'ImageGen', config: { provider: 'studio-x' } }]);
    expect(checkApiIntegration(studio, new Set(), sandboxStage)).toEqual({
      nodeId: 'n1',
      nodeType: 'ImageGen',
      providers: ['studio-x'],
      level: 'app_only',
      message: apiIntegrationMessage('ImageGen', 'studio-x'),
    });
    expect(checkApiIntegration(studio, new Set(['studio-x']), sandboxStage)).toBeNull();
    const byok = canvas([{ type: 'LlmWorker', config: { provider: 'byok-y' } }]);
    expect(checkApiIntegration(byok, new Set(), sandboxStage)?.level).toBe('byok_only');
    expect(checkApiIntegration(byok, new Set(['byok-y']), sandboxStage)).toBeNull();
    const geo = canvas([{ type: 'Embedder', config: { provider: 'geo-z' } }]);
    expect(checkApiIntegration(geo, new Set(['geo-z']), sandboxStage)?.level).toBe('region_restricted');
    const closed = canvas([{ type: 'Embedder', config: { provider: 'closed-w' } }]);
    expect(checkApiIntegration(closed, new Set(['closed-w']), sandboxStage)?.level).toBe('not_allowed');
    const unknown = canvas([{ type: 'Embedder', config: { provider: 'nobody' } }]);
    expect(checkApiIntegration(unknown, new Set(), sandboxStage)).toMatchObject({
      level: 'not_allowed',
      providers: ['nobody'],
    });
    // A provider named on a step that is no model step is not a model call.
    expect(
      checkApiIntegration(canvas([{ type: 'TextEntry', config: { provider: 'studio-x' } }]), new Set(), sandboxStage),
    ).toBeNull();
  });

  it('a stage runs the providers it configured, the team keys, and the sandbox only on a sandbox stage', () => {
    const prod = { configured: ['openai-compatible'], sandbox: false };
    const bare = { configured: [], sandbox: false };
    const llm = canvas([{ type: 'TextEntry' }, { type: 'LlmWorker', config: { provider: 'openai-compatible' } }]);
    expect(checkApiIntegration(llm, new Set(), prod)).toBeNull();
    // Not configured, no sandbox: only the team's own key would run it.
    expect(checkApiIntegration(llm, new Set(), bare)).toEqual({
      nodeId: 'n1',
      nodeType: 'LlmWorker',
      providers: ['openai-compatible'],
      level: 'byok_only',
      message: apiIntegrationMessage('LlmWorker', 'openai-compatible'),
    });
    expect(checkApiIntegration(llm, new Set(['openai-compatible']), bare)).toBeNull();
    expect(checkApiIntegration(llm, new Set(), sandboxStage)).toBeNull();
    // The catalogue's default provider is Bedrock: a stage that did not turn it on refuses it (no team's key runs it).
    const defaults = canvas([{ type: 'ImageGen' }]);
    expect(checkApiIntegration(defaults, new Set(['bedrock']), prod)).toMatchObject({
      providers: ['bedrock'],
      level: 'not_allowed',
    });
    expect(checkApiIntegration(defaults, new Set(), { configured: ['bedrock'], sandbox: false })).toBeNull();
    // Registry bars hold on every stage.
    const studio = canvas([{ type: 'ImageGen', config: { provider: 'studio-x' } }]);
    expect(checkApiIntegration(studio, new Set(), { configured: [], sandbox: true })?.level).toBe('app_only');

    expect(routeProvider('openai-compatible', sandboxStage, false, null)).toEqual({
      refused: false,
      runsOn: 'sandbox',
      credentials: 'none',
    });
    expect(routeProvider('openai-compatible', { ...prod, sandbox: true }, false, null)).toEqual({
      refused: false,
      runsOn: 'openai-compatible',
      credentials: 'stage',
    });
    // The team's own key wins over the stage's.
    expect(routeProvider('openai-compatible', prod, true, null)).toMatchObject({
      runsOn: 'openai-compatible',
      credentials: 'team',
    });
    expect(routeProvider('byok-y', prod, true, null)).toMatchObject({ credentials: 'team' });
  });

  it('reads the stage from PROVIDER_SECRETS and SANDBOX_PROVIDERS, or the local default from env', () => {
    expect(stageProvidersFromEnv({})).toEqual({ configured: [], sandbox: true, secrets: undefined });
    expect(stageProvidersFromEnv({ OPENAI_COMPATIBLE_BASE_URL: 'http://x/v1' }).configured).toEqual([
      'openai-compatible',
    ]);
    const secrets = { 'openai-compatible': 'workflow-run-api/prod/providers/openai-compatible' };
    expect(
      stageProvidersFromEnv({
        PROVIDER_SECRETS: JSON.stringify(secrets),
        SANDBOX_PROVIDERS: 'false',
        OPENAI_COMPATIBLE_BASE_URL: 'http://ignored/v1',
      }),
    ).toEqual({ configured: ['openai-compatible'], sandbox: false, secrets });
    expect(stageProvidersFromEnv({ PROVIDER_SECRETS: '{}', SANDBOX_PROVIDERS: 'true' })).toMatchObject({
      configured: [],
      sandbox: true,
    });
    expect(() => stageProvidersFromEnv({ PROVIDER_SECRETS: 'openai-compatible' })).toThrow(/PROVIDER_SECRETS/);
    expect(() => stageProvidersFromEnv({ PROVIDER_SECRETS: '{"a":1}' })).toThrow(/PROVIDER_SECRETS/);
  });

  it('the refusal message follows the spec form', () => {
    expect(apiIntegrationMessage('ImageGen', 'studio-x')).toMatch(
      /^ImageGen runs on studio-x, which is not available through the API without your own key\. .*Connections.*app.*another provider/,
    );
  });
});
