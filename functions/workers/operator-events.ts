import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import {
  type OperatorEventsDeps,
  operatorEventsDepsFromEnv,
  publishStreamRecords,
} from '../app/publish-operator-events.ts';
import { eventBridgeClient } from '../clients/eventbridge.ts';
import { logger, withBatchContext } from '../observability/logger.ts';

/**
 * The table stream's consumer (only the changes `operatorEventsMapping`'s filters pass): puts each
 * operator event on the stage's bus. What the bus refused is reported as batch item
 * failures, so the stream delivers it again; after the mapping's retries, the DLQ and its alarm.
 */
export const makeHandler = (deps: OperatorEventsDeps) =>
  withBatchContext(async (event: DynamoDBStreamEvent): Promise<DynamoDBBatchResponse> => {
    const report = await publishStreamRecords(deps, event.Records);
    if (report.failed.length > 0) {
      logger.warn('operator events not put; the stream delivers them again', {
        put: report.put,
        redelivered: report.failed.length,
        errors: [...new Set(report.errors)],
      });
    }
    return { batchItemFailures: report.failed.map((itemIdentifier) => ({ itemIdentifier })) };
  });

export const handler = makeHandler(operatorEventsDepsFromEnv()(eventBridgeClient()));
