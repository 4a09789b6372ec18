/**
 * The webhook delivery log and redelivery (our design): GET /runs/{jobId}/deliveries and
 * POST /runs/{jobId}/deliveries/redeliver over HTTP to the local server, the real webhook worker
 * handed the messages the service put on the webhooks queue (read where they wait, without waiting
 * them out), the receiver a real https server. Time moves only on the worker's injected clock.
 */
import { readFileSync } from 'node:fs';
import { DeleteMessageCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WebhookOptions } from '../functions/app/deliver-webhook.ts';
import type { Deps } from '../functions/deps.ts';
import { buildOpenApiDocument } from '../functions/docs/openapi.ts';
import { appendToAttemptLog, staleRedeliveryMs, type WebhookAttempt, webhookId } from '../functions/domain/webhook.ts';
import { markRedeliveryPending } from '../functions/store/webhook-deliveries.ts';
import { makeHandler } from '../functions/workers/webhook-delivery.ts';
import { startLocalApi } from '../local/api-gateway.ts';
import { invokedAs } from '../local/invocation.ts';
import { deliveryPendingMessage } from '../schemas/error-messages.ts';
import { expectValidResponse } from './support/openapi-validator.ts';
import { queueContents, recordOf } from './support/queue-contents.ts';
import { faultyDeps } from './support/runs.ts';
import {
  addKey,
  call,
  createWorkflow,
  type SeededTeam,
  seedTeam,
  startTestStack,
  startWorkingStack,
  type TestStack,
  waitForRun,
} from './support/stack.ts';
import { receiverCa, startReceiver } from './support/webhook-receiver.ts';

const options: WebhookOptions = { fetchOptions: { allowLoopback: true, ca: receiverCa } };
const doc = buildOpenApiDocument();
const secret = 'whsec_c2VjcmV0IGZvciB0aGUgdGVzdHM=';

let stack: TestStack;
beforeAll(async () => {
  stack = await startWorkingStack();
});
afterAll(() => stack.close());

/** Deps whose clock reads `clock.now` (milliseconds), moved by the test. */
const clocked = (clock: { now: number }, deps: Deps = stack.deps): Deps => ({
  ...deps,
  now: () => new Date(clock.now),
});

/** The real webhook worker's answer to one batch. */
const handle = async (records: SQSRecord[], deps: Deps = stack.deps) =>
  (await invokedAs(
    'WebhookDelivery',
    makeHandler(deps, options),
  )({ Records: records } as SQSEvent)) as SQSBatchResponse;

interface Sent {
  messageId: string;
  body: string;
  delaySeconds: number;
  message: { jobId: string; event: string; attempt?: number; dueAt?: string };
}

/** The run's webhook messages on the queue that the test has not handed to the worker yet. */
const pendingMessages = async (jobId: string, handed: Set<string>): Promise<Sent[]> =>
  (await queueContents(stack.resources, 'Webhooks'))
    .map((m) => ({ ...m, message: JSON.parse(m.body) }))
    .filter((m) => m.message.jobId === jobId && m.state !== 'inflight' && !handed.has(m.messageId));

/**
 * The run's waiting messages, once there is one: a run reads ended as soon as its end is written,
 * and the step executor sends its first webhook message just after.
 */
const waitingMessages = async (jobId: string, handed: Set<string>) => {
  for (let i = 0; i < 600; i++) {
    const waiting = await pendingMessages(jobId, handed);
    if (waiting.length > 0) return waiting;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return [];
};

/** Hands the run's one waiting message to the worker at `clock` (moved to its due time first). */
const deliverNext = async (jobId: string, handed: Set<string>, clock: { now: number }) => {
  const waiting = await waitingMessages(jobId, handed);
  expect(waiting, 'one message waiting').toHaveLength(1);
  const [next] = waiting as [Sent];
  if (next.message.dueAt) clock.now = Math.max(clock.now, Date.parse(next.message.dueAt));
  expect(await handle([recordOf(next)], clocked(clock))).toEqual({ batchItemFailures: [] });
  handed.add(next.messageId);
  return next;
};

const deliveries = (jobId: string, key: string) => call(stack.baseUrl, `/runs/${jobId}/deliveries`, { key });
const redeliver = (jobId: string, key: string, baseUrl = stack.baseUrl) =>
  call(baseUrl, `/runs/${jobId}/deliveries/redeliver`, { key, method: 'POST' });

/** Checks an answer against the served OpenAPI document. */
const documented = (method: 'GET' | 'POST', path: string, answer: { status: number; body: unknown }) =>
  expectValidResponse(doc, { method, path, status: answer.status, body: answer.body });

const runWithCallback = async (callbackUrl: string, team?: SeededTeam) => {
  const owner = team ?? (await seedTeam(stack.deps));
  const workflowId = await createWorkflow(stack, owner, [{ key: 'text', type: 'TextEntry', config: { text: 'hi' } }]);
  const started = await call(stack.baseUrl, `/workflows/${workflowId}/runs`, {
    key: owner.key,
    method: 'POST',
    body: { callbackUrl, callbackSecret: secret },
  });
  expect(started.status).toBe(200);
  const jobId = started.body.jobId as string;
  await waitForRun(stack, owner.key, jobId);
  return { team: owner, workflowId, jobId };
};

// A whsec_ secret is taken by the library as it is (its decoded bytes key the signature).
const verifier = new Webhook(secret);

describe('GET /runs/{jobId}/deliveries', () => {
  it('lists every attempt newest first (host only, status or error, duration, next attempt) and the state', async () => {
    const receiver = await startReceiver([500]);
    try {
      const { team, jobId } = await runWithCallback(`${receiver.url}?token=do-not-show`);
      const path = `/runs/${jobId}/deliveries`;
      // Ended, first attempt not made yet: pending, nothing logged, the event and its id known.
      const before = await deliveries(jobId, team.key);
      expect(before).toMatchObject({
        status: 200,
        body: {
          jobId,
          event: 'run.completed',
          webhookId: webhookId(jobId, 'run.completed'),
          state: 'pending',
          nextAttemptAt: null,
          attempts: 0,
          deliveries: [],
        },
      });
      documented('GET', path, before);

      const clock = { now: Date.now() };
      const handed = new Set<string>();
      await deliverNext(jobId, handed, clock); // 500
      const failedOnce = await deliveries(jobId, team.key);
      documented('GET', path, failedOnce);
      const [first] = failedOnce.body.deliveries as [Record<string, unknown>];
      const origin = `https://${new URL(receiver.url).host}`;
      expect(first).toEqual({
        attempt: 1,
        at: new Date(clock.now).toISOString(),
        url: origin,
        statusCode: 500,
        durationMs: expect.any(Number),
        nextAttemptAt: new Date(clock.now + 120_000).toISOString(),
      });
      expect(failedOnce.body).toMatchObject({
        state: 'pending',
        attempts: 1,
        nextAttemptAt: new Date(clock.now + 120_000).toISOString(),
      });
      expect(JSON.stringify(failedOnce.body)).not.toContain('do-not-show');
      expect(JSON.stringify(failedOnce.body)).not.toContain('/hook');

      // While the retry is due, a redelivery is refused, saying when the next attempt comes.
      const refused = await redeliver(jobId, team.key);
      expect(refused).toEqual({
        status: 409,
        headers: expect.anything(),
        body: { error: deliveryPendingMessage, nextAttemptAt: first.nextAttemptAt },
      });
      documented('POST', `${path}/redeliver`, refused);

      await deliverNext(jobId, handed, clock); // 200
      const done = await deliveries(jobId, team.key);
      documented('GET', path, done);
      expect(done.body).toMatchObject({ state: 'delivered', attempts: 2, nextAttemptAt: null });
      expect((done.body.deliveries as WebhookAttempt[]).map((d) => [d.attempt, d.statusCode])).toEqual([
        [2, 200],
        [1, 500],
      ]);
      expect(receiver.received).toHaveLength(2);
    } finally {
      await receiver.close();
    }
  });

  it('names why an attempt got no answer', async () => {
    const closed = await startReceiver();
    await closed.close();
    const { team, jobId } = await runWithCallback(closed.url);
    await deliverNext(jobId, new Set(), { now: Date.now() });
    const answer = await deliveries(jobId, team.key);
    documented('GET', `/runs/${jobId}/deliveries`, answer);
    const [entry] = answer.body.deliveries as [Record<string, unknown>];
    expect(entry).toMatchObject({ attempt: 1, error: 'connection' });
    expect(entry.statusCode).toBeUndefined();
  });

  it("reads another team's run, a run without callbackUrl, a missing run and another workflow's run (for a limited key) as 404", async () => {
    const receiver = await startReceiver();
    try {
      const { team, jobId, workflowId } = await runWithCallback(receiver.url);
      const other = await seedTeam(stack.deps);
      const plainWorkflow = await createWorkflow(stack, team, [{ key: 't', type: 'TextEntry', config: { text: 'x' } }]);
      const plain = await call(stack.baseUrl, `/workflows/${plainWorkflow}/runs`, {
        key: team.key,
        method: 'POST',
        body: {},
      });
      const plainJob = plain.body.jobId as string;
      await waitForRun(stack, team.key, plainJob);
      const limited = await addKey(stack.deps, team.teamId, { workflowIds: [plainWorkflow] });
      const allowed = await addKey(stack.deps, team.teamId, { workflowIds: [workflowId] });
      const notFound = { status: 404, body: { error: 'Run not found' } };
      for (const [job, key] of [
        [jobId, other.key],
        [plainJob, team.key],
        ['6f1c2d3e-4b5a-4978-8a6b-5c4d3e2f1a0b', team.key],
        ['not-a-uuid', team.key],
        [jobId, limited.key],
      ] as const) {
        const listed = await deliveries(job, key);
        expect(listed, `GET ${job}`).toMatchObject(notFound);
        const redelivered = await redeliver(job, key);
        expect(redelivered, `POST ${job}`).toMatchObject(notFound);
      }
      documented('GET', `/runs/${jobId}/deliveries`, await deliveries(jobId, other.key));
      expect((await deliveries(jobId, allowed.key)).status).toBe(200);
    } finally {
      await receiver.close();
    }
  });

  it('needs runs:read to list and runs:create to redeliver', async () => {
    const receiver = await startReceiver();
    try {
      const { team, jobId } = await runWithCallback(receiver.url);
      const reader = await addKey(stack.deps, team.teamId, { scopes: ['runs:read'] });
      const creator = await addKey(stack.deps, team.teamId, { scopes: ['runs:create'] });
      const forbidden = { status: 403, body: { error: 'Scope not permitted for this key' } };
      expect(await deliveries(jobId, creator.key)).toMatchObject(forbidden);
      expect(await redeliver(jobId, reader.key)).toMatchObject(forbidden);
      expect((await deliveries(jobId, reader.key)).status).toBe(200);
    } finally {
      await receiver.close();
    }
  });
});

describe('POST /runs/{jobId}/deliveries/redeliver', () => {
  it('queues one attempt with the same webhook-id: the receiver gets it twice; a copy of its message posts nothing more', async () => {
    const receiver = await startReceiver();
    try {
      const { team, jobId } = await runWithCallback(receiver.url);
      const clock = { now: Date.now() };
      const handed = new Set<string>();
      await deliverNext(jobId, handed, clock);
      expect(receiver.received).toHaveLength(1);

      const queued = await redeliver(jobId, team.key);
      expect(queued.status).toBe(202);
      documented('POST', `/runs/${jobId}/deliveries/redeliver`, queued);
      const id = webhookId(jobId, 'run.completed');
      expect(queued.body).toEqual({ jobId, event: 'run.completed', webhookId: id, state: 'pending', attempt: 2 });
      const pending = await deliveries(jobId, team.key);
      expect(pending.body).toMatchObject({ state: 'pending', attempts: 1, nextAttemptAt: expect.any(String) });
      // A second request while it is queued is refused; one message waits, not delayed.
      expect((await redeliver(jobId, team.key)).status).toBe(409);
      const waiting = await pendingMessages(jobId, handed);
      expect(waiting.map((m) => [m.message, m.delaySeconds])).toEqual([
        [{ jobId, event: 'run.completed', attempt: 2 }, 0],
      ]);

      const sent = await deliverNext(jobId, handed, clock);
      expect(receiver.received).toHaveLength(2);
      const [one, two] = receiver.received.map((r) => ({ headers: r.headers as Record<string, string>, body: r.body }));
      expect(one?.headers['webhook-id']).toBe(id);
      expect(two?.headers['webhook-id']).toBe(id);
      // Both verify with the Standard Webhooks reference verifier: the same event, signed anew.
      for (const r of [one, two]) {
        expect(verifier.verify(r?.body ?? '', r?.headers ?? {})).toMatchObject({ jobId, event: 'run.completed' });
      }
      const after = await deliveries(jobId, team.key);
      expect(after.body).toMatchObject({ state: 'delivered', attempts: 2, nextAttemptAt: null });
      expect((after.body.deliveries as WebhookAttempt[]).map((d) => [d.attempt, d.statusCode])).toEqual([
        [2, 200],
        [1, 200],
      ]);

      // SQS hands the redelivery's message over again: no POST, no attempt spent.
      expect(await handle([recordOf(sent, 2), recordOf({ ...sent, messageId: 'copy' })], clocked(clock))).toEqual({
        batchItemFailures: [],
      });
      expect(receiver.received).toHaveLength(2);
      expect((await deliveries(jobId, team.key)).body).toMatchObject({ state: 'delivered', attempts: 2 });
      expect(await pendingMessages(jobId, handed)).toEqual([]);
    } finally {
      await receiver.close();
    }
  });

  it('is rate-limited: the first redelivery is accepted, another within a minute is 429 with Retry-After, then one a minute', async () => {
    const receiver = await startReceiver([200, 200, 200]);
    const clock = { now: Date.now() };
    const timed = await startLocalApi({ deps: clocked(clock), port: 0, host: '127.0.0.1' });
    try {
      const { team, jobId } = await runWithCallback(receiver.url);
      const handed = new Set<string>();
      await deliverNext(jobId, handed, clock);
      expect((await redeliver(jobId, team.key, timed.baseUrl)).body).toMatchObject({ attempt: 2 });
      await deliverNext(jobId, handed, clock);
      clock.now += 10_000;
      const early = await redeliver(jobId, team.key, timed.baseUrl);
      expect(early.status).toBe(429);
      expect(early.body).toEqual({ error: 'Too many redeliveries; retry later' });
      expect(Number(early.headers.get('retry-after'))).toBe(50);
      expect(await pendingMessages(jobId, handed)).toEqual([]);
      clock.now += 50_000;
      expect((await redeliver(jobId, team.key, timed.baseUrl)).body).toMatchObject({ attempt: 3 });
      await deliverNext(jobId, handed, clock);
      expect(receiver.received).toHaveLength(3);
    } finally {
      await timed.close();
      await receiver.close();
    }
  });

  it("counts an accepted redelivery once more against the key's requests per minute (the POST it causes)", async () => {
    const receiver = await startReceiver([200, 200]);
    try {
      const { team, jobId } = await runWithCallback(receiver.url);
      const handed = new Set<string>();
      await deliverNext(jobId, handed, { now: Date.now() });
      // A fresh key of the team taking 3 requests a minute: the redelivery takes 2 of them.
      const { key } = await addKey(stack.deps, team.teamId, { rateLimitPerMinute: 3 });
      expect((await redeliver(jobId, key)).status).toBe(202);
      expect((await deliveries(jobId, key)).status).toBe(200);
      const over = await deliveries(jobId, key);
      expect(over.status).toBe(429);
      expect(over.body).toEqual({ error: 'Rate limit exceeded' });
    } finally {
      await receiver.close();
    }
  });

  it('is a single attempt: a redelivery that fails leaves the delivery failed, with no retry, and may be asked again', async () => {
    const receiver = await startReceiver([200, 503]);
    // The server reads the test's clock, so the spacing of redeliveries runs on it too.
    const clock = { now: Date.now() };
    const timed = await startLocalApi({ deps: clocked(clock), port: 0, host: '127.0.0.1' });
    try {
      const { team, jobId } = await runWithCallback(receiver.url);
      const handed = new Set<string>();
      await deliverNext(jobId, handed, clock); // 200
      expect((await redeliver(jobId, team.key, timed.baseUrl)).body).toMatchObject({ attempt: 2 });
      await deliverNext(jobId, handed, clock); // 503
      const failed = await deliveries(jobId, team.key);
      expect(failed.body).toMatchObject({ state: 'failed', attempts: 2, nextAttemptAt: null });
      const [latest] = failed.body.deliveries as [WebhookAttempt];
      expect(latest).toMatchObject({ attempt: 2, statusCode: 503 });
      expect(latest.nextAttemptAt).toBeUndefined();
      expect(await pendingMessages(jobId, handed)).toEqual([]);

      // Asked again a minute after the first redelivery (their spacing).
      clock.now += 60_000;
      expect((await redeliver(jobId, team.key, timed.baseUrl)).body).toMatchObject({ attempt: 3 });
      await deliverNext(jobId, handed, clock); // 200
      expect((await deliveries(jobId, team.key)).body).toMatchObject({ state: 'delivered', attempts: 3 });
      expect(receiver.received).toHaveLength(3);
    } finally {
      await timed.close();
      await receiver.close();
    }
  });

  it('after the five scheduled attempts failed, redelivers as attempt 6; the log keeps the latest 5', async () => {
    const receiver = await startReceiver([500, 500, 500, 500, 500]);
    try {
      const { team, jobId } = await runWithCallback(receiver.url);
      const clock = { now: Date.now() };
      const handed = new Set<string>();
      // Each message handed over when it is due (the clock moved to it): five POSTs, then nothing queued.
      while (receiver.received.length < 5) await deliverNext(jobId, handed, clock);
      expect(await pendingMessages(jobId, handed)).toEqual([]);
      const failed = await deliveries(jobId, team.key);
      expect(failed.body).toMatchObject({ state: 'failed', attempts: 5, nextAttemptAt: null });
      expect((failed.body.deliveries as WebhookAttempt[]).map((d) => d.attempt)).toEqual([5, 4, 3, 2, 1]);

      expect((await redeliver(jobId, team.key)).body).toMatchObject({ attempt: 6 });
      await deliverNext(jobId, handed, clock); // 200
      const delivered = await deliveries(jobId, team.key);
      documented('GET', `/runs/${jobId}/deliveries`, delivered);
      expect(delivered.body).toMatchObject({ state: 'delivered', attempts: 6 });
      expect((delivered.body.deliveries as WebhookAttempt[]).map((d) => [d.attempt, d.statusCode])).toEqual([
        [6, 200],
        [5, 500],
        [4, 500],
        [3, 500],
        [2, 500],
      ]);
      expect(new Set(receiver.received.map((r) => r.headers['webhook-id']))).toEqual(
        new Set([webhookId(jobId, 'run.completed')]),
      );
    } finally {
      await receiver.close();
    }
  });

  it('of concurrent requests, exactly one queues an attempt; the others answer 409', async () => {
    const receiver = await startReceiver();
    try {
      const { team, jobId } = await runWithCallback(receiver.url);
      const handed = new Set<string>();
      await deliverNext(jobId, handed, { now: Date.now() });
      const answers = await Promise.all(Array.from({ length: 8 }, () => redeliver(jobId, team.key)));
      expect(answers.map((a) => a.status).sort()).toEqual([202, 409, 409, 409, 409, 409, 409, 409]);
      expect(await pendingMessages(jobId, handed)).toHaveLength(1);
    } finally {
      await receiver.close();
    }
  });

  it('refuses while the run has not ended (409, nothing queued)', async () => {
    const idle = await startTestStack(); // no step executor: the run stays queued
    try {
      const owner = await seedTeam(idle.deps);
      const flow = await createWorkflow(idle, owner, [{ key: 'text', type: 'TextEntry', config: { text: 'x' } }]);
      const started = await call(idle.baseUrl, `/workflows/${flow}/runs`, {
        key: owner.key,
        method: 'POST',
        body: { callbackUrl: 'https://receiver.example/hook' },
      });
      const jobId = started.body.jobId as string;
      const listed = await call(idle.baseUrl, `/runs/${jobId}/deliveries`, { key: owner.key });
      expect(listed).toMatchObject({
        status: 200,
        body: { event: null, webhookId: null, state: 'pending', attempts: 0, deliveries: [] },
      });
      documented('GET', `/runs/${jobId}/deliveries`, listed);
      const refused = await redeliver(jobId, owner.key, idle.baseUrl);
      expect(refused).toMatchObject({ status: 409, body: { error: deliveryPendingMessage, nextAttemptAt: null } });
      expect(await queueContents(idle.resources, 'Webhooks')).toEqual([]);
    } finally {
      await idle.close();
    }
  });

  it('takes its mark back when the message cannot be sent, and a mark a crash left lapses after 15 minutes', async () => {
    const receiver = await startReceiver();
    const unsent = faultyDeps(stack, { failSqs: (command) => command.startsWith('SendMessage') });
    const failing = await startLocalApi({ deps: unsent, port: 0, host: '127.0.0.1' });
    try {
      const { team, jobId } = await runWithCallback(receiver.url);
      const handed = new Set<string>();
      await deliverNext(jobId, handed, { now: Date.now() });
      const failed = await redeliver(jobId, team.key, failing.baseUrl);
      expect(failed.status).toBe(500);
      expect((await deliveries(jobId, team.key)).body).toMatchObject({ state: 'delivered', nextAttemptAt: null });
      expect(await pendingMessages(jobId, handed)).toEqual([]);

      // The API died between its mark and its send (simulated: the mark alone): refused until it lapses.
      const asked = Date.now();
      expect(
        (await markRedeliveryPending(stack.deps, jobId, 'run.completed', { attempts: 1, exists: true, expiresAt: 0 }))
          .written,
      ).toBe(true);
      expect((await redeliver(jobId, team.key)).status).toBe(409);
      const later = clocked({ now: asked + staleRedeliveryMs + 10_000 });
      const lapsed = await startLocalApi({ deps: later, port: 0, host: '127.0.0.1' });
      try {
        const queued = await redeliver(jobId, team.key, lapsed.baseUrl);
        expect(queued).toMatchObject({ status: 202, body: { attempt: 2 } });
      } finally {
        await lapsed.close();
      }
      await deliverNext(jobId, handed, { now: asked + staleRedeliveryMs + 20_000 });
      expect((await deliveries(jobId, team.key)).body).toMatchObject({ state: 'delivered', attempts: 2 });
      expect(receiver.received).toHaveLength(2);
    } finally {
      await failing.close();
      await receiver.close();
    }
  });
});

describe('a lost first message', () => {
  it('a run whose first webhook message was lost may be redelivered 15 minutes after it ended, as attempt 1', async () => {
    const receiver = await startReceiver();
    try {
      const { team, jobId } = await runWithCallback(receiver.url);
      // The message is lost: taken off the queue and deleted, never handed to the worker.
      const [lost] = await waitingMessages(jobId, new Set());
      let receiptHandle: string | undefined;
      for (let i = 0; i < 20 && !receiptHandle; i++) {
        const { Messages = [] } = await stack.deps.sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: stack.deps.queueUrls.webhooks,
            MaxNumberOfMessages: 10,
            WaitTimeSeconds: 1,
          }),
        );
        receiptHandle = Messages.find((m) => m.MessageId === lost?.messageId)?.ReceiptHandle;
      }
      await stack.deps.sqs.send(
        new DeleteMessageCommand({ QueueUrl: stack.deps.queueUrls.webhooks, ReceiptHandle: receiptHandle }),
      );
      expect(await pendingMessages(jobId, new Set())).toEqual([]);
      // Soon after the run's end its first attempt may still come: refused.
      expect(await redeliver(jobId, team.key)).toMatchObject({ status: 409, body: { nextAttemptAt: null } });

      const later = clocked({ now: Date.now() + staleRedeliveryMs + 10_000 });
      const lapsed = await startLocalApi({ deps: later, port: 0, host: '127.0.0.1' });
      try {
        const answers = await Promise.all([1, 2, 3].map(() => redeliver(jobId, team.key, lapsed.baseUrl)));
        expect(answers.map((a) => a.status).sort()).toEqual([202, 409, 409]);
        expect(answers.find((a) => a.status === 202)?.body).toMatchObject({ attempt: 1 });
      } finally {
        await lapsed.close();
      }
      await deliverNext(jobId, new Set([lost?.messageId as string]), { now: Date.now() + staleRedeliveryMs + 20_000 });
      expect((await deliveries(jobId, team.key)).body).toMatchObject({ state: 'delivered', attempts: 1 });
      expect(receiver.received).toHaveLength(1);
      expect(receiver.received[0]?.headers['webhook-id']).toBe(webhookId(jobId, 'run.completed'));
    } finally {
      await receiver.close();
    }
  });
});

describe('the delivery log (pure)', () => {
  it('keeps the latest five attempts, oldest first', () => {
    const entry = (attempt: number): WebhookAttempt => ({ attempt, at: '', host: 'h', durationMs: 0 });
    let log: WebhookAttempt[] = [];
    for (let n = 1; n <= 8; n++) log = appendToAttemptLog(log, entry(n));
    expect(log.map((e) => e.attempt)).toEqual([4, 5, 6, 7, 8]);
  });

  it('the API guide spells the 409 as the service does', () => {
    expect(readFileSync(new URL('../docs/api.md', import.meta.url), 'utf8')).toContain(`\`${deliveryPendingMessage}\``);
  });
});
