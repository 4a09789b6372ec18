/**
 * A run whose outputs together pass Lambda's 6 MB invoke result: its read answers 200 through the
 * local API gateway (which answers 500 for a result over 6 MiB, as API Gateway does), a page of
 * outputs at a time, and following `output_next` gives every output exactly once. The steps run
 * through the real step executor and write their items as every step does; only the node executor
 * is a stand-in, making 300 KB outputs.
 */
import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { beforeAll, describe, expect, it } from 'vitest';
import type { NodeExecutor } from '../functions/nodes/executors/types.ts';
import { makeHandler as makeWebhookHandler } from '../functions/workers/webhook-delivery.ts';
import { maxInvokeBytes } from '../local/api-gateway.ts';
import { invokedAs } from '../local/invocation.ts';
import { createClient } from '../packages/client/src/client.ts';
import { messages } from '../schemas/error-messages.ts';
import { expectValidResponse } from './support/openapi-validator.ts';
import { recordOf } from './support/queue-contents.ts';
import { deliver, doc, drainSteps, stepHandler, stepRecord, takeStepMessages } from './support/runs.ts';
import { call, createWorkflow, type SeededTeam, seedTeam, stackPerFile } from './support/stack.ts';
import { receiverCa, startReceiver } from './support/webhook-receiver.ts';

const { stack, closers } = stackPerFile();

/** 300 KB per output; the first three are all quotes, which the function's result escapes twice over. */
const outputChars = 300_000;
const filler = (nodeId: string) => (Number(nodeId.split('-')[1]) < 3 ? '"' : 'x').repeat(outputChars);
const bigExecutor: NodeExecutor = async (context) => {
  const [first] = context.spec.outputs;
  return { outputs: first ? { [first.name]: `${context.node.id}|${filler(context.node.id)}` } : {} };
};
const bigSteps = () => stepHandler(stack.deps, () => bigExecutor);

/** `count` final steps, each its own root: every one of them is an output of the run. */
const finalSteps = (count: number) =>
  Array.from({ length: count }, (_, i) => ({ key: `out-${i}`, type: 'TextEntry', config: { text: 'x' } }));

const startRun = async (team: SeededTeam, count: number, body: object = {}) => {
  const workflowId = await createWorkflow(stack, team, finalSteps(count));
  const started = await call(stack.baseUrl, `/workflows/${workflowId}/runs`, { key: team.key, method: 'POST', body });
  expect(started.status, JSON.stringify(started.body)).toBe(200);
  return started.body.jobId as string;
};

interface Page {
  status: number;
  bytes: number;
  body: { status: string; output: { node_id: string; result: string }[]; output_next?: string };
}

/** GET /runs/{jobId} through the local gateway, with the size of its body. */
const readPage = async (key: string, jobId: string, cursor?: string): Promise<Page> => {
  const query = cursor === undefined ? '' : `?output_cursor=${encodeURIComponent(cursor)}`;
  const response = await fetch(`${stack.baseUrl}/runs/${jobId}${query}`, {
    headers: { authorization: `Bearer ${key}` },
  });
  const text = await response.text();
  return { status: response.status, bytes: Buffer.byteLength(text), body: JSON.parse(text) };
};

/** Every page from the first, following `output_next` (each page asserted 200 and valid). */
const everyPage = async (key: string, jobId: string, first?: Page['body']) => {
  const pages: Page['body'][] = [];
  let body = first ?? (await readPage(key, jobId)).body;
  for (let i = 0; ; i++) {
    expect(i, 'the pages never end').toBeLessThan(50);
    pages.push(body);
    if (body.output_next === undefined) return pages;
    const next = await readPage(key, jobId, body.output_next);
    expect(next.status, JSON.stringify(next.body).slice(0, 300)).toBe(200);
    expectValidResponse(doc, { method: 'GET', path: `/runs/${jobId}`, status: 200, body: next.body });
    body = next.body;
  }
};

describe('a run whose outputs pass 6 MB', () => {
  const count = 24;
  let team: SeededTeam;
  let jobId: string;
  beforeAll(async () => {
    team = await seedTeam(stack.deps, { credits: 100 });
    jobId = await startRun(team, count);
    await drainSteps(stack.deps, bigSteps());
  }, 240_000);

  it('answers 200 under the limit, a page at a time, and its pages hold every output exactly once', async () => {
    const first = await readPage(team.key, jobId);
    expect(first.status, JSON.stringify(first.body).slice(0, 300)).toBe(200);
    expect(first.body.status).toBe('completed');
    expect(first.body.output_next).toEqual(expect.any(String));
    expect(first.bytes).toBeLessThan(maxInvokeBytes);
    expectValidResponse(doc, { method: 'GET', path: `/runs/${jobId}`, status: 200, body: first.body });

    const pages = await everyPage(team.key, jobId, first.body);
    expect(pages.length).toBeGreaterThan(1);
    const ids = pages.flatMap((page) => page.output.map((o) => o.node_id));
    // In the workflow's order, each once.
    expect(ids).toEqual(finalSteps(count).map((s) => s.key));
    for (const page of pages) for (const o of page.output) expect(o.result).toBe(`${o.node_id}|${filler(o.node_id)}`);
    // Whole, the view would not have fitted: this test would have met the gateway's 500.
    const whole = JSON.stringify({ ...first.body, output: pages.flatMap((p) => p.output), output_next: undefined });
    expect(Buffer.byteLength(JSON.stringify(JSON.stringify(whole)))).toBeGreaterThan(maxInvokeBytes);
  });

  it("the client's runOutputs follows the pages: every output once, in order", async () => {
    const client = createClient({ baseUrl: stack.baseUrl, apiKey: team.key });
    const ids: string[] = [];
    for await (const output of client.runOutputs(jobId)) ids.push(output.node_id);
    expect(ids).toEqual(finalSteps(count).map((s) => s.key));
    const first = await client.getRun(jobId);
    expect(first.output.length).toBeLessThan(count);
    const rest: string[] = [];
    for await (const output of client.runOutputs(jobId, { from: first })) rest.push(output.node_id);
    expect(rest).toEqual(ids);
  });

  it('refuses an altered cursor or another run\u2019s with the 400, and another team reads the run as missing', async () => {
    const { body } = await readPage(team.key, jobId);
    const cursor = body.output_next as string;
    const altered = `${cursor.slice(0, -1)}${cursor.endsWith('A') ? 'B' : 'A'}`;
    for (const bad of [altered, 'not-a-cursor', '']) {
      const refused = await call(stack.baseUrl, `/runs/${jobId}?output_cursor=${encodeURIComponent(bad)}`, {
        key: team.key,
      });
      expect(refused.status).toBe(400);
      expect(refused.body.error).toMatch(
        new RegExp(`^${messages.invalidQuery('').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`),
      );
      expectValidResponse(doc, { method: 'GET', path: `/runs/${jobId}`, status: 400, body: refused.body });
    }
    // The cursor of another run of the same team.
    const otherJob = await startRun(team, 1);
    const other = await call(stack.baseUrl, `/runs/${otherJob}?output_cursor=${encodeURIComponent(cursor)}`, {
      key: team.key,
    });
    expect(other.status).toBe(400);
    // Another team, with or without the cursor: no such run.
    const stranger = await seedTeam(stack.deps);
    for (const query of ['', `?output_cursor=${encodeURIComponent(cursor)}`]) {
      const missing = await call(stack.baseUrl, `/runs/${jobId}${query}`, { key: stranger.key });
      expect(missing).toMatchObject({ status: 404, body: { error: messages.runNotFound } });
    }
    await drainSteps(stack.deps, bigSteps());
  });
});

describe('the same bound on the cancel and the webhook', () => {
  it('answers a cancel under the limit with the first page and the marker', async () => {
    const team = await seedTeam(stack.deps, { credits: 100 });
    const count = 24;
    const jobId = await startRun(team, count);
    // All but one step finish: the run is still in progress, its finished outputs past 6 MB.
    const messages = await takeStepMessages(stack.deps);
    expect(messages).toHaveLength(count);
    const handler = bigSteps();
    for (const message of messages.slice(1)) expect(await deliver(handler, [stepRecord(message)])).toEqual([]);
    const cancelled = await call(stack.baseUrl, `/runs/${jobId}/cancel`, { key: team.key, method: 'POST' });
    expect(cancelled.status, JSON.stringify(cancelled.body).slice(0, 300)).toBe(200);
    // Steps had finished: the cancel stops the run.
    expect(cancelled.body.status).toBe('stopped');
    expect(cancelled.body.output_next).toEqual(expect.any(String));
    expectValidResponse(doc, { method: 'POST', path: `/runs/${jobId}/cancel`, status: 200, body: cancelled.body });
    const pages = await everyPage(team.key, jobId, cancelled.body as unknown as Page['body']);
    expect(pages.flatMap((p) => p.output.map((o) => o.node_id))).toEqual(
      finalSteps(count)
        .slice(1)
        .map((s) => s.key),
    );
  });

  it('posts the first page and the marker in the webhook, and its cursor reads the rest', async () => {
    const receiver = await startReceiver();
    closers.push(receiver.close);
    const team = await seedTeam(stack.deps, { credits: 100 });
    const count = 24;
    const jobId = await startRun(team, count, { callbackUrl: receiver.url });
    await drainSteps(stack.deps, bigSteps());
    const webhooks = makeWebhookHandler(stack.deps, { fetchOptions: { allowLoopback: true, ca: receiverCa } });
    for (let i = 0; i < 50 && receiver.received.length === 0; i++) {
      const { Messages = [] } = await stack.deps.sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: stack.deps.queueUrls.webhooks,
          MaxNumberOfMessages: 10,
          WaitTimeSeconds: 1,
        }),
      );
      const records = Messages.filter((m) => (JSON.parse(m.Body ?? '{}') as { jobId?: string }).jobId === jobId).map(
        (m) => recordOf({ messageId: m.MessageId ?? '', body: m.Body ?? '' }),
      );
      if (records.length > 0) {
        const answer = (await invokedAs(
          'WebhookDelivery',
          webhooks,
        )({ Records: records } as SQSEvent)) as SQSBatchResponse;
        expect(answer.batchItemFailures).toEqual([]);
      }
    }
    expect(receiver.received).toHaveLength(1);
    const posted = receiver.received[0]?.body ?? '';
    expect(Buffer.byteLength(posted)).toBeLessThan(maxInvokeBytes);
    const body = JSON.parse(posted) as Page['body'] & { event: string };
    expect(body.event).toBe('run.completed');
    expect(body.output_next).toEqual(expect.any(String));
    // The receiver follows the marker with the team's key.
    const pages = await everyPage(team.key, jobId, body);
    expect(pages.flatMap((p) => p.output.map((o) => o.node_id))).toEqual(finalSteps(count).map((s) => s.key));
  });
});
