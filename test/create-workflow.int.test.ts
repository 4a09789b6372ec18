import { randomUUID } from 'node:crypto';
import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Deps } from '../functions/deps.ts';
import { buildOpenApiDocument } from '../functions/docs/openapi.ts';
import { columnWidth, rowHeight } from '../functions/domain/layout.ts';
import type { Canvas } from '../functions/nodes/catalogue/canvas.ts';
import { agentKey, canvasKey, teamPartition } from '../functions/store/keys.ts';
import type { LocalApi } from '../local/api-gateway.ts';
import { localDeps } from '../local/local-deps.ts';
import type { WorkflowSummary } from '../schemas/workflows.ts';
import { expectValidResponse } from './support/openapi-validator.ts';
import { addKey, call, type SeededTeam, seedTeam, startTestStack, type TestStack } from './support/stack.ts';

const doc = buildOpenApiDocument();
const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** Plenty for one file's requests with one key (the default is 60 a minute). */
const manyRequests = { rateLimitPerMinute: 10_000 };

let stack: TestStack;
let team: SeededTeam;
let other: SeededTeam;
beforeAll(async () => {
  stack = await startTestStack();
  team = await seedTeam(stack.deps, { key: manyRequests });
  other = await seedTeam(stack.deps, { key: manyRequests });
});
afterAll(() => stack.close());

type Step = Record<string, unknown>;

/** POST /workflows over HTTP; every answer must match the served OpenAPI document. */
const post = async (key: string | undefined, body?: unknown, baseUrl = stack.baseUrl) => {
  const response = await call(baseUrl, '/workflows', { key, method: 'POST', body });
  expectValidResponse(doc, { method: 'POST', path: '/workflows', status: response.status, body: response.body });
  return response;
};

const create = (steps: Step[], owner: Record<string, unknown> = { agentId: team.agentId }, name = 'Workflow') =>
  post(team.key, { name, steps, ...owner });

const listWorkflows = async (key: string): Promise<WorkflowSummary[]> => {
  const response = await call(stack.baseUrl, '/workflows', { key });
  expect(response.status).toBe(200);
  expectValidResponse(doc, { method: 'GET', path: '/workflows', status: 200, body: response.body });
  return response.body.workflows as WorkflowSummary[];
};

const storedCanvas = async (workflowId: string): Promise<Canvas> => {
  const { Item } = await stack.deps.ddb.send(
    new GetCommand({ TableName: stack.deps.tableName, Key: canvasKey(workflowId), ConsistentRead: true }),
  );
  expect(Item).toBeDefined();
  return Item?.canvas as Canvas;
};

const agentItems = async (teamId: string) => {
  const { Items } = await stack.deps.ddb.send(
    new QueryCommand({
      TableName: stack.deps.tableName,
      KeyConditionExpression: 'PK = :pk AND begins_with(SK, :prefix)',
      ExpressionAttributeValues: { ':pk': teamPartition(teamId), ':prefix': 'AGENT#' },
      ConsistentRead: true,
    }),
  );
  return (Items ?? []).map((item) => item.agentId as string).sort();
};

/** What both teams hold: their workflows and agents, to show a refused request wrote nothing. */
const snapshot = async () => ({
  workflows: [await listWorkflows(team.key), await listWorkflows(other.key)],
  agents: [await agentItems(team.teamId), await agentItems(other.teamId)],
});

/** `length` steps: a TextEntry, then TextConsoles each reading the one before. */
const chain = (length: number): Step[] =>
  Array.from({ length }, (_, i) =>
    i === 0 ? { key: 's0', type: 'TextEntry' } : { key: `s${i}`, type: 'TextConsole', inputs: [`s${i - 1}`] },
  );

const oneStep: Step[] = [{ key: 'a', type: 'TextEntry', config: { text: 'hello' } }];

const expectNoOverlapAndEdgesRight = (canvas: Canvas) => {
  const at = new Map(canvas.nodes.map((n) => [n.id, n.position]));
  for (const edge of canvas.edges) {
    expect(at.get(edge.target)!.x, `${edge.source} → ${edge.target}`).toBeGreaterThan(at.get(edge.source)!.x);
  }
  const positions = canvas.nodes.map((n) => n.position);
  positions.forEach((a, i) => {
    for (const b of positions.slice(i + 1)) {
      expect(Math.abs(a.x - b.x) >= columnWidth || Math.abs(a.y - b.y) >= rowHeight).toBe(true);
    }
  });
};

describe('POST /workflows: created (201)', () => {
  it('adds the workflow to the agent given, in its project, and lists it at once as a draft', async () => {
    const response = await create(chain(2), { agentId: team.agentId }, 'Into the agent');
    expect(response.status).toBe(201);
    expect(response.body).toEqual({
      workflowId: expect.stringMatching(uuid),
      agentId: team.agentId,
      projectId: team.projectId,
      stepsCount: 2,
    });
    const listed = (await listWorkflows(team.key)).find((w) => w.id === response.body.workflowId);
    expect(listed).toEqual({
      id: response.body.workflowId,
      name: 'Into the agent',
      description: null,
      status: 'draft',
      updated_at: expect.any(String),
    });
    expect(Number.isNaN(Date.parse(listed!.updated_at!))).toBe(false);
    expect(await agentItems(team.teamId)).toContain(team.agentId);
  });

  it('creates a new agent named agentName in the project given', async () => {
    const before = await agentItems(team.teamId);
    const response = await post(team.key, {
      name: 'In a new agent',
      agentName: 'Texture bot',
      projectId: team.projectId,
      steps: oneStep,
    });
    expect(response.status).toBe(201);
    expect(response.body).toEqual({
      workflowId: expect.stringMatching(uuid),
      agentId: expect.stringMatching(uuid),
      projectId: team.projectId,
      stepsCount: 1,
    });
    const agentId = response.body.agentId as string;
    expect(before).not.toContain(agentId);
    const { Item } = await stack.deps.ddb.send(
      new GetCommand({ TableName: stack.deps.tableName, Key: agentKey(team.teamId, agentId), ConsistentRead: true }),
    );
    expect(Item).toMatchObject({ agentId, projectId: team.projectId, teamId: team.teamId, name: 'Texture bot' });
    const listed = (await listWorkflows(team.key)).find((w) => w.id === response.body.workflowId);
    expect(listed).toMatchObject({ name: 'In a new agent', status: 'draft', updated_at: expect.any(String) });
  });

  it('names the new agent after the workflow when agentName is left out', async () => {
    const response = await post(team.key, { name: 'Named after me', projectId: team.projectId, steps: oneStep });
    expect(response.status).toBe(201);
    const { Item } = await stack.deps.ddb.send(
      new GetCommand({
        TableName: stack.deps.tableName,
        Key: agentKey(team.teamId, response.body.agentId as string),
        ConsistentRead: true,
      }),
    );
    expect(Item).toMatchObject({ projectId: team.projectId, name: 'Named after me' });
  });

  it('stores the canvas: nodes as given, edges with default handles, laid out left to right', async () => {
    const steps: Step[] = [
      { key: 'topic', type: 'TextEntry', config: { text: 'a castle', apiInputKey: 'topic' } },
      { key: 'style', type: 'TextEntry', label: 'Style', config: { text: 'watercolour' } },
      {
        key: 'prompt',
        type: 'PromptBuilder',
        config: { template: '{{0}} in {{1}}' },
        inputs: ['topic', { from: 'style', targetHandle: 'values' }],
      },
      {
        key: 'image',
        type: 'ImageGen',
        label: 'Picture',
        config: { width: 512, height: 512 },
        inputs: ['prompt'],
      },
      { key: 'pbr', type: 'PbrSynthesizer', inputs: ['image'] },
      { key: 'upscale', type: 'Upscaler', inputs: [{ from: 'pbr', sourceHandle: 'normal' }] },
      {
        key: 'gallery',
        type: 'ImageGallery',
        inputs: [{ from: 'pbr', sourceHandle: 'albedo', targetHandle: 'images' }, 'upscale', 'image'],
      },
      { key: 'console', type: 'TextConsole', inputs: ['prompt'] },
    ];
    const response = await create(steps);
    expect(response.status).toBe(201);
    expect(response.body.stepsCount).toBe(steps.length);
    const canvas = await storedCanvas(response.body.workflowId as string);

    expect(canvas.nodes.map(({ position: _, ...node }) => node)).toEqual([
      {
        id: 'topic',
        type: 'TextEntry',
        label: 'Text entry',
        config: { text: 'a castle', apiInputKey: 'topic' },
      },
      { id: 'style', type: 'TextEntry', label: 'Style', config: { text: 'watercolour' } },
      { id: 'prompt', type: 'PromptBuilder', label: 'Prompt builder', config: { template: '{{0}} in {{1}}' } },
      {
        id: 'image',
        type: 'ImageGen',
        label: 'Picture',
        config: { width: 512, height: 512 },
      },
      { id: 'pbr', type: 'PbrSynthesizer', label: 'PBR synthesizer', config: {} },
      { id: 'upscale', type: 'Upscaler', label: 'Upscaler', config: {} },
      { id: 'gallery', type: 'ImageGallery', label: 'Image gallery', config: {} },
      { id: 'console', type: 'TextConsole', label: 'Text console', config: {} },
    ]);
    for (const node of canvas.nodes) {
      expect(node.position).toEqual({ x: expect.any(Number), y: expect.any(Number) });
    }

    const edge = (e: Canvas['edges'][number]) => `${e.source}.${e.sourceHandle} → ${e.target}.${e.targetHandle}`;
    expect(canvas.edges.map(edge).sort()).toEqual(
      [
        'topic.text → prompt.values',
        'style.text → prompt.values',
        'prompt.prompt → image.prompt',
        'image.image → pbr.image',
        'pbr.normal → upscale.image',
        'pbr.albedo → gallery.images',
        'upscale.image → gallery.images',
        'image.image → gallery.images',
        'prompt.prompt → console.text',
      ].sort(),
    );
    expect(new Set(canvas.edges.map((e) => e.id)).size).toBe(canvas.edges.length);
    expectNoOverlapAndEdgesRight(canvas);
  });
});

describe('POST /workflows: 400', () => {
  const valid = () => ({ name: 'W', agentId: team.agentId, steps: oneStep });

  it.each([
    ['name missing', { name: undefined }, 'name is required'],
    ['name empty', { name: '' }, 'name is required'],
    ['name not a string', { name: 42 }, 'name is required'],
    ['steps missing', { steps: undefined }, 'steps is required'],
    ['steps not an array (string)', { steps: 'a, b' }, 'steps is required'],
    ['steps not an array (object)', { steps: { key: 'a', type: 'TextEntry' } }, 'steps is required'],
    ['steps empty', { steps: [] }, 'steps is required'],
    ['neither agentId nor projectId', { agentId: undefined }, 'Provide exactly one of agentId or projectId'],
    ['both agentId and projectId', { projectId: randomUUID() }, 'Provide exactly one of agentId or projectId'],
  ])('%s', async (_, change, error) => {
    const response = await post(team.key, { ...valid(), ...change });
    expect(response.status).toBe(400);
    expect(response.body).toEqual({ error });
  });

  it('refuses a body that is not JSON', async () => {
    const response = await post(team.key, '{"name": "W", "steps": [');
    expect(response.status).toBe(400);
    expect(response.body).toEqual({ error: expect.stringMatching(/^Invalid request body: /) });
  });

  it('refuses JSON that is not an object', async () => {
    for (const body of ['[]', '"W"', 'null', '42']) {
      const response = await post(team.key, body);
      expect(response.status, body).toBe(400);
      expect(response.body).toEqual({ error: expect.stringMatching(/^Invalid request body: /) });
    }
  });

  it('refuses a missing body', async () => {
    const response = await post(team.key);
    expect(response.status).toBe(400);
    expect(response.body).toEqual({ error: expect.stringMatching(/^Invalid request body: /) });
  });

  it('refuses a step config that is an array rather than an object', async () => {
    const before = await snapshot();
    const response = await post(team.key, {
      ...valid(),
      steps: [...oneStep, { key: 'b', type: 'TextEntry', config: [1] }],
    });
    expect(response.status).toBe(400);
    expect(response.body).toEqual({ error: expect.stringMatching(/^Invalid request body: steps\[1\]\.config: /) });
    expect(await snapshot()).toEqual(before);
  });

  it('names the field of a step with the wrong shape', async () => {
    const response = await post(team.key, { ...valid(), steps: [{ key: 'a' }] });
    expect(response.status).toBe(400);
    expect(response.body).toEqual({ error: expect.stringMatching(/^Invalid request body: steps\[0\]\.type: /) });
  });
});

describe('POST /workflows: 401 and 403', () => {
  it('answers 401 without a key', async () => {
    const response = await post(undefined, { name: 'W', agentId: team.agentId, steps: oneStep });
    expect(response.status).toBe(401);
    expect(response.body).toEqual({ error: 'Unauthorized', reason: 'missing' });
  });

  it('answers 403 to a key without workflows:write', async () => {
    const { key } = await addKey(stack.deps, team.teamId, { scopes: ['workflows:read', 'runs:create', 'runs:read'] });
    const response = await post(key, { name: 'W', agentId: team.agentId, steps: oneStep });
    expect(response.status).toBe(403);
    expect(response.body).toEqual({ error: 'Scope not permitted for this key' });
  });

  it('answers 403 to a key limited to certain workflows', async () => {
    const created = await create(oneStep);
    const { key } = await addKey(stack.deps, team.teamId, { workflowIds: [created.body.workflowId as string] });
    const before = await snapshot();
    const response = await post(key, { name: 'W', agentId: team.agentId, steps: oneStep });
    expect(response.status).toBe(403);
    expect(response.body).toEqual({ error: 'This key is not permitted to create workflows' });
    expect(await snapshot()).toEqual(before);
  });
});

describe('POST /workflows: 404', () => {
  it.each([
    ['an unknown agentId', () => ({ agentId: randomUUID() })],
    ['an unknown projectId', () => ({ projectId: randomUUID() })],
    ['another team’s agentId', () => ({ agentId: other.agentId })],
    ['another team’s projectId', () => ({ projectId: other.projectId })],
  ])('reads %s as missing and writes nothing', async (_, owner) => {
    const before = await snapshot();
    const response = await create(oneStep, owner());
    expect(response.status).toBe(404);
    expect(response.body).toEqual({ error: 'Agent or project not found' });
    expect(await snapshot()).toEqual(before);
  });
});

describe('POST /workflows: 422', () => {
  it('names the first unknown node type', async () => {
    const before = await snapshot();
    const response = await create([
      { key: 'a', type: 'TextEntry' },
      { key: 'b', type: 'Foo' },
      { key: 'c', type: 'Bar' },
    ]);
    expect(response.status).toBe(422);
    expect(response.body).toEqual({ error: 'Unknown node type: Foo' });
    expect(await snapshot()).toEqual(before);
  });

  it('says which node type a typo most likely meant, and nothing for a name near none', async () => {
    const before = await snapshot();
    for (const [type, didYouMean] of [
      ['ImageLoadr', 'ImageLoader'],
      ['imageloader', 'ImageLoader'],
      ['TextEntri', 'TextEntry'],
    ] as const) {
      const response = await create([{ key: 'a', type }]);
      expect(response.status).toBe(422);
      expect(response.body).toEqual({ error: `Unknown node type: ${type}`, didYouMean });
    }
    expect((await create([{ key: 'a', type: 'Teleport' }])).body).toEqual({ error: 'Unknown node type: Teleport' });
    expect(await snapshot()).toEqual(before);
  });

  it('refuses a setting the node type does not have, naming it and the setting it most likely misspells', async () => {
    const before = await snapshot();
    const response = await create([
      { key: 'a', type: 'TextEntry', config: { text: 'hi', txet: 'x' } },
      { key: 'img', type: 'ImageLoader', config: { ulr: 'https://example.com/a.png' } },
      { key: 'w', type: 'WebhookListener', config: { colour: 'red' } },
    ]);
    expect(response.status).toBe(422);
    expect(response.body).toEqual({
      error: 'Workflow validation failed',
      errors: [
        {
          code: 'invalid_config',
          key: 'a',
          path: 'config.txet',
          message: 'TextEntry has no setting "txet"; did you mean "text"?',
        },
        {
          code: 'invalid_config',
          key: 'img',
          path: 'config.ulr',
          message: 'ImageLoader has no setting "ulr"; did you mean "url"?',
        },
        {
          code: 'invalid_config',
          key: 'w',
          path: 'config.colour',
          message: 'WebhookListener has no setting "colour"; its settings are "path"',
        },
      ],
    });
    expect(await snapshot()).toEqual(before);
  });

  const issue = (code: string, key: string | null, where: { handle?: string; path?: string } = {}) => ({
    code,
    key,
    ...where,
    message: expect.any(String),
  });

  it.each([
    [
      'a repeated step key',
      [
        { key: 'a', type: 'TextEntry' },
        { key: 'a', type: 'TextEntry' },
      ],
      [issue('duplicate_key', 'a', { path: 'key' })],
    ],
    [
      'an input naming no step',
      [{ key: 'c', type: 'TextConsole', inputs: ['ghost'] }],
      [issue('unknown_input', 'c', { path: 'inputs[0]' })],
    ],
    [
      'a cycle',
      [
        { key: 'a', type: 'TextConsole', inputs: ['b'] },
        { key: 'b', type: 'TextConsole', inputs: ['a'] },
      ],
      [issue('cycle', 'a'), issue('cycle', 'b')],
    ],
    ['a step reading from itself', [{ key: 'p', type: 'PromptBuilder', inputs: ['p'] }], [issue('cycle', 'p')]],
    [
      'an unknown output handle',
      [
        { key: 't', type: 'TextEntry' },
        { key: 'c', type: 'TextConsole', inputs: [{ from: 't', sourceHandle: 'nope' }] },
      ],
      [issue('unknown_handle', 'c', { handle: 'nope', path: 'inputs[0].sourceHandle' })],
    ],
    [
      'an unknown input handle',
      [
        { key: 't', type: 'TextEntry' },
        { key: 'p', type: 'PromptBuilder', inputs: [{ from: 't', targetHandle: 'bogus' }] },
      ],
      [issue('unknown_handle', 'p', { handle: 'bogus', path: 'inputs[0].targetHandle' })],
    ],
    [
      'incompatible value kinds',
      [
        { key: 'i', type: 'ImageLoader' },
        { key: 'c', type: 'TextConsole', inputs: ['i'] },
      ],
      [issue('incompatible_kinds', 'c', { handle: 'text', path: 'inputs[0]' })],
    ],
    [
      'a required input left unconnected',
      [{ key: 'c', type: 'TextConsole' }],
      [issue('missing_required_input', 'c', { handle: 'text' })],
    ],
    [
      'two connections into a single-connection input',
      [
        { key: 't1', type: 'TextEntry' },
        { key: 't2', type: 'TextEntry' },
        { key: 'c', type: 'TextConsole', inputs: ['t1', 't2'] },
      ],
      [issue('too_many_connections', 'c', { handle: 'text', path: 'inputs[1]' })],
    ],
    [
      'a config failing its schema',
      [{ key: 't', type: 'TextEntry', config: { text: 42 } }],
      [issue('invalid_config', 't', { path: 'config.text' })],
    ],
    [
      'a config missing a required setting',
      [{ key: 'm', type: 'MathOperator', config: {} }],
      [issue('invalid_config', 'm', { path: 'config.expression' })],
    ],
    [
      'apiInputKey on a step that takes none',
      [
        { key: 't', type: 'TextEntry' },
        { key: 'c', type: 'TextConsole', config: { apiInputKey: 'x' }, inputs: ['t'] },
      ],
      [issue('api_input_key_not_allowed', 'c', { path: 'config.apiInputKey' })],
    ],
    [
      'a repeated apiInputKey',
      [
        { key: 't', type: 'TextEntry', config: { apiInputKey: 'topic' } },
        { key: 'p', type: 'PromptBuilder', config: { apiInputKey: 'topic' } },
      ],
      [issue('duplicate_api_input_key', 'p', { path: 'config.apiInputKey' })],
    ],
  ])('reports %s', async (_, steps, errors) => {
    const before = await snapshot();
    const response = await create(steps);
    expect(response.status).toBe(422);
    expect(response.body).toEqual({ error: 'Workflow validation failed', errors });
    expect(await snapshot()).toEqual(before);
  });

  it('reports every problem of one request, not only the first', async () => {
    const response = await create([
      { key: 'a', type: 'TextEntry', config: { text: 1, apiInputKey: 'k' } },
      { key: 'a', type: 'TextEntry' },
      { key: 'p', type: 'PromptBuilder', config: { apiInputKey: 'k' }, inputs: ['ghost'] },
      { key: 'i', type: 'ImageLoader' },
      { key: 'c', type: 'TextConsole', inputs: ['i'] },
      { key: 'u', type: 'Upscaler', inputs: [{ from: 'i', sourceHandle: 'picture' }, 'i'] },
      { key: 'x', type: 'TextConsole', inputs: ['y'] },
      { key: 'y', type: 'TextConsole', inputs: ['x'] },
      { key: 'lonely', type: 'LlmWorker', config: { apiInputKey: 'q' } },
    ]);
    expect(response.status).toBe(422);
    expect(response.body.error).toBe('Workflow validation failed');
    expect(response.body.errors).toEqual(
      expect.arrayContaining([
        issue('invalid_config', 'a', { path: 'config.text' }),
        issue('duplicate_key', 'a', { path: 'key' }),
        issue('duplicate_api_input_key', 'p', { path: 'config.apiInputKey' }),
        issue('unknown_input', 'p', { path: 'inputs[0]' }),
        issue('api_input_key_not_allowed', 'lonely', { path: 'config.apiInputKey' }),
        issue('incompatible_kinds', 'c', { handle: 'text', path: 'inputs[0]' }),
        issue('unknown_handle', 'u', { handle: 'picture', path: 'inputs[0].sourceHandle' }),
        issue('too_many_connections', 'u', { handle: 'image', path: 'inputs[1]' }),
        issue('cycle', 'x'),
        issue('cycle', 'y'),
        issue('missing_required_input', 'lonely', { handle: 'prompt' }),
      ]),
    );
    expect(response.body.errors).toHaveLength(11);
  });
});

describe('POST /workflows: limits', () => {
  it('accepts 500 steps', async () => {
    const response = await create(chain(500));
    expect(response.status).toBe(201);
    expect(response.body.stepsCount).toBe(500);
    const canvas = await storedCanvas(response.body.workflowId as string);
    expect(canvas.nodes).toHaveLength(500);
    expect(canvas.edges).toHaveLength(499);
    expectNoOverlapAndEdgesRight(canvas);
  });

  it('refuses 501 steps with too_many_steps', async () => {
    const before = await snapshot();
    const response = await create(chain(501));
    expect(response.status).toBe(422);
    expect(response.body).toEqual({
      error: 'Workflow validation failed',
      errors: [{ code: 'too_many_steps', key: null, message: expect.any(String) }],
    });
    expect(await snapshot()).toEqual(before);
  });

  it('refuses a body over 256 KiB with 413', async () => {
    const body = JSON.stringify({
      name: 'Big',
      agentId: team.agentId,
      steps: [{ key: 'a', type: 'TextEntry', config: { text: 'x'.repeat(256 * 1024) } }],
    });
    const response = await post(team.key, body);
    expect(response.status).toBe(413);
    expect(response.body).toEqual({ error: 'Request body too large: at most 262144 bytes' });
  });

  it('refuses with 413, writing nothing, a small body whose canvas would not fit in one stored item', async () => {
    // 6,000 connections in a ~25 KB body: each becomes an edge of the stored canvas.
    const steps: Step[] = [
      { key: 't', type: 'TextEntry' },
      { key: 'p', type: 'PromptBuilder', inputs: Array.from({ length: 6000 }, () => 't') },
    ];
    const before = await snapshot();
    const response = await create(steps, { projectId: team.projectId });
    expect(response.status).toBe(413);
    expect(response.body).toEqual({ error: expect.stringMatching(/^Request body too large: .*at most 409600$/) });
    expect(await snapshot()).toEqual(before);
  });

  it('accepts a body just under 256 KiB', async () => {
    const base = JSON.stringify({
      name: 'Almost big',
      agentId: team.agentId,
      steps: [{ key: 'a', type: 'TextEntry', config: { text: '' } }],
    });
    const body = base.replace('"text":""', `"text":"${'x'.repeat(256 * 1024 - base.length)}"`);
    expect(Buffer.byteLength(body)).toBe(256 * 1024);
    const response = await post(team.key, body);
    expect([response.status, response.body]).toEqual([201, expect.anything()]);
    // Its version 1 keeps the canvas a run needs; its steps, which would not fit beside it, read null.
    const version = await call(stack.baseUrl, `/workflows/${response.body.workflowId}/versions/1`, { key: team.key });
    expect([version.status, version.body.steps, version.body.stepsCount]).toEqual([200, null, 1]);
  });
});

describe('POST /workflows: storage failure (500)', () => {
  let failingDeps: Deps;
  let failing: LocalApi;
  let transactWrites = 0;
  beforeAll(async () => {
    const { startLocalApi } = await import('../local/api-gateway.ts');
    failingDeps = localDeps(stack.resources);
    failingDeps.ddb.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'TransactWriteItemsCommand') {
          transactWrites++;
          throw Object.assign(new Error('internal detail: partition 7 at /var/db'), {
            name: 'InternalServerError',
            $fault: 'server',
            $metadata: { httpStatusCode: 500, requestId: 'failing-request' },
          });
        }
        return next(args);
      },
      { step: 'initialize', name: 'failTransactWriteItems' },
    );
    failing = await startLocalApi({ deps: failingDeps, port: 0, host: '127.0.0.1' });
  });
  afterAll(async () => {
    await failing.close();
    failingDeps.ddb.destroy();
  });

  it.each([
    ['into an agent', () => ({ agentId: team.agentId })],
    ['into a new agent of a project', () => ({ projectId: team.projectId, agentName: 'Never made' })],
  ])('answers 500 Server error and writes nothing (%s)', async (_, owner) => {
    const before = await snapshot();
    const attempts = transactWrites;
    const response = await post(team.key, { name: 'Doomed', steps: chain(3), ...owner() }, failing.baseUrl);
    expect(transactWrites).toBe(attempts + 1);
    expect(response.status).toBe(500);
    expect(response.body).toEqual({ error: expect.stringMatching(/^Server error: /) });
    const error = response.body.error as string;
    expect(error).not.toMatch(/\n|\bat .+:\d+|internal detail|\/var\/db/);
    expect(await snapshot()).toEqual(before);
  });
});
