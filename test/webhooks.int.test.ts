/**
 * The run-finished webhook (spec 6) through the real webhook worker: records are built from the
 * messages the service put on the webhooks queue (the first taken off it with the SDK, each retry
 * read where it waits, delayed, without waiting it out), and time moves only on the injected clock.
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import fc from 'fast-check';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WebhookOptions } from '../functions/app/deliver-webhook.ts';
import type { Deps } from '../functions/deps.ts';
import { buildOpenApiDocument } from '../functions/docs/openapi.ts';
import {
  delaySecondsUntil,
  signatureHeader,
  standardWebhookSignature,
  verifySignature,
  type WebhookAttempt,
  webhookId,
  webhookRetryDelaySeconds,
} from '../functions/domain/webhook.ts';
import { webhookDeliveryKey } from '../functions/store/keys.ts';
import { makeHandler } from '../functions/workers/webhook-delivery.ts';
import { invokedAs } from '../local/invocation.ts';
import { type QueuedMessage, queueContents, receiveWebhookRecords, recordOf } from './support/queue-contents.ts';
import { faultyDeps } from './support/runs.ts';
import { call, createWorkflow, seedTeam, startWorkingStack, type TestStack, waitForRun } from './support/stack.ts';
import { type Received, receiverCa, startReceiver } from './support/webhook-receiver.ts';

const options: WebhookOptions = { fetchOptions: { allowLoopback: true, ca: receiverCa } };

let stack: TestStack;
beforeAll(async () => {
  stack = await startWorkingStack();
});
afterAll(() => stack.close());

/** The real webhook worker's answer to one batch, over `deps` (a moved clock, a fault) and `opts`. */
const handle = async (records: SQSRecord[], deps: Deps = stack.deps, opts: WebhookOptions = options) =>
  (await invokedAs('WebhookDelivery', makeHandler(deps, opts))({ Records: records } as SQSEvent)) as SQSBatchResponse;

const delivered = { batchItemFailures: [] };

/** The records the worker could not process: answered, never thrown, even when every record of the batch failed. */
const failedIn = async (records: SQSRecord[], deps: Deps) =>
  (await handle(records, deps)).batchItemFailures.map((f) => f.itemIdentifier);

const receiveJobs = (jobIds: string[]) => receiveWebhookRecords(stack.deps, jobIds);
const receiveJob = async (jobId: string) => (await receiveJobs([jobId]))[0] as SQSRecord;

type Sent = QueuedMessage & { message: { jobId: string; event: string; attempt?: number; dueAt?: string } };

/** The run's webhook messages the worker sent and the test has not handed to it yet. */
const sentFor = async (jobId: string, handed: Set<string>): Promise<Sent[]> =>
  (await queueContents(stack.resources, 'Webhooks'))
    .map((m) => ({ ...m, message: JSON.parse(m.body) }))
    .filter((m) => m.message.jobId === jobId && m.state !== 'inflight' && !handed.has(m.messageId));

const deliveryItem = async (jobId: string, event = 'run.completed') =>
  (
    await stack.deps.ddb.send(
      new GetCommand({ TableName: stack.deps.tableName, Key: webhookDeliveryKey(jobId, event), ConsistentRead: true }),
    )
  ).Item;

/** The delivery log of the run's event (empty before the first attempt). */
const logOf = (item: Record<string, unknown> | undefined) => (item?.attemptLog ?? []) as WebhookAttempt[];

/** Deps whose clock reads `clock.now` (milliseconds), moved by the test. */
const clocked = (clock: { now: number }, deps: Deps = stack.deps): Deps => ({
  ...deps,
  now: () => new Date(clock.now),
});

/** A finished run of a new team's workflow (`steps`, the default chain when absent) with this callback. */
const runWithCallback = async (callbackUrl: string, callbackSecret?: string, steps?: unknown[]) => {
  const team = await seedTeam(stack.deps);
  const workflowId = await createWorkflow(stack, team, steps);
  const started = await call(stack.baseUrl, `/workflows/${workflowId}/runs`, {
    key: team.key,
    method: 'POST',
    body: { callbackUrl, ...(callbackSecret ? { callbackSecret } : {}) },
  });
  expect(started.status).toBe(200);
  const jobId = started.body.jobId as string;
  await waitForRun(stack, team.key, jobId);
  return { team, jobId };
};

describe('webhook signing (pure)', () => {
  it('signs the exact raw body and verifies in constant time', () => {
    fc.assert(
      fc.property(fc.string(), fc.string({ minLength: 1 }), (body, secret) => {
        const header = signatureHeader(body, secret);
        expect(header).toMatch(/^sha256=[0-9a-f]{64}$/);
        expect(verifySignature(body, header, secret)).toBe(true);
        expect(verifySignature(`${body} `, header, secret)).toBe(false);
        expect(verifySignature(body, header, `${secret}x`)).toBe(false);
      }),
    );
  });

  it('waits 2, 4, 8, 16 minutes between attempts, never more than an hour', () => {
    expect([1, 2, 3, 4].map(webhookRetryDelaySeconds)).toEqual([120, 240, 480, 960]);
    expect(webhookRetryDelaySeconds(10)).toBe(3600);
  });

  it("delays a message until it is due, by at most SQS's 15 minutes", () => {
    expect(delaySecondsUntil(120_000, 0)).toBe(120);
    expect(delaySecondsUntil(960_000, 0)).toBe(900);
    expect(delaySecondsUntil(960_000, 900_000)).toBe(60);
    expect(delaySecondsUntil(1_500, 0)).toBe(2); // whole seconds, never early
    expect(delaySecondsUntil(0, 5_000)).toBe(0);
  });
});

describe('the run-finished webhook (spec 6)', () => {
  it('POSTs the Run plus event, signed both ways (the Standard Webhooks verifier accepts it), once', async () => {
    const receiver = await startReceiver();
    try {
      const { team, jobId } = await runWithCallback(receiver.url, 's3cret');
      const job = await receiveJob(jobId);
      expect(await handle([job])).toEqual(delivered);
      expect(receiver.received).toHaveLength(1);
      const [{ headers, body }] = receiver.received as [Received];
      const parsed = JSON.parse(body);
      const run = await call(stack.baseUrl, `/runs/${jobId}`, { key: team.key });
      expect(parsed).toMatchObject({ event: 'run.completed', jobId, status: 'completed', progress: 100 });
      expect(parsed.steps).toEqual(run.body.steps);
      const { expectValidResponse } = await import('./support/openapi-validator.ts');
      const { event: _event, ...asRun } = parsed;
      expectValidResponse(buildOpenApiDocument(), { method: 'GET', path: `/runs/${jobId}`, status: 200, body: asRun });
      expect(headers['x-service-event']).toBe('run.completed');
      expect(headers['x-service-signature']).toBe(signatureHeader(body, 's3cret'));
      expect(headers['webhook-id']).toBe(webhookId(jobId, 'run.completed'));
      expect(headers['webhook-signature']).toBe(
        standardWebhookSignature(headers['webhook-id'] as string, Number(headers['webhook-timestamp']), body, 's3cret'),
      );
      // A receiver using the Standard Webhooks reference verifier (the secret's UTF-8 bytes as the key).
      const verifier = new Webhook(new TextEncoder().encode('s3cret'), { format: 'raw' });
      const asHeaders = headers as Record<string, string>;
      expect(verifier.verify(body, asHeaders)).toMatchObject({ jobId, event: 'run.completed' });
      expect(() => verifier.verify(`${body} `, asHeaders)).toThrow();
      expect(() => new Webhook(new TextEncoder().encode('other'), { format: 'raw' }).verify(body, asHeaders)).toThrow();

      const item = await deliveryItem(jobId);
      expect(item).toMatchObject({ state: 'delivered', attempts: 1 });
      expect(item?.nextAttemptAt).toBeUndefined();
      expect(item?.attemptLog).toEqual([
        {
          attempt: 1,
          at: expect.any(String),
          host: new URL(receiver.url).host,
          statusCode: 200,
          durationMs: expect.any(Number),
        },
      ]);
      // The same message again (SQS delivers at least once), or a copy: nothing is sent twice.
      expect(await handle([job, recordOf({ messageId: 'copy', body: job.body })])).toEqual(delivered);
      expect(receiver.received).toHaveLength(1);
      expect(await sentFor(jobId, new Set())).toEqual([]);
    } finally {
      await receiver.close();
    }
  });

  it("gives the receiver the run's files as file links made at delivery (no key: they redirect to the file)", async () => {
    const receiver = await startReceiver();
    try {
      const { jobId } = await runWithCallback(receiver.url, undefined, [
        { key: 'prompt', type: 'TextEntry', config: { text: 'a lighthouse' } },
        { key: 'image', type: 'ImageGen', inputs: ['prompt'] },
      ]);
      expect(await handle([await receiveJob(jobId)])).toEqual(delivered);
      const [{ body }] = receiver.received as [Received];
      const url = /"url":"([^"]+)"/.exec(body)?.[1] ?? '';
      expect(url.startsWith(`${stack.baseUrl}/file-links/`)).toBe(true);
      expect((await fetch(url, { redirect: 'manual' })).status).toBe(302);
      expect((await fetch(url)).status).toBe(200);
    } finally {
      await receiver.close();
    }
  });

  it('sends no signature without a secret, and sends run.failed for a failed run', async () => {
    const receiver = await startReceiver();
    try {
      const { jobId } = await runWithCallback(receiver.url, undefined, [
        { key: 'data', type: 'JsonLoader', config: { data: '{broken' } },
        { key: 'show', type: 'JsonInspector', inputs: ['data'] },
      ]);
      expect(await handle([await receiveJob(jobId)])).toEqual(delivered);
      const [{ headers, body }] = receiver.received as [Received];
      expect(headers['x-service-event']).toBe('run.failed');
      expect(headers['x-service-signature']).toBeUndefined();
      expect(JSON.parse(body)).toMatchObject({ event: 'run.failed', status: 'failed' });
      expect(await deliveryItem(jobId, 'run.failed')).toMatchObject({ state: 'delivered', attempts: 1 });
    } finally {
      await receiver.close();
    }
  });

  it("a batch of only receivers' failures is no error: each is recorded and its next attempt sent, due in 2 minutes", async () => {
    const receiver = await startReceiver([500, 302]);
    try {
      const runs = [await runWithCallback(receiver.url), await runWithCallback(receiver.url)];
      const clock = { now: Date.now() };
      // No batchItemFailures and nothing thrown: SQS deletes both messages, Lambda counts no error.
      expect(await handle(await receiveJobs(runs.map((r) => r.jobId)), clocked(clock))).toEqual(delivered);
      expect(receiver.received).toHaveLength(2);
      const statuses: number[] = [];
      for (const { jobId } of runs) {
        const item = await deliveryItem(jobId);
        expect(item).toMatchObject({ state: 'pending', attempts: 1 });
        const [entry] = logOf(item) as [WebhookAttempt];
        statuses.push(entry.statusCode as number);
        // A redirect is not followed: it is a failed attempt like any non-2xx.
        expect(entry.nextAttemptAt).toBe(new Date(clock.now + 120_000).toISOString());
        const next = await sentFor(jobId, new Set());
        expect(next.map((m) => [m.message, m.delaySeconds])).toEqual([
          [{ jobId, event: 'run.completed', attempt: 2, dueAt: entry.nextAttemptAt }, 120],
        ]);
      }
      expect(statuses.sort()).toEqual([302, 500]);
    } finally {
      await receiver.close();
    }
  });

  it('retries after 2, 4, 8 and 16 minutes, then records the delivery failed: five POSTs, nothing in the DLQ', async () => {
    const receiver = await startReceiver([500, 500, 500, 500, 500]);
    try {
      const { jobId } = await runWithCallback(receiver.url, 'k');
      const clock = { now: Date.now() };
      const deps = clocked(clock);
      const handed = new Set<string>();
      const delays: number[][] = [];
      let record = await receiveJob(jobId);
      for (let attempt = 1; attempt <= 5; attempt++) {
        expect(await handle([record], deps)).toEqual(delivered);
        handed.add(record.messageId);
        expect(receiver.received).toHaveLength(attempt);
        if (attempt === 5) break;
        // Wait out each message's delay on the clock; one that arrives early is only sent on.
        const hops: number[] = [];
        let [next] = await sentFor(jobId, handed);
        for (;;) {
          expect(next?.message).toMatchObject({ jobId, attempt: attempt + 1 });
          const sent = next as Sent;
          hops.push(sent.delaySeconds);
          clock.now += sent.delaySeconds * 1000;
          if (Date.parse(sent.message.dueAt as string) <= clock.now) break;
          expect(await handle([recordOf(sent)], deps)).toEqual(delivered);
          handed.add(sent.messageId);
          expect(receiver.received).toHaveLength(attempt);
          [next] = await sentFor(jobId, handed);
        }
        delays.push(hops);
        record = recordOf(next as Sent);
      }
      // 2, 4, 8 minutes in one delay each; 16 minutes as SQS's 15 and the minute left.
      expect(delays).toEqual([[120], [240], [480], [900, 60]]);
      const item = await deliveryItem(jobId);
      expect(item).toMatchObject({ state: 'failed', attempts: 5, failedAt: expect.any(String) });
      const log = logOf(item);
      expect(log.map((e) => [e.attempt, e.statusCode, e.host])).toEqual(
        [1, 2, 3, 4, 5].map((n) => [n, 500, new URL(receiver.url).host]),
      );
      const waits = log.map((e) => (e.nextAttemptAt ? (Date.parse(e.nextAttemptAt) - Date.parse(e.at)) / 1000 : null));
      expect(waits).toEqual([120, 240, 480, 960, null]);
      expect(log.slice(1).map((e, i) => (Date.parse(e.at) - Date.parse((log[i] as WebhookAttempt).at)) / 1000)).toEqual(
        [120, 240, 480, 960],
      );
      // No sixth attempt is queued, and the DLQ holds nothing of this run: it is for our own failures.
      expect(await sentFor(jobId, handed)).toEqual([]);
      const dead = await queueContents(stack.resources, 'Webhooks', { dlq: true });
      expect(dead.filter((m) => m.body.includes(jobId))).toEqual([]);
    } finally {
      await receiver.close();
    }
  });

  it('a redelivered message posts at most once more; a POST cut by a crash is logged as an attempt of its own', async () => {
    const receiver = await startReceiver([500, 500, 500, 500]);
    try {
      const { jobId } = await runWithCallback(receiver.url);
      const clock = { now: Date.now() };
      const handed = new Set<string>();
      const first = await receiveJob(jobId);
      handed.add(first.messageId);

      // The worker POSTs, then dies before recording its outcome: SQS hands the message back. The cut
      // POST (the receiver may have got it) is logged as attempt 1, `interrupted`, and the same
      // message sends attempt 2 at once, with the same webhook-id (receivers drop it by that id).
      const recordOfOutcome = (command: string, input: unknown) =>
        command === 'UpdateItemCommand' && JSON.stringify(input).includes('lastMessageId');
      const unrecorded = faultyDeps(stack, { failDynamo: recordOfOutcome });
      expect(await failedIn([first], clocked(clock, unrecorded))).toEqual([first.messageId]);
      expect(receiver.received).toHaveLength(1);
      expect(await deliveryItem(jobId)).toMatchObject({ state: 'pending', attempts: 0, sending: { attempt: 1 } });
      expect(await handle([recordOf(first, 2)], clocked(clock))).toEqual(delivered);
      expect(receiver.received).toHaveLength(2);
      expect(receiver.received[1]?.headers['webhook-id']).toBe(receiver.received[0]?.headers['webhook-id']);
      const cut = await deliveryItem(jobId);
      expect(cut).toMatchObject({ state: 'pending', attempts: 2 });
      expect(cut?.sending).toBeUndefined();
      expect(logOf(cut).map((e) => [e.attempt, e.statusCode ?? e.error])).toEqual([
        [1, 'interrupted'],
        [2, 500],
      ]);
      expect(await sentFor(jobId, handed)).toHaveLength(1);

      // Recorded, yet handed back (the delete was lost): nothing POSTed or counted. It cannot tell
      // whether its next message went out, so it sends it again; the two copies (sent apart, so
      // handed over apart) make one attempt.
      expect(await handle([recordOf(first, 3)], clocked(clock))).toEqual(delivered);
      expect(receiver.received).toHaveLength(2);
      const copies = await sentFor(jobId, handed);
      expect(copies.map((m) => m.message)).toEqual([copies[0]?.message, copies[0]?.message]);
      expect(copies[0]?.message).toMatchObject({ attempt: 3 });
      clock.now += 240_000;
      for (const m of copies) {
        expect(await handle([recordOf(m)], clocked(clock))).toEqual(delivered);
        handed.add(m.messageId);
      }
      expect(receiver.received).toHaveLength(3);
      expect(await deliveryItem(jobId)).toMatchObject({ state: 'pending', attempts: 3 });
      const [fourth, ...more] = await sentFor(jobId, handed);
      expect(more).toEqual([]);
      expect(fourth?.message).toMatchObject({ attempt: 4 });
      handed.add(fourth?.messageId as string);

      // The worker records attempt 4, then dies before sending attempt 5: its redelivery sends it.
      clock.now += 480_000;
      const unsent = faultyDeps(stack, { failSqs: (command) => command.startsWith('SendMessage') });
      expect(await failedIn([recordOf(fourth as Sent)], clocked(clock, unsent))).toEqual([fourth?.messageId]);
      expect(receiver.received).toHaveLength(4);
      expect(await sentFor(jobId, handed)).toEqual([]);
      expect(await handle([recordOf(fourth as Sent, 2)], clocked(clock))).toEqual(delivered);
      expect(receiver.received).toHaveLength(4);
      const [fifth] = await sentFor(jobId, handed);
      expect(fifth).toMatchObject({ message: { attempt: 5 } });
      expect(await deliveryItem(jobId)).toMatchObject({ state: 'pending', attempts: 4 });

      // The receiver answers 200 at the fifth attempt: delivered, and its redelivery changes nothing.
      clock.now += 960_000;
      expect(await handle([recordOf(fifth as Sent)], clocked(clock))).toEqual(delivered);
      expect(await handle([recordOf(fifth as Sent, 2)], clocked(clock))).toEqual(delivered);
      handed.add(fifth?.messageId as string);
      expect(await sentFor(jobId, handed)).toEqual([]);
      expect(receiver.received).toHaveLength(5);
      const item = await deliveryItem(jobId);
      expect(item).toMatchObject({ state: 'delivered', attempts: 5, deliveredAt: expect.any(String) });
      expect(logOf(item).map((e) => [e.attempt, e.statusCode ?? e.error])).toEqual([
        [1, 'interrupted'],
        [2, 500],
        [3, 500],
        [4, 500],
        [5, 200],
      ]);
    } finally {
      await receiver.close();
    }
  });

  it('an attempt without an answer says why: refused by the address guard, TLS, connection', async () => {
    const receiver = await startReceiver();
    const closed = await startReceiver();
    await closed.close();
    try {
      const refused = await runWithCallback(receiver.url);
      const tls = await runWithCallback(receiver.url);
      const gone = await runWithCallback(closed.url);
      const [refusedJob, tlsJob, goneJob] = await receiveJobs([refused.jobId, tls.jobId, gone.jobId]);
      // Loopback is refused unless the local-development switch is on; without the receiver's CA
      // its certificate is not trusted; a closed port refuses the connection.
      expect(await handle([refusedJob as SQSRecord], stack.deps, { fetchOptions: { allowLoopback: false } })).toEqual(
        delivered,
      );
      expect(await handle([tlsJob as SQSRecord], stack.deps, { fetchOptions: { allowLoopback: true } })).toEqual(
        delivered,
      );
      expect(await handle([goneJob as SQSRecord])).toEqual(delivered);
      expect(receiver.received).toHaveLength(0);
      const errors = [];
      for (const { jobId } of [refused, tls, gone]) {
        const item = await deliveryItem(jobId);
        expect(item).toMatchObject({ state: 'pending', attempts: 1 });
        const [entry] = logOf(item) as [WebhookAttempt];
        expect(entry.statusCode).toBeUndefined();
        errors.push(entry.error);
      }
      expect(errors).toEqual(['refused', 'tls', 'connection']);
    } finally {
      await receiver.close();
    }
  });

  it('a message it cannot read fails its record, so SQS retries it and the DLQ keeps it', async () => {
    const receiver = await startReceiver();
    try {
      const { jobId } = await runWithCallback(receiver.url);
      const good = await receiveJob(jobId);
      const unreadable = recordOf({ messageId: 'unreadable', body: '{"jobId":' });
      expect(await handle([unreadable, good])).toEqual({ batchItemFailures: [{ itemIdentifier: 'unreadable' }] });
      expect(receiver.received).toHaveLength(1);
    } finally {
      await receiver.close();
    }
  });

  it('refuses a callbackUrl that is not https at the start', async () => {
    const team = await seedTeam(stack.deps);
    const workflowId = await createWorkflow(stack, team);
    const response = await call(stack.baseUrl, `/workflows/${workflowId}/runs`, {
      key: team.key,
      method: 'POST',
      body: { callbackUrl: 'http://example.com/hook' },
    });
    expect(response).toMatchObject({ status: 422, body: { error: 'callbackUrl must be a valid https:// URL' } });
  });
});
