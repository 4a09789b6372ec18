import { readFileSync } from 'node:fs';
import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import * as v from 'valibot';
import { WebhookEventSchema } from '../../schemas/runs.ts';
import { deliverWebhook, type WebhookDelivery, type WebhookOptions } from '../app/deliver-webhook.ts';
import { type Deps, productionDeps } from '../deps.ts';
import { allowLoopbackFromEnv } from '../http-client/guarded-fetch.ts';
import { metrics } from '../observability/metrics.ts';

const DeliveryMessageSchema = v.object({ jobId: v.string(), event: WebhookEventSchema });

/** Local development: ALLOW_PRIVATE_CALLBACKS=1 permits loopback receivers; WEBHOOK_CA_FILE trusts their CA. */
export const webhookOptionsFromEnv = (env: NodeJS.ProcessEnv = process.env): WebhookOptions => ({
  fetchOptions: {
    allowLoopback: allowLoopbackFromEnv(env),
    ...(env.WEBHOOK_CA_FILE ? { ca: readFileSync(env.WEBHOOK_CA_FILE) } : {}),
  },
});

/** The delivery a webhook record asks for, as the event source hands it over. */
export const deliveryOf = (record: SQSRecord): WebhookDelivery => ({
  ...v.parse(DeliveryMessageSchema, JSON.parse(record.body)),
  attempt: Number(record.attributes.ApproximateReceiveCount ?? 1),
  receiptHandle: record.receiptHandle,
});

/** The webhooks queue's consumer; a failed attempt throws, so SQS hands the message back later. */
export const makeHandler = (deps: Deps, options: WebhookOptions = webhookOptionsFromEnv()) => {
  const deliver = (record: SQSRecord) => deliverWebhook(deps, deliveryOf(record), options);
  return async (event: SQSEvent): Promise<SQSBatchResponse> => {
    try {
      return await processPartialResponse(event, deliver, new BatchProcessor(EventType.SQS));
    } finally {
      metrics.publishStoredMetrics();
    }
  };
};

export const handler = makeHandler(productionDeps());
