/**
 * The client's run event iterator and the CLI's `watch` over the stream, through
 * the local server as `npm start` serves it, with the queue workers running the runs.
 */
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import * as v from 'valibot';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../packages/client/src/cli.ts';
import {
  createClient,
  NotFoundError,
  parseServerSentEvents,
  type RunEvent,
  type ServerSentEvent,
  type WorkflowRunClient,
} from '../packages/client/src/index.ts';
import { RunEventSchema } from '../schemas/runs.ts';
import {
  chainSteps,
  createWorkflow,
  type SeededTeam,
  seedTeam,
  startWorkingStack,
  type TestStack,
} from './support/stack.ts';

let stack: TestStack;
let team: SeededTeam;
let client: WorkflowRunClient;

beforeAll(async () => {
  stack = await startWorkingStack();
  team = await seedTeam(stack.deps, { credits: 1000, key: { rateLimitPerMinute: 100_000 } });
  client = createClient({ baseUrl: stack.baseUrl, apiKey: team.key });
});
afterAll(async () => {
  await stack?.close();
});

const collect = async <T>(items: AsyncIterable<T>): Promise<T[]> => {
  const all: T[] = [];
  for await (const item of items) all.push(item);
  return all;
};

const bytes = async function* (...chunks: string[]) {
  for (const chunk of chunks) yield new TextEncoder().encode(chunk);
};

/** Counts the requests by path, and lets `alter` answer instead of the real API. */
const watchedFetch = (alter: (request: Request) => Promise<Response | undefined> = async () => undefined) => {
  const paths: string[] = [];
  const requests: Request[] = [];
  return {
    paths,
    requests,
    fetch: async (request: Request) => {
      paths.push(new URL(request.url).pathname);
      requests.push(request.clone());
      return (await alter(request)) ?? fetch(request);
    },
  };
};

const startChain = async () => {
  const workflowId = await createWorkflow(stack, team, chainSteps, `Streamed ${randomUUID().slice(0, 8)}`);
  const started = await client.runWorkflow(workflowId, { inputs: { topic: 'otters' } });
  if (!('jobId' in started)) throw new Error('deferred');
  return started.jobId;
};

describe('the server-sent events parser', () => {
  it('reads fields, comments, CR, LF and CRLF line ends, split anywhere, and carries the id over', async () => {
    const retries: number[] = [];
    const events = await collect(
      parseServerSentEvents(
        bytes(
          ': keep-alive\n\n',
          'event: step\rid: A',
          'Q\r\ndata: {"a":',
          '1}\r',
          '\n\r\n',
          'data: x\ndata: y\n\nretry: 250\n\n',
          'event: no-data\n\n',
        ),
        (ms) => retries.push(ms),
      ),
    );
    expect(events).toEqual<ServerSentEvent[]>([
      { event: 'step', id: 'AQ', data: '{"a":1}' },
      { event: 'message', id: 'AQ', data: 'x\ny' },
    ]);
    expect(retries).toEqual([250]);
  });
});

describe('client.runEvents', () => {
  it('iterates a run’s events to done, the final Run as getRun answers it', async () => {
    const jobId = await startChain();
    const events = await collect(client.runEvents(jobId));
    const done = events.at(-1)!;
    expect(done.event).toBe('done');
    expect(done.data).toEqual(await client.getRun(jobId));
    expect(events.filter((e) => e.event === 'step').map((e) => (e.data as { node_id: string }).node_id)).toEqual(
      expect.arrayContaining(chainSteps.map((s) => s.key)),
    );
    for (const event of events) expect(event.id).toMatch(/^[A-Za-z0-9_-]+$/);
    // Each event is what the document's RunEvent says it is (its data by its name).
    for (const event of events) expect(v.safeParse(RunEventSchema, event).issues).toBeUndefined();
  });

  it('reconnects with Last-Event-ID when the stream closes with retry: before done, losing and repeating nothing', async () => {
    const jobId = await startChain();
    await client.waitForRun(jobId, { intervalMs: 200 });
    const whole = await collect(client.runEvents(jobId));
    // The first answer is cut after its second event, then `retry:` and the end, as the server's cap does.
    const cut = watchedFetch(async (request) => {
      if (!request.url.endsWith('/events') || request.headers.has('last-event-id')) return undefined;
      const real = await fetch(request);
      const blocks = (await real.text()).split('\n\n').slice(0, 2);
      return new Response(`${blocks.join('\n\n')}\n\nretry: 10\n\n`, { status: 200, headers: real.headers });
    });
    const resumed = createClient({ baseUrl: stack.baseUrl, apiKey: team.key, fetch: cut.fetch });
    const events = await collect(resumed.runEvents(jobId));
    const streamRequests = cut.requests.filter((r) => r.url.endsWith('/events'));
    expect(streamRequests).toHaveLength(2);
    expect(streamRequests[1]!.headers.get('last-event-id')).toBe(whole[1]!.id);
    const said = (e: RunEvent) => JSON.stringify([e.event, e.data]);
    expect(events.map(said)).toEqual(whole.map(said));
  });

  it('throws the typed error of any route before the stream: 404 for another run', async () => {
    await expect(
      collect(client.runEvents(randomUUID(), { url: `${stack.baseUrl}/runs/${randomUUID()}/events` })),
    ).rejects.toBeInstanceOf(NotFoundError);
  });
});

describe('workflow-run watch', () => {
  const sink = () => {
    let text = '';
    const stream = Object.assign(
      new Writable({
        write(chunk, _encoding, callback) {
          text += chunk;
          callback();
        },
      }),
      { isTTY: false },
    );
    return { stream, text: () => text };
  };

  it('prints the run’s progress from its stream, reading the run once and never polling', async () => {
    const jobId = await startChain();
    const watched = watchedFetch();
    const out = sink();
    const code = await main(['watch', jobId, '--key', team.key, '--base-url', stack.baseUrl], {
      stdout: out.stream,
      stderr: out.stream,
      env: {},
      fetch: watched.fetch,
    });
    expect(code, out.text()).toBe(0);
    expect(out.text()).toContain(`run ${jobId} completed 100%`);
    expect(out.text()).toContain(`Run ${jobId} completed.`);
    expect(watched.paths.filter((p) => p.endsWith('/events')).length).toBeGreaterThanOrEqual(1);
    expect(watched.paths.filter((p) => p === `/api/v1/runs/${jobId}`)).toHaveLength(1);
  });

  it('on a terminal, fills the bar once every step has ended, a branch not taken (skipped) included', async () => {
    const workflowId = await createWorkflow(
      stack,
      team,
      [
        { key: 'topic', type: 'TextEntry', config: { text: 'otters' } },
        { key: 'switch', type: 'ConditionalSwitch', config: { operator: 'truthy' }, inputs: ['topic'] },
        { key: 'yes', type: 'TextConsole', inputs: [{ from: 'switch', sourceHandle: 'true' }] },
        { key: 'no', type: 'TextConsole', inputs: [{ from: 'switch', sourceHandle: 'false' }] },
      ],
      `Branching ${randomUUID().slice(0, 8)}`,
    );
    const started = await client.runWorkflow(workflowId);
    if (!('jobId' in started)) throw new Error('deferred');
    const run = await client.waitForRun(started.jobId, { intervalMs: 100 });
    expect(run.steps.map((s) => s.status)).toEqual(['completed', 'completed', 'completed', 'skipped']);
    // The API's progress counts completed steps only; the bar counts ended ones.
    expect(run.progress).toBe(75);
    let written = '';
    const stdout = Object.assign(
      new Writable({
        write(chunk, _encoding, callback) {
          written += chunk;
          callback();
        },
      }),
      { isTTY: true, columns: 120 },
    );
    const code = await main(['watch', started.jobId, '--key', team.key, '--base-url', stack.baseUrl], {
      stdout,
      stderr: stdout,
      env: {},
    });
    expect(code, written).toBe(0);
    const frames = written.split('\x1b[2KRun ');
    expect(frames.at(-1)).toContain(`[${'█'.repeat(30)}] 100%  completed`);
    expect(frames.at(-1)).toContain('- no (TextConsole): skipped');
  });

  it('falls back to polling GET /runs/{jobId} when the stream is unavailable', async () => {
    const jobId = await startChain();
    const refused = watchedFetch(async (request) =>
      request.url.endsWith('/events')
        ? new Response('{"message":"Not Found"}', { status: 404, headers: { 'content-type': 'application/json' } })
        : undefined,
    );
    const out = sink();
    const code = await main(['watch', jobId, '--key', team.key, '--base-url', stack.baseUrl], {
      stdout: out.stream,
      stderr: out.stream,
      env: {},
      fetch: refused.fetch,
    });
    expect(code, out.text()).toBe(0);
    expect(out.text()).toContain(`Run ${jobId} completed.`);
    expect(refused.paths.filter((p) => p.endsWith('/events'))).toHaveLength(1);
    expect(refused.paths.filter((p) => p === `/api/v1/runs/${jobId}`).length).toBeGreaterThanOrEqual(2);
  });
});
