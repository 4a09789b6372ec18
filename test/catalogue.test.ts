import * as v from 'valibot';
import { describe, expect, it } from 'vitest';
import { canConnect, catalogue, getNodeSpec, nodeCategories, valueKinds } from '../functions/nodes/catalogue/index.ts';
import { httpCallMaxTimeoutMs } from '../functions/nodes/catalogue/logic.ts';
import { fileInputTypes } from '../functions/nodes/catalogue/node-spec.ts';
import { priceInMode } from '../functions/nodes/catalogue/run-modes.ts';
import { pythonMaxTimeoutMs } from '../functions/python/protocol.ts';
import { stepNodeTimeoutSeconds } from '../platform/definitions.ts';
import { modelNodeTypes } from '../platform/model-defaults.ts';
import { uploadContentTypes } from '../schemas/upload-types.ts';
import { nodeTypes } from '../schemas/workflow-words.ts';

const entries = Object.values(catalogue);

describe('node catalogue (DESIGN section 4)', () => {
  it('has one entry per node type of spec 2.2, keyed by the exact name and in spec order', () => {
    expect(Object.keys(catalogue)).toEqual([...nodeTypes]);
    for (const [key, spec] of Object.entries(catalogue)) expect(spec.type).toBe(key);
  });

  it('gives every entry a display name, a category and at least one output', () => {
    // Delivery nodes answer with a receipt and viewers pass their value on, so no node lacks an output.
    for (const spec of entries) {
      expect(spec.displayName.trim(), spec.type).not.toBe('');
      expect(nodeCategories, spec.type).toContain(spec.category);
      expect(spec.outputs.length, spec.type).toBeGreaterThan(0);
    }
  });

  it('names handles uniquely per side, with valid kinds, and flags only inputs as required or multiple', () => {
    for (const spec of entries) {
      for (const side of [spec.inputs, spec.outputs]) {
        const names = side.map((h) => h.name);
        expect(new Set(names).size, spec.type).toBe(names.length);
        for (const handle of side) {
          expect(handle.name, spec.type).toMatch(/^[a-z][A-Za-z0-9]*$/);
          expect(valueKinds, `${spec.type}.${handle.name}`).toContain(handle.kind);
        }
      }
      for (const output of spec.outputs) {
        expect(output.required, spec.type).toBeUndefined();
        expect(output.multiple, spec.type).toBeUndefined();
      }
    }
  });

  it('prices every step in whole hundredths of a credit, draft never dearer and equal when priced per run', () => {
    for (const spec of entries) {
      const { production, draft } = spec.price;
      expect(Number.isInteger(production) && production >= 0, spec.type).toBe(true);
      expect(Number.isInteger(draft) && draft >= 0, spec.type).toBe(true);
      expect(draft, spec.type).toBeLessThanOrEqual(production);
      if (spec.model?.pricedPerRun) expect(draft, spec.type).toBe(production);
      if (spec.model && !spec.model.pricedPerRun) expect(draft, spec.type).toBeLessThan(production);
      if (!spec.model) expect(production, spec.type).toBeLessThanOrEqual(5);
    }
  });

  it('prices preview as production and draft as the draft price', () => {
    const spec = catalogue.ImageGen;
    expect(priceInMode(spec.price, 'production')).toBe(400);
    expect(priceInMode(spec.price, 'preview')).toBe(400);
    expect(priceInMode(spec.price, 'draft')).toBe(200);
    const perRun = catalogue.TwoDToThreeD.price;
    expect(priceInMode(perRun, 'draft')).toBe(priceInMode(perRun, 'production'));
  });

  it('marks the model steps, each on a real provider with a sandbox stand-in, and only those as category model', () => {
    const models = entries.filter((s) => s.model !== null).map((s) => s.type);
    expect(models).toEqual([...modelNodeTypes]);
    for (const spec of entries) {
      expect(spec.category === 'model', spec.type).toBe(spec.model !== null);
      if (spec.model) {
        expect(['bedrock', 'fal', 'replicate']).toContain(spec.model.provider);
        expect(spec.model.model).not.toBe('');
        expect(spec.model.sandboxModel).toMatch(/^sandbox-/);
      }
    }
  });

  it('lets TextEntry and PromptBuilder take text by apiInputKey, and the loaders that read a file a file', () => {
    expect(entries.filter((s) => s.acceptsApiInputKey === 'text').map((s) => s.type)).toEqual([
      'TextEntry',
      'PromptBuilder',
    ]);
    expect(
      Object.fromEntries(entries.flatMap((s) => (fileInputTypes(s) ? [[s.type, fileInputTypes(s)]] : []))),
    ).toEqual({
      FileUploader: [...uploadContentTypes],
      JsonLoader: ['application/json'],
      ImageLoader: ['image/png', 'image/jpeg', 'image/webp', 'image/gif'],
      RigImporter: ['model/gltf-binary', 'model/gltf+json', 'model/fbx', 'model/obj'],
    });
    // Each file step reads only types an upload may be, and its config takes the key.
    for (const spec of entries.filter((s) => fileInputTypes(s))) {
      expect(v.is(spec.configSchema, { apiInputKey: 'photo' }), spec.type).toBe(true);
    }
    expect(v.is(catalogue.TextEntry.configSchema, { apiInputKey: 'topic' })).toBe(true);
    expect(v.is(catalogue.TextEntry.configSchema, { apiInputKey: '' })).toBe(false);
  });

  it('accepts each entry’s documented minimal config, and {} wherever that is {}', () => {
    for (const spec of entries) {
      expect(spec.configSchema.type, spec.type).toBe('object');
      expect(v.safeParse(spec.configSchema, spec.minimalConfig).success, spec.type).toBe(true);
      if (Object.keys(spec.minimalConfig).length === 0) expect(v.is(spec.configSchema, {}), spec.type).toBe(true);
      else expect(v.is(spec.configSchema, {}), `${spec.type} needs a setting`).toBe(false);
    }
    const needSettings = entries.filter((s) => Object.keys(s.minimalConfig).length > 0).map((s) => s.type);
    expect(needSettings).toEqual([
      'JsonExtractor',
      'MathOperator',
      'ConditionalSwitch',
      'CustomApiCall',
      'PythonSandbox',
      'ApiPostAction',
      'CodeHostADelivery',
      'CodeHostBDelivery',
      'VcsCDelivery',
    ]);
  });

  it('lets unknown config keys through (v.object), so the app’s own settings do not fail validation', () => {
    expect(v.is(catalogue.ImageGen.configSchema, { width: 512, uiColour: 'red' })).toBe(true);
  });

  it('checks realistic config ranges', () => {
    expect(v.is(catalogue.ImageGen.configSchema, { width: 10 })).toBe(false);
    expect(v.is(catalogue.LlmWorker.configSchema, { temperature: 2.5 })).toBe(false);
    expect(v.is(catalogue.CustomApiCall.configSchema, { url: 'not a url' })).toBe(false);
    expect(v.is(catalogue.CustomApiCall.configSchema, { url: 'https://x.test/', timeoutMs: 30_001 })).toBe(false);
    expect(v.is(catalogue.ConditionalSwitch.configSchema, { operator: 'maybe' })).toBe(false);
  });

  it('finds entries by name and answers undefined for anything else', () => {
    expect(getNodeSpec('LlmWorker')?.displayName).toBe('LLM worker');
    expect(getNodeSpec('NoSuchNode')).toBeUndefined();
    expect(getNodeSpec('toString')).toBeUndefined();
  });
});

describe("a node's own time limit fits in its step's node timeout", () => {
  // Past the node timeout the step executor aborts the step and retries it: a limit above it would
  // turn a slow call or slow code into three executions and an execution error.
  it.each([
    ['CustomApiCall', httpCallMaxTimeoutMs, 5_000],
    ['PythonSandbox', pythonMaxTimeoutMs, 10_000],
  ] as const)('%s: timeoutMs at most its bound, which leaves the node timeout room', (type, max, room) => {
    expect(max + room).toBeLessThanOrEqual(stepNodeTimeoutSeconds * 1000);
    const spec = getNodeSpec(type);
    expect(v.safeParse(spec.configSchema, { ...spec.minimalConfig, timeoutMs: max }).success).toBe(true);
    expect(v.safeParse(spec.configSchema, { ...spec.minimalConfig, timeoutMs: max + 1 }).success).toBe(false);
  });
});

describe('kind compatibility', () => {
  it('connects a kind to itself and anything to or from any', () => {
    for (const kind of valueKinds) {
      expect(canConnect(kind, kind)).toBe(true);
      expect(canConnect(kind, 'any')).toBe(true);
      expect(canConnect('any', kind)).toBe(true);
    }
  });

  it('allows the documented coercions and nothing that invents a file', () => {
    expect(canConnect('number', 'text')).toBe(true);
    expect(canConnect('json', 'text')).toBe(true);
    expect(canConnect('text', 'json')).toBe(true);
    expect(canConnect('image', 'file')).toBe(true);
    expect(canConnect('mesh', 'file')).toBe(true);
    expect(canConnect('embedding', 'list')).toBe(true);
    expect(canConnect('text', 'image')).toBe(false);
    expect(canConnect('json', 'file')).toBe(false);
    expect(canConnect('file', 'image')).toBe(false);
    expect(canConnect('image', 'text')).toBe(false);
    expect(canConnect('json', 'list')).toBe(false);
  });
});
