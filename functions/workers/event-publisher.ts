import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { publishOperatorEvents } from '../app/publish-operator-events.ts';
import { eventBridgeClient } from '../clients/eventbridge.ts';
import { logger } from '../observability/logger.ts';
import { eventBridgeSender, itemChangeOf, operatorEventBusFromEnv, type PutBusEntries } from '../store/event-bus.ts';

/**
 * The table stream's consumer (only the changes `operatorEventsStream`'s filters pass): puts each
 * run lifecycle event on the operator event bus. What the bus refused is reported as batch item
 * failures, so the stream delivers it again; after the mapping's retries, the DLQ and its alarm.
 */
export const makeHandler =
  (deps: { putEntries: PutBusEntries }) =>
  async (event: DynamoDBStreamEvent): Promise<DynamoDBBatchResponse> => {
    const report = await publishOperatorEvents(deps, event.Records.map(itemChangeOf));
    if (report.failed.length > 0) {
      logger.warn('operator events not put; the stream delivers them again', {
        put: report.put,
        redelivered: report.failed.length,
        errors: [...new Set(report.errors)],
      });
    }
    return { batchItemFailures: report.failed.map((itemIdentifier) => ({ itemIdentifier })) };
  };

export const handler = makeHandler({ putEntries: eventBridgeSender(eventBridgeClient(), operatorEventBusFromEnv()) });
