import './support/test-providers.ts';
import type { IncomingMessage } from 'node:http';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getNodeSpec } from '../functions/nodes/catalogue/index.ts';
import { draftMaxTokens } from '../functions/nodes/catalogue/run-modes.ts';
import { ExpressionError, evaluate } from '../functions/nodes/executors/expression.ts';
import { type ExecutorDeps, executorDepsFromEnv } from '../functions/nodes/executors/helpers.ts';
import { createExecutorRegistry, createExecutors } from '../functions/nodes/executors/index.ts';
import { decimateMesh } from '../functions/nodes/executors/logic.ts';
import {
  isStoredFile,
  type StepContext,
  StepFailedError,
  type StepOutcome,
  type StoredFile,
} from '../functions/nodes/executors/types.ts';
import {
  decodePng,
  encodePng,
  glbToMesh,
  makeImage,
  markPng,
  meshToGlb,
  readGlb,
  readMediaMark,
  readPngMark,
  readWavFormat,
  readWavMark,
} from '../functions/nodes/media/index.ts';
import type { Provider, TeamConnection } from '../functions/nodes/providers/types.ts';
import { createPythonRunner } from '../functions/python/runner.ts';
import { makeHandler as makePythonRunnerHandler } from '../functions/workers/python-runner.ts';
import { startLambdaEmulator } from '../local/lambda-emulator.ts';
import { envNames } from '../platform/definitions.ts';
import type { RunMode } from '../schemas/run-words.ts';
import { type NodeType, nodeTypes } from '../schemas/workflow-words.ts';
import { loopbackServer } from './support/loopback-server.ts';
import { rejectionOf } from './support/rejection.ts';

/** A fake orchestrator: files live in a map, connections in another. */
class Harness {
  files = new Map<string, { body: Uint8Array; contentType: string; aiGenerated: boolean }>();
  connections = new Map<string, TeamConnection>();
  private counter = 0;

  async put(name: string, body: Uint8Array, contentType: string, aiGenerated = false): Promise<StoredFile> {
    const key = `teams/t1/runs/j1/n${++this.counter}/${name}`;
    this.files.set(key, { body, contentType, aiGenerated });
    return { kind: 'file', key, contentType, bytes: body.length, availability: 'ready', name };
  }

  bytes(file: unknown): Uint8Array {
    if (!isStoredFile(file)) throw new Error(`not a file: ${JSON.stringify(file)}`);
    const entry = this.files.get(file.key);
    if (!entry) throw new Error('no such file');
    return entry.body;
  }

  context(
    type: NodeType,
    config: Record<string, unknown> = {},
    inputs: Record<string, unknown[]> = {},
    options: { mode?: RunMode; runInput?: string } = {},
  ): StepContext {
    const spec = getNodeSpec(type);
    return {
      jobId: 'j1',
      teamId: 't1',
      node: { id: `${type}-1`, type, label: type, config, position: { x: 0, y: 0 } },
      spec,
      mode: options.mode ?? 'production',
      inputs,
      runInput: options.runInput,
      storeFile: ({ name, contentType, body, aiGenerated }) => this.put(name, body, contentType, aiGenerated),
      signal: new AbortController().signal,
      readFile: async (file) => this.bytes(file),
      connection: async (key) => this.connections.get(key),
      fileUrl: async (file) => `https://files.example/${file.key}?signed`,
    };
  }
}

// PythonSandbox steps invoke the real PythonRunner handler through the Lambda SDK and a local Invoke API.
const pythonRunner = createPythonRunner();
const lambda = await startLambdaEmulator({ PythonRunner: makePythonRunnerHandler(pythonRunner.run) });
const pythonSettings = {
  [envNames.pythonRunner]: 'PythonRunner',
  AWS_ENDPOINT_URL_LAMBDA: lambda.endpoint,
  AWS_REGION: 'us-east-1',
  AWS_ACCESS_KEY_ID: 'local',
  AWS_SECRET_ACCESS_KEY: 'local',
};
beforeAll(() => pythonRunner.warm(), 120_000);
afterAll(async () => {
  await lambda.stop();
  await pythonRunner.close();
});

const deps: ExecutorDeps = { ...executorDepsFromEnv(pythonSettings), allowLoopback: true, httpTimeoutMs: 2_000 };
const executors = createExecutors(deps);
const run = (context: StepContext): Promise<StepOutcome> => executors[context.node.type](context);

const failure = async (promise: Promise<unknown>): Promise<string> => {
  const error = await rejectionOf(promise, 'the step to fail');
  expect(error).toBeInstanceOf(StepFailedError);
  return (error as Error).message;
};

const samplePng = () => encodePng(makeImage(20, 10, (x, y) => [x * 12, y * 25, 100, x < 10 ? 255 : 128]));
const sampleGlb = () =>
  meshToGlb({
    positions: Float32Array.of(0, 0, 0, 1, 0, 0, 0, 1, 0, 1, 1, 0),
    indices: Uint32Array.of(0, 1, 2, 2, 1, 3),
  });

describe('the registry of executors', () => {
  it('has an executor for each node type, looked up by createExecutorRegistry', async () => {
    expect(Object.keys(executors).sort()).toEqual([...nodeTypes].sort());
    const h = new Harness();
    const lookup = createExecutorRegistry(deps);
    const outcome = await lookup('TextEntry')(h.context('TextEntry', { text: 'hi' }));
    expect(outcome.outputs).toEqual({ text: 'hi' });
    expect(() => lookup('NoSuchNode' as never)).toThrow('No executor for node type NoSuchNode');
  });
});

describe('text and JSON steps', () => {
  const h = new Harness();

  it('TextEntry: the run input replaces config.text', async () => {
    expect((await run(h.context('TextEntry', { text: 'a' }))).outputs).toEqual({ text: 'a' });
    expect((await run(h.context('TextEntry', { text: 'a' }, {}, { runInput: 'b' }))).outputs).toEqual({ text: 'b' });
    expect((await run(h.context('TextEntry'))).outputs).toEqual({ text: '' });
  });

  it('PromptBuilder: fills {{0}} and {{name}} placeholders; the run input replaces the template', async () => {
    const values = ['a fox', { style: 'watercolour', user: { name: 'Ada' } }];
    const config = { template: 'Paint {{0}} in {{style}} for {{user.name}}{{missing}}.' };
    expect((await run(h.context('PromptBuilder', config, { values }))).outputs).toEqual({
      prompt: 'Paint a fox in watercolour for Ada.',
    });
    const replaced = await run(h.context('PromptBuilder', config, { values }, { runInput: '{{0}}, {{style}}' }));
    expect(replaced.outputs).toEqual({ prompt: 'a fox, watercolour' });
    expect((await run(h.context('PromptBuilder', {}, { values: ['x', 2] }))).outputs).toEqual({ prompt: 'x\n\n2' });
  });

  it('JsonLoader: parses text, passes JSON, fails on invalid text', async () => {
    expect((await run(h.context('JsonLoader', { data: '{"a":[1,2]}' }))).outputs).toEqual({ json: { a: [1, 2] } });
    expect((await run(h.context('JsonLoader', { data: { b: true } }))).outputs).toEqual({ json: { b: true } });
    expect(await failure(run(h.context('JsonLoader', { data: '{nope' })))).toMatch(/JsonLoader: .*not valid JSON/);
  });

  it('JsonExtractor: JSONPath with singular queries, wildcards and filters', async () => {
    const json = {
      items: [
        { name: 'a', price: 5 },
        { name: 'b', price: 15 },
      ],
    };
    const extract = async (path: string, input: unknown = json) =>
      (await run(h.context('JsonExtractor', { path }, { json: [input] }))).outputs.value;
    expect(await extract('$.items[0].name')).toBe('a');
    expect(await extract('$.items[*].name')).toEqual(['a', 'b']);
    expect(await extract('$.items[?@.price > 10].name')).toEqual(['b']);
    expect(await extract('$..price')).toEqual([5, 15]);
    expect(await extract('$.nothing')).toBeNull();
    expect(await extract('$', '```json\n{"x":1}\n```')).toEqual({ x: 1 });
    expect(await failure(extract('$.items['))).toMatch(/Invalid JSONPath/);
    expect(await failure(extract('$', 'not json'))).toMatch(/not valid JSON/);
  });

  it('VariableMapper: names values by JSONPath over its inputs', async () => {
    const outcome = await run(
      h.context(
        'VariableMapper',
        { mapping: { who: '$.user.name', n: '$.count' } },
        { values: [{ user: { name: 'Ada' }, count: 3 }] },
      ),
    );
    expect(outcome.outputs).toEqual({ variables: { who: 'Ada', n: 3 } });
    const several = await run(h.context('VariableMapper', { mapping: { second: '$[1]' } }, { values: ['x', 'y'] }));
    expect(several.outputs).toEqual({ variables: { second: 'y' } });
  });

  it('TextConsole, JsonInspector and the stages pass values on', async () => {
    expect((await run(h.context('TextConsole', {}, { text: [{ a: 1 }] }))).outputs).toEqual({ text: '{"a":1}' });
    expect((await run(h.context('JsonInspector', {}, { json: [{ a: 1 }] }))).outputs).toEqual({ json: { a: 1 } });
    expect((await run(h.context('ProcessingStage', {}, { in: ['x'] }))).outputs).toEqual({ out: 'x' });
    expect((await run(h.context('ExportStage', {}, { in: ['x', 'y'] }))).outputs).toEqual({ out: ['x', 'y'] });
    expect((await run(h.context('InputStage'))).outputs).toEqual({ out: null });
  });
});

describe('MathOperator and its evaluator', () => {
  const h = new Harness();

  it('evaluates over its inputs as a, b, c…', async () => {
    const outcome = await run(
      h.context('MathOperator', { expression: '(a + b) / 2 + max(c, 1) * 2^3' }, { values: [3, '5', 0.5] }),
    );
    expect(outcome.outputs).toEqual({ result: 12 });
  });

  it.each([
    ['1 + 2 * 3', 7],
    ['(1 + 2) * 3', 9],
    ['2 ^ 3 ^ 2', 512],
    ['-2 ^ 2', -4],
    ['2 ** -1', 0.5],
    ['10 % 4', 2],
    ['1e3 + .5', 1000.5],
    ['round(pi * 100) / 100', 3.14],
    ['avg(1, 2, 3, 6)', 3],
    ['3 > 2', 1],
    ['clamp(15, 0, 10)', 10],
  ])('%s = %s', (expression, expected) => {
    expect(evaluate(expression, {})).toBe(expected);
  });

  it.each([
    'constructor',
    'a.constructor',
    'process.exit(1)',
    'this',
    '[1]',
    'x => 1',
    '"text"',
    'toString()',
    '__proto__',
    '1 +',
    '(1',
    '1 2',
    '',
  ])('refuses %s', (expression) => {
    expect(() => evaluate(expression, { a: 1 })).toThrow(ExpressionError);
  });

  it('fails the step on bad expressions, non-numbers and infinite results', async () => {
    expect(await failure(run(h.context('MathOperator', { expression: 'a / 0' }, { values: [1] })))).toMatch(/finite/);
    expect(await failure(run(h.context('MathOperator', { expression: 'a' }, { values: ['x'] })))).toMatch(
      /not a number/,
    );
    expect(await failure(run(h.context('MathOperator', { expression: 'b' }, { values: [1] })))).toMatch(
      /Unknown name b/,
    );
  });

  it('agrees with a reference on random arithmetic (property)', () => {
    type Tree = number | { op: '+' | '-' | '*'; l: Tree; r: Tree };
    const tree = fc.letrec<{ t: Tree }>((tie) => ({
      t: fc.oneof(
        { depthSize: 'small', withCrossShrink: true },
        fc.integer({ min: -50, max: 50 }),
        fc.record({ op: fc.constantFrom('+', '-', '*'), l: tie('t'), r: tie('t') }) as fc.Arbitrary<Tree>,
      ),
    })).t;
    const show = (t: Tree): string => (typeof t === 'number' ? `(${t})` : `(${show(t.l)} ${t.op} ${show(t.r)})`);
    const value = (t: Tree): number => {
      if (typeof t === 'number') return t;
      const [l, r] = [value(t.l), value(t.r)];
      return t.op === '+' ? l + r : t.op === '-' ? l - r : l * r;
    };
    fc.assert(fc.property(tree, (t) => Object.is(evaluate(show(t), {}) + 0, value(t) + 0)));
  });
});

describe('ConditionalSwitch, BatchSplitter, IterationGate', () => {
  const h = new Harness();
  const decide = async (operator: string, value: unknown, expected?: unknown) =>
    (await run(h.context('ConditionalSwitch', { operator, value: expected }, { value: [value] }))).outputs;

  it.each([
    ['equals', 3, '3', true],
    ['equals', { a: 1 }, { a: 1 }, true],
    ['notEquals', 'a', 'b', true],
    ['greaterThan', 5, 3, true],
    ['greaterThan', '2', 3, false],
    ['lessThan', 1, 2, true],
    ['contains', 'hello world', 'world', true],
    ['contains', [1, 2], 3, false],
    ['truthy', 'yes', undefined, true],
    ['truthy', 0, undefined, false],
    ['truthy', [], undefined, false],
    ['empty', '', undefined, true],
    ['empty', { a: 1 }, undefined, false],
  ])('%s(%j, %j) takes the %s branch only', async (operator, value, expected, taken) => {
    const outputs = await decide(operator, value, expected);
    expect(Object.keys(outputs)).toEqual([String(taken)]);
    expect(outputs[String(taken)]).toEqual(value);
  });

  it('BatchSplitter gives the items as a list (capped); IterationGate gathers every value', async () => {
    expect((await run(h.context('BatchSplitter', { maxItems: 2 }, { list: ['[1,2,3]'] }))).outputs).toEqual({
      item: [1, 2],
    });
    expect(await failure(run(h.context('BatchSplitter', {}, { list: [{ a: 1 }] })))).toMatch(/not a list/);
    expect((await run(h.context('IterationGate', {}, { items: ['a', 'b', { c: 1 }] }))).outputs).toEqual({
      list: ['a', 'b', { c: 1 }],
    });
    expect((await run(h.context('IterationGate', { maxItems: 1 }, { items: [[1, 2]] }))).outputs).toEqual({
      list: [1],
    });
  });
});

describe('file steps', () => {
  it('ImageCropper crops a real PNG and keeps an AI mark the input carried', async () => {
    const h = new Harness();
    const plain = await h.put('in.png', samplePng(), 'image/png');
    const outcome = await run(h.context('ImageCropper', { x: 5, y: 2, width: 8, height: 100 }, { image: [plain] }));
    const cropped = decodePng(h.bytes(outcome.outputs.image));
    expect([cropped.width, cropped.height]).toEqual([8, 8]);
    expect([...cropped.data.subarray(0, 4)]).toEqual([60, 50, 100, 255]);
    expect(readPngMark(h.bytes(outcome.outputs.image))).toBeNull();

    const marked = await h.put('ai.png', markPng(samplePng()), 'image/png', true);
    const again = await run(h.context('ImageCropper', { width: 4, height: 4 }, { image: [marked] }));
    expect(readPngMark(h.bytes(again.outputs.image))).not.toBeNull();
    expect(h.files.get((again.outputs.image as StoredFile).key)?.aiGenerated).toBe(true);
    expect(await failure(run(h.context('ImageCropper', { x: 50 }, { image: [plain] })))).toMatch(/outside/);
  });

  it('MeshDecimator keeps the share of triangles asked for in a valid GLB', async () => {
    const grid = {
      positions: Float32Array.from({ length: 25 * 3 }, (_, i) => i % 7),
      indices: Uint32Array.from({ length: 32 * 3 }, (_, i) => (i * 7) % 25),
    };
    expect(decimateMesh(grid, 0.25).indices.length).toBe(8 * 3);
    const h = new Harness();
    const mesh = await h.put('m.glb', meshToGlb(grid), 'model/gltf-binary');
    const outcome = await run(h.context('MeshDecimator', { ratio: 0.5 }, { mesh: [mesh] }));
    const result = glbToMesh(h.bytes(outcome.outputs.mesh));
    expect(result.indices.length).toBe(16 * 3);
    expect(Math.max(...result.indices)).toBeLessThan(result.positions.length / 3);
  });

  it('ImageGallery lists every image it gets, flattening variation lists', async () => {
    const h = new Harness();
    const [a, b, c] = await Promise.all(['a', 'b', 'c'].map((n) => h.put(`${n}.png`, samplePng(), 'image/png')));
    const outcome = await run(h.context('ImageGallery', {}, { images: [a, [b, c]] }));
    expect(outcome.outputs.images).toEqual([a, b, c]);
  });
});

describe('model steps on the sandbox provider', () => {
  it('ImageGen makes a valid, marked PNG, reports its model, and is deterministic', async () => {
    const h = new Harness();
    const context = () => h.context('ImageGen', { width: 64, height: 48 }, { prompt: ['a red fox'] });
    const first = await run(context());
    const second = await run(context());
    expect(first.model).toEqual({ provider: 'sandbox', model: 'sandbox-image-1' });
    const bytes = h.bytes(first.outputs.image);
    expect(Buffer.from(bytes).equals(Buffer.from(h.bytes(second.outputs.image)))).toBe(true);
    const image = decodePng(bytes);
    expect([image.width, image.height]).toEqual([64, 48]);
    expect(readPngMark(bytes)?.digitalSourceType).toContain('trainedAlgorithmicMedia');
    expect(h.files.get((first.outputs.image as StoredFile).key)).toMatchObject({
      contentType: 'image/png',
      aiGenerated: true,
    });
  });

  it('draft makes one variation with fewer steps and a short text answer; production does not', async () => {
    const h = new Harness();
    const image = (mode: RunMode) =>
      run(h.context('ImageGen', { width: 64, height: 64, variations: 3 }, { prompt: ['a fox'] }, { mode }));
    const production = await image('production');
    const draft = await image('draft');
    expect(Array.isArray(production.outputs.image) && production.outputs.image).toHaveLength(3);
    expect(isStoredFile(draft.outputs.image)).toBe(true);
    const firstProduction = (production.outputs.image as StoredFile[])[0];
    expect(Buffer.from(h.bytes(draft.outputs.image)).equals(Buffer.from(h.bytes(firstProduction)))).toBe(false);
    expect((await image('preview')).outputs.image).toHaveLength(3);

    const text = async (mode: RunMode) =>
      (await run(h.context('LlmWorker', {}, { prompt: ['Tell me about foxes'] }, { mode }))).outputs.text as string;
    const [long, short] = [await text('production'), await text('draft')];
    expect(short.split(' ').length).toBeLessThanOrEqual(draftMaxTokens);
    expect(long.split(' ').length).toBeGreaterThan(short.split(' ').length);
    expect(long).not.toBe(short);
  });

  it('AudioGen makes a marked PCM16 WAV', async () => {
    const h = new Harness();
    const outcome = await run(h.context('AudioGen', { durationSeconds: 1 }, { prompt: ['rain'] }));
    const wav = h.bytes(outcome.outputs.audio);
    expect(readWavFormat(wav)).toMatchObject({
      audioFormat: 1,
      bitsPerSample: 16,
      sampleRate: 22_050,
      dataBytes: 44_100,
    });
    expect(readWavMark(wav)).not.toBeNull();
    expect(outcome.model?.model).toBe('sandbox-audio-1');
  });

  it('image-to-image models do real pixel work on their input', async () => {
    const h = new Harness();
    const input = await h.put('in.png', samplePng(), 'image/png');
    const upscaled = await run(h.context('Upscaler', { scale: 2 }, { image: [input] }));
    expect(decodePng(h.bytes(upscaled.outputs.image)).width).toBe(40);
    const cut = await run(h.context('BackgroundRemover', {}, { image: [input] }));
    expect(decodePng(h.bytes(cut.outputs.image)).data.some((v, i) => i % 4 === 3 && v === 0)).toBe(true);
    const depth = await run(h.context('DepthEstimator', {}, { image: [input] }));
    const pixels = decodePng(h.bytes(depth.outputs.depth)).data;
    expect(pixels[0]).toBe(pixels[1]);
    const pbr = await run(h.context('PbrSynthesizer', {}, { image: [input] }));
    expect(Object.keys(pbr.outputs).sort()).toEqual(['albedo', 'normal', 'roughness']);
    for (const file of Object.values(pbr.outputs)) expect(readPngMark(h.bytes(file))).not.toBeNull();
    const control = await run(h.context('ControlNetFilter', { mode: 'canny' }, { image: [input] }));
    expect(decodePng(h.bytes(control.outputs.image)).width).toBe(20);
  });

  it('Upscaler maps over a list of variations', async () => {
    const h = new Harness();
    const images = await Promise.all([1, 2].map((i) => h.put(`v${i}.png`, samplePng(), 'image/png')));
    const outcome = await run(h.context('Upscaler', {}, { image: [images] }));
    expect(outcome.outputs.image).toHaveLength(2);
  });

  it('each model step reports the work it did, which its charge is priced from', async () => {
    const h = new Harness();
    const input = await h.put('in.png', samplePng(), 'image/png'); // 20 × 10
    const images = await Promise.all([1, 2].map((i) => h.put(`v${i}.png`, samplePng(), 'image/png')));
    // Output pixels from the input's size: × scale² for the Upscaler, summed over a list.
    expect((await run(h.context('Upscaler', { scale: 4 }, { image: [images] }))).work).toEqual({
      kind: 'pixels',
      pixels: 2 * 200 * 16,
    });
    expect((await run(h.context('DepthEstimator', {}, { image: [input] }))).work).toEqual({
      kind: 'pixels',
      pixels: 200,
    });
    expect((await run(h.context('PbrSynthesizer', {}, { image: [images] }))).work).toEqual({
      kind: 'pixels',
      pixels: 200,
    });
    // Images as asked, as many as the provider made.
    const generated = await run(
      h.context('ImageGen', { width: 64, height: 32, steps: 9, variations: 2 }, { prompt: ['x'] }),
    );
    expect(generated.work).toEqual({ kind: 'sampling', images: 2, pixels: 64 * 32, steps: 9 });
    // Answer tokens, never more than it asked for; an Embedder's input tokens.
    const answer = await run(h.context('LlmWorker', { maxTokens: 5 }, { prompt: ['foxes'] }));
    expect(answer.work).toEqual({ kind: 'tokens', tokens: 5 });
    expect((await run(h.context('Embedder', {}, { text: ['12345678'] }))).work).toEqual({ kind: 'tokens', tokens: 2 });
    // A model its provider charges per run reports nothing: it is charged its estimate.
    expect((await run(h.context('TwoDToThreeD', {}, { image: [input] }))).work).toBeUndefined();
  });

  it('refuses more work than an estimate can cover: over 4 images to edit, an Embedder text over 8,192 tokens', async () => {
    const h = new Harness();
    const five = await Promise.all([1, 2, 3, 4, 5].map((i) => h.put(`v${i}.png`, samplePng(), 'image/png')));
    expect(await failure(run(h.context('Upscaler', {}, { image: [five] })))).toBe(
      'Upscaler: takes at most 4 images, 5 arrived',
    );
    expect(await failure(run(h.context('Embedder', {}, { text: ['x'.repeat(4 * 8_192 + 1)] })))).toBe(
      'Embedder: takes at most 8192 tokens of text, 8193 arrived',
    );
  });

  it('VisionInterrogator looks at the image', async () => {
    const h = new Harness();
    const input = await h.put('in.png', samplePng(), 'image/png');
    const outcome = await run(h.context('VisionInterrogator', {}, { image: [input], question: ['What is it?'] }));
    expect(outcome.outputs.text).toContain('20×10');
  });

  it('mesh models make valid, marked GLB files (and OBJ on request)', async () => {
    const h = new Harness();
    const input = await h.put('in.png', samplePng(), 'image/png');
    const mesh = await run(h.context('TwoDToThreeD', {}, { image: [input] }));
    const glb = h.bytes(mesh.outputs.mesh);
    expect(readGlb(glb).json.asset).toMatchObject({ version: '2.0' });
    expect(glbToMesh(glb).indices.length).toBeGreaterThan(3);
    expect(readMediaMark(glb)).not.toBeNull();
    const rigged = await run(h.context('AutoRigger', { skeleton: 'quadruped' }, { mesh: [mesh.outputs.mesh] }));
    expect(JSON.stringify(readGlb(h.bytes(rigged.outputs.rig)).json)).toContain('quadruped');
    const obj = await run(h.context('3DTransform', { format: 'obj' }, { image: [input], prompt: ['a hill'] }));
    expect(Buffer.from(h.bytes(obj.outputs.mesh)).toString()).toMatch(/^# AI-generated[\s\S]*\nv [\s\S]*\nf 1 /);
    expect((obj.outputs.mesh as StoredFile).contentType).toBe('model/obj');
  });

  it('Embedder gives a normalised vector of the asked length; similar texts are closer', async () => {
    const h = new Harness();
    const embed = async (text: string) =>
      (await run(h.context('Embedder', { dimensions: 64 }, { text: [text] }))).outputs.embedding as number[];
    const [a, b, c] = await Promise.all([
      embed('red foxes in snow'),
      embed('a red fox in the snow'),
      embed('tax forms'),
    ]);
    expect(a).toHaveLength(64);
    expect(Math.hypot(...a)).toBeCloseTo(1, 10);
    const dot = (x: number[], y: number[]) => x.reduce((s, v, i) => s + v * (y[i] as number), 0);
    expect(dot(a, b)).toBeGreaterThan(dot(a, c));
  });

  it('a file value forged in JSON for another team is neither read nor handed out', async () => {
    const h = new Harness();
    const real = await h.put('in.png', samplePng(), 'image/png');
    const forged = { ...real, key: real.key.replace('teams/t1/', 'teams/other/') };
    h.files.set(forged.key, { body: samplePng(), contentType: 'image/png', aiGenerated: false });
    expect(await failure(run(h.context('Upscaler', {}, { image: [forged] })))).toMatch(/not in this team's library/);
    const dotted = { ...real, key: 'teams/t1/../other/x.png' };
    expect(await failure(run(h.context('Upscaler', {}, { image: [dotted] })))).toMatch(/not in this team's library/);
  });

  it('a step fails clearly when its input file cannot be read', async () => {
    const h = new Harness();
    const file = await h.put('in.png', samplePng(), 'image/png');
    const context = { ...h.context('Upscaler', {}, { image: [file] }), readFile: undefined };
    expect(await failure(run(context))).toMatch(/cannot be read/);
  });
});

describe('provider selection', () => {
  const recording = (): Provider & { calls: unknown[] } => {
    const calls: unknown[] = [];
    return {
      key: 'byok-y',
      calls,
      async generateText(request) {
        calls.push(request);
        return `answer from ${request.model}`;
      },
    };
  };

  it('config.provider picks the provider; a barred one needs the team key', async () => {
    const fake = recording();
    const seen: (TeamConnection | undefined)[] = [];
    const custom = createExecutors({
      ...deps,
      providers: async (key, connection) => {
        seen.push(connection);
        return key === 'byok-y' ? fake : deps.providers(key, connection);
      },
    });
    const h = new Harness();
    const context = () => h.context('LlmWorker', { provider: 'byok-y', model: 'y-1' }, { prompt: ['hi'] });
    expect(await failure(custom.LlmWorker(context()))).toMatch(/byok-y, which is not available through the API/);
    h.connections.set('byok-y', { key: 'byok-y', secret: 'team-secret' });
    const outcome = await custom.LlmWorker(context());
    // Its work: the answer's tokens, four characters each (15 characters, 4 tokens).
    expect(outcome).toEqual({
      outputs: { text: 'answer from y-1' },
      model: { provider: 'byok-y', model: 'y-1' },
      work: { kind: 'tokens', tokens: 4 },
    });
    expect(seen.at(-1)?.secret).toBe('team-secret');
  });

  it('an unknown provider or a missing capability fails the step', async () => {
    const h = new Harness();
    const unknown = h.context('LlmWorker', { provider: 'nobody' }, { prompt: ['hi'] });
    expect(await failure(run(unknown))).toMatch(/unknown provider nobody/);
    // OpenAI-compatible speaks chat, images, embeddings and speech, but edits no image.
    const noEdits = h.context('BackgroundRemover', { provider: 'openai-compatible' }, {});
    const configured = createExecutors(executorDepsFromEnv({ OPENAI_COMPATIBLE_BASE_URL: 'http://127.0.0.1:9/v1' }));
    expect(await failure(configured.BackgroundRemover(noEdits))).toMatch(/cannot edit images/);
  });

  it('a sandbox stage runs a provider it has not configured on the sandbox, and the step says so', async () => {
    const h = new Harness();
    const context = () => h.context('LlmWorker', { provider: 'openai-compatible', model: 'gpt-x' }, { prompt: ['hi'] });
    // The local default (no PROVIDER_SECRETS, no OPENAI_COMPATIBLE_BASE_URL) is a sandbox stage.
    const outcome = await run(context());
    expect(outcome.model).toEqual({ provider: 'sandbox', model: 'sandbox-text-1' });
    // A stage without the sandbox refuses it (the run start already did, with the provider 422).
    const strict = createExecutors(executorDepsFromEnv({ PROVIDER_SECRETS: '{}', SANDBOX_PROVIDERS: 'false' }));
    expect(await failure(strict.LlmWorker(context()))).toMatch(
      /^LlmWorker: runs on openai-compatible, which is not available through the API without your own key/,
    );
    // The catalogue's default (Bedrock) on a stage that did not turn it on.
    expect(await failure(strict.LlmWorker(h.context('LlmWorker', {}, { prompt: ['hi'] })))).toMatch(/runs on bedrock/);
  });
});

describe('HTTP steps', () => {
  const received: { url: string; method: string; headers: IncomingMessage['headers']; body: string }[] = [];

  const server = loopbackServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => {
      body += c.toString('latin1');
    });
    req.on('end', () => {
      received.push({ url: req.url ?? '', method: req.method ?? '', headers: req.headers, body });
      if (req.url === '/redirect') return res.writeHead(302, { location: 'http://10.0.0.1/' }).end();
      if (req.url === '/fail') return res.writeHead(500).end('no');
      if (req.url === '/image.png') return res.writeHead(200, { 'content-type': 'image/png' }).end(samplePng());
      if (req.url === '/not-image') return res.writeHead(200, { 'content-type': 'text/html' }).end('<html>');
      if (req.url === '/data.json') return res.writeHead(200).end('{"loaded":true}');
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ok: true, echo: body }));
    });
  });

  it('CustomApiCall sends its body and returns the JSON answer', async () => {
    const h = new Harness();
    const outcome = await run(
      h.context(
        'CustomApiCall',
        { url: `${server.url}/api`, method: 'POST', headers: { 'x-k': 'v' } },
        { body: [{ q: 1 }] },
      ),
    );
    expect(outcome.outputs.response).toEqual({ ok: true, echo: '{"q":1}' });
    expect(received.at(-1)).toMatchObject({ method: 'POST', url: '/api' });
    expect(received.at(-1)?.headers['x-k']).toBe('v');
  });

  it('HTTP steps refuse loopback without the switch, redirects and error answers', async () => {
    const h = new Harness();
    const guarded = createExecutors({ ...deps, allowLoopback: false });
    expect(await failure(guarded.CustomApiCall(h.context('CustomApiCall', { url: `${server.url}/api` })))).toMatch(
      /address_refused|forbidden_scheme/,
    );
    expect(
      await failure(guarded.CustomApiCall(h.context('CustomApiCall', { url: 'https://169.254.169.254/latest' }))),
    ).toMatch(/address_refused/);
    // Every refused address fails the step with the same text: a metadata, a private address and a
    // name that does not resolve (the `.invalid` TLD never does) are not told apart.
    const refusals = new Set<string>();
    for (const url of ['https://169.254.169.254/x', 'https://10.0.0.1/x', 'https://nowhere.invalid/x']) {
      refusals.add(await failure(guarded.CustomApiCall(h.context('CustomApiCall', { url }))));
    }
    expect([...refusals]).toEqual([
      'CustomApiCall: request refused or failed (address_refused): The address was refused: it must resolve, and only to public addresses',
    ]);
    expect(await failure(run(h.context('CustomApiCall', { url: `${server.url}/redirect` })))).toMatch(/302.*redirects/);
    expect(await failure(run(h.context('ApiPostAction', { url: `${server.url}/fail` }, { payload: ['x'] })))).toMatch(
      /500/,
    );
  });

  it('ApiPostAction posts its payload, files as short-lived URLs, and answers with a receipt', async () => {
    const h = new Harness();
    const file = await h.put('a.png', samplePng(), 'image/png');
    const outcome = await run(
      h.context('ApiPostAction', { url: `${server.url}/hook` }, { payload: [{ text: 'done' }, file] }),
    );
    expect(outcome.outputs.receipt).toMatchObject({ delivered: true, status: 200, items: 2 });
    const sent = JSON.parse(received.at(-1)?.body ?? 'null');
    expect(sent[0]).toEqual({ text: 'done' });
    expect(sent[1]).toMatchObject({
      name: 'a.png',
      contentType: 'image/png',
      url: expect.stringContaining('https://files.example/'),
    });
  });

  it('ImageLoader and JsonLoader fetch through the guard', async () => {
    const h = new Harness();
    const image = await run(h.context('ImageLoader', { url: `${server.url}/image.png` }));
    expect(decodePng(h.bytes(image.outputs.image)).width).toBe(20);
    expect(h.files.get((image.outputs.image as StoredFile).key)?.aiGenerated).toBe(false);
    expect(await failure(run(h.context('ImageLoader', { url: `${server.url}/not-image` })))).toMatch(
      /image file cannot be stored: content is not one of image\/png/,
    );
    expect((await run(h.context('JsonLoader', { url: `${server.url}/data.json` }))).outputs).toEqual({
      json: { loaded: true },
    });
  });

  it('deliveries need a team connection; with one they deliver', async () => {
    const h = new Harness();
    const file = await h.put('a.png', samplePng(), 'image/png');
    for (const type of [
      'ChatNotifier',
      'ObjectUploader',
      'CodeHostADelivery',
      'CodeHostBDelivery',
      'VcsCDelivery',
      'EngineDelivery',
    ] as const) {
      const inputs: Record<string, unknown[]> = type === 'ChatNotifier' ? { message: ['hi'] } : { files: [file] };
      const config = { repository: 'team/assets', bucket: 'b', project: 'p' };
      expect(await failure(run(h.context(type, config, inputs)))).toMatch(/needs the team connection/);
    }
    h.connections.set('chat', { key: 'chat', secret: 's', endpoint: `${server.url}/chat` });
    const chat = await run(
      h.context('ChatNotifier', { channel: '#art', template: 'Run done: {{0}}' }, { message: ['ok'] }),
    );
    expect(chat.outputs.receipt).toMatchObject({ delivered: true, target: 'chat:#art' });
    expect(JSON.parse(received.at(-1)?.body ?? '{}')).toEqual({ channel: '#art', text: 'Run done: ok' });
    expect(received.at(-1)?.headers.authorization).toBe('Bearer s');

    h.connections.set('codehost-a', { key: 'codehost-a', secret: 't', endpoint: `${server.url}/git` });
    const commit = await run(
      h.context('CodeHostADelivery', { repository: 'team/assets', path: 'art' }, { files: [file] }),
    );
    expect(commit.outputs.receipt).toMatchObject({ delivered: true, items: 1 });
    const sent = JSON.parse(received.at(-1)?.body ?? '{}');
    expect(received.at(-1)?.url).toBe('/git/team/assets/commits');
    expect(sent.files[0].path).toBe('art/a.png');
    expect(Buffer.from(sent.files[0].contentBase64, 'base64').equals(Buffer.from(samplePng()))).toBe(true);

    h.connections.set('object-storage', { key: 'object-storage', secret: 'o', endpoint: `${server.url}/s3` });
    await run(h.context('ObjectUploader', { bucket: 'b', prefix: 'out/' }, { files: [file] }));
    expect(received.at(-1)).toMatchObject({ method: 'PUT', url: '/s3/b/out/a.png' });
  });
});

describe('PythonSandbox', () => {
  it('runs the code on the PythonRunner function: inputs in, result out', async () => {
    const context = h0().context(
      'PythonSandbox',
      { code: 'result = {"total": sum(inputs), "count": len(inputs)}' },
      { values: [2, 3, 4] },
    );
    expect((await run(context)).outputs).toEqual({ result: { total: 9, count: 3 } });
  });

  it('fails the step with the runner’s reason: an exception, a timeout', async () => {
    expect(await failure(run(h0().context('PythonSandbox', { code: 'x = 1 / 0' })))).toBe(
      'PythonSandbox: raised ZeroDivisionError: division by zero',
    );
    expect(await failure(run(h0().context('PythonSandbox', { code: 'while True: pass', timeoutMs: 300 })))).toBe(
      'PythonSandbox: timed out after 300 ms',
    );
  });

  it('fails the step when the runner itself fails, or when no runner is configured', async () => {
    const missing = createExecutors({
      ...deps,
      ...executorDepsFromEnv({ ...pythonSettings, [envNames.pythonRunner]: 'Nope' }),
    });
    await expect(missing.PythonSandbox(h0().context('PythonSandbox', { code: 'result = 1' }))).rejects.toThrow(
      /Function not found/,
    );
    const none = createExecutors({ ...deps, python: undefined });
    expect(await failure(none.PythonSandbox(h0().context('PythonSandbox', { code: 'result = 1' })))).toBe(
      'PythonSandbox: no Python runner is configured in this function',
    );
  });
});

const h0 = () => new Harness();

describe('every node type runs on sample inputs', () => {
  /** Types that need something a bare run lacks (a connection, a runner, a library file, a saved prompt). */
  const needsSetup = new Set<NodeType>([
    'Knowledgebase',
    'Service',
    'CodeHostA',
    'CloudStorage',
    'ObjectBucketWatcher',
    'FileUploader',
    'Prompt',
    'ImageLoader',
    'RigImporter',
    'CustomApiCall',
    'ApiPostAction',
    'ObjectUploader',
    'ChatNotifier',
    'CodeHostADelivery',
    'CodeHostBDelivery',
    'VcsCDelivery',
    'EngineDelivery',
  ]);

  it.each(nodeTypes.filter((t) => !needsSetup.has(t)))('%s', async (type) => {
    const h = new Harness();
    const spec = getNodeSpec(type);
    const png = await h.put('in.png', samplePng(), 'image/png');
    const glb = await h.put('in.glb', sampleGlb(), 'model/gltf-binary');
    const sample: Record<string, unknown> = {
      text: 'a small house',
      number: 4,
      json: '[{"a":1}]',
      image: png,
      audio: png,
      video: png,
      mesh: glb,
      file: png,
      embedding: [0.6, 0.8],
      any: 'value',
      boolean: true,
      list: [1, 2],
    };
    const inputs = Object.fromEntries(spec.inputs.map((handle) => [handle.name, [sample[handle.kind]]]));
    const config = { ...spec.minimalConfig, ...(type === 'MathOperator' ? { expression: 'a * 2' } : {}) };
    const outcome = await run(h.context(type, config, inputs));
    const names = spec.outputs.map((o) => o.name);
    expect(Object.keys(outcome.outputs).every((k) => names.includes(k))).toBe(true);
    expect(Object.keys(outcome.outputs).length).toBeGreaterThan(0);
    expect(Boolean(outcome.model)).toBe(spec.model !== null);
    for (const value of Object.values(outcome.outputs)) expect(value).not.toBeUndefined();
  });
});
