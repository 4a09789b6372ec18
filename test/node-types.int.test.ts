/**
 * The node-type reference over the local API (GET /node-types, GET /node-types/{type}, no key),
 * each answer checked against the served document; and every request example of the served
 * document posted to the service, which must accept it (2xx). The reader's own ids stand in for
 * the examples' placeholder ids, as they would when trying the reference page.
 */
import type { MediaTypeObject, OperationObject, ParameterObject } from 'openapi3-ts/oas31';
import { describe, expect, it } from 'vitest';
import { buildOpenApiDocument } from '../functions/docs/openapi.ts';
import { nodeTypes } from '../schemas/workflow-words.ts';
import { createWorkflowExamples, exampleAgentId } from '../schemas/workflows.ts';
import { expectValidResponse } from './support/openapi-validator.ts';
import { call, seedTeam, stackPerFile } from './support/stack.ts';

const doc = buildOpenApiDocument();
const { stack } = stackPerFile();

const get = async (path: string) => {
  const response = await call(stack.baseUrl, path);
  expectValidResponse(doc, { method: 'GET', path, status: response.status, body: response.body });
  return response;
};

describe('GET /node-types', () => {
  it('answers every node type, in the catalogue order, without a key', async () => {
    const response = await get('/node-types');
    expect(response.status).toBe(200);
    const listed = response.body.nodeTypes as { type: string; description: string }[];
    expect(listed.map((node) => node.type)).toEqual([...nodeTypes]);
    for (const node of listed) expect(node.description, node.type).not.toBe('');
  });

  it('answers one node type: its handles, settings with defaults and bounds, price and model', async () => {
    const response = await get('/node-types/ImageGen');
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({
      type: 'ImageGen',
      category: 'model',
      inputs: [
        { name: 'prompt', kind: 'text', required: true, multiple: false },
        { name: 'reference', kind: 'image', required: false, multiple: false },
      ],
      outputs: [{ name: 'image', kind: 'image' }],
      price: { production: 400, draft: 200 },
      model: { sandboxModel: 'sandbox-image-1', pricedPerRun: false },
    });
    const settings = response.body.settings as { name: string }[];
    expect(settings.find((s) => s.name === 'width')).toMatchObject({ type: 'integer', minimum: 64, maximum: 2048 });
    expect(settings.find((s) => s.name === 'steps')).toMatchObject({ default: 30 });
    const prompt = await get('/node-types/PromptBuilder');
    expect(prompt.body.description).toContain('{{0}}');
    expect(prompt.body.runInput).toEqual({ kind: 'text' });
  });

  it('answers 404 for a name that is no node type', async () => {
    expect((await get('/node-types/ImageGenn')).status).toBe(404);
  });
});

type Example = { summary?: string; value: unknown };

/** Every request example of the served document: its operation's method and path, its name and body. */
const documentExamples = () => {
  const found: { method: string; path: string; operation: OperationObject; name: string; value: unknown }[] = [];
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const [method, operation] of Object.entries(item as Record<string, OperationObject>)) {
      const media = (operation.requestBody as { content?: Record<string, MediaTypeObject> } | undefined)?.content?.[
        'application/json'
      ];
      if (!media) continue;
      if (media.example !== undefined) found.push({ method, path, operation, name: 'example', value: media.example });
      for (const [name, example] of Object.entries((media.examples ?? {}) as Record<string, Example>)) {
        found.push({ method, path, operation, name, value: example.value });
      }
    }
  }
  return found;
};

/** A body with the reader's own agent in place of the examples' placeholder. */
const withOwnIds = (value: unknown, agentId: string): unknown =>
  JSON.parse(JSON.stringify(value).replaceAll(exampleAgentId, agentId));

describe('the examples of the served document', () => {
  it('are small', () => {
    const examples = documentExamples();
    expect(examples.length).toBeGreaterThan(0);
    for (const example of examples) expect(JSON.stringify(example.value).length).toBeLessThan(2_000);
  });

  it('are each accepted by the service (2xx)', async () => {
    const team = await seedTeam(stack.deps, { credits: 1_000, key: { rateLimitPerMinute: 10_000 } });
    const examples = documentExamples();
    for (const example of examples) {
      // A run start needs a workflow of its own (a run holds its workflow until it ends): the first
      // workflow example, which the run examples are written for, on a new agent of the team.
      const parameters = (example.operation.parameters ?? []) as ParameterObject[];
      let path = example.path;
      let agentId = team.agentId;
      if (parameters.some((p) => p.in === 'path')) {
        const created = await call(stack.baseUrl, '/workflows', {
          key: team.key,
          method: 'POST',
          body: { ...createWorkflowExamples.textChain.value, agentId: undefined, projectId: team.projectId },
        });
        expect(created.status, JSON.stringify(created.body)).toBe(201);
        const ids: Record<string, string> = {
          '/workflows/{id}/runs': created.body.workflowId as string,
          '/agents/{id}/runs': created.body.agentId as string,
          // A new version: a create's body on the workflow's own agent.
          '/workflows/{id}': created.body.workflowId as string,
        };
        if (example.path === '/workflows/{id}') agentId = created.body.agentId as string;
        const id = ids[example.path];
        // An operation whose examples this test cannot call yet: say which, so it learns it.
        if (id === undefined) throw new Error(`no ids for the examples of ${example.method} ${example.path}`);
        path = example.path.replace('{id}', id);
      }
      const response = await call(stack.baseUrl, path, {
        key: team.key,
        method: example.method.toUpperCase(),
        body: withOwnIds(example.value, agentId),
      });
      const label = `${example.method} ${example.path} example ${example.name}: ${JSON.stringify(response.body)}`;
      expect(response.status, label).toBeGreaterThanOrEqual(200);
      expect(response.status, label).toBeLessThan(300);
      expectValidResponse(doc, { method: example.method, path, status: response.status, body: response.body });
    }
  });
});
