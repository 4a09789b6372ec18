/**
 * GET /runs/{jobId}/events through the real path: the route's handler over a
 * function URL's event (payload 2.0, no path parameters, as Lambda gives it in RESPONSE_STREAM
 * mode), and over HTTP through the local server, which streams it as `npm start` does; against the
 * emulators, with a real run moved by the real step executor fed the messages the service queued.
 * The cap and the polls come from the timing the handler is given, never from the wall clock.
 */
import './support/test-providers.ts';
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { makeHandler } from '../functions/api/get-run-events.ts';
import type { StreamTiming } from '../functions/app/run-stream.ts';
import { decodeEventId } from '../functions/domain/run-stream.ts';
import type { ResponseHead } from '../functions/http/event-stream.ts';
import { invokedAs } from '../local/invocation.ts';
import { basePath } from '../platform/routes.ts';
import { streamRetryMs } from '../platform/run-stream.ts';
import { functionUrlDomain, runEventsUrlEvent } from './support/function-url-event.ts';
import {
  api,
  deliver,
  diamondSteps,
  drainSteps,
  getRunCall,
  realStepHandler,
  stepRecord,
  takeStepMessages,
} from './support/runs.ts';
import { addKey, createWorkflow, type SeededTeam, seedUnthrottledTeam, stackPerFile } from './support/stack.ts';

const { stack } = stackPerFile();

/** Fast polls; the cap far away unless a test says otherwise. */
const timing = (over: Partial<StreamTiming> = {}): StreamTiming => ({
  capMs: 600_000,
  pollMs: 20,
  fullReadMs: 100,
  retryMs: streamRetryMs,
  keepAliveMs: 600_000,
  ...over,
});

interface Answer {
  head: ResponseHead | undefined;
  text: string;
  ended: boolean;
}

/** Runs the route's handler on a function URL event, collecting what it streams. */
const readEvents = async (
  key: string,
  jobId: string,
  options: { lastEventId?: string; timing?: StreamTiming } = {},
): Promise<Answer> => {
  const answer: Answer = { head: undefined, text: '', ended: false };
  const headers: Record<string, string> = { authorization: `Bearer ${key}` };
  if (options.lastEventId !== undefined) headers['last-event-id'] = options.lastEventId;
  const handler = invokedAs('GetRunEvents', makeHandler(stack.deps, options.timing ?? timing()));
  await handler(runEventsUrlEvent(jobId, headers), (head) => {
    answer.head = head;
    return {
      write: (text) => {
        expect(answer.ended, 'a write after the end').toBe(false);
        answer.text += text;
      },
      end: () => {
        answer.ended = true;
      },
      closed: false,
    };
  });
  return answer;
};

interface Sse {
  event?: string;
  id?: string;
  data?: unknown;
  retry?: number;
}

/** The stream's blocks, each its fields (`data` parsed as JSON). */
const parse = (text: string): Sse[] =>
  text
    .split('\n\n')
    .filter((block) => block !== '')
    .map((block) => {
      const sse: Sse = {};
      for (const line of block.split('\n')) {
        const [field, ...rest] = line.split(': ');
        const value = rest.join(': ');
        if (field === 'event') sse.event = value;
        else if (field === 'id') sse.id = value;
        else if (field === 'data') sse.data = JSON.parse(value);
        else if (field === 'retry') sse.retry = Number(value);
        else throw new Error(`unexpected line ${line}`);
      }
      return sse;
    });

/** What an event says, without its id: how reads are compared. */
const said = (sse: Sse) => JSON.stringify([sse.event, sse.data]);

const startRun = async (team: SeededTeam, steps: unknown[] = diamondSteps) => {
  const workflowId = await createWorkflow(stack, team, steps);
  const started = await api(stack.baseUrl, 'POST', `/workflows/${workflowId}/runs`, {
    key: team.key,
    body: { inputs: { topic: 'otters' } },
  });
  expect(started.status, JSON.stringify(started.body)).toBe(200);
  return started.body.jobId as string;
};

/** Delivers the step messages queued now, once each (the run moves one wave of steps). */
const stepOnce = async () => {
  const handler = realStepHandler(stack.deps);
  for (const message of await takeStepMessages(stack.deps)) {
    expect(await deliver(handler, [stepRecord(message)])).toEqual([]);
  }
};

describe('GET /runs/{jobId}/events', () => {
  it('streams the run as it moves: steps, output and status with ids, then done (the Run as GET answers it), and ends', async () => {
    const team = await seedUnthrottledTeam(stack.deps, 100);
    const jobId = await startRun(team);
    const reading = readEvents(team.key, jobId);
    await drainSteps(stack.deps, realStepHandler(stack.deps));
    const answer = await reading;

    expect(answer.head?.statusCode).toBe(200);
    expect(answer.head?.headers['content-type']).toBe('text/event-stream');
    expect(answer.ended).toBe(true);
    const events = parse(answer.text);
    for (const sse of events) expect(sse.id, said(sse)).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(new Set(events.map((sse) => sse.id)).size).toBe(events.length);
    // The ids say what was sent: each one's state is its predecessor's plus the event.
    const last = events.at(-1)!;
    expect(last.event).toBe('done');
    expect(events.filter((sse) => sse.event === 'done')).toHaveLength(1);
    expect(decodeEventId(last.id, diamondSteps.length)).toMatchObject({
      done: true,
      status: 'completed',
      progress: 100,
    });

    const run = await getRunCall(stack.baseUrl, team.key, jobId);
    // The Run as GET answers it, but for its link: reached on a function URL (no edge), the stream
    // names its own address, which its function's environment cannot hold.
    expect(last.data).toEqual({
      ...run.body,
      links: { events: `https://${functionUrlDomain()}${basePath}/runs/${jobId}/events` },
    });
    expect((run.body.links as { events: string }).events).toBe(`${stack.baseUrl}/runs/${jobId}/events`);
    // Each step ended once, in the run's step order among the step events that are ends.
    const ends = events.filter(
      (sse) => sse.event === 'step' && (sse.data as { status: string }).status !== 'processing',
    );
    expect(ends.map((sse) => (sse.data as { node_id: string }).node_id).sort()).toEqual(
      (run.body.steps as { node_id: string }[]).map((s) => s.node_id).sort(),
    );
    for (const end of ends) expect(end.data).toMatchObject({ status: 'completed' });
    // The final step's output came as an output event, as GET shows it, after that step's end.
    const outputs = events.filter((sse) => sse.event === 'output');
    expect(outputs.map((sse) => sse.data)).toEqual(run.body.output);
    const endOfFinal = events.findIndex(
      (sse) => sse.event === 'step' && (sse.data as { node_id: string }).node_id === 'e',
    );
    expect(events.indexOf(outputs[0]!)).toBeGreaterThan(endOfFinal);
    // Status events only when something changed, progress never going back, the last one the run's.
    const statuses = events.filter((sse) => sse.event === 'status').map((sse) => sse.data as { progress: number });
    expect(statuses.length).toBeGreaterThanOrEqual(1);
    for (let i = 1; i < statuses.length; i++)
      expect(statuses[i]!.progress).toBeGreaterThanOrEqual(statuses[i - 1]!.progress);
    expect(statuses.at(-1)).toEqual({ status: 'completed', progress: 100 });
  });

  it('resumed with Last-Event-ID after the cap closed it mid-run, loses and repeats nothing', async () => {
    const team = await seedUnthrottledTeam(stack.deps, 100);
    const jobId = await startRun(team);
    await stepOnce(); // the root step `a` only

    // The cap: the stream sends what there is, then `retry:` and closes (a cap of 0: at its first look).
    const first = await readEvents(team.key, jobId, { timing: timing({ capMs: 0 }) });
    expect(first.ended).toBe(true);
    const firstEvents = parse(first.text);
    expect(firstEvents.at(-1)).toEqual({ retry: streamRetryMs });
    expect(firstEvents.some((sse) => sse.event === 'done')).toBe(false);
    const sentFirst = firstEvents.filter((sse) => sse.event !== undefined);
    expect(sentFirst.map(said)).toContain(
      said({ event: 'step', data: { node_id: 'a', step_type: 'TextEntry', status: 'completed' } }),
    );

    await drainSteps(stack.deps, realStepHandler(stack.deps));
    const second = await readEvents(team.key, jobId, { lastEventId: sentFirst.at(-1)!.id! });
    const secondEvents = parse(second.text);
    expect(secondEvents.at(-1)?.event).toBe('done');

    // One uninterrupted read of the same (now ended) run: the same ends, outputs and final Run.
    const whole = parse((await readEvents(team.key, jobId)).text);
    const union = [...sentFirst, ...secondEvents];
    const finals = (events: Sse[]) =>
      events
        .filter(
          (sse) =>
            sse.event === 'output' ||
            sse.event === 'done' ||
            (sse.event === 'step' && (sse.data as { status: string }).status !== 'processing'),
        )
        .map(said)
        .sort();
    // `done` carries fresh file links and a fresh read: compared by what GET answers now, below.
    const withoutDone = (events: Sse[]) => finals(events.filter((sse) => sse.event !== 'done'));
    expect(withoutDone(union)).toEqual(withoutDone(whole));
    expect(new Set(union.map(said)).size).toBe(union.length);
    expect(union.filter((sse) => sse.event === 'done')).toHaveLength(1);
    expect(secondEvents.at(-1)!.data).toEqual(whole.at(-1)!.data);
    expect(union.filter((sse) => sse.event === 'status').at(-1)!.data).toEqual({ status: 'completed', progress: 100 });
    // Nothing of the first read comes again.
    for (const sse of sentFirst) expect(secondEvents.map(said)).not.toContain(said(sse));

    // A reconnect after `done` is told there is nothing more: 204, no stream.
    const after = await readEvents(team.key, jobId, { lastEventId: secondEvents.at(-1)!.id! });
    expect(after.head?.statusCode).toBe(204);
    expect(after.text).toBe('');
  });

  it('reads a Last-Event-ID that is not one of this run’s as none: everything is sent', async () => {
    const team = await seedUnthrottledTeam(stack.deps, 100);
    const jobId = await startRun(team);
    await drainSteps(stack.deps, realStepHandler(stack.deps));
    const whole = parse((await readEvents(team.key, jobId)).text);
    for (const garbage of ['garbage!', 'AQAAAA', 'x'.repeat(5000), whole[0]!.id!.slice(0, -2)]) {
      const again = parse((await readEvents(team.key, jobId, { lastEventId: garbage })).text);
      expect(again.filter((sse) => sse.event !== 'done').map(said)).toEqual(
        whole.filter((sse) => sse.event !== 'done').map(said),
      );
    }
  });

  describe('over HTTP through the local server', () => {
    const eventsUrl = (jobId: string) => `${stack.baseUrl}/runs/${jobId}/events`;

    it('streams the whole run and ends', async () => {
      const team = await seedUnthrottledTeam(stack.deps, 100);
      const jobId = await startRun(team);
      await drainSteps(stack.deps, realStepHandler(stack.deps));
      const response = await fetch(eventsUrl(jobId), { headers: { authorization: `Bearer ${team.key}` } });
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('text/event-stream');
      const events = parse(await response.text());
      expect(events.at(-1)?.event).toBe('done');
    });

    it('answers 401, 403, 404 (unknown, another team’s) and 429 before the stream as every keyed route does', async () => {
      const team = await seedUnthrottledTeam(stack.deps, 100);
      const jobId = await startRun(team);
      const both = async (key: string | undefined, id: string) => {
        const headers: Record<string, string> = key ? { authorization: `Bearer ${key}` } : {};
        const stream = await fetch(eventsUrl(id), { headers });
        const read = await fetch(`${stack.baseUrl}/runs/${id}`, { headers });
        return {
          stream: { status: stream.status, type: stream.headers.get('content-type'), body: await stream.json() },
          read: { status: read.status, body: await read.json() },
        };
      };
      const expectSame = (answer: Awaited<ReturnType<typeof both>>, status: number) => {
        expect(answer.stream.status).toBe(status);
        expect(answer.stream.type).toBe('application/json');
        expect(answer.stream.body).toEqual(answer.read.body);
        expect(answer.read.status).toBe(status);
      };
      expectSame(await both(undefined, jobId), 401);
      expectSame(await both('wr_live_notakey', jobId), 401);
      const writeOnly = await addKey(stack.deps, team.teamId, { scopes: ['runs:create'] });
      expectSame(await both(writeOnly.key, jobId), 403);
      expectSame(await both(team.key, randomUUID()), 404);
      expectSame(await both(team.key, 'not-a-uuid'), 404);
      const other = await seedUnthrottledTeam(stack.deps, 100);
      expectSame(await both(other.key, jobId), 404);

      const slow = await addKey(stack.deps, team.teamId, { rateLimitPerMinute: 1 });
      const allowed = await fetch(`${stack.baseUrl}/runs/${randomUUID()}`, {
        headers: { authorization: `Bearer ${slow.key}` },
      });
      expect(allowed.status).toBe(404);
      const limited = await fetch(eventsUrl(jobId), { headers: { authorization: `Bearer ${slow.key}` } });
      expect(limited.status).toBe(429);
      expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(await limited.json()).toEqual({ error: 'Rate limit exceeded' });
    });

    it('answers a method or path the route does not have as API Gateway does (404 Not Found)', async () => {
      const team = await seedUnthrottledTeam(stack.deps, 100);
      const response = await fetch(`${eventsUrl(randomUUID())}/more`, {
        headers: { authorization: `Bearer ${team.key}` },
      });
      expect(response.status).toBe(404);
      expect(await response.json()).toEqual({ message: 'Not Found' });
      const post = await fetch(eventsUrl(randomUUID()), {
        method: 'POST',
        headers: { authorization: `Bearer ${team.key}` },
      });
      expect(post.status).toBe(404);
    });
  });
});
