/**
 * GET /workflows/{id} over the local API: a workflow described (its inputs' JSON Schema, its final
 * steps, its price range, its licence), every node type of the catalogue's run input described,
 * another team's id a 404; and a run start's own checks of `inputs` holding equal to the schema on
 * every example workflow and on generated inputs (the estimate answers the start's refusal without
 * starting anything; a refused start is answered the same 422).
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildOpenApiDocument } from '../functions/docs/openapi.ts';
import { loaderValueSettings } from '../functions/domain/loader-inputs.ts';
import { catalogue } from '../functions/nodes/catalogue/index.ts';
import { fileInputTypes } from '../functions/nodes/catalogue/node-spec.ts';
import { setLiveMultiplier } from '../functions/store/price-multiplier.ts';
import { putWorkflow } from '../functions/store/workflows.ts';
import type { WorkflowDescriptionView } from '../schemas/workflow-description.ts';
import { nodeTypes } from '../schemas/workflow-words.ts';
import { createWorkflowExamples } from '../schemas/workflows.ts';
import { expectValidResponse } from './support/openapi-validator.ts';
import { addKey, call, createWorkflow, type SeededTeam, seedUnthrottledTeam, stackPerFile } from './support/stack.ts';
import * as files from './support/upload-files.ts';

const doc = buildOpenApiDocument();
const { stack } = stackPerFile();

let team: SeededTeam;
let other: SeededTeam;
beforeAll(async () => {
  team = await seedUnthrottledTeam(stack.deps, 1000);
  other = await seedUnthrottledTeam(stack.deps);
});

const describeIt = async (key: string, workflowId: string) => {
  const path = `/workflows/${workflowId}`;
  const response = await call(stack.baseUrl, path, { key });
  expectValidResponse(doc, { method: 'GET', path, status: response.status, body: response.body });
  return response;
};

/** A licence without the instant its facts were read (each answer reads them when it is made). */
const unstamped = (licence: unknown) => {
  const { models, ...rest } = licence as { models: Record<string, unknown>[] };
  return { ...rest, models: models.map(({ stamped_at: _, ...model }) => model) };
};

const ajv = new Ajv2020({ strict: true, allErrors: true });
ajv.addKeyword('x-contentTypes');

/** A file input, a text input with a default, and a loader with its own value: each kind of run input. */
const mixedSteps = [
  { key: 'photo', type: 'ImageLoader', config: { apiInputKey: 'photo' } },
  { key: 'data', type: 'JsonLoader', config: { data: { a: 1 }, apiInputKey: 'data' } },
  { key: 'topic', type: 'TextEntry', config: { text: 'otters', apiInputKey: 'topic' } },
  { key: 'prompt', type: 'PromptBuilder', config: { template: 'About {{0}}' }, inputs: ['topic'] },
  { key: 'image', type: 'ImageGen', config: { width: 512, height: 512 }, inputs: ['prompt'] },
  { key: 'up', type: 'Upscaler', config: { scale: 2 }, inputs: ['photo'] },
  { key: 'show', type: 'ImageGallery', inputs: ['up'] },
];

describe('GET /workflows/{id}', () => {
  it('describes the latest version: after an update, its number and its own inputs', async () => {
    const workflowId = await createWorkflow(stack, team, mixedSteps, 'Mixed');
    const steps = [{ key: 'topic', type: 'TextEntry', config: { text: 'otters', apiInputKey: 'subject' } }];
    const updated = await call(stack.baseUrl, `/workflows/${workflowId}`, {
      key: team.key,
      method: 'PUT',
      body: { name: 'Mixed v2', steps, agentId: team.agentId },
    });
    expect(updated.status).toBe(200);
    const body = (await describeIt(team.key, workflowId)).body as unknown as WorkflowDescriptionView;
    expect(body).toMatchObject({ name: 'Mixed v2', version: 2 });
    expect(Object.keys(body.inputs.properties ?? {})).toEqual(['subject']);
  });

  it('answers the workflow: version, inputs, outputs, price range and licence, as the estimate prices and licenses it', async () => {
    const workflowId = await createWorkflow(stack, team, mixedSteps, 'Mixed');
    const response = await describeIt(team.key, workflowId);
    expect(response.status).toBe(200);
    const body = response.body as unknown as WorkflowDescriptionView;
    expect(body).toMatchObject({ id: workflowId, name: 'Mixed', version: 1 });
    expect(body.inputs).toEqual({
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      properties: {
        photo: {
          type: 'string',
          description: expect.stringContaining('image/png'),
          anyOf: [
            { title: 'fileId', pattern: expect.any(String) },
            { title: 'https URL', pattern: expect.any(String) },
          ],
          'x-contentTypes': ['image/png', 'image/jpeg', 'image/webp', 'image/gif'],
        },
        data: {
          type: 'string',
          description: expect.stringContaining('application/json'),
          anyOf: expect.any(Array),
          'x-contentTypes': ['application/json'],
        },
        topic: { type: 'string', description: expect.any(String), default: 'otters' },
      },
      required: ['photo'],
      additionalProperties: false,
    });
    // The steps nothing reads from, in step order: the JSON loader is one too.
    expect(body.outputs).toEqual([
      { key: 'data', type: 'JsonLoader', handles: [{ name: 'json', kind: 'json' }] },
      { key: 'image', type: 'ImageGen', handles: [{ name: 'image', kind: 'image' }] },
      { key: 'show', type: 'ImageGallery', handles: [{ name: 'images', kind: 'list' }] },
    ]);

    // Each mode's price is the estimate's for a start now in that mode; its licence the estimate's.
    for (const mode of ['production', 'draft', 'preview'] as const) {
      const estimate = await call(stack.baseUrl, `/workflows/${workflowId}/estimate`, {
        key: team.key,
        method: 'POST',
        body: { mode },
      });
      expect(body.price.modes).toContainEqual({ mode, estimatedCredits: estimate.body.estimatedCredits });
      expect(unstamped(body.licence)).toEqual(unstamped(estimate.body.licence));
    }
    expect(body.licence).not.toBeNull();
    const totals = (body.price.modes as { estimatedCredits: number }[]).map((m) => m.estimatedCredits);
    expect(body.price).toMatchObject({
      minCredits: Math.min(...totals),
      maxCredits: Math.max(...totals),
      multipliers: { min: 1, max: 1 },
    });
    expect(body.price.minCredits).toBeLessThan(body.price.maxCredits);
  });

  it('widens the price range to the multipliers a deferred run could start at', async () => {
    const workflowId = await createWorkflow(stack, team, mixedSteps, 'Priced');
    await setLiveMultiplier(stack.deps, 2);
    try {
      const { body } = await describeIt(team.key, workflowId);
      const modes = (body.price as { modes: { estimatedCredits: number }[] }).modes.map((m) => m.estimatedCredits);
      expect(body.price).toMatchObject({ multipliers: { min: 1, max: 2 }, minCredits: Math.min(...modes) });
      expect((body.price as { maxCredits: number }).maxCredits).toBeGreaterThan(Math.max(...modes));
    } finally {
      await setLiveMultiplier(stack.deps, null);
    }
  });

  it('describes the run input of every node type of the catalogue', async () => {
    const nodes = nodeTypes.map((type) => {
      const spec = catalogue[type];
      const config: Record<string, unknown> = { ...spec.minimalConfig };
      if (spec.acceptsApiInputKey) config.apiInputKey = `in-${type}`;
      return { id: `s-${type}`, type, label: type, config, position: { x: 0, y: 0 } };
    });
    const { workflowId } = await putWorkflow(stack.deps, {
      teamId: team.teamId,
      agentId: team.agentId,
      projectId: team.projectId,
      name: 'Every node type',
      description: null,
      status: 'draft',
      canvas: { nodes, edges: [] },
      stepsCount: nodes.length,
    });
    const response = await describeIt(team.key, workflowId);
    expect(response.status).toBe(200);
    const body = response.body as unknown as WorkflowDescriptionView;
    const properties = body.inputs.properties as Record<string, Record<string, unknown>>;
    const withInput = nodeTypes.filter((type) => catalogue[type].acceptsApiInputKey);
    expect(Object.keys(properties)).toEqual(withInput.map((type) => `in-${type}`));
    for (const type of nodeTypes) {
      const spec = catalogue[type];
      const property = properties[`in-${type}`];
      const types = fileInputTypes(spec);
      if (!spec.acceptsApiInputKey) expect(property, type).toBeUndefined();
      else if (types) expect(property, type).toMatchObject({ type: 'string', 'x-contentTypes': [...types] });
      else expect(property, type).toMatchObject({ type: 'string' });
      if (spec.acceptsApiInputKey === 'text') expect(property?.anyOf, type).toBeUndefined();
    }
    // A loader with nothing else to load needs its input; every smallest config gives none.
    expect(body.inputs.required).toEqual(withInput.filter((type) => type in loaderValueSettings).map((t) => `in-${t}`));
    expect(body.outputs.map((o) => o.key)).toEqual(nodes.map((n) => n.id));
    for (const output of body.outputs) {
      expect(output.handles).toEqual(
        catalogue[output.type as (typeof nodeTypes)[number]].outputs.map((h) => ({ name: h.name, kind: h.kind })),
      );
    }
    const modelSteps = nodes.filter((n) => catalogue[n.type].model).map((n) => n.id);
    expect(body.licence?.models.map((m) => m.node_id)).toEqual(modelSteps.sort());
  });

  it('reads another team’s workflow, an unknown id and one outside a limited key’s workflows as none (404)', async () => {
    const workflowId = await createWorkflow(stack, team, mixedSteps, 'Own');
    const foreign = await describeIt(other.key, workflowId);
    expect(foreign.status).toBe(404);
    const unknown = await describeIt(team.key, '00000000-0000-4000-8000-000000000000');
    expect(unknown.status).toBe(404);
    expect(foreign.body).toEqual(unknown.body);
    const limited = await addKey(stack.deps, team.teamId, { workflowIds: [other.agentId] });
    const outside = await describeIt(limited.key, workflowId);
    expect(outside.status).toBe(404);
    expect(outside.body).toEqual(unknown.body);
    // As the key's reads of the workflow's versions answer.
    const versions = await call(stack.baseUrl, `/workflows/${workflowId}/versions`, { key: limited.key });
    expect([versions.status, versions.body]).toEqual([404, unknown.body]);
    const allowed = await addKey(stack.deps, team.teamId, { workflowIds: [workflowId], scopes: ['workflows:read'] });
    expect((await describeIt(allowed.key, workflowId)).status).toBe(200);
    const noRead = await addKey(stack.deps, team.teamId, { scopes: ['runs:create'] });
    expect((await describeIt(noRead.key, workflowId)).status).toBe(403);
  });
});

describe('a run start checks its inputs by the described schema', () => {
  /** Every example workflow of the document, and one with each kind of run input. */
  const workflows = [
    ...Object.entries(createWorkflowExamples).map(([name, example]) => ({ name, steps: example.value.steps })),
    { name: 'mixed', steps: mixedSteps },
    // A loader with nothing to load and no key: every start is refused, and so are all inputs.
    {
      name: 'unloadable',
      steps: [
        { key: 'rig', type: 'RigImporter' },
        { key: 'topic', type: 'TextEntry', config: { apiInputKey: 'topic' } },
      ],
    },
  ];

  it('refuses exactly the inputs the schema refuses, with the start’s own 422, on every example and generated inputs', async () => {
    const image = await call(stack.baseUrl, '/files', {
      key: team.key,
      method: 'POST',
      body: { name: 'cat.png', contentType: 'image/png', size: files.png().length },
    });
    const upload = image.body.upload as { method: string; url: string; headers: Record<string, string> };
    const { 'content-length': _, ...headers } = upload.headers;
    await fetch(upload.url, { method: upload.method, headers, body: files.png() });
    const json = await call(stack.baseUrl, '/files', {
      key: team.key,
      method: 'POST',
      body: { name: 'a.json', contentType: 'application/json', size: files.json().length },
    });
    const jsonUpload = json.body.upload as typeof upload;
    const { 'content-length': __, ...jsonHeaders } = jsonUpload.headers;
    await fetch(jsonUpload.url, { method: jsonUpload.method, headers: jsonHeaders, body: files.json() });
    // A value each file step can use (its own type), and values no step can.
    const usable: Record<string, string> = {
      photo: image.body.fileId as string,
      data: json.body.fileId as string,
    };
    const values = fc.oneof(
      fc.string(),
      fc.constantFrom(
        '',
        'file_not-a-file',
        'http://93.184.216.34/cat.png',
        'https://93.184.216.34/cat.png',
        'https://',
        'ftp://93.184.216.34/cat.png',
        'otters',
      ),
    );

    for (const { name, steps } of workflows) {
      const workflowId = await createWorkflow(stack, team, steps as unknown[], name);
      const { body } = await describeIt(team.key, workflowId);
      const validate = ajv.compile(body.inputs as object);
      const keys = Object.keys((body.inputs as { properties: object }).properties);
      const inputs = fc.dictionary(fc.constantFrom(...keys, 'unknown', 'toString', 'photo2'), values, {
        maxKeys: 4,
      });
      // Half the time each file key is given the upload it reads.
      const withUploads = fc.tuple(inputs, fc.boolean()).map(([given, useFiles]) => {
        if (!useFiles) return given;
        const out = { ...given };
        for (const key of keys) if (usable[key] && key in out) out[key] = usable[key];
        return out;
      });
      await fc.assert(
        fc.asyncProperty(withUploads, async (given) => {
          const estimate = await call(stack.baseUrl, `/workflows/${workflowId}/estimate`, {
            key: team.key,
            method: 'POST',
            body: { inputs: given },
          });
          expect(estimate.status).toBe(200);
          const refusal = estimate.body.refusal as { status: number } | null;
          expect(refusal?.status === 422, `${name}: ${JSON.stringify(given)} → ${JSON.stringify(refusal)}`).toBe(
            !validate(given),
          );
        }),
        { numRuns: 25 },
      );
    }
  });

  it('answers a start the schema refuses with the 422 the estimate names, and starts one it accepts', async () => {
    const workflowId = await createWorkflow(stack, team, mixedSteps, 'Start');
    const { body } = await describeIt(team.key, workflowId);
    const validate = ajv.compile(body.inputs as object);
    for (const inputs of [
      {},
      { photo: 'http://93.184.216.34/cat.png' },
      { photo: 'https://93.184.216.34/a.png', x: 'y' },
    ]) {
      expect(validate(inputs)).toBe(false);
      const estimate = await call(stack.baseUrl, `/workflows/${workflowId}/estimate`, {
        key: team.key,
        method: 'POST',
        body: { inputs },
      });
      const start = await call(stack.baseUrl, `/workflows/${workflowId}/runs`, {
        key: team.key,
        method: 'POST',
        body: { inputs },
      });
      expect(start.status).toBe(422);
      expect(start.body).toEqual((estimate.body.refusal as { body: unknown }).body);
    }
    const accepted = { photo: 'https://93.184.216.34/cat.png', topic: 'seals' };
    expect(validate(accepted)).toBe(true);
    const start = await call(stack.baseUrl, `/workflows/${workflowId}/runs`, {
      key: team.key,
      method: 'POST',
      body: { inputs: accepted },
    });
    expect(start.status).toBe(200);
    expect(start.body).toMatchObject({ workflowId, status: 'queued' });
  });
});
