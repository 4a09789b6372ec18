/**
 * A team's webhook endpoints through the real path: the routes over the local API, runs moved by
 * the real step executor, the table's stream read by the local mapping (with
 * `lifecycleWebhooksMapping`'s filters) into the real lifecycle consumer, which opens each
 * endpoint's deliveries, and the real webhook worker handed the messages the service put on the
 * webhooks queue (read where they wait, delayed, without waiting them out: time moves only on the
 * injected clock, as SQS would hand each message over once its delay has passed). A loopback https
 * receiver verifies every delivery with the `standardwebhooks` library.
 */
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBStreamEvent, SQSEvent } from 'aws-lambda';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { WebhookOptions } from '../functions/app/deliver-webhook.ts';
import type { Deps } from '../functions/deps.ts';
import { operatorDetailTypes } from '../functions/domain/operator-events.ts';
import { disableAfterFailingMs } from '../functions/domain/webhook-endpoints.ts';
import { itemVersion } from '../functions/store/items/item.ts';
import { webhookEndpointKey } from '../functions/store/keys.ts';
import { makeHandler as makeFanOutHandler } from '../functions/workers/lifecycle-webhooks.ts';
import { makeHandler as makeWebhookWorker } from '../functions/workers/webhook-delivery.ts';
import { invokedAs } from '../local/invocation.ts';
import { type StreamPoller, startLifecycleEvents } from '../local/stream-source.ts';
import { type EndpointDeliveryList, endpointUrlInvalidMessage } from '../schemas/webhook-endpoints.ts';
import { queueContents, recordOf } from './support/queue-contents.ts';
import { api, waitForEnd } from './support/runs.ts';
import {
  addKey,
  createWorkflow,
  type SeededTeam,
  seedTeam,
  startOperatorEventsFor,
  startWorkingStack,
  type TestStack,
} from './support/stack.ts';
import { type Received, receiverCa, startReceiver } from './support/webhook-receiver.ts';

const options: WebhookOptions = { fetchOptions: { allowLoopback: true, ca: receiverCa } };

let stack: TestStack;
let lifecycle: StreamPoller;
let operatorEvents: Awaited<ReturnType<typeof startOperatorEventsFor>>;
const receivers: { close: () => Promise<void> }[] = [];

beforeAll(async () => {
  // Endpoints on the loopback receiver are accepted as local development accepts them.
  stack = await startWorkingStack({ allowLoopback: true });
  lifecycle = await startLifecycleEvents({
    dynamoDbEndpoint: stack.resources.dynamoDbEndpoint,
    deps: stack.deps,
    intervalMs: 100,
  });
  operatorEvents = await startOperatorEventsFor(stack);
}, 120_000);
afterAll(async () => {
  await lifecycle?.stop();
  await operatorEvents?.stop();
  for (const receiver of receivers) await receiver.close();
  await stack?.close();
});

const newTeam = () => seedTeam(stack.deps, { credits: 1000, key: { rateLimitPerMinute: 100_000 } });
const receiver = async (replies: number[] = []) => {
  const started = await startReceiver(replies);
  receivers.push(started);
  return started;
};
const oneStep = [{ key: 'one', type: 'TextEntry', config: { text: 'x' } }];

const createEndpoint = async (team: SeededTeam, body: Record<string, unknown>) => {
  const created = await api(stack.baseUrl, 'POST', '/webhook-endpoints', { key: team.key, body });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return created.body as { endpointId: string; secret: string };
};

const startRun = async (team: SeededTeam, workflowId: string, body: Record<string, unknown> = {}) => {
  const started = await api(stack.baseUrl, 'POST', `/workflows/${workflowId}/runs`, { key: team.key, body });
  expect(started.status, JSON.stringify(started.body)).toBe(200);
  const jobId = started.body.jobId as string;
  await waitForEnd(stack.baseUrl, team.key, jobId);
  return jobId;
};

interface EndpointMessage {
  messageId: string;
  body: string;
  delaySeconds: number;
  message: { endpointId: string; deliveryId: string; attempt: number; dueAt?: string };
}

/** The endpoint's messages on the webhooks queue not handed to the worker yet. */
const queuedFor = async (endpointId: string, handed: Set<string>): Promise<EndpointMessage[]> =>
  (await queueContents(stack.resources, 'Webhooks'))
    .filter((m) => m.state !== 'inflight' && !handed.has(m.messageId))
    .map((m) => ({ ...m, message: JSON.parse(m.body) }))
    .filter((m) => m.message.endpointId === endpointId);

/** Waits (generously) until the fan-out queued `count` first attempts for the endpoint. */
const waitForQueued = async (endpointId: string, count: number, handed = new Set<string>()) => {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const queued = await queuedFor(endpointId, handed);
    if (queued.length >= count) return queued;
    if (Date.now() > deadline) throw new Error(`endpoint ${endpointId}: ${queued.length} of ${count} queued`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
};

/** Deps whose clock reads `clock.now` (milliseconds), moved by the test. */
const clocked = (clock: { now: number }): Deps => ({ ...stack.deps, now: () => new Date(clock.now) });

const handOver = async (deps: Deps, message: { messageId: string; body: string }) => {
  const worker = invokedAs('WebhookDelivery', makeWebhookWorker(deps, options));
  const answer = await worker({ Records: [recordOf(message)] } as SQSEvent);
  expect(answer).toEqual({ batchItemFailures: [] });
};

/**
 * Plays the endpoint's queue as SQS would on the injected clock: each message is handed over once
 * its delay has passed since it was sent, earliest first, until none is left; `before` runs before
 * each hand-over (the receiver's state at that time). Returns how many were handed.
 */
const playQueue = async (
  endpointId: string,
  clock: { now: number },
  handed: Set<string>,
  before: (now: number) => void = () => {},
) => {
  const deps = clocked(clock);
  const visibleAt = new Map<string, number>();
  let count = 0;
  for (;;) {
    const queued = await queuedFor(endpointId, handed);
    for (const m of queued)
      if (!visibleAt.has(m.messageId)) visibleAt.set(m.messageId, clock.now + m.delaySeconds * 1000);
    const next = queued.sort((a, b) => (visibleAt.get(a.messageId) ?? 0) - (visibleAt.get(b.messageId) ?? 0))[0];
    if (!next) return count;
    clock.now = Math.max(clock.now, visibleAt.get(next.messageId) ?? clock.now);
    before(clock.now);
    handed.add(next.messageId);
    await handOver(deps, next);
    count += 1;
  }
};

const deliveriesOf = async (team: SeededTeam, endpointId: string): Promise<EndpointDeliveryList['deliveries']> => {
  const log = await api(stack.baseUrl, 'GET', `/webhook-endpoints/${endpointId}/deliveries`, { key: team.key });
  expect(log.status).toBe(200);
  return (log.body as EndpointDeliveryList).deliveries;
};

const headersOf = (received: Received) =>
  Object.fromEntries(Object.entries(received.headers).map(([k, value]) => [k, String(value)]));

/**
 * What the `standardwebhooks` library makes of a delivery, verified as its receiver would when it
 * came: the library refuses a timestamp more than 5 minutes from its clock, and the attempt was made
 * on the injected one (the clock, the true edge, set to the attempt's time for the call).
 */
const verify = (secret: string, received: Received): Record<string, unknown> => {
  const headers = headersOf(received);
  vi.useFakeTimers({ toFake: ['Date'] });
  try {
    vi.setSystemTime(Number(headers['webhook-timestamp']) * 1000);
    return new Webhook(secret).verify(received.body, headers) as Record<string, unknown>;
  } finally {
    vi.useRealTimers();
  }
};

describe('managing endpoints', () => {
  it('creates one with its secret shown once; lists, reads, changes and deletes it', async () => {
    const team = await newTeam();
    const hooks = await receiver();
    const created = await createEndpoint(team, { url: hooks.url, events: ['run.completed'], description: 'billing' });
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);

    const read = await api(stack.baseUrl, 'GET', `/webhook-endpoints/${created.endpointId}`, { key: team.key });
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ endpointId: created.endpointId, disabled: false, description: 'billing' });
    expect(JSON.stringify(read.body)).not.toContain(created.secret);
    const listed = await api(stack.baseUrl, 'GET', '/webhook-endpoints', { key: team.key });
    expect(listed.body.endpoints).toHaveLength(1);
    expect(JSON.stringify(listed.body)).not.toContain('whsec_');

    const changed = await api(stack.baseUrl, 'PATCH', `/webhook-endpoints/${created.endpointId}`, {
      key: team.key,
      body: { events: ['run.failed', 'run.completed'], tags: ['nightly'], disabled: true },
    });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({ tags: ['nightly'], disabled: true, disabledReason: 'requested' });
    const empty = await api(stack.baseUrl, 'PATCH', `/webhook-endpoints/${created.endpointId}`, {
      key: team.key,
      body: {},
    });
    expect(empty.status).toBe(400);

    const deleted = await api(stack.baseUrl, 'DELETE', `/webhook-endpoints/${created.endpointId}`, { key: team.key });
    expect(deleted.status).toBe(200);
    const gone = await api(stack.baseUrl, 'GET', `/webhook-endpoints/${created.endpointId}`, { key: team.key });
    expect(gone.status).toBe(404);
    expect(gone.body).toEqual({ error: 'Webhook endpoint not found' });
  });

  it('keeps at most 20 a team under 25 concurrent creations, counting one made before the count existed', async () => {
    const team = await newTeam();
    const hooks = await receiver();
    const body = { url: hooks.url, events: ['run.completed'] };
    // One endpoint kept before the team had its count: the first creation counts it in.
    const legacyId = '5b000000-0000-4000-8000-000000000001';
    const at = new Date().toISOString();
    await stack.deps.ddb.send(
      new PutCommand({
        TableName: stack.deps.tableName,
        Item: {
          ...webhookEndpointKey(team.teamId, legacyId),
          ...{ endpointId: legacyId, teamId: team.teamId, url: hooks.url, events: ['run.completed'] },
          ...{ secret: 'whsec_AAAA', disabled: false, createdAt: at, updatedAt: at, v: itemVersion },
        },
      }),
    );
    const answers = await Promise.all(
      Array.from({ length: 25 }, () => api(stack.baseUrl, 'POST', '/webhook-endpoints', { key: team.key, body })),
    );
    const statuses = answers.map((a) => a.status).sort();
    expect(statuses.filter((s) => s === 201)).toHaveLength(19);
    expect(statuses.filter((s) => s === 409)).toHaveLength(6);
    expect(answers.find((a) => a.status === 409)?.body).toMatchObject({ maxEndpoints: 20 });
    const listed = await api(stack.baseUrl, 'GET', '/webhook-endpoints', { key: team.key });
    expect(listed.body.endpoints).toHaveLength(20);

    // A deletion frees its place, the legacy one's as any other.
    const deleted = await api(stack.baseUrl, 'DELETE', `/webhook-endpoints/${legacyId}`, { key: team.key });
    expect(deleted.status).toBe(200);
    expect((await api(stack.baseUrl, 'POST', '/webhook-endpoints', { key: team.key, body })).status).toBe(201);
    expect((await api(stack.baseUrl, 'POST', '/webhook-endpoints', { key: team.key, body })).status).toBe(409);
  });

  it("another team's endpoint reads as missing on every route; reading needs webhooks:read", async () => {
    const owner = await newTeam();
    const other = await newTeam();
    const hooks = await receiver();
    const { endpointId } = await createEndpoint(owner, { url: hooks.url, events: ['run.completed'] });
    const deliveryId = '0190a000-0000-7000-8000-000000000001';
    for (const [method, path] of [
      ['GET', `/webhook-endpoints/${endpointId}`],
      ['PATCH', `/webhook-endpoints/${endpointId}`],
      ['DELETE', `/webhook-endpoints/${endpointId}`],
      ['POST', `/webhook-endpoints/${endpointId}/rotate-secret`],
      ['POST', `/webhook-endpoints/${endpointId}/test`],
      ['GET', `/webhook-endpoints/${endpointId}/deliveries`],
      ['POST', `/webhook-endpoints/${endpointId}/deliveries/${deliveryId}/redeliver`],
    ] as const) {
      const answer = await api(stack.baseUrl, method, path, {
        key: other.key,
        ...(method === 'PATCH' ? { body: { disabled: true } } : {}),
      });
      expect([method, path, answer.status, answer.body]).toEqual([
        method,
        path,
        404,
        { error: 'Webhook endpoint not found' },
      ]);
    }
    expect((await api(stack.baseUrl, 'GET', `/webhook-endpoints/${endpointId}`, { key: owner.key })).status).toBe(200);
    const reader = await addKey(stack.deps, owner.teamId, { scopes: ['runs:read'] });
    const refused = await api(stack.baseUrl, 'GET', '/webhook-endpoints', { key: reader.key });
    expect(refused.status).toBe(403);
    const hooksReader = await addKey(stack.deps, owner.teamId, { scopes: ['webhooks:read'] });
    expect((await api(stack.baseUrl, 'GET', '/webhook-endpoints', { key: hooksReader.key })).status).toBe(200);
    const writeRefused = await api(stack.baseUrl, 'POST', '/webhook-endpoints', {
      key: hooksReader.key,
      body: { url: hooks.url, events: ['run.completed'] },
    });
    expect(writeRefused.status).toBe(403);
  });

  it('refuses a URL the address guard refuses, with one text whatever the reason (no oracle)', async () => {
    const team = await newTeam();
    const answers = [];
    for (const url of [
      'http://hooks.example.com/x',
      'https://10.0.0.7/x',
      'https://169.254.169.254/latest/meta-data',
      'https://[::ffff:192.168.1.1]/x',
      'https://0x0a000001/x',
      'https://metadata.google.internal/x',
      'https://user:pw@hooks.example.com/x',
    ]) {
      const answer = await api(stack.baseUrl, 'POST', '/webhook-endpoints', {
        key: team.key,
        body: { url, events: ['run.completed'] },
      });
      answers.push([answer.status, answer.body]);
    }
    const refusal = [400, { error: `Invalid request body: url: ${endpointUrlInvalidMessage}` }];
    expect(answers).toEqual(answers.map(() => refusal));
    const listed = await api(stack.baseUrl, 'GET', '/webhook-endpoints', { key: team.key });
    expect(listed.body.endpoints).toEqual([]);
  });

  it('refuses at delivery an endpoint whose name resolves to a private address: logged refused, nothing sent', async () => {
    const team = await newTeam();
    const { endpointId } = await createEndpoint(team, {
      url: 'https://hooks.example.test/x',
      events: ['run.completed'],
    });
    const tested = await api(stack.baseUrl, 'POST', `/webhook-endpoints/${endpointId}/test`, { key: team.key });
    expect(tested.status).toBe(202);
    const [message] = await waitForQueued(endpointId, 1);
    const privateResolver: WebhookOptions = {
      fetchOptions: { allowLoopback: false, resolve: async () => [{ address: '10.1.2.3', family: 4 }] },
    };
    const worker = invokedAs('WebhookDelivery', makeWebhookWorker(stack.deps, privateResolver));
    expect(await worker({ Records: [recordOf(message as EndpointMessage)] } as SQSEvent)).toEqual({
      batchItemFailures: [],
    });
    const log = await deliveriesOf(team, endpointId);
    expect(log).toHaveLength(1);
    expect(log[0]).toMatchObject({ event: 'ping', state: 'failed', attempts: 1 });
    expect(log[0]?.deliveries[0]).toMatchObject({ error: 'refused', durationMs: 0 });
  });
});

describe('redirects', () => {
  it('are not followed: a 302 is a failed attempt, retried on the schedule', async () => {
    const team = await newTeam();
    const hooks = await receiver([302]);
    const { endpointId } = await createEndpoint(team, { url: hooks.url, events: ['run.completed'] });
    const workflow = await createWorkflow(stack, team, oneStep);
    const jobId = await startRun(team, workflow);
    const [first] = await waitForQueued(endpointId, 1);
    await handOver(stack.deps, first as EndpointMessage);
    expect(hooks.received).toHaveLength(1);
    const [delivery] = await deliveriesOf(team, endpointId);
    expect(delivery).toMatchObject({ jobId, state: 'pending', attempts: 1 });
    expect(delivery?.deliveries[0]).toMatchObject({ attempt: 1, statusCode: 302 });
    // The retry is queued 5 seconds on.
    const [retry] = await queuedFor(endpointId, new Set([(first as EndpointMessage).messageId]));
    expect(retry?.message).toMatchObject({ attempt: 2 });
    expect(retry?.delaySeconds).toBe(5);
  });
});

describe('delivering every event of the team', () => {
  it('a receiver down for 6 hours receives every event once it is back, each verified with standardwebhooks', async () => {
    const team = await newTeam();
    const replies: number[] = [];
    const hooks = await receiver(replies);
    const { endpointId, secret } = await createEndpoint(team, {
      url: hooks.url,
      events: ['run.started', 'run.completed'],
      tags: ['nightly'],
    });
    // The run's own callback works beside the endpoint, exactly as before.
    const ownHook = await receiver();
    const workflowA = await createWorkflow(stack, team, oneStep);
    const workflowB = await createWorkflow(stack, team, oneStep);
    const jobA = await startRun(team, workflowA, { tags: ['nightly'], callbackUrl: ownHook.url });
    const jobB = await startRun(team, workflowB, { tags: ['nightly', 'eu'] });
    await waitForQueued(endpointId, 4);

    const clock = { now: Date.now() };
    const downUntil = clock.now + 6 * 3600_000;
    const handed = new Set<string>();
    const handedCount = await playQueue(endpointId, clock, handed, (now) => {
      // The receiver's state when the message is handed over: down (500) for 6 hours, then up.
      replies.length = 0;
      if (now < downUntil) replies.push(500);
    });
    // 4 deliveries, each tried at 0, 5 s, 5 min, 35 min (two hops), 2 h 35 (eight) and 7 h 35 (twenty).
    expect(handedCount).toBe(4 * (1 + 1 + 1 + 2 + 8 + 20));

    // Every attempt, answered or not, carries a signature the library verifies.
    const byId = new Map<string, { event: string; jobId: string }[]>();
    for (const received of hooks.received) {
      const headers = headersOf(received);
      const body = verify(secret, received) as { event: string; jobId: string };
      byId.set(headers['webhook-id'] as string, [...(byId.get(headers['webhook-id'] as string) ?? []), body]);
    }
    // 6 attempts of each delivery: 5 while down, the 6th (7 h 35 min after the first) answered 2xx.
    expect(hooks.received).toHaveLength(4 * 6);
    expect(byId.size).toBe(4);
    const events = [...byId.values()].map((attempts) => `${attempts[0]?.jobId} ${attempts[0]?.event}`).sort();
    expect(events).toEqual(
      [`${jobA} run.started`, `${jobA} run.completed`, `${jobB} run.started`, `${jobB} run.completed`].sort(),
    );
    for (const [, attempts] of byId) expect(attempts).toHaveLength(6);

    const log = await deliveriesOf(team, endpointId);
    expect(log).toHaveLength(4);
    for (const delivery of log) {
      expect(delivery).toMatchObject({ state: 'delivered', attempts: 6, nextAttemptAt: null });
      expect(delivery.deliveries[0]).toMatchObject({ attempt: 6, statusCode: 200 });
      expect(delivery.deliveries[1]).toMatchObject({ attempt: 5, statusCode: 500 });
    }
    // Newest first: run B's end, the last event, leads.
    expect([log[0]?.jobId, log[0]?.event]).toEqual([jobB, 'run.completed']);
    const endpoint = await api(stack.baseUrl, 'GET', `/webhook-endpoints/${endpointId}`, { key: team.key });
    expect(endpoint.body).toMatchObject({ disabled: false, failingSince: null });

    // The run's own callback got its end, signed as ever, apart from the endpoint's.
    const own = (await queueContents(stack.resources, 'Webhooks')).filter((m) => m.body.includes(`"jobId":"${jobA}"`));
    expect(own.map((m) => JSON.parse(m.body))).toEqual([{ jobId: jobA, event: 'run.completed' }]);
  }, 180_000);

  it('sends each endpoint only what its events, workflows and tags pass', async () => {
    const team = await newTeam();
    const hooks = await receiver();
    const workflow = await createWorkflow(stack, team, oneStep);
    const other = await createWorkflow(stack, team, oneStep);
    const everything = await createEndpoint(team, { url: hooks.url, events: ['run.started', 'run.completed'] });
    const ends = await createEndpoint(team, { url: hooks.url, events: ['run.completed'] });
    const byWorkflow = await createEndpoint(team, {
      url: hooks.url,
      events: ['run.completed'],
      workflowIds: [workflow],
    });
    const byTag = await createEndpoint(team, { url: hooks.url, events: ['run.completed'], tags: ['eu'] });
    const failures = await createEndpoint(team, { url: hooks.url, events: ['run.failed'] });
    const stopped = await createEndpoint(team, { url: hooks.url, events: ['run.completed'] });
    await api(stack.baseUrl, 'PATCH', `/webhook-endpoints/${stopped.endpointId}`, {
      key: team.key,
      body: { disabled: true },
    });
    // Another team's runs reach none of them.
    const stranger = await newTeam();
    await startRun(stranger, await createWorkflow(stack, stranger, oneStep), { tags: ['eu'] });

    // Created last, so the fan-out reaches it last for each change: once it has both ends, every
    // endpoint had its share of both runs.
    const last = await createEndpoint(team, { url: hooks.url, events: ['run.completed'] });
    await startRun(team, workflow, { tags: ['us'] });
    await startRun(team, other, { tags: ['eu'] });
    await waitForQueued(last.endpointId, 2);
    const counts = async (endpointId: string) =>
      (await queuedFor(endpointId, new Set())).map((m) => m.message.attempt).length;
    expect({
      everything: await counts(everything.endpointId),
      ends: await counts(ends.endpointId),
      byWorkflow: await counts(byWorkflow.endpointId),
      byTag: await counts(byTag.endpointId),
      failures: await counts(failures.endpointId),
      stopped: await counts(stopped.endpointId),
    }).toEqual({ everything: 4, ends: 2, byWorkflow: 1, byTag: 1, failures: 0, stopped: 0 });
  }, 120_000);
});

describe('a change handed over again', () => {
  it('opens no second delivery of an event attempted already, and sends nothing more', async () => {
    const team = await newTeam();
    const hooks = await receiver();
    const { endpointId } = await createEndpoint(team, { url: hooks.url, events: ['run.started', 'run.completed'] });
    const jobId = await startRun(team, await createWorkflow(stack, team, oneStep));
    await waitForQueued(endpointId, 2);
    // Delivered. (One opened and never attempted would be sent again: its message may have been lost
    // between the write and the send; the worker's conditions make the copy a no-op.)
    const handed = new Set<string>();
    await playQueue(endpointId, { now: Date.now() }, handed);
    expect(hooks.received).toHaveLength(2);
    const key = { PK: { S: `RUN#${jobId}` }, SK: { S: 'RUN' } };
    const { Item } = await stack.deps.ddb.send(new GetItemCommand({ TableName: stack.deps.tableName, Key: key }));
    if (!Item) throw new Error('no run item');
    const change = (eventName: 'INSERT' | 'MODIFY', old?: Record<string, unknown>) => ({
      eventID: `again-${eventName}`,
      eventName,
      eventSource: 'aws:dynamodb',
      dynamodb: {
        Keys: key,
        NewImage: Item,
        ...(old ? { OldImage: old } : {}),
        SequenceNumber: '1',
        StreamViewType: 'NEW_AND_OLD_IMAGES',
      },
    });
    const fanOut = invokedAs('RunEventWebhooks', makeFanOutHandler(stack.deps));
    const records = [change('INSERT'), change('MODIFY', { ...Item, status: { S: 'processing' } })];
    for (let i = 0; i < 2; i++) {
      expect(await fanOut({ Records: records } as unknown as DynamoDBStreamEvent, {} as never)).toEqual({
        batchItemFailures: [],
      });
    }
    expect(await queuedFor(endpointId, handed)).toEqual([]);
    expect(await deliveriesOf(team, endpointId)).toHaveLength(2);
  });
});

describe('rotation, test, redelivery and disabling', () => {
  it('a test ping counts once more against the key: its POST is a request the key causes', async () => {
    const team = await seedTeam(stack.deps, { credits: 10, key: { rateLimitPerMinute: 4 } });
    const hooks = await receiver();
    const { endpointId } = await createEndpoint(team, { url: hooks.url, events: ['run.completed'] });
    const path = `/webhook-endpoints/${endpointId}/test`;
    // The creation, then this request and its POST: 3 of the key's 4.
    expect((await api(stack.baseUrl, 'POST', path, { key: team.key })).status).toBe(202);
    // The fourth request is admitted; the POST it would cause is the fifth.
    const refused = await api(stack.baseUrl, 'POST', path, { key: team.key });
    expect([refused.status, refused.body]).toEqual([429, { error: 'Rate limit exceeded' }]);
    expect(await deliveriesOf({ ...team, key: (await addKey(stack.deps, team.teamId)).key }, endpointId)).toHaveLength(
      1,
    );
  });

  it('a rotated secret verifies with both secrets for 24 hours, then with the new one only', async () => {
    const team = await newTeam();
    const hooks = await receiver();
    const { endpointId, secret: first } = await createEndpoint(team, { url: hooks.url, events: ['run.completed'] });
    const rotated = await api(stack.baseUrl, 'POST', `/webhook-endpoints/${endpointId}/rotate-secret`, {
      key: team.key,
    });
    expect(rotated.status).toBe(200);
    const second = rotated.body.secret as string;
    expect(second).not.toBe(first);
    expect(rotated.body.previousSecretExpiresAt).toEqual(expect.any(String));

    const handed = new Set<string>();
    const clock = { now: Date.now() };
    await api(stack.baseUrl, 'POST', `/webhook-endpoints/${endpointId}/test`, { key: team.key });
    await waitForQueued(endpointId, 1, handed);
    await playQueue(endpointId, clock, handed);
    const during = hooks.received.at(-1) as Received;
    expect(headersOf(during)['webhook-signature']?.split(' ')).toHaveLength(2);
    expect(verify(first, during)).toMatchObject({ event: 'ping', endpointId });
    expect(verify(second, during)).toMatchObject({ event: 'ping' });

    // 25 hours on: the old secret no longer signs.
    clock.now += 25 * 3600_000;
    await api(stack.baseUrl, 'POST', `/webhook-endpoints/${endpointId}/test`, { key: team.key });
    await waitForQueued(endpointId, 1, handed);
    await playQueue(endpointId, clock, handed);
    const after = hooks.received.at(-1) as Received;
    expect(headersOf(after)['webhook-signature']?.split(' ')).toHaveLength(1);
    expect(verify(second, after)).toMatchObject({ event: 'ping' });
    expect(() => verify(first, after)).toThrow('No matching signature found');
  });

  it('redelivers one delivery of the log: its webhook-id, one attempt, refused while pending', async () => {
    const team = await newTeam();
    const replies = [503];
    const hooks = await receiver(replies);
    const { endpointId, secret } = await createEndpoint(team, { url: hooks.url, events: ['run.completed'] });
    const handed = new Set<string>();
    const clock = { now: Date.now() };
    await api(stack.baseUrl, 'POST', `/webhook-endpoints/${endpointId}/test`, { key: team.key });
    await waitForQueued(endpointId, 1, handed);
    await playQueue(endpointId, clock, handed);
    const [failed] = await deliveriesOf(team, endpointId);
    if (!failed) throw new Error('no delivery logged');
    expect(failed).toMatchObject({ event: 'ping', state: 'failed', attempts: 1 });

    const path = `/webhook-endpoints/${endpointId}/deliveries/${failed.deliveryId}/redeliver`;
    const queued = await api(stack.baseUrl, 'POST', path, { key: team.key });
    expect(queued.status).toBe(202);
    expect(queued.body).toEqual({
      endpointId,
      deliveryId: failed.deliveryId,
      webhookId: failed.webhookId,
      state: 'pending',
    });
    const again = await api(stack.baseUrl, 'POST', path, { key: team.key });
    expect(again.status).toBe(409);
    await playQueue(endpointId, clock, handed);
    const redelivered = hooks.received.at(-1) as Received;
    expect(headersOf(redelivered)['webhook-id']).toBe(failed.webhookId);
    expect(verify(secret, redelivered)).toMatchObject({ event: 'ping' });
    expect((await deliveriesOf(team, endpointId))[0]).toMatchObject({ state: 'delivered', attempts: 2 });
    const missing = await api(
      stack.baseUrl,
      'POST',
      `/webhook-endpoints/${endpointId}/deliveries/0190a000-0000-7000-8000-0000000000ff/redeliver`,
      { key: team.key },
    );
    expect([missing.status, missing.body]).toEqual([404, { error: 'Webhook delivery not found' }]);
  });

  it('disables an endpoint failing for 5 days in a row, with an operator event; re-enabling it resumes', async () => {
    const team = await newTeam();
    const replies: number[] = [];
    const hooks = await receiver(replies);
    const { endpointId } = await createEndpoint(team, { url: hooks.url, events: ['run.completed'] });
    const handed = new Set<string>();
    const clock = { now: Date.now() };
    const failingPing = async () => {
      replies.push(500);
      await api(stack.baseUrl, 'POST', `/webhook-endpoints/${endpointId}/test`, { key: team.key });
      await waitForQueued(endpointId, 1, handed);
      await playQueue(endpointId, clock, handed);
    };
    const read = async () =>
      (await api(stack.baseUrl, 'GET', `/webhook-endpoints/${endpointId}`, { key: team.key })).body;

    const firstFailure = clock.now;
    await failingPing();
    expect(await read()).toMatchObject({ disabled: false, failingSince: new Date(firstFailure).toISOString() });
    clock.now = firstFailure + 3 * 24 * 3600_000;
    await failingPing();
    expect(await read()).toMatchObject({ disabled: false });
    clock.now = firstFailure + disableAfterFailingMs + 60_000;
    await failingPing();
    expect(await read()).toMatchObject({ disabled: true, disabledReason: 'failing' });

    // The operator event, from the endpoint's change on the table's stream.
    const deadline = Date.now() + 60_000;
    let disabledEvents: unknown[] = [];
    while (disabledEvents.length === 0 && Date.now() < deadline) {
      disabledEvents = operatorEvents
        .read()
        .filter((e) => e['detail-type'] === operatorDetailTypes.webhookEndpointDisabled)
        .filter((e) => e.detail.endpointId === endpointId);
      if (disabledEvents.length === 0) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(disabledEvents).toHaveLength(1);
    expect(disabledEvents[0]).toMatchObject({
      detail: {
        teamId: team.teamId,
        host: new URL(hooks.url).host,
        failingSince: new Date(firstFailure).toISOString(),
      },
    });

    // Disabled: a run's events are not delivered to it.
    const received = hooks.received.length;
    const workflow = await createWorkflow(stack, team, oneStep);
    await startRun(team, workflow);
    const marker = await createEndpoint(team, { url: hooks.url, events: ['run.completed'] });
    await startRun(team, workflow);
    await waitForQueued(marker.endpointId, 1);
    expect(await queuedFor(endpointId, handed)).toEqual([]);

    // Re-enabled: its failures forgotten, and what comes after is delivered.
    const enabled = await api(stack.baseUrl, 'PATCH', `/webhook-endpoints/${endpointId}`, {
      key: team.key,
      body: { disabled: false },
    });
    expect(enabled.body).toMatchObject({ disabled: false, disabledReason: null, failingSince: null });
    await startRun(team, workflow);
    await waitForQueued(endpointId, 1, handed);
    await playQueue(endpointId, clock, handed);
    expect(hooks.received.length).toBe(received + 1);
    expect(JSON.parse((hooks.received.at(-1) as Received).body)).toMatchObject({ event: 'run.completed' });
  }, 180_000);
});
