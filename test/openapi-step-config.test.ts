/**
 * Consumers can type a step's settings: the served OpenAPI document states each node
 * type's step as a schema of its own, its `config` the catalogue's settings of that type, and
 * `WorkflowStep` as their `oneOf` discriminated by `type`. Types generated from the served document
 * with openapi-typescript (as `npm run client:types` does) type-check a workflow that sets a
 * provider, a model, `modelInput` and node settings, with no cast, and refuse a setting of the wrong
 * type; the document's schemas accept each node type's smallest valid config.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import ajvFormats from 'ajv-formats';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import openapiTS, { astToString, type OpenAPI3 } from 'openapi-typescript';
import type { OpenAPIObject, ReferenceObject, SchemaObject } from 'openapi3-ts/oas31';
import ts from 'typescript';
import * as v from 'valibot';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handler } from '../functions/api/get-openapi.ts';
import { buildWorkflowGraph } from '../functions/domain/workflow-graph.ts';
import { catalogue } from '../functions/nodes/catalogue/index.ts';
import { stepComponentName } from '../schemas/openapi.ts';
import { nodeTypes } from '../schemas/workflow-words.ts';
import { CreateWorkflowRequestSchema } from '../schemas/workflows.ts';

const agentId = '4a6f0e38-5b1d-4d2e-8f3a-1c2b3d4e5f60';

/** The document as GET /openapi.json answers it. */
const served = async (): Promise<OpenAPIObject> => {
  const event = { rawPath: '/api/v1/openapi.json', requestContext: { requestId: 'step-config' } };
  const answer = await handler(event as unknown as APIGatewayProxyEventV2);
  expect(answer.statusCode).toBe(200);
  return JSON.parse(answer.body) as OpenAPIObject;
};

let doc: OpenAPIObject;
let schemas: Record<string, SchemaObject | ReferenceObject>;
const schemaOf = (name: string) => schemas[name] as SchemaObject;
beforeAll(async () => {
  doc = await served();
  schemas = doc.components?.schemas ?? {};
});

describe('the document states each node type’s step', () => {
  it('WorkflowStep is a oneOf of one schema per node type of the catalogue, discriminated by type', () => {
    const step = schemaOf('WorkflowStep');
    expect(Object.keys(catalogue)).toEqual([...nodeTypes]);
    expect(step.oneOf).toEqual(nodeTypes.map((type) => ({ $ref: `#/components/schemas/WorkflowStep_${type}` })));
    expect(step.discriminator).toEqual({
      propertyName: 'type',
      mapping: Object.fromEntries(nodeTypes.map((type) => [type, `#/components/schemas/WorkflowStep_${type}`])),
    });
    // Create a workflow takes them.
    expect(schemaOf('CreateWorkflowRequest').properties?.steps).toMatchObject({
      items: { $ref: '#/components/schemas/WorkflowStep' },
    });
  });

  it.each(nodeTypes)('%s: its type, and its config with the catalogue’s settings', (type) => {
    const spec = catalogue[type];
    const step = schemaOf(stepComponentName(type));
    expect(step.properties?.type).toEqual({ const: type });
    expect(Object.keys(step.properties ?? {})).toEqual(['key', 'type', 'label', 'config', 'inputs']);
    const config = step.properties?.config as SchemaObject;
    expect(Object.keys(config.properties ?? {})).toEqual(Object.keys(spec.configSchema.entries));
    // A setting the catalogue does not list is refused at the start, so the document closes the object.
    expect(config.additionalProperties).toBe(false);
    if (spec.model) expect(config.properties).toMatchObject({ provider: {}, model: {}, modelInput: {} });
    // A step of a type with a required setting cannot leave its config out.
    const requiredSettings = config.required ?? [];
    expect(step.required).toEqual(requiredSettings.length ? ['key', 'type', 'config'] : ['key', 'type']);
  });

  it('the document’s schemas accept every node type’s smallest config and refuse a setting of the wrong type', () => {
    // `discriminator` is an OpenAPI keyword: an annotation here, the `oneOf` does the work.
    const ajv = new Ajv2020({ strict: true, allErrors: true });
    ajvFormats.default(ajv);
    ajv.addKeyword('discriminator');
    const defs = JSON.parse(JSON.stringify(schemas).replaceAll('#/components/schemas/', '#/$defs/')) as object;
    const validStep = ajv.compile({ $defs: defs, $ref: '#/$defs/WorkflowStep' });
    for (const type of nodeTypes) {
      const step = { key: 's', type, config: catalogue[type].minimalConfig };
      expect(validStep(step), `${type}: ${ajv.errorsText(validStep.errors)}`).toBe(true);
    }
    expect(validStep({ key: 'image', type: 'ImageGen', config: { width: '512' } })).toBe(false);
    expect(validStep({ key: 'image', type: 'ImageGen', config: { widht: 512 } })).toBe(false);
    expect(validStep({ key: 'x', type: 'NoSuchNode' })).toBe(false);
  });
});

/** The types openapi-typescript makes of the served document, with the options `npm run client:types` uses. */
const generatedTypes = async (): Promise<string> =>
  astToString(await openapiTS(doc as unknown as OpenAPI3, { defaultNonNullable: false }));

const header = `import type { components } from './openapi-types.ts';
type Schemas = components['schemas'];
`;

/** A workflow a consumer writes: a provider, a model, `modelInput` and node settings. */
const workflow = {
  name: 'Fox poster',
  agentId,
  steps: [
    { key: 'prompt', type: 'TextEntry', config: { text: 'a red fox', apiInputKey: 'prompt' } },
    {
      key: 'image',
      type: 'ImageGen',
      config: { provider: 'fal', model: 'fal-ai/flux/schnell', width: 512, modelInput: { guidance_scale: 3 } },
      inputs: ['prompt'],
    },
    { key: 'show', type: 'ImageGallery', config: { title: 'Foxes', columns: 2 }, inputs: ['image'] },
  ],
};

/** The workflow as a consumer's TypeScript, typed by the generated types alone: no cast anywhere. */
const typedWorkflow = `${header}
export const body: Schemas['CreateWorkflowRequest'] = ${JSON.stringify(workflow, null, 2)};

/** The union narrows by \`type\`: an ImageGen step's config has \`width\`. */
export const widthOf = (step: Schemas['WorkflowStep']): number | undefined =>
  step.type === 'ImageGen' ? step.config?.width : undefined;
`;

/** Steps the generated types must refuse, each for one reason, and what the compiler says. */
const refused: Record<string, { step: string; says: RegExp }> = {
  'a setting of the wrong type': {
    step: "{ key: 'image', type: 'ImageGen', config: { provider: 'fal', model: 'fal-ai/flux/schnell', width: '512' } }",
    says: /Type 'string' is not assignable to type 'number'/,
  },
  "another node type's setting": {
    step: "{ key: 'prompt', type: 'TextEntry', config: { text: 'a fox', width: 512 } }",
    says: /'width' does not exist in type '\{ text\?: string; apiInputKey\?: string; \}'/,
  },
  'no config where a setting is required': {
    step: "{ key: 'call', type: 'CustomApiCall' }",
    says: /Property 'config' is missing .* type: "CustomApiCall"; .*config: \{ url: string;/,
  },
  'a node type that does not exist': {
    step: "{ key: 'x', type: 'NoSuchNode' }",
    says: /Type '"NoSuchNode"' is not assignable/,
  },
};
const refusedSource = (step: string) => `${header}\nexport const step: Schemas['WorkflowStep'] = ${step};\n`;

describe('types generated from the served document', () => {
  let dir: string;
  let diagnostics: Map<string, readonly ts.Diagnostic[]>;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'openapi-step-config-'));
    writeFileSync(join(dir, 'openapi-types.ts'), await generatedTypes());
    const files: Record<string, string> = { 'workflow.ts': typedWorkflow };
    for (const [i, { step }] of Object.values(refused).entries()) files[`refused-${i}.ts`] = refusedSource(step);
    for (const [name, source] of Object.entries(files)) writeFileSync(join(dir, name), source);
    const program = ts.createProgram({
      rootNames: Object.keys(files).map((name) => join(dir, name)),
      options: {
        strict: true,
        exactOptionalPropertyTypes: true,
        noUncheckedIndexedAccess: true,
        noEmit: true,
        target: ts.ScriptTarget.ES2022,
        module: ts.ModuleKind.ESNext,
        moduleResolution: ts.ModuleResolutionKind.Bundler,
        allowImportingTsExtensions: true,
        lib: ['lib.es2022.d.ts'],
        types: [],
      },
    });
    const all = ts.getPreEmitDiagnostics(program);
    diagnostics = new Map(
      Object.keys(files).map((name) => [name, all.filter((d) => d.file?.fileName === join(dir, name))]),
    );
    // Nothing else fails: the generated file itself, the options, the libraries.
    expect(
      all.filter((d) => !d.file || !Object.keys(files).some((name) => d.file?.fileName === join(dir, name))),
    ).toEqual([]);
  }, 60_000);

  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const messages = (name: string) =>
    (diagnostics.get(name) ?? []).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));

  it('type-check a workflow with a provider, a model, modelInput and node settings, with no cast', () => {
    expect(typedWorkflow).not.toMatch(/\bas\b|<[A-Z]\w*>\s*\{|@ts-/);
    expect(messages('workflow.ts')).toEqual([]);
  });

  it('type the workflow the service accepts: its request schema, then its graph validation', () => {
    const parsed = v.parse(CreateWorkflowRequestSchema, workflow);
    expect(buildWorkflowGraph(parsed.steps)).toMatchObject({ ok: true });
  });

  it.each(Object.entries(refused).map(([reason, { says }], i) => [reason, says, i] as const))(
    'refuse %s',
    (_reason, says, i) => {
      expect(messages(`refused-${i}.ts`).join('\n')).toMatch(says);
    },
  );
});
