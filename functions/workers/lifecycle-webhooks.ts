import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { openLifecycleWebhooks } from '../app/open-lifecycle-webhooks.ts';
import { dynamoDbClient } from '../clients/dynamodb.ts';
import { sqsClient } from '../clients/sqs.ts';
import { type Deps, productionDeps } from '../deps.ts';
import { logger, withBatchContext } from '../observability/logger.ts';

/**
 * The lifecycle webhook events' consumer of the table's stream (only the changes
 * `lifecycleWebhooksMapping`'s filters pass: a run's insert marked `notifyStart`, a step's end marked
 * `notify`): opens each event's delivery and queues it for the webhook worker. What failed is
 * reported as batch item failures, so the stream hands it over again; after the mapping's retries,
 * the DLQ and its alarm.
 */
export const makeHandler = (deps: Deps) =>
  withBatchContext(async (event: DynamoDBStreamEvent): Promise<DynamoDBBatchResponse> => {
    const report = await openLifecycleWebhooks(deps, event.Records);
    logger.info('lifecycle webhooks', {
      opened: report.opened,
      duplicates: report.duplicates,
      resent: report.resent,
      capped: report.capped,
      endpointDeliveries: report.endpointDeliveries,
      redelivered: report.failed.length,
    });
    return { batchItemFailures: report.failed.map((itemIdentifier) => ({ itemIdentifier })) };
  });

export const handler = makeHandler(productionDeps({ ...dynamoDbClient(), ...sqsClient() }));
