/**
 * A step that is not a model step reads `processing` while its node runs, as a model step does:
 * in GET /runs/{jobId} and in the run's event stream (which `watch` follows). A CustomApiCall to
 * a stand-in receiver on loopback (the third party, allowed as `npm start --private-callbacks`
 * allows it) holds its answer until the test has seen the step running, so nothing here waits on a
 * clock; before the start mark such a step read `queued` until it ended.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  call,
  createWorkflow,
  type SeededTeam,
  seedTeam,
  startRunOk,
  startWorkingStack,
  type TestStack,
  testExecutors,
  waitForRun,
} from './support/stack.ts';

let stack: TestStack;
let team: SeededTeam;
let receiver: Server;
let receiverUrl: string;
/** Answers the held request. */
let release: () => void = () => {};
let received: Promise<void>;

beforeAll(async () => {
  let seen: () => void = () => {};
  received = new Promise((resolve) => {
    seen = resolve;
  });
  receiver = createServer((_request, response) => {
    seen();
    release = () => {
      release = () => {};
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end('{"ok":true}');
    };
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  stack = await startWorkingStack({ executors: testExecutors({ ALLOW_PRIVATE_CALLBACKS: '1' }) });
  team = await seedTeam(stack.deps, { credits: 100, key: { rateLimitPerMinute: 10_000 } });
}, 60_000);
afterAll(async () => {
  release();
  receiver.closeAllConnections();
  await new Promise((resolve) => receiver.close(resolve));
  await stack?.close();
});

/** Polls GET /runs/{jobId} until `step` reads `status` (generous deadline: a loaded machine). */
const stepStatusBecomes = async (jobId: string, step: string, status: string) => {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const run = await call(stack.baseUrl, `/runs/${jobId}`, { key: team.key });
    const steps = run.body.steps as { node_id: string; status: string }[];
    const now = steps.find((s) => s.node_id === step)?.status;
    if (now === status) return run.body;
    if (Date.now() > deadline) throw new Error(`step ${step} still ${now}: ${JSON.stringify(run.body)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
};

/** The run's event stream, read until a `step` event of `step` carries `status`. */
const streamShows = async (jobId: string, step: string, status: string) => {
  const response = await fetch(`${stack.baseUrl}/runs/${jobId}/events`, {
    headers: { authorization: `Bearer ${team.key}`, accept: 'text/event-stream' },
  });
  expect(response.status).toBe(200);
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let text = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return false;
      text += decoder.decode(value, { stream: true });
      for (const block of text.split('\n\n')) {
        if (!block.includes('event: step')) continue;
        const data = block
          .split('\n')
          .find((line) => line.startsWith('data: '))
          ?.slice('data: '.length);
        const event = data ? (JSON.parse(data) as { node_id?: string; status?: string }) : {};
        if (event.node_id === step && event.status === status) return true;
      }
    }
  } finally {
    await reader.cancel();
  }
};

describe('a step that is not a model step', () => {
  it('reads processing while its node runs, in GET /runs/{jobId} and the event stream, then completed', async () => {
    const workflowId = await createWorkflow(stack, team, [
      { key: 'call', type: 'CustomApiCall', config: { url: receiverUrl, method: 'POST', timeoutMs: 20_000 } },
    ]);
    const jobId = await startRunOk(stack, team.key, workflowId);
    await received;
    const running = await stepStatusBecomes(jobId, 'call', 'processing');
    // A queued run with a step in flight reads `claimed`, as with a model step.
    expect(running.status).toBe('claimed');
    expect(await streamShows(jobId, 'call', 'processing')).toBe(true);
    release();
    const ended = await waitForRun(stack, team.key, jobId);
    expect(ended.body.status).toBe('completed');
    const steps = ended.body.steps as { node_id: string; status: string }[];
    expect(steps.find((s) => s.node_id === 'call')?.status).toBe('completed');
  });
});
