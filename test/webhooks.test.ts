import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import type { SQSRecord } from 'aws-lambda';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deliverWebhook, type WebhookOptions } from '../functions/app/deliver-webhook.ts';
import {
  retryDelaySeconds,
  signatureHeader,
  standardWebhookSignature,
  verifySignature,
  webhookId,
} from '../functions/domain/webhook.ts';
import { deliveryOf } from '../functions/workers/webhook-delivery.ts';
import { buildOpenApiDocument } from '../schemas/openapi.ts';
import { call, createWorkflow, seedTeam, startWorkingStack, type TestStack, waitForRun } from './support/stack.ts';
import { type Received, receiverCa, startReceiver } from './support/webhook-receiver.ts';

const options: WebhookOptions = { fetchOptions: { allowLoopback: true, ca: receiverCa } };

let stack: TestStack;
beforeAll(async () => {
  stack = await startWorkingStack();
});
afterAll(() => stack.close());

/** Takes the webhook job off the queue as an SQS record, as the event source would hand it over. */
const receiveJob = async (): Promise<SQSRecord> => {
  for (let i = 0; i < 50; i++) {
    const { Messages = [] } = await stack.deps.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: stack.deps.queueUrls.webhooks,
        WaitTimeSeconds: 1,
        MessageSystemAttributeNames: ['All'],
      }),
    );
    const [m] = Messages;
    if (m) {
      return {
        messageId: m.MessageId ?? '',
        receiptHandle: m.ReceiptHandle ?? '',
        body: m.Body ?? '',
        attributes: { ApproximateReceiveCount: m.Attributes?.ApproximateReceiveCount ?? '1' },
      } as unknown as SQSRecord;
    }
  }
  throw new Error('no webhook job');
};

const runWithCallback = async (callbackUrl: string, callbackSecret?: string) => {
  const team = await seedTeam(stack.deps);
  const workflowId = await createWorkflow(stack, team);
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
    expect([1, 2, 3, 4].map(retryDelaySeconds)).toEqual([120, 240, 480, 960]);
    expect(retryDelaySeconds(10)).toBe(3600);
  });
});

describe('the run-finished webhook (spec 6)', () => {
  it('POSTs the Run plus event, signed both ways, with a stable webhook-id', async () => {
    const receiver = await startReceiver();
    try {
      const { team, jobId } = await runWithCallback(receiver.url, 's3cret');
      await deliverWebhook(stack.deps, deliveryOf(await receiveJob()), options);
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
    } finally {
      await receiver.close();
    }
  });

  it('sends no signature without a secret, and sends run.failed for a failed run', async () => {
    const receiver = await startReceiver();
    try {
      const team = await seedTeam(stack.deps);
      const workflowId = await createWorkflow(stack, team, [
        { key: 'data', type: 'JsonLoader', config: { data: '{broken' } },
        { key: 'show', type: 'JsonInspector', inputs: ['data'] },
      ]);
      const started = await call(stack.baseUrl, `/workflows/${workflowId}/runs`, {
        key: team.key,
        method: 'POST',
        body: { callbackUrl: receiver.url },
      });
      await waitForRun(stack, team.key, started.body.jobId as string);
      await deliverWebhook(stack.deps, deliveryOf(await receiveJob()), options);
      const [{ headers, body }] = receiver.received as [Received];
      expect(headers['x-service-event']).toBe('run.failed');
      expect(headers['x-service-signature']).toBeUndefined();
      expect(JSON.parse(body)).toMatchObject({ event: 'run.failed', status: 'failed' });
    } finally {
      await receiver.close();
    }
  });

  it('retries a non-2xx or a redirect (not followed), and delivers once it succeeds, never twice', async () => {
    const receiver = await startReceiver([500, 302]);
    try {
      await runWithCallback(receiver.url, 'k');
      const first = await receiveJob();
      await expect(deliverWebhook(stack.deps, deliveryOf(first), options)).rejects.toThrow('HTTP 500');
      await expect(deliverWebhook(stack.deps, deliveryOf(first), options)).rejects.toThrow('HTTP 302');
      await deliverWebhook(stack.deps, deliveryOf(first), options);
      await deliverWebhook(stack.deps, deliveryOf(first), options); // a duplicate delivery of the job is skipped
      expect(receiver.received).toHaveLength(3);
    } finally {
      await receiver.close();
    }
  });

  it('refuses loopback receivers unless the local-development switch is on', async () => {
    const receiver = await startReceiver();
    try {
      await runWithCallback(receiver.url);
      const job = await receiveJob();
      await expect(
        deliverWebhook(stack.deps, deliveryOf(job), { fetchOptions: { allowLoopback: false, ca: receiverCa } }),
      ).rejects.toThrow();
      expect(receiver.received).toHaveLength(0);
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
