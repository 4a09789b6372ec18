/**
 * The per-key cap on open event streams (GET /runs/{jobId}/events) through the real path: the
 * route's handler over a function URL's event, against DynamoDB Local, on a run in progress (its
 * streams stay open until their caller goes away). The cap is an exact count of leases on the
 * key's item: past it the next stream is refused with 429 and `Retry-After` before it opens; a
 * closed stream frees its slot; a lease a killed function left behind counts only until it ends.
 */
import './support/test-providers.ts';
import { randomUUID } from 'node:crypto';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { makeHandler } from '../functions/api/get-run-events.ts';
import type { StreamTiming } from '../functions/app/run-stream.ts';
import { streamLeaseSeconds } from '../functions/domain/stream-slots.ts';
import { slotLease } from '../functions/domain/team-steps.ts';
import type { ResponseHead } from '../functions/http/event-stream.ts';
import { runStreamSlotsKey, streamSlotsKey } from '../functions/store/keys.ts';
import { takeStreamSlot } from '../functions/store/stream-slots.ts';
import { invokedAs } from '../local/invocation.ts';
import {
  streamCapSeconds,
  streamFunctionTimeoutSeconds,
  streamRetryMs,
  streamsPerKey,
  streamsPerRun,
} from '../platform/run-stream.ts';
import { runEventsUrlEvent } from './support/function-url-event.ts';
import { api, diamondSteps } from './support/runs.ts';
import { addKey, createWorkflow, type SeededTeam, seedUnthrottledTeam, stackPerFile } from './support/stack.ts';

const { stack } = stackPerFile();

/** Fast polls, the cap far away: a stream stays open until its caller goes away. */
const timing: StreamTiming = {
  capMs: 600_000,
  pollMs: 20,
  fullReadMs: 100,
  retryMs: streamRetryMs,
  keepAliveMs: 600_000,
};

/** One stream as its caller sees it: the head once sent, the body, and a way to go away. */
interface Stream {
  head: Promise<ResponseHead>;
  text: () => string;
  /** The caller goes away; resolves when the handler returned. */
  close: () => Promise<void>;
  done: Promise<void>;
}

const openStream = (key: string, jobId: string): Stream => {
  let text = '';
  let closed = false;
  let sentHead: (head: ResponseHead) => void = () => undefined;
  const head = new Promise<ResponseHead>((resolve) => {
    sentHead = resolve;
  });
  const handler = invokedAs('GetRunEvents', makeHandler(stack.deps, timing));
  const done = handler(runEventsUrlEvent(jobId, { authorization: `Bearer ${key}` }), (opened) => {
    sentHead(opened);
    return {
      write: (chunk) => {
        text += chunk;
      },
      end: () => {
        closed = true;
      },
      get closed() {
        return closed;
      },
    };
  });
  return {
    head,
    text: () => text,
    done,
    close: async () => {
      closed = true;
      await done;
    },
  };
};

/** A run that stays in progress: its steps are queued and never delivered here. */
const startRun = async (team: SeededTeam) => {
  const workflowId = await createWorkflow(stack, team, diamondSteps);
  const started = await api(stack.baseUrl, 'POST', `/workflows/${workflowId}/runs`, {
    key: team.key,
    body: { inputs: { topic: 'otters' } },
  });
  expect(started.status, JSON.stringify(started.body)).toBe(200);
  return started.body.jobId as string;
};

const liveSlots = async (keyId: string, key = streamSlotsKey(keyId)) => {
  const { Item } = await stack.deps.ddb.send(
    new GetCommand({ TableName: stack.deps.tableName, Key: key, ConsistentRead: true }),
  );
  return Object.keys((Item?.slots as Record<string, string> | undefined) ?? {}).length;
};

describe('the per-key cap on open event streams', () => {
  it('refuses the key’s stream past its cap with 429 and Retry-After before it opens; another key is unaffected; a closed stream frees its slot', async () => {
    const team = await seedUnthrottledTeam(stack.deps, 100);
    // Each on its own run: the run's own cap is not what this counts.
    const jobIds = await Promise.all(Array.from({ length: streamsPerKey + 2 }, () => startRun(team)));
    const jobId = jobIds[streamsPerKey]!;
    const streams = jobIds.slice(0, streamsPerKey).map((id) => openStream(team.key, id));
    for (const stream of streams) expect((await stream.head).statusCode).toBe(200);
    expect(await liveSlots(team.keyId)).toBe(streamsPerKey);

    const refused = openStream(team.key, jobId);
    const head = await refused.head;
    await refused.done;
    expect(head.statusCode).toBe(429);
    expect(head.headers['content-type']).toBe('application/json');
    // The soonest one of the key's streams reaches its cap: they opened just now.
    const retryAfter = Number(head.headers['retry-after']);
    expect(retryAfter).toBeGreaterThan(streamCapSeconds - 30);
    expect(retryAfter).toBeLessThanOrEqual(streamCapSeconds);
    expect(JSON.parse(refused.text())).toEqual({ error: 'Too many event streams open with this key' });
    expect(await liveSlots(team.keyId)).toBe(streamsPerKey);

    // Another key of the same team holds its own slots.
    const second = await addKey(stack.deps, team.teamId, { rateLimitPerMinute: 100_000 });
    const other = openStream(second.key, jobId);
    expect((await other.head).statusCode).toBe(200);

    // One stream ends (its caller went away): its slot is free, and the next stream opens.
    await streams[0]!.close();
    expect(await liveSlots(team.keyId)).toBe(streamsPerKey - 1);
    const next = openStream(team.key, jobIds[streamsPerKey + 1]!);
    expect((await next.head).statusCode).toBe(200);
    expect(await liveSlots(team.keyId)).toBe(streamsPerKey);

    for (const stream of [...streams.slice(1), other, next]) await stream.close();
    expect(await liveSlots(team.keyId)).toBe(0);
    expect(await liveSlots(second.keyId)).toBe(0);
  });

  it('refuses a run’s stream past the run’s cap with 429 and Retry-After, whatever keys opened them; a closed stream frees its slot', async () => {
    const team = await seedUnthrottledTeam(stack.deps, 100);
    const jobId = await startRun(team);
    // Each stream from its own key: no key is at its own cap.
    const keys = [team.key];
    for (let i = 0; i < streamsPerRun; i++)
      keys.push((await addKey(stack.deps, team.teamId, { rateLimitPerMinute: 100_000 })).key);
    const streams = keys.slice(0, streamsPerRun).map((key) => openStream(key, jobId));
    for (const stream of streams) expect((await stream.head).statusCode).toBe(200);
    expect(await liveSlots('', runStreamSlotsKey(jobId))).toBe(streamsPerRun);

    const refused = openStream(keys[streamsPerRun]!, jobId);
    const head = await refused.head;
    await refused.done;
    expect(head.statusCode).toBe(429);
    const retryAfter = Number(head.headers['retry-after']);
    expect(retryAfter).toBeGreaterThan(streamCapSeconds - 30);
    expect(retryAfter).toBeLessThanOrEqual(streamCapSeconds);
    expect(JSON.parse(refused.text())).toEqual({ error: 'Too many event streams open on this run' });

    await streams[0]!.close();
    const next = openStream(keys[streamsPerRun]!, jobId);
    expect((await next.head).statusCode).toBe(200);
    for (const stream of [...streams.slice(1), next]) await stream.close();
    expect(await liveSlots('', runStreamSlotsKey(jobId))).toBe(0);
  });

  it('counts a lease that ran out (a stream function killed mid-stream) no more', async () => {
    const team = await seedUnthrottledTeam(stack.deps, 100);
    const jobId = await startRun(team);
    // What killed functions leave: the key's every slot held by leases that ended a moment ago.
    const ended = new Date(stack.deps.now().getTime() - 1000);
    for (let i = 0; i < streamsPerKey; i++) {
      const streamId = randomUUID();
      const taken = await takeStreamSlot(
        stack.deps,
        { keyId: team.keyId },
        streamId,
        { text: slotLease(ended, streamId), until: ended },
        streamsPerKey,
      );
      expect(taken.taken).toBe(true);
    }
    expect(await liveSlots(team.keyId)).toBe(streamsPerKey);

    const stream = openStream(team.key, jobId);
    expect((await stream.head).statusCode).toBe(200);
    // The refused take cleared the leases that ran out, then took its own.
    expect(await liveSlots(team.keyId)).toBe(1);
    await stream.close();
  });

  it('leases each slot past the longest a stream function runs, and expires the key’s item with its last lease', async () => {
    expect(streamLeaseSeconds(streamFunctionTimeoutSeconds)).toBeGreaterThan(streamFunctionTimeoutSeconds);
    const team = await seedUnthrottledTeam(stack.deps, 100);
    const jobId = await startRun(team);
    const before = stack.deps.now().getTime();
    const stream = openStream(team.key, jobId);
    expect((await stream.head).statusCode).toBe(200);
    const { Item } = await stack.deps.ddb.send(
      new GetCommand({ TableName: stack.deps.tableName, Key: streamSlotsKey(team.keyId), ConsistentRead: true }),
    );
    const [lease] = Object.values(Item?.slots as Record<string, string>);
    const until = Date.parse(lease!.split('|')[0]!);
    expect(until - before).toBeGreaterThanOrEqual(streamLeaseSeconds(streamFunctionTimeoutSeconds) * 1000);
    expect(Item?.ttl).toBe(Math.ceil(until / 1000));
    await stream.close();
  });
});
