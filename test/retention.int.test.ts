/**
 * Retention (docs/deploy.md, "Retention and what a destroy keeps"): the items a run writes carry
 * `ttl` (epoch seconds) = the run's start + the stage's retention, an ended deferred run its end +
 * the retention, and an item past its `ttl` reads as absent before DynamoDB gets round to deleting
 * it. Driven through the real handlers over the emulators; time moves only on the injected clock,
 * and the items are read raw (every attribute, expired or not) with the SDK.
 */
import { createHash } from 'node:crypto';
import { DeleteCommand, GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WebhookOptions } from '../functions/app/deliver-webhook.ts';
import { deferredRunKey, idempotencyRecordKey, runKey, runPartition } from '../functions/store/keys.ts';
import { setLiveMultiplier } from '../functions/store/price-multiplier.ts';
import { makeHandler as makeWebhookHandler } from '../functions/workers/webhook-delivery.ts';
import { invokedAs } from '../local/invocation.ts';
import { queueContents, recordOf } from './support/queue-contents.ts';
import {
  api,
  cancelRunCall,
  deliver,
  dispatcherHandler,
  drainSteps,
  getRunCall,
  startRunCall,
  stepHandler,
  stepRecord,
  takeStepMessages,
} from './support/runs.ts';
import { createWorkflow, type SeededTeam, seedTeam, startTestStack, type TestStack } from './support/stack.ts';
import { receiverCa, startReceiver } from './support/webhook-receiver.ts';

/** The stage's retention in this file: not the default, so the test shows the deps' value is the one used. */
const retentionDays = 7;
const day = 86_400;

let stack: TestStack;
let clockMs = 0;
beforeAll(async () => {
  stack = await startTestStack({ now: () => new Date(clockMs), retentionDays });
});
afterAll(() => stack.close());

/** Sets the injected clock; returns the instant it reads. */
const setClock = (iso: string) => {
  clockMs = Date.parse(iso);
  return clockMs;
};
const seconds = (ms: number) => Math.floor(ms / 1000);

/** Every item of the run's partition as stored: the run, its steps, its webhook deliveries. */
const partitionOf = async (jobId: string) => {
  const { Items = [] } = await stack.deps.ddb.send(
    new QueryCommand({
      TableName: stack.deps.tableName,
      KeyConditionExpression: 'PK = :pk',
      ExpressionAttributeValues: { ':pk': runPartition(jobId) },
      ConsistentRead: true,
    }),
  );
  return new Map(Items.map((item) => [String(item.SK), item]));
};

const itemAt = async (key: { PK: string; SK: string }) =>
  (await stack.deps.ddb.send(new GetCommand({ TableName: stack.deps.tableName, Key: key, ConsistentRead: true }))).Item;

const webhookOptions: WebhookOptions = { fetchOptions: { allowLoopback: true, ca: receiverCa } };
const webhookHandler = () => invokedAs('WebhookDelivery', makeWebhookHandler(stack.deps, webhookOptions));

/** Hands the run's webhook message, as the service queued it, to the real webhook worker. */
const deliverWebhookOf = async (jobId: string) => {
  const [message] = (await queueContents(stack.resources, 'Webhooks')).filter(
    (m) => (JSON.parse(m.body) as { jobId: string }).jobId === jobId,
  );
  if (!message) throw new Error(`no webhook message for ${jobId}`);
  const answer = (await webhookHandler()({ Records: [recordOf(message)] } as SQSEvent)) as SQSBatchResponse;
  expect(answer.batchItemFailures).toEqual([]);
};

/** A team and a model-step chain workflow (its LlmWorker step is claimed), started at `startIso`. */
const startChain = async (
  startIso: string,
  body: Record<string, unknown> = {},
  headers?: Record<string, string>,
): Promise<{ t: SeededTeam; workflowId: string; jobId: string; startedAt: number }> => {
  const startedAt = setClock(startIso);
  const t = await seedTeam(stack.deps, { credits: 100 });
  const workflowId = await createWorkflow(stack, t);
  const started = await startRunCall(stack.baseUrl, t.key, workflowId, body, headers);
  expect(started.status).toBe(200);
  return { t, workflowId, jobId: started.body.jobId as string, startedAt };
};

describe("a run's items expire the retention after its start", () => {
  it('the run (from its end), every step, the webhook delivery carry ttl = start + retention; the idempotency record its 24 hours', async () => {
    const receiver = await startReceiver();
    try {
      const idempotencyKey = `retention-${clockMs}`;
      const { t, jobId, startedAt } = await startChain(
        '2026-03-01T10:00:00.000Z',
        { callbackUrl: receiver.url },
        { 'idempotency-key': idempotencyKey },
      );
      const kept = seconds(startedAt) + retentionDays * day;
      // In progress: no ttl, so a run never expires while it holds its workflow's lock and its hold.
      expect((await partitionOf(jobId)).get('RUN')).not.toHaveProperty('ttl');

      // The steps run and the run ends minutes later; the ttl still counts from the start.
      setClock('2026-03-01T10:05:00.000Z');
      await drainSteps(stack.deps, stepHandler(stack.deps));
      setClock('2026-03-01T10:06:00.000Z');
      await deliverWebhookOf(jobId);
      expect(receiver.received).toHaveLength(1);

      const items = await partitionOf(jobId);
      expect([...items.keys()].sort()).toEqual([
        'RUN',
        'STEP#llm',
        'STEP#prompt',
        'STEP#show',
        'STEP#topic',
        'WEBHOOK#run.completed',
      ]);
      expect(items.get('RUN')).toMatchObject({ status: 'completed' });
      for (const [sk, item] of items) expect(item.ttl, sk).toBe(kept);

      // The remembered answer keeps its own, shorter window: 24 hours (a retention is at least a day).
      const hash = createHash('sha256').update(idempotencyKey).digest('hex');
      const record = await itemAt(idempotencyRecordKey(t.keyId, hash));
      expect(record?.ttl).toBe(seconds(startedAt) + day);
      expect(record?.ttl).toBeLessThan(kept);
    } finally {
      await receiver.close();
    }
  });

  it('GET /runs/{jobId}: 200 until the second before its ttl, then 404 Run not found, and a cancel answers the same', async () => {
    const { t, jobId, startedAt } = await startChain('2026-04-01T08:00:00.000Z');
    await drainSteps(stack.deps, stepHandler(stack.deps));
    const ttl = seconds(startedAt) + retentionDays * day;

    clockMs = ttl * 1000 - 1000;
    const before = await getRunCall(stack.baseUrl, t.key, jobId);
    expect([before.status, before.body.status]).toEqual([200, 'completed']);

    clockMs = ttl * 1000;
    const expired = await getRunCall(stack.baseUrl, t.key, jobId);
    expect([expired.status, expired.body]).toEqual([404, { error: 'Run not found' }]);
    const cancel = await cancelRunCall(stack.baseUrl, t.key, jobId);
    expect([cancel.status, cancel.body]).toEqual([404, { error: 'Run not found' }]);
    // Still stored (DynamoDB deletes it later): only the read treats it as gone.
    expect(await itemAt(runKey(jobId))).toMatchObject({ ttl, status: 'completed' });
  });

  it('a run still in progress past its retention is kept: readable, cancellable, then kept an hour after its end', async () => {
    const { t, jobId, startedAt } = await startChain('2026-05-01T08:00:00.000Z');
    await takeStepMessages(stack.deps); // its root step's message is lost: the run stays queued
    const cancelledAt = setClock('2026-05-20T08:00:00.000Z');
    expect(cancelledAt / 1000).toBeGreaterThan(seconds(startedAt) + retentionDays * day);
    const queued = await getRunCall(stack.baseUrl, t.key, jobId);
    expect([queued.status, queued.body.status]).toEqual([200, 'queued']);

    const cancelled = await cancelRunCall(stack.baseUrl, t.key, jobId);
    expect([cancelled.status, cancelled.body.status]).toEqual([200, 'cancelled']);
    const ttl = seconds(cancelledAt) + 3600;
    expect((await itemAt(runKey(jobId)))?.ttl).toBe(ttl);
    clockMs = ttl * 1000 - 1000;
    expect((await getRunCall(stack.baseUrl, t.key, jobId)).status).toBe(200);
    clockMs = ttl * 1000;
    expect((await getRunCall(stack.baseUrl, t.key, jobId)).status).toBe(404);
  });
});

describe('late messages for an expired run do nothing', () => {
  it('a step message and a webhook message: no work, no error, nothing written or sent', async () => {
    const receiver = await startReceiver();
    try {
      const { workflowId, jobId, startedAt } = await startChain('2026-06-01T12:00:00.000Z', {
        callbackUrl: receiver.url,
      });
      await drainSteps(stack.deps, stepHandler(stack.deps));
      clockMs = (seconds(startedAt) + retentionDays * day) * 1000;
      const stored = await partitionOf(jobId);

      // Every step again, as SQS might hand back a message: nothing claimed, counted or released.
      for (const nodeId of ['topic', 'prompt', 'llm', 'show']) {
        expect(await deliver(stepHandler(stack.deps), [stepRecord({ jobId, workflowId, nodeId })])).toEqual([]);
      }
      expect(await takeStepMessages(stack.deps)).toEqual([]);
      // Its webhook, first delivered after the run expired: not posted, no delivery recorded.
      await deliverWebhookOf(jobId);
      expect(receiver.received).toEqual([]);
      expect(await partitionOf(jobId)).toEqual(stored);

      // Once DynamoDB has deleted the run's items, the same messages still find nothing to do.
      for (const item of stored.values()) {
        await stack.deps.ddb.send(
          new DeleteCommand({ TableName: stack.deps.tableName, Key: { PK: item.PK, SK: item.SK } }),
        );
      }
      expect(await deliver(stepHandler(stack.deps), [stepRecord({ jobId, workflowId, nodeId: 'llm' })])).toEqual([]);
      await deliverWebhookOf(jobId);
      expect(receiver.received).toEqual([]);
      expect((await partitionOf(jobId)).size).toBe(0);
    } finally {
      await receiver.close();
    }
  });
});

describe('deferred runs expire the retention after they end', () => {
  const defer = async (t: SeededTeam, workflowId: string, body: Record<string, unknown> = {}) => {
    const accepted = await api(stack.baseUrl, 'POST', `/workflows/${workflowId}/runs`, {
      key: t.key,
      body: { defer: true, ...body },
    });
    expect(accepted.status).toBe(202);
    return accepted.body.deferredJobId as string;
  };
  const getDeferred = (t: SeededTeam, id: string) => api(stack.baseUrl, 'GET', `/deferred-runs/${id}`, { key: t.key });
  const tick = () => dispatcherHandler(stack.deps)();

  it('a waiting one has no ttl; a cancelled one reads 200 until its end + retention, then 404 Deferred run not found', async () => {
    setClock('2026-07-01T09:00:00.000Z');
    const t = await seedTeam(stack.deps, { credits: 100 });
    const workflowId = await createWorkflow(stack, t);
    const id = await defer(t, workflowId, { maxMultiplier: 0.1 });
    expect(await itemAt(deferredRunKey(id))).not.toHaveProperty('ttl');

    const cancelledAt = setClock('2026-07-01T11:30:00.000Z');
    const cancelled = await api(stack.baseUrl, 'DELETE', `/deferred-runs/${id}`, { key: t.key });
    expect([cancelled.status, cancelled.body.status]).toEqual([200, 'cancelled']);
    const ttl = seconds(cancelledAt) + retentionDays * day;
    expect((await itemAt(deferredRunKey(id)))?.ttl).toBe(ttl);

    clockMs = ttl * 1000 - 1000;
    expect((await getDeferred(t, id)).body.status).toBe('cancelled');
    clockMs = ttl * 1000;
    const expired = await getDeferred(t, id);
    expect([expired.status, expired.body]).toEqual([404, { error: 'Deferred run not found' }]);
    const again = await api(stack.baseUrl, 'DELETE', `/deferred-runs/${id}`, { key: t.key });
    expect([again.status, again.body]).toEqual([404, { error: 'Deferred run not found' }]);
  });

  it('a dispatched one from its dispatch, an expired one from its expiry', async () => {
    setClock('2026-08-01T09:00:00.000Z');
    await setLiveMultiplier(stack.deps, 1);
    const t = await seedTeam(stack.deps, { credits: 100 });
    const toDispatch = await defer(t, await createWorkflow(stack, t, undefined, 'Dispatched'), { maxMultiplier: 0.5 });
    const toExpire = await defer(t, await createWorkflow(stack, t, undefined, 'Expiring'), { maxMultiplier: 0.2 });

    const dispatchedAt = setClock('2026-08-01T13:00:00.000Z');
    await setLiveMultiplier(stack.deps, 0.5);
    expect((await tick()).dispatched.map((d) => d.deferredJobId)).toContain(toDispatch);
    expect(await itemAt(deferredRunKey(toDispatch))).toMatchObject({
      status: 'dispatched',
      ttl: seconds(dispatchedAt) + retentionDays * day,
    });
    expect(await itemAt(deferredRunKey(toExpire))).not.toHaveProperty('ttl');

    const expiredAt = setClock('2026-08-02T09:00:01.000Z');
    expect((await tick()).expired).toContain(toExpire);
    expect(await itemAt(deferredRunKey(toExpire))).toMatchObject({
      status: 'expired',
      ttl: seconds(expiredAt) + retentionDays * day,
    });
    await setLiveMultiplier(stack.deps, 1);
  });
});
