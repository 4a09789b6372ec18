import { readFileSync } from 'node:fs';
import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { deliverQueuedWebhook } from '../app/deliver-endpoint-webhook.ts';
import {
  deliverWebhook,
  type WebhookDelivery,
  type WebhookOptions,
  webhookDeliveryOf,
} from '../app/deliver-webhook.ts';
import { dynamoDbClient } from '../clients/dynamodb.ts';
import { sqsClient } from '../clients/sqs.ts';
import { type Deps, productionDeps } from '../deps.ts';
import { allowLoopbackFromEnv } from '../http-client/address-vet.ts';
import { withBatchContext, withRecordKeys } from '../observability/logger.ts';
import { metrics } from '../observability/metrics.ts';

/** Local development: ALLOW_PRIVATE_CALLBACKS=1 permits loopback receivers; WEBHOOK_CA_FILE trusts their CA. */
export const webhookOptionsFromEnv = (env: NodeJS.ProcessEnv = process.env): WebhookOptions => ({
  fetchOptions: {
    allowLoopback: allowLoopbackFromEnv(env),
    ...(env.WEBHOOK_CA_FILE ? { ca: readFileSync(env.WEBHOOK_CA_FILE) } : {}),
  },
});

/** The delivery a webhook record asks for (an unreadable body throws: the DLQ keeps it). */
export const deliveryOf = (record: SQSRecord): WebhookDelivery => webhookDeliveryOf(record.body, record.messageId);

/** The webhooks queue's consumer: a receiver's failure is recorded, only our own errors throw. */
export const makeHandler = (deps: Deps, options: WebhookOptions = webhookOptionsFromEnv()) => {
  // Each record logs through its own child logger: records of a batch are delivered in parallel.
  // A team endpoint's message, or a run's own webhook's.
  const deliver = (record: SQSRecord) =>
    deliverQueuedWebhook(deps, record.body, record.messageId, options, () => {
      const delivery = deliveryOf(record);
      const { jobId, event, attempt } = delivery;
      return withRecordKeys({ jobId, webhookEvent: event, attempt: attempt ?? 1, messageId: record.messageId }, () =>
        deliverWebhook(deps, delivery, options),
      );
    });
  return withBatchContext(async (event: SQSEvent): Promise<SQSBatchResponse> => {
    try {
      // A batch whose every record failed is reported as such, not thrown: one delivery's transient
      // failure of our own (a throttled write) is a redelivery, not a Lambda error.
      return await processPartialResponse(event, deliver, new BatchProcessor(EventType.SQS), {
        throwOnFullBatchFailure: false,
      });
    } finally {
      metrics.publishStoredMetrics();
    }
  });
};

export const handler = makeHandler(productionDeps({ ...dynamoDbClient(), ...sqsClient() }));
