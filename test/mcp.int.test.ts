/**
 * The MCP server (POST /mcp, functions/http/mcp.ts) driven by the MCP SDK's own client over the
 * local API, the real step executor running the runs: the key's workflows listed as tools with
 * their inputs, price and licence; a call that starts a run and answers its outputs, text as text
 * and the file as a resource link whose file link serves it; the refusals as tool errors carrying
 * the API's status and body; another team's workflows never listed.
 */
import { CreateQueueCommand } from '@aws-sdk/client-sqs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Deps } from '../functions/deps.ts';
import { workflowToolName } from '../functions/domain/mcp-tools.ts';
import { startSecondApi } from './support/runs.ts';
import { call, createWorkflow, type SeededTeam, seedTeam, startWorkingStack, type TestStack } from './support/stack.ts';

let stack: TestStack;
beforeAll(async () => {
  stack = await startWorkingStack();
});
afterAll(() => stack.close());

/** A text output and a file output: the run's input `topic` shown, and an image made from it. */
const imageSteps = [
  { key: 'topic', type: 'TextEntry', config: { text: 'a lighthouse', apiInputKey: 'topic' } },
  { key: 'show', type: 'TextConsole', inputs: ['topic'] },
  { key: 'image', type: 'ImageGen', inputs: ['topic'], config: { provider: 'sandbox', width: 96, height: 64 } },
];

/** The SDK's client connected to the stack's /mcp with `key` (initialize done). */
const connect = async (key: string, baseUrl = stack.baseUrl) => {
  const client = new Client({ name: 'mcp-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${baseUrl}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${key}` } },
  });
  await client.connect(transport);
  return client;
};

interface TextBlock {
  type: 'text';
  text: string;
}
interface LinkBlock {
  type: 'resource_link';
  uri: string;
  name: string;
  mimeType?: string;
  description?: string;
}
type Block = TextBlock | LinkBlock;

let team: SeededTeam;
let workflowId: string;
beforeAll(async () => {
  team = await seedTeam(stack.deps, { credits: 100, key: { rateLimitPerMinute: 100_000 } });
  workflowId = await createWorkflow(stack, team, imageSteps, 'Lighthouse');
});

describe('the MCP server', () => {
  it('lists the key’s workflows as tools with their inputs, price and licence, and get_run', async () => {
    const client = await connect(team.key);
    try {
      const { tools } = await client.listTools();
      const tool = tools.find((t) => t.name === workflowToolName(workflowId));
      expect(tool, JSON.stringify(tools)).toBeDefined();
      expect(tool?.name).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
      expect(tool?.title).toBe('Lighthouse');
      expect(tool?.inputSchema.properties).toHaveProperty('topic');
      expect(tool?.description).toMatch(/credits/);
      expect(tool?.description).toMatch(/licence/i);
      expect(tools.map((t) => t.name)).toContain('get_run');
    } finally {
      await client.close();
    }
  });

  it('calls a workflow: its text output as text, its file as a resource link that serves the file', async () => {
    const client = await connect(team.key);
    try {
      const result = await client.callTool({ name: workflowToolName(workflowId), arguments: { topic: 'a red barn' } });
      expect(result.isError, JSON.stringify(result)).toBeFalsy();
      const content = result.content as Block[];
      const summary = JSON.parse((content[0] as TextBlock).text) as { jobId: string; status: string };
      expect(summary.status, JSON.stringify(result)).toBe('completed');
      expect(content.some((block) => block.type === 'text' && block.text === 'a red barn')).toBe(true);
      const link = content.find((block): block is LinkBlock => block.type === 'resource_link');
      expect(link, JSON.stringify(content)).toBeDefined();
      expect(link?.mimeType).toMatch(/^image\//);
      expect(link?.description).toMatch(/licence/);
      // The file link needs no key: it redirects to the stored file.
      const served = await fetch(link?.uri ?? '');
      expect(served.status).toBe(200);
      expect(served.headers.get('content-type')).toBe(link?.mimeType);

      const read = await client.callTool({ name: 'get_run', arguments: { jobId: summary.jobId } });
      expect(read.isError).toBeFalsy();
      expect((read.structuredContent as { jobId: string; status: string }).status).toBe('completed');
    } finally {
      await client.close();
    }
  });

  it('answers a run not ended within the wait its jobId, status and progress; get_run reads it on', async () => {
    // A front whose clock is the test's (each pause of the wait moves it on at once) and whose
    // steps go to a queue no worker reads: the run cannot end, and the wait passes without waiting.
    let offset = 0;
    const { QueueUrl: unread } = await stack.deps.sqs.send(new CreateQueueCommand({ QueueName: 'mcp-unread-steps' }));
    const deps: Deps = {
      ...stack.deps,
      now: () => new Date(Date.now() + offset),
      sleep: async (ms: number) => {
        offset += ms;
      },
      queueUrls: { ...stack.deps.queueUrls, steps: String(unread) },
    };
    const slow = await startSecondApi(deps);
    const client = await connect(team.key, slow.baseUrl);
    try {
      const result = await client.callTool({ name: workflowToolName(workflowId), arguments: { topic: 'fog' } });
      expect(result.isError, JSON.stringify(result)).toBeFalsy();
      // The wait ran its course: 25 s of the test's clock, less the real time the looks took.
      expect(offset).toBeGreaterThan(20_000);
      const first = JSON.parse((result.content as TextBlock[])[0]?.text ?? '{}') as { jobId: string };
      expect(first).toMatchObject({
        jobId: expect.any(String),
        status: 'queued',
        progress: 0,
        next: expect.stringMatching(/get_run/),
      });
      expect(result.content as Block[]).toHaveLength(1);
      const read = await client.callTool({ name: 'get_run', arguments: { jobId: first.jobId } });
      expect(read.structuredContent).toMatchObject({ jobId: first.jobId, status: 'queued' });
      // Another team reads it as missing.
      const other = await seedTeam(stack.deps);
      const stranger = await connect(other.key, slow.baseUrl);
      try {
        const hidden = await stranger.callTool({ name: 'get_run', arguments: { jobId: first.jobId } });
        expect(hidden.isError).toBe(true);
        expect((hidden.structuredContent as { status: number }).status).toBe(404);
      } finally {
        await stranger.close();
      }
      const cancelled = await call(stack.baseUrl, `/runs/${first.jobId}/cancel`, { key: team.key, method: 'POST' });
      expect(cancelled.status).toBe(200);
    } finally {
      await client.close();
      await slow.close();
    }
  });

  it('answers arguments the run start refuses, and a get_run of no run, tool errors with the API’s 4xx', async () => {
    const client = await connect(team.key);
    try {
      for (const args of [{ topic: 5 }, { nope: 'x' }, { topic: { deep: true } }]) {
        const result = await client.callTool({ name: workflowToolName(workflowId), arguments: args });
        expect(result.isError, JSON.stringify(args)).toBe(true);
        const { status } = result.structuredContent as { status: number; error: string };
        expect([400, 422], JSON.stringify(result)).toContain(status);
      }
      for (const jobId of ['not-a-uuid', '00000000-0000-4000-8000-000000000000', 7]) {
        const result = await client.callTool({ name: 'get_run', arguments: { jobId } });
        expect(result.isError).toBe(true);
        expect((result.structuredContent as { status: number }).status).toBe(404);
      }
      // A name no tool has is the protocol's error.
      await expect(client.callTool({ name: 'run_nothing', arguments: {} })).rejects.toThrow(/Unknown tool/);
    } finally {
      await client.close();
    }
  });

  it('answers a key without runs:create a tool error carrying the API’s 403 body, and starts nothing', async () => {
    const reader = await call(stack.baseUrl, '/runs', { key: team.key });
    const runsBefore = (reader.body.runs as unknown[]).length;
    const { createApiKey } = await import('../functions/store/api-keys.ts');
    const { key } = await createApiKey(stack.deps, { teamId: team.teamId, scopes: ['workflows:read', 'runs:read'] });
    const client = await connect(key);
    try {
      const result = await client.callTool({ name: workflowToolName(workflowId), arguments: {} });
      expect(result.isError).toBe(true);
      expect(result.structuredContent).toEqual({ status: 403, error: expect.any(String) });
      const refused = await call(stack.baseUrl, `/workflows/${workflowId}/runs`, { key, method: 'POST', body: {} });
      expect(result.structuredContent).toEqual({ status: refused.status, ...refused.body });
    } finally {
      await client.close();
    }
    const after = await call(stack.baseUrl, '/runs', { key: team.key });
    expect((after.body.runs as unknown[]).length).toBe(runsBefore);
  });

  it('answers a start the credits refuse a tool error with the API’s 402 body', async () => {
    const poor = await seedTeam(stack.deps, { credits: 0 });
    const poorWorkflow = await createWorkflow(stack, poor, imageSteps);
    const client = await connect(poor.key);
    try {
      const result = await client.callTool({ name: workflowToolName(poorWorkflow), arguments: {} });
      expect(result.isError).toBe(true);
      const refused = await call(stack.baseUrl, `/workflows/${poorWorkflow}/runs`, {
        key: poor.key,
        method: 'POST',
        body: {},
      });
      expect(refused.status).toBe(402);
      expect(result.structuredContent).toEqual({ status: 402, ...refused.body });
    } finally {
      await client.close();
    }
  });

  it('lists no workflow of another team, and reads another team’s workflow and run as missing', async () => {
    const other = await seedTeam(stack.deps, { credits: 100 });
    const client = await connect(other.key);
    try {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toEqual(['get_run']);
      const result = await client.callTool({ name: workflowToolName(workflowId), arguments: {} });
      expect(result.isError).toBe(true);
      expect((result.structuredContent as { status: number }).status).toBe(404);
    } finally {
      await client.close();
    }
  });

  it('answers a notification 202 with no body, and refuses what MCP does not take with the API’s own 400', async () => {
    const post = (body: unknown, headers: Record<string, string> = {}) =>
      call(stack.baseUrl, '/mcp', { key: team.key, method: 'POST', body, headers });
    const notified = await post({ jsonrpc: '2.0', method: 'notifications/initialized' });
    expect(notified.status).toBe(202);
    expect(notified.body).toBe('');
    // No Accept header at all: answered as JSON all the same.
    const listed = await post({ jsonrpc: '2.0', id: 7, method: 'tools/list' });
    expect(listed.status).toBe(200);
    expect(listed.body).toMatchObject({ jsonrpc: '2.0', id: 7, result: { tools: expect.any(Array) } });
    const batch = await post([{ jsonrpc: '2.0', id: 1, method: 'tools/list' }]);
    expect(batch.status).toBe(400);
    expect(String(batch.body.error)).toMatch(/^Invalid request body: /);
    const oldVersion = await post(
      { jsonrpc: '2.0', id: 2, method: 'tools/list' },
      { 'mcp-protocol-version': '1999-01-01' },
    );
    expect(oldVersion.status).toBe(400);
    expect(String(oldVersion.body.error)).toMatch(/^Invalid request body: .*protocol version/i);
  });

  it('refuses a request without a key with the API’s 401, as any keyed route', async () => {
    const response = await call(stack.baseUrl, '/mcp', {
      method: 'POST',
      body: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
      headers: { accept: 'application/json, text/event-stream' },
    });
    expect(response.status).toBe(401);
  });
});
