import { readFileSync } from 'node:fs';
import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import { ChangeMessageVisibilityCommand } from '@aws-sdk/client-sqs';
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import * as v from 'valibot';
import { WebhookEventSchema } from '../../schemas/runs.ts';
import { readRun } from '../app/read-run.ts';
import { type Deps, productionDeps } from '../deps.ts';
import {
  maxReplyBytes,
  retryDelaySeconds,
  webhookAttempts,
  webhookHeaders,
  webhookTimeoutMs,
} from '../domain/webhook.ts';
import { allowLoopbackFromEnv, type GuardedFetchOptions, guardedFetch } from '../http-client/guarded-fetch.ts';
import { logger } from '../observability/logger.ts';
import { countWebhookAttempt, metrics } from '../observability/metrics.ts';
import { runKey, webhookDeliveryKey } from '../store/keys.ts';

/**
 * Delivers the run-finished webhook (spec 6): the Run plus `event`, signed, POSTed to the run's
 * callbackUrl through the address guard (no private, loopback, link-local, CGNAT, multicast or
 * metadata address; no redirects; 8 s; the reply read at most 4 KB). A 2xx is success; anything else
 * is retried after 2, 4, 8 and 16 minutes (the message's visibility is moved, since SQS delays stop
 * at 15 minutes), five attempts in all, then the DLQ. Every attempt is logged and recorded.
 */

const DeliveryMessageSchema = v.object({ jobId: v.string(), event: WebhookEventSchema });

export interface WebhookOptions {
  fetchOptions: Pick<GuardedFetchOptions, 'allowLoopback' | 'ca' | 'resolve'>;
}

/** Local development: ALLOW_PRIVATE_CALLBACKS=1 permits loopback receivers; WEBHOOK_CA_FILE trusts their CA. */
export const webhookOptionsFromEnv = (env: NodeJS.ProcessEnv = process.env): WebhookOptions => ({
  fetchOptions: {
    allowLoopback: allowLoopbackFromEnv(env),
    ...(env.WEBHOOK_CA_FILE ? { ca: readFileSync(env.WEBHOOK_CA_FILE) } : {}),
  },
});

const recordAttempt = async (
  deps: Deps,
  jobId: string,
  event: string,
  outcome: { delivered: boolean; result: string },
) => {
  await deps.ddb.send(
    new UpdateCommand({
      TableName: deps.tableName,
      Key: webhookDeliveryKey(jobId, event),
      UpdateExpression: `SET lastResult = :result, lastAttemptAt = :now${outcome.delivered ? ', deliveredAt = :now' : ''} ADD attempts :one`,
      ExpressionAttributeValues: { ':result': outcome.result, ':now': deps.now().toISOString(), ':one': 1 },
    }),
  );
};

/** Delivers one message; throws (after moving its visibility) to have SQS retry it. */
export const deliverWebhook = async (deps: Deps, record: SQSRecord, options: WebhookOptions) => {
  const { jobId, event } = v.parse(DeliveryMessageSchema, JSON.parse(record.body));
  const attempt = Number(record.attributes.ApproximateReceiveCount ?? 1);
  const [{ Item: run }, { Item: delivery }] = await Promise.all([
    deps.ddb.send(new GetCommand({ TableName: deps.tableName, Key: runKey(jobId), ConsistentRead: true })),
    deps.ddb.send(
      new GetCommand({ TableName: deps.tableName, Key: webhookDeliveryKey(jobId, event), ConsistentRead: true }),
    ),
  ]);
  if (!run?.callbackUrl || delivery?.deliveredAt) return; // nothing to send, or a duplicate message
  const rawBody = JSON.stringify({ ...(await readRun(deps, null, jobId)), event });
  const headers = webhookHeaders({
    jobId,
    event,
    rawBody,
    secret: run.callbackSecret as string | undefined,
    nowSeconds: Math.floor(deps.now().getTime() / 1000),
  });
  const host = new URL(run.callbackUrl as string).host;
  const started = Date.now();
  let result: string;
  let delivered = false;
  try {
    const response = await guardedFetch(
      run.callbackUrl as string,
      { method: 'POST', headers, body: rawBody },
      { ...options.fetchOptions, timeoutMs: webhookTimeoutMs, maxBytes: maxReplyBytes, truncate: true },
    );
    delivered = response.status >= 200 && response.status < 300;
    result = `HTTP ${response.status}`;
  } catch (error) {
    result = (error as { code?: string }).code ?? (error as Error).name;
  }
  logger.info('webhook attempt', { jobId, event, attempt, host, result, delivered, ms: Date.now() - started });
  countWebhookAttempt(delivered);
  await recordAttempt(deps, jobId, event, { delivered, result });
  if (delivered) return;
  const last = attempt >= webhookAttempts;
  if (last) logger.error('webhook failed after every attempt; moving to the DLQ', { jobId, event, host, result });
  await deps.sqs.send(
    new ChangeMessageVisibilityCommand({
      QueueUrl: deps.queueUrls.webhooks,
      ReceiptHandle: record.receiptHandle,
      VisibilityTimeout: last ? 0 : retryDelaySeconds(attempt),
    }),
  );
  throw new Error(`webhook delivery failed: ${result}`);
};

export const makeHandler =
  (deps: Deps, options: WebhookOptions = webhookOptionsFromEnv()) =>
  async (event: SQSEvent): Promise<SQSBatchResponse> => {
    try {
      return await processPartialResponse(
        event,
        (record: SQSRecord) => deliverWebhook(deps, record, options),
        new BatchProcessor(EventType.SQS),
      );
    } finally {
      metrics.publishStoredMetrics();
    }
  };

export const handler = makeHandler(productionDeps());
