/**
 * Misuse of every request body, through the real handlers (docs/api.md, "Workflows", "Starting a
 * run", "Errors"): every operation of the OpenAPI document that takes a body is walked with an
 * array in place of each object and an empty string in place of each string the document
 * declares, and answers 400 (the contract's own text where it has one, or its 422 where the
 * contract says so), never a 500 and never a success. And an Idempotency-Key names one request:
 * sent again on the other run endpoint, or for another id, it is refused, and nothing starts twice.
 */
import type { ReferenceObject, SchemaObject } from 'openapi3-ts/oas31';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listWaitingDeferredRuns } from '../functions/store/deferred-runs.ts';
import { routeById } from '../platform/routes.ts';
import { fileMessages, fileNotAcceptedPrefix, maxUploadBytes } from '../schemas/file-limits.ts';
import { uploadContentTypes } from '../schemas/upload-types.ts';
import { endpointUrlInvalidMessage } from '../schemas/webhook-endpoints.ts';
import { type Json, optionFor, type Path, resolveSchema, withValue } from './support/fuzz-requests.ts';
import { api, doc, expectBalanced, ledgerOf, pairPrice, pairSteps } from './support/runs.ts';
import { addKey, createWorkflow, type SeededTeam, seedTeam, startTestStack, type TestStack } from './support/stack.ts';

let stack: TestStack;
let team: SeededTeam;
let workflowId: string;
beforeAll(async () => {
  stack = await startTestStack();
  const seeded = await seedTeam(stack.deps, { credits: 100 });
  const key = await addKey(stack.deps, seeded.teamId, { rateLimitPerMinute: 100_000 });
  team = { ...seeded, key: key.key, keyId: key.keyId };
  workflowId = await createWorkflow(stack, team, pairSteps);
});
afterAll(() => stack.close());

/**
 * For each operation that takes a body, bodies that are valid and between them give every field
 * the document declares (both `agentId` and `projectId` cannot be in one body, so there are two).
 */
/** An hour from now: a `startBy` a deferred run may give. */
const hourAhead = () => new Date(Date.now() + 3600_000).toISOString();

const validBodies = (): Record<string, Json[]> => {
  const runBody: Json = {
    inputs: { topic: 'otters' },
    mode: 'draft',
    defer: false,
    maxMultiplier: 0.7,
    callbackUrl: 'https://example.com/hook',
    callbackSecret: 'secret',
    generateCallbackSecret: false,
    metadata: { order: 'o-1' },
    tags: ['walked'],
    webhookEvents: ['run.started', 'step.completed'],
    deadlineSeconds: 600,
    onConflict: 'replace',
    version: 1,
  };
  // `startBy` bounds a deferred or queued run only.
  const deferring: Json = { ...(runBody as Record<string, Json>), defer: true, startBy: hourAhead() };
  // The service issues the secret: not with a secret of the caller's.
  const { callbackSecret: _, ...withoutSecret } = runBody as Record<string, Json>;
  const issuing: Json = { ...withoutSecret, generateCallbackSecret: true };
  const steps: Json = [
    { key: 'topic', type: 'TextEntry', label: 'Topic', config: { text: 'otters', apiInputKey: 'topic' } },
    { key: 'style', type: 'TextEntry', config: { text: 'short' } },
    {
      key: 'prompt',
      type: 'PromptBuilder',
      config: { template: '{{0}} {{1}}' },
      inputs: ['topic', { from: 'style', sourceHandle: 'text', targetHandle: 'values' }],
    },
  ];
  return {
    CreateWorkflow: [
      { name: 'Walked', steps, agentId: team.agentId },
      { name: 'Walked', steps, projectId: team.projectId, agentName: 'Walker' },
    ],
    RunWorkflow: [runBody, issuing, deferring],
    RunAgent: [runBody, issuing, deferring],
    // One item a body, so a walked item refused leaves nothing else to start; each item is walked as its start's body.
    StartRunBatch: [
      { runs: [{ workflowId, ...(runBody as Record<string, Json>) }] },
      { runs: [{ agentId: team.agentId, ...(issuing as Record<string, Json>) }] },
      { runs: [{ workflowId, idempotencyKey: 'walked', ...(deferring as Record<string, Json>) }] },
    ],
    ResumeRun: [
      {
        inputs: { topic: 'otters' },
        callbackUrl: 'https://example.com/hook',
        callbackSecret: 'secret',
        generateCallbackSecret: false,
        webhookEvents: ['run.completed'],
        deadlineSeconds: 600,
        onConflict: 'queue',
        startBy: hourAhead(),
      },
      { callbackUrl: 'https://example.com/hook', generateCallbackSecret: true, deadlineSeconds: 600 },
    ],
    // A redelivery may name the lifecycle event's delivery.
    RedeliverWebhook: [{ event: 'step.completed', nodeId: 'prompt' }],
    // A run token's lifetime: its one field is a number, so only the body itself is walked.
    CreateRunToken: [{ expiresInSeconds: 600 }],
    CreateFile: [{ name: 'cat.png', contentType: 'image/png', size: 48_213 }],
    // An estimate reads a run start's body, as the start reads it.
    EstimateWorkflowRun: [runBody, issuing, deferring],
    EstimateAgentRun: [runBody, issuing, deferring],
    CreateWebhookEndpoint: [
      {
        url: 'https://hooks.example.com/runs',
        events: ['run.completed'],
        workflowIds: [workflowId],
        tags: ['nightly'],
        description: 'billing',
      },
    ],
    UpdateWebhookEndpoint: [
      {
        url: 'https://hooks.example.com/runs',
        events: ['run.completed'],
        workflowIds: [workflowId],
        tags: ['nightly'],
        description: 'billing',
        disabled: false,
      },
    ],
    // One JSON-RPC message of MCP: its envelope is ours to check, its params the MCP SDK's.
    Mcp: [{ jsonrpc: '2.0', id: 'walk-1', method: 'tools/list', params: {} }],
    // A new version takes a create's body, checked by the create's rules.
    UpdateWorkflow: [
      { name: 'Walked', steps, agentId: team.agentId },
      { name: 'Walked', steps, projectId: team.projectId, agentName: 'Walker' },
    ],
    SetWorkflowStatus: [{ status: 'active' }],
    // A bulk cancel takes ids or a filter, never both: a body each.
    CancelRuns: [
      { jobIds: ['00000000-0000-4000-8000-000000000000'] },
      {
        filter: {
          workflowId,
          tag: 'nightly',
          status: ['queued'],
          batchId: '00000000-0000-4000-8000-000000000000',
        },
      },
    ],
  };
};

/** The path each operation is called on. */
const pathOf = (operationId: string) =>
  routeById(operationId as 'RunWorkflow')
    .path.replace('{id}', ['RunAgent', 'EstimateAgentRun'].includes(operationId) ? team.agentId : workflowId)
    // The body is checked before the run is looked up: any jobId will do for a refusal.
    .replace('{jobId}', '00000000-0000-4000-8000-000000000000')
    .replace('{endpointId}', '00000000-0000-4000-8000-000000000000');

const resolve = (node: SchemaObject | ReferenceObject): SchemaObject => resolveSchema(doc, node);

interface Field {
  path: Path;
  kind: 'object' | 'string';
}

/**
 * Every object and string the schema declares, at the paths `value` gives them; also every
 * declared property `value` leaves out (the bodies must cover the whole schema).
 */
const fieldsOf = (node: SchemaObject | ReferenceObject, value: Json, path: Path, missing: Set<string>): Field[] => {
  const schema = resolve(node);
  if ((schema.anyOf ?? schema.oneOf) && !schema.properties) {
    const option = optionFor(doc, schema, value);
    return option ? fieldsOf(option, value, path, missing) : [];
  }
  if (schema.type === 'string' || typeof schema.const === 'string') return [{ path, kind: 'string' }];
  if (schema.type === 'array' && Array.isArray(value) && schema.items) {
    const items = schema.items;
    return value.flatMap((item, i) => fieldsOf(items, item, [...path, i], missing));
  }
  if (schema.type !== 'object' || value === null || typeof value !== 'object' || Array.isArray(value)) return [];
  const fields: Field[] = [{ path, kind: 'object' }];
  for (const [name, property] of Object.entries(schema.properties ?? {})) {
    if (name in value) fields.push(...fieldsOf(property, value[name] as Json, [...path, name], missing));
    else missing.add([...path.filter((p) => typeof p === 'string'), name].join('.'));
  }
  const extra = schema.additionalProperties;
  if (extra && typeof extra === 'object' && !schema.properties) {
    for (const [name, item] of Object.entries(value))
      fields.push(...fieldsOf(extra, item as Json, [...path, name], missing));
  }
  return fields;
};

/** As the 400 names a field: `steps[0].inputs[1].from`. */
const shown = (path: Path) =>
  path.map((p, i) => (typeof p === 'number' ? `[${p}]` : `${i === 0 ? '' : '.'}${p}`)).join('');

/** What the contract answers for an empty string where it says so; every other empty name is our 400. */
const contractAnswers: Record<string, { status: number; body: unknown }> = {
  name: { status: 400, body: { error: 'name is required' } },
  callbackUrl: { status: 422, body: { error: 'callbackUrl must be a valid https:// URL' } },
};
/** Our design's answers where a limit of the body is its own 422 (POST /files: the limit named, and all of them). */
const fileNotAccepted = (detail: string) => ({
  status: 422,
  body: { error: `${fileNotAcceptedPrefix}${detail}`, maxBytes: maxUploadBytes, contentTypes: [...uploadContentTypes] },
});
/** An endpoint's URL: one refusal whatever is wrong with it (schemas/webhook-endpoints.ts). */
const endpointUrlRefused = { status: 400, body: { error: `Invalid request body: url: ${endpointUrlInvalidMessage}` } };
const designedAnswers: Record<string, typeof contractAnswers> = {
  CreateWebhookEndpoint: { url: endpointUrlRefused },
  UpdateWebhookEndpoint: { url: endpointUrlRefused },
  CreateFile: {
    name: fileNotAccepted(fileMessages.nameInvalid),
    contentType: fileNotAccepted(fileMessages.contentTypeNotAccepted),
  },
};
/**
 * Strings that may be empty: a run's input value is text, and empty text is text; and a node's own
 * settings (`config.text`), which the graph validation checks against the catalogue (its 422 where
 * one must not be empty), not the request schema. `config.apiInputKey` is the request schema's.
 */
const mayBeEmpty = (path: Path) =>
  path[0] === 'inputs' ||
  (path[0] === 'metadata' && path.length === 2) || // a metadata value may be empty (docs/api.md)
  (path[0] === 'steps' && path[2] === 'config' && path[3] !== 'apiInputKey');

const operationsWithBodies = () =>
  Object.values(doc.paths ?? {}).flatMap((item) =>
    (['get', 'post', 'put', 'patch', 'delete'] as const).flatMap((method) => {
      const operation = item[method];
      const content =
        operation?.requestBody && 'content' in operation.requestBody ? operation.requestBody.content : undefined;
      const schema = content?.['application/json']?.schema;
      // Callers' operations: the provider webhook's body is whatever a provider signs (its own tests).
      const forCallers = operation?.operationId !== 'ProviderWebhook';
      return operation?.operationId && schema && forCallers
        ? [{ operationId: operation.operationId, method, schema }]
        : [];
    }),
  );

describe('every request body refuses an array for an object and an empty name', () => {
  it('finds the operations that take a body: create a workflow, both run starts, a resume, a redelivery, a run token, a file, both estimates, a webhook endpoint creation and change, an MCP message and a bulk cancel', () => {
    // In any order: the document's paths follow its operations' modules, not the route table.
    const withBodies = operationsWithBodies()
      .map((o) => o.operationId)
      .sort();
    expect(withBodies).toEqual(
      [
        'CreateWorkflow',
        'RunWorkflow',
        'RunAgent',
        // Each item answers in the batch's 200, as its own start would.
        'StartRunBatch',
        'ResumeRun',
        // Its optional body names a lifecycle event's delivery.
        'RedeliverWebhook',
        // Its optional body is the token's lifetime.
        'CreateRunToken',
        'CreateFile',
        'EstimateWorkflowRun',
        'EstimateAgentRun',
        'CreateWebhookEndpoint',
        'UpdateWebhookEndpoint',
        'Mcp',
        'UpdateWorkflow',
        'SetWorkflowStatus',
        'CancelRuns',
      ].sort(),
    );
  });

  it.each(operationsWithBodies().map((o) => [o.operationId, o] as const))('%s', async (operationId, operation) => {
    const bodies = validBodies()[operationId];
    if (!bodies) throw new Error(`no valid body for ${operationId}`);
    const method = operation.method.toUpperCase();
    const path = pathOf(operationId);
    const missing = new Set<string>();
    const fields = bodies.flatMap((body) => fieldsOf(operation.schema, body, [], missing).map((f) => ({ ...f, body })));
    // The bodies give every property the document declares, so every field is walked.
    const declared = new Set(fields.map((f) => f.path.filter((p) => typeof p === 'string').join('.')));
    expect([...missing].filter((name) => !declared.has(name))).toEqual([]);
    expect(fields.some((f) => f.kind === 'object')).toBe(true);

    const tried: string[] = [];
    for (const { path: whole, kind, body } of fields) {
      // A batch item's field is answered in its result, named as its own start names it.
      const inItem = operationId === 'StartRunBatch' && whole.length >= 2;
      const at = inItem ? whole.slice(2) : whole;
      if (kind === 'string' && mayBeEmpty(at)) continue;
      const mutated = withValue(body, whole, kind === 'object' ? [] : '');
      const sent = await api(stack.baseUrl, method, path, { key: team.key, body: mutated });
      const answer = inItem
        ? ((sent.body.results as { status: number; body: Record<string, unknown> }[])[Number(whole[1])] ?? sent)
        : sent;
      const where = `${operationId} ${shown(whole) || 'the body'} = ${kind === 'object' ? '[]' : '""'}`;
      const answers = designedAnswers[operationId] ?? contractAnswers;
      const contract = kind === 'string' && at.length === 1 ? answers[String(at[0])] : undefined;
      if (contract) expect([answer.status, answer.body], where).toEqual([contract.status, contract.body]);
      else {
        expect(answer.status, where).toBe(400);
        const prefix = at.length === 0 ? 'Invalid request body: ' : `Invalid request body: ${shown(at)}: `;
        expect(String(answer.body.error).startsWith(prefix), `${where}: ${answer.body.error}`).toBe(true);
        // An array where an object belongs is named so (in a union, as one of its options).
        if (kind === 'object')
          expect(String(answer.body.error), where).toMatch(/Expected .*Object.* but received Array$/);
        // A tag's own rule names its limit (schemas/run-tags.ts).
        else if (at[0] === 'tags')
          expect(String(answer.body.error), where).toMatch(/^Invalid request body: tags\[\d+\]: a tag /);
        else if (at[0] === 'filter' && at[1] === 'tag')
          expect(String(answer.body.error), where).toMatch(/^Invalid request body: filter\.tag: a tag /);
        else expect(String(answer.body.error), where).toMatch(/^Invalid request body: .*Invalid \w+: /);
      }
      tried.push(where);
    }
    // CreateFile's body is three fields: itself, and two strings; a resume's four: itself, its inputs and two
    // strings; a redelivery's three: itself and two strings.
    // A run token's one: itself.
    const fewest =
      {
        CreateWorkflow: 20,
        UpdateWorkflow: 20,
        SetWorkflowStatus: 1,
        CreateFile: 2,
        ResumeRun: 3,
        RedeliverWebhook: 2,
        CreateRunToken: 0,
      }[operationId] ?? 4;
    expect(tried.length).toBeGreaterThan(fewest);
    // Nothing was started or held by any of them.
    expect(await ledgerOf(stack.deps, team.teamId)).toEqual({ balance: 10_000, held: 0, charged: 0, granted: 10_000 });
  });

  it('the valid bodies themselves are accepted (so each refusal above is the one field walked)', async () => {
    for (const body of validBodies().CreateWorkflow ?? []) {
      const created = await api(stack.baseUrl, 'POST', '/workflows', { key: team.key, body });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
    }
    const ran = await api(stack.baseUrl, 'POST', pathOf('RunWorkflow'), {
      key: team.key,
      body: { ...(validBodies().RunWorkflow?.[0] as object), inputs: { in: '' }, defer: true },
    });
    // `inputs` keys are the workflow's: the pair has none, so an input key is the contract's 422.
    expect([ran.status, ran.body.error]).toEqual([422, 'Unknown input key(s): in']);
  });
});

describe('an Idempotency-Key names one request', () => {
  it('reused on the other run endpoint, or for another workflow, it is refused and nothing starts twice', async () => {
    const t = await seedTeam(stack.deps, { credits: 100, key: { rateLimitPerMinute: 100_000 } });
    const pair = await createWorkflow(stack, t, pairSteps);
    const other = await createWorkflow(stack, t, pairSteps, 'Other');
    const headers = { 'idempotency-key': `order-${t.teamId}` };
    const first = await api(stack.baseUrl, 'POST', `/workflows/${pair}/runs`, { key: t.key, headers });
    expect(first.status).toBe(200);
    // The agent's newest workflow is `other`, but the same workflow would be refused too: another endpoint.
    const reused = { status: 422, body: { error: 'Idempotency-Key reused with a different request' } };
    for (const path of [`/agents/${t.agentId}/runs`, `/workflows/${other}/runs`]) {
      const answer = await api(stack.baseUrl, 'POST', path, { key: t.key, headers });
      expect({ status: answer.status, body: answer.body }, path).toEqual(reused);
    }
    const again = await api(stack.baseUrl, 'POST', `/workflows/${pair}/runs`, { key: t.key, headers });
    expect([again.status, again.body]).toEqual([200, first.body]);
    const ledger = await ledgerOf(stack.deps, t.teamId);
    expectBalanced(ledger);
    expect(ledger).toMatchObject({ held: pairPrice, balance: 10_000 - pairPrice });

    // And the other way round: first on the agent endpoint (deferred, 202), then on the workflow's.
    const deferredHeaders = { 'idempotency-key': `deferred-${t.teamId}` };
    const deferred = await api(stack.baseUrl, 'POST', `/agents/${t.agentId}/runs`, {
      key: t.key,
      headers: deferredHeaders,
      body: { defer: true },
    });
    expect(deferred.status).toBe(202);
    const onWorkflow = await api(stack.baseUrl, 'POST', `/workflows/${deferred.body.workflowId}/runs`, {
      key: t.key,
      headers: deferredHeaders,
      body: { defer: true },
    });
    expect({ status: onWorkflow.status, body: onWorkflow.body }).toEqual(reused);
  });

  it('five concurrent first deferrals with one key defer one run and all answer it (never a 500)', async () => {
    const t = await seedTeam(stack.deps, { credits: 100, key: { rateLimitPerMinute: 100_000 } });
    const pair = await createWorkflow(stack, t, pairSteps);
    const headers = { 'idempotency-key': `defer-${t.teamId}` };
    const answers = await Promise.all(
      Array.from({ length: 5 }, () =>
        api(stack.baseUrl, 'POST', `/workflows/${pair}/runs`, { key: t.key, headers, body: { defer: true } }),
      ),
    );
    const waiting = await listWaitingDeferredRuns(stack.deps, t.teamId);
    expect(waiting).toHaveLength(1);
    const first = { deferred: true, deferredJobId: waiting[0]?.deferredJobId, workflowId: pair };
    for (const answer of answers) expect([answer.status, answer.body]).toEqual([202, first]);
  });
});
