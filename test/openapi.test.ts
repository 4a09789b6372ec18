import { readFileSync } from 'node:fs';
import { Validator } from '@seriousme/openapi-schema-validator';
import type { OperationObject, ResponseObject } from 'openapi3-ts/oas31';
import * as v from 'valibot';
import { describe, expect, it } from 'vitest';
import { buildOpenApiDocument } from '../functions/docs/openapi.ts';
import { routes } from '../platform/routes.ts';
import { messagePrefixes, messages } from '../schemas/error-messages.ts';
import { RunRequestSchema } from '../schemas/run-request.ts';
import { nodeTypes } from '../schemas/workflow-words.ts';
import { CreateWorkflowRequestSchema } from '../schemas/workflows.ts';
import { expectValidResponse, findPathTemplate, validateResponse } from './support/openapi-validator.ts';

/**
 * The repository's statement of the contract: the API guide (docs/api.md), which this file checks
 * against the document, so the guide and the served description cannot drift apart.
 */
const guide = readFileSync(new URL('../docs/api.md', import.meta.url), 'utf8');

/** The guide's endpoint table: method, path and whether the contract or our design defines it. */
const guideEndpoints = [
  ...guide.matchAll(/^\| `(GET|POST|PUT|PATCH|DELETE) (\S+)` \|.*\| (contract|our design) \|$/gm),
].map(([, method, path, from]) => ({ method: (method ?? '').toLowerCase(), path: path ?? '', from }));
const contractEndpoints = guideEndpoints.filter((e) => e.from === 'contract');
/** Operations our design adds where the contract leaves them open. */
const designedEndpoints = guideEndpoints.filter((e) => e.from === 'our design');

const doc = buildOpenApiDocument();

const operations = Object.entries(doc.paths ?? {}).flatMap(([path, item]) =>
  (['get', 'post', 'delete', 'put', 'patch'] as const).flatMap((method) => {
    const operation: OperationObject | undefined = item[method];
    return operation ? [{ method, path, operation }] : [];
  }),
);

const jobId = '0b7c8a4e-2f0a-4c56-9d7e-2d3c4b5a6f70';
const workflowId = '4a6f0e38-5b1d-4d2e-8f3a-1c2b3d4e5f60';

describe('OpenAPI document', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    const validator = new Validator();
    // As served: through JSON.
    const result = await validator.validate(JSON.parse(JSON.stringify(doc)));
    expect(result.errors).toBeUndefined();
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
  });

  it('declares OpenAPI 3.1.0, API version 1.0.0 and the base path as its server', () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info).toMatchObject({ title: 'Workflow Run API', version: '1.0.0' });
    expect(doc.servers).toEqual([{ url: '/api/v1' }]);
  });

  it('is built once per process', () => {
    expect(buildOpenApiDocument()).toBe(doc);
  });

  it('documents exactly the 7 endpoints of the contract and those of our design', () => {
    expect(contractEndpoints).toHaveLength(7);
    // Our design's endpoints are the guide's rows marked so, one per route the contract does not name.
    expect(designedEndpoints.length + contractEndpoints.length).toBe(routes.length);
    const documented = operations.map(({ method, path }) => `${method} ${path}`).sort();
    const expected = [...contractEndpoints, ...designedEndpoints].map(({ method, path }) => `${method} ${path}`).sort();
    expect(documented).toEqual(expected);
  });

  it('documents a request body on exactly the routes that read one (`body` in platform/routes.ts)', () => {
    const withBody = operations
      .filter(({ operation }) => operation.requestBody !== undefined)
      .map(({ operation }) => operation.operationId)
      // Whatever a provider signs, read raw and verified, not a caller's JSON body.
      .filter((id) => id !== 'ProviderWebhook');
    expect(withBody.sort()).toEqual(
      routes
        .filter((route) => route.body)
        .map((route) => route.id)
        .sort(),
    );
  });

  it('gives every operation a unique operationId, a summary and a description', () => {
    const ids = operations.map(({ operation }) => operation.operationId);
    expect(new Set(ids).size).toBe(operations.length);
    for (const { operation } of operations) {
      expect(operation.operationId).toMatch(/^[A-Z]\w+$/);
      expect(operation.summary).toBeTruthy();
      expect(operation.description).toBeTruthy();
    }
  });

  it('declares every tag an operation uses, each once (Spectral: operation-tag-defined)', () => {
    const declared = (doc.tags ?? []).map((tag) => tag.name);
    expect(new Set(declared).size).toBe(declared.length);
    const used = new Set(operations.flatMap(({ operation }) => operation.tags ?? []));
    expect([...used].filter((tag) => !declared.includes(tag))).toEqual([]);
  });

  it('requires the bearer key, names the scope and documents 401 and 429 on every keyed operation', () => {
    expect(doc.components?.securitySchemes?.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' });
    const keyed = operations.filter(({ operation }) => operation.security?.length !== 0);
    // Every route with a scope (platform/routes.ts): the contract's 7 but the document itself, and ours.
    expect(keyed).toHaveLength(routes.filter((route) => route.scope !== null).length);
    for (const { operation } of keyed) {
      // Or, where the route accepts one, a run token in place of the key (`runToken` in platform/routes.ts).
      const runToken = routes.find((route) => route.id === operation.operationId)?.runToken === true;
      expect(operation.security).toEqual([{ bearerAuth: [] }, ...(runToken ? [{ runToken: [] }] : [])]);
      expect(operation.description).toMatch(
        /Scope: `(workflows:read|workflows:write|runs:create|runs:read|credits:read|webhooks:read|webhooks:write|usage:read)`/,
      );
      expect(Object.keys(operation.responses ?? {})).toEqual(expect.arrayContaining(['401', '429']));
      expect(operation.responses?.['429']?.headers?.['Retry-After']).toEqual({
        $ref: '#/components/headers/Retry-After',
      });
    }
  });

  it('accepts a run token (`access_token`) on GET /runs/{jobId} and its stream only, whose every answer may carry Access-Control-Allow-Origin', () => {
    expect(doc.components?.securitySchemes?.runToken).toMatchObject({
      type: 'apiKey',
      in: 'query',
      name: 'access_token',
    });
    const tokened = operations.filter(({ operation }) =>
      operation.security?.some((requirement) => 'runToken' in requirement),
    );
    expect(tokened.map(({ operation }) => operation.operationId).sort()).toEqual(['GetRun', 'GetRunEvents']);
    for (const { operation } of tokened) {
      expect(operation.parameters).toContainEqual(expect.objectContaining({ name: 'access_token', in: 'query' }));
      for (const response of Object.values(operation.responses ?? {})) {
        expect((response as ResponseObject).headers?.['Access-Control-Allow-Origin']).toEqual({
          $ref: '#/components/headers/Access-Control-Allow-Origin',
        });
      }
    }
    const others = operations.filter(({ operation }) => !tokened.some((t) => t.operation === operation));
    for (const { operation } of others) {
      for (const response of Object.values(operation.responses ?? {})) {
        expect((response as ResponseObject).headers?.['Access-Control-Allow-Origin']).toBeUndefined();
      }
    }
  });

  it('serves GET /openapi.json without a key', () => {
    expect(doc.paths?.['/openapi.json']?.get?.security).toEqual([]);
  });

  it('documents the statuses of spec section 4 for each endpoint', () => {
    const statuses = (path: string, method: 'get' | 'post' | 'delete') =>
      Object.keys(doc.paths?.[path]?.[method]?.responses ?? {});
    // 503 (a read or a write met contention past its retries) is our design, on every route that reads the table.
    expect(statuses('/workflows', 'get')).toEqual(['200', '401', '403', '429', '503']);
    for (const path of ['/workflows', '/runs', '/runs/{jobId}', '/deferred-runs', '/files/{fileId}']) {
      expect(doc.paths?.[path]?.get?.responses?.['503']?.headers?.['Retry-After'], path).toBeDefined();
    }
    // 413 (a documented body size limit) is our design too.
    expect(statuses('/workflows', 'post')).toEqual([
      '201',
      '400',
      '401',
      '403',
      '404',
      '413',
      '422',
      '429',
      '500',
      '503',
    ]);
    for (const [path, method] of [
      ['/workflows', 'post'],
      ['/workflows/{id}/runs', 'post'],
      ['/agents/{id}/runs', 'post'],
      ['/runs/{jobId}/cancel', 'post'],
      ['/deferred-runs/{id}', 'delete'],
    ] as const) {
      expect(doc.paths?.[path]?.[method]?.responses?.['503']?.headers?.['Retry-After'], path).toBeDefined();
    }
    for (const path of ['/workflows/{id}/runs', '/agents/{id}/runs']) {
      expect(statuses(path, 'post')).toEqual(
        expect.arrayContaining(['200', '202', '401', '402', '403', '404', '409', '422', '429', '500', '503']),
      );
      expect(doc.paths?.[path]?.post?.responses?.['503']?.headers?.['Retry-After']).toBeDefined();
      expect(doc.paths?.[path]?.post?.requestBody).toMatchObject({ required: false });
      expect(doc.paths?.[path]?.post?.parameters).toContainEqual(
        expect.objectContaining({ name: 'Idempotency-Key', in: 'header', required: false }),
      );
    }
    // A run's read (our design): 400 for an output_cursor the run did not give.
    expect(statuses('/runs/{jobId}', 'get')).toEqual(['200', '400', '401', '403', '404', '429', '503']);
    expect(statuses('/deferred-runs/{id}', 'get')).toEqual(['200', '401', '403', '404', '429', '503']);
    // The lists (our design): 400 for a filter, limit or cursor they do not take.
    expect(statuses('/runs', 'get')).toEqual(['200', '400', '401', '403', '429', '503']);
    expect(statuses('/deferred-runs', 'get')).toEqual(['200', '400', '401', '403', '429', '503']);
    expect(doc.paths?.['/workflows']?.post?.requestBody).toMatchObject({ required: true });
  });

  it('resolves every $ref inside the document', () => {
    const refs = new Set<string>();
    const collect = (node: unknown): void => {
      if (Array.isArray(node)) node.forEach(collect);
      else if (node && typeof node === 'object') {
        for (const [key, value] of Object.entries(node)) {
          if (key === '$ref' && typeof value === 'string') refs.add(value);
          else collect(value);
        }
      }
    };
    collect(doc);
    expect(refs.size).toBeGreaterThan(10);
    for (const ref of refs) {
      expect(ref).toMatch(/^#\/components\/(schemas|headers)\//);
      const target = ref
        .slice(2)
        .split('/')
        .reduce<unknown>((node, part) => (node as Record<string, unknown> | undefined)?.[part], doc);
      expect(target, ref).toBeDefined();
    }
  });

  it('matches the route table: same method, path and operationId for every route', () => {
    for (const route of routes) {
      const operation = doc.paths?.[route.path]?.[route.method.toLowerCase() as 'get' | 'post' | 'delete'];
      expect(operation?.operationId, `${route.method} ${route.path}`).toBe(route.id);
    }
  });
});

describe('nodeTypes', () => {
  it('lists the 55 node types of the contract, in order and spelling', () => {
    const line = guide.match(/^The 55 node types, exactly: (.+)\.$/m)?.[1];
    expect(line).toBeDefined();
    expect(nodeTypes).toHaveLength(55);
    expect([...nodeTypes]).toEqual(line?.split(', '));
  });
});

describe('messages', () => {
  it('spells every message as the API guide does, word for word', () => {
    for (const [name, message] of Object.entries(messages)) {
      if (typeof message === 'string') expect(guide, name).toContain(`\`${message}\``);
    }
    for (const [name, prefix] of Object.entries(messagePrefixes)) expect(guide, name).toContain(`\`${prefix}<`);
  });
});

describe('request schemas', () => {
  const step = { key: 'prompt', type: 'TextEntry', config: { apiInputKey: 'prompt', text: 'a cat' } };

  it('answers the spec 400 messages for a create-workflow body', () => {
    const firstMessage = (body: unknown) => v.safeParse(CreateWorkflowRequestSchema, body).issues?.[0]?.message;
    expect(firstMessage({ steps: [step], agentId: workflowId })).toBe(messages.nameRequired);
    expect(firstMessage({ name: 'x', agentId: workflowId })).toBe(messages.stepsRequired);
    expect(firstMessage({ name: 'x', steps: [], agentId: workflowId })).toBe(messages.stepsRequired);
    expect(firstMessage({ name: 'x', steps: [step] })).toBe(messages.exactlyOneOfAgentOrProject);
    expect(firstMessage({ name: 'x', steps: [step], agentId: workflowId, projectId: workflowId })).toBe(
      messages.exactlyOneOfAgentOrProject,
    );
  });

  it('ignores unknown fields of a create-workflow body and keeps every config setting', () => {
    const parsed = v.parse(CreateWorkflowRequestSchema, {
      name: 'x',
      steps: [{ ...step, extra: true }],
      projectId: workflowId,
      extra: 1,
    });
    expect(parsed).toEqual({ name: 'x', steps: [step], projectId: workflowId });
  });

  it('fills run request defaults and refuses a non-https callbackUrl with the spec message', () => {
    expect(v.parse(RunRequestSchema, {})).toEqual({ mode: 'production', defer: false, maxMultiplier: 0.7 });
    for (const callbackUrl of ['http://example.com/hook', 'not a url']) {
      const issues = v.safeParse(RunRequestSchema, { callbackUrl }).issues ?? [];
      expect(issues.map((issue) => issue.message)).toContain(messages.callbackUrlInvalid);
      expect(new Set(issues.map((issue) => issue.message))).toEqual(new Set([messages.callbackUrlInvalid]));
    }
    expect(v.safeParse(RunRequestSchema, { defer: true, maxMultiplier: 0 }).success).toBe(false);
    expect(v.safeParse(RunRequestSchema, { defer: true, maxMultiplier: 10 }).success).toBe(true);
    expect(v.safeParse(RunRequestSchema, { defer: true, maxMultiplier: 10.5 }).success).toBe(false);
  });
});

describe('validateResponse', () => {
  const summary = {
    id: workflowId,
    name: 'Poster',
    description: null,
    status: 'active',
    updated_at: '2025-01-02T03:04:05.000Z',
  };

  it('accepts a correct list of workflows, with or without the base path', () => {
    for (const path of ['/workflows', '/api/v1/workflows']) {
      expect(validateResponse(doc, { method: 'GET', path, status: 200, body: { workflows: [summary] } })).toEqual({
        valid: true,
        errors: [],
      });
    }
  });

  it('rejects a WorkflowSummary missing status, and says why', () => {
    const { status: _, ...withoutStatus } = summary;
    const result = validateResponse(doc, {
      method: 'GET',
      path: '/workflows',
      status: 200,
      body: { workflows: [withoutStatus] },
    });
    expect(result.valid).toBe(false);
    expect(result.errors.join('\n')).toContain("/workflows/0 must have required property 'status'");
    expect(() =>
      expectValidResponse(doc, {
        method: 'GET',
        path: '/workflows',
        status: 200,
        body: { workflows: [withoutStatus] },
      }),
    ).toThrow(/GET \/workflows 200 does not match the OpenAPI document/);
  });

  it('rejects an unknown field in a response and a wrong error message', () => {
    const extra = validateResponse(doc, {
      method: 'GET',
      path: '/workflows',
      status: 200,
      body: { workflows: [{ ...summary, secret: 1 }] },
    });
    expect(extra.errors.join('\n')).toContain("must NOT have additional properties: 'secret'");
    expect(
      validateResponse(doc, { method: 'GET', path: '/workflows', status: 401, body: { error: 'Nope' } }).valid,
    ).toBe(false);
  });

  it('matches templated paths and checks a full run', () => {
    expect(findPathTemplate(doc, `/runs/${jobId}`)).toBe('/runs/{jobId}');
    expect(findPathTemplate(doc, `/api/v1/runs/${jobId}/cancel?x=1`)).toBe('/runs/{jobId}/cancel');
    const run = {
      jobId,
      status: 'completed',
      progress: 100,
      steps: [{ node_id: 'n1', step_type: 'ImageGen', status: 'completed' }],
      output: [
        {
          node_id: 'n1',
          step_type: 'ImageGen',
          result: {
            images: [
              {
                availability: 'ready',
                url: 'https://files.example.com/a.png',
                contentType: 'image/png',
                bytes: 1024,
                expiresAt: '2025-01-02T05:04:05.000Z',
                aiMark: 'service',
              },
            ],
          },
          licence: {
            commercial_use: 'provider_terms',
            models: [
              {
                node_id: 'n1',
                provider_key: 'provider-a',
                model: 'model-x',
                licence: null,
                licence_url: null,
                commercial_use: 'provider_terms',
                terms_url: 'https://provider.example.com/terms',
                stamped_at: '2025-01-02T03:04:05.000Z',
              },
            ],
          },
          ai_generated: true,
          generated_by: [{ node_id: 'n1', provider: 'provider-a', model: 'model-x' }],
        },
      ],
    };
    expectValidResponse(doc, { method: 'GET', path: `/runs/${jobId}`, status: 200, body: run });
    expect(
      validateResponse(doc, { method: 'GET', path: `/runs/${jobId}`, status: 200, body: { ...run, progress: 101 } })
        .valid,
    ).toBe(false);
  });

  it('picks the matching body among several for one status', () => {
    const runStart = { method: 'POST', path: `/workflows/${workflowId}/runs` };
    const valid = [
      { status: 402, body: { error: 'Insufficient credits', required: 12.5, balance: 3 } },
      {
        status: 402,
        body: { error: 'step over limit', nodeType: 'ImageGen', estimatedCharge: 40, ceiling: 25, balance: 3 },
      },
      { status: 409, body: { error: messages.runInProgress, activeJobId: jobId } },
      { status: 422, body: { success: false, errors: [{ code: 'cycle', key: null, message: 'Steps form a cycle' }] } },
      { status: 422, body: { error: messages.unknownInputKeys(['colour']), validKeys: ['prompt'] } },
      { status: 500, body: { error: messages.serverError('store unavailable') } },
    ];
    for (const response of valid) expectValidResponse(doc, { ...runStart, ...response });
    const invalid = [
      { status: 402, body: { error: 'Insufficient credits' } },
      { status: 422, body: { success: false, errors: [{ code: 'nope', key: null, message: 'x' }] } },
      { status: 500, body: { error: 'boom' } },
      { status: 418, body: { error: 'teapot' } },
    ];
    for (const response of invalid) expect(validateResponse(doc, { ...runStart, ...response }).valid).toBe(false);
  });

  it('checks the Retry-After header when headers are given', () => {
    const limited = { method: 'GET', path: '/workflows', status: 429, body: { error: messages.rateLimitExceeded } };
    expect(validateResponse(doc, { ...limited, headers: { 'retry-after': '30' } }).valid).toBe(true);
    expect(validateResponse(doc, { ...limited, headers: new Headers({ 'Retry-After': '30' }) }).valid).toBe(true);
    expect(validateResponse(doc, { ...limited, headers: {} }).errors).toEqual(['header Retry-After is required']);
    expect(validateResponse(doc, { ...limited, headers: { 'Retry-After': 'soon' } }).valid).toBe(false);
  });

  it('compiles the schema of every documented response', () => {
    for (const { method, path, operation } of operations) {
      for (const status of Object.keys(operation.responses ?? {})) {
        const concretePath = path.replaceAll(/\{[^}]+\}/g, jobId);
        const result = validateResponse(doc, { method, path: concretePath, status: Number(status), body: null });
        expect(result.valid, `${method} ${path} ${status}`).toBe(false);
      }
    }
  });

  it('reports an undocumented path or method', () => {
    expect(validateResponse(doc, { method: 'GET', path: '/nope', status: 200, body: {} }).errors).toEqual([
      'no path in the document matches /nope',
    ]);
    expect(validateResponse(doc, { method: 'PUT', path: '/workflows', status: 200, body: {} }).valid).toBe(false);
  });
});
