import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import * as v from 'valibot';
import { stepNodeTimeoutSeconds } from '../../platform/definitions.ts';
import { type BulkCancelMessage, BulkCancelMessageSchema, runBulkCancelPage } from '../app/bulk-cancel.ts';
import { StepMessageSchema } from '../app/provider-job.ts';
import { type DeadlineMessage, DeadlineMessageSchema, enforceDeadline } from '../app/run-deadline.ts';
import { runStep } from '../app/step/run-step.ts';
import { type RunStepOptions, type StepMessage, type TimeLeft, withTimeLeft } from '../app/step/step-messages.ts';
import { stepExecutorWiring } from '../app/step-executor-wiring.ts';
import { dynamoDbClient } from '../clients/dynamodb.ts';
import { s3Client } from '../clients/s3.ts';
import { sqsClient } from '../clients/sqs.ts';
import { type Deps, productionDeps } from '../deps.ts';
import { logger, withBatchContext, withRecordKeys } from '../observability/logger.ts';
import { metrics } from '../observability/metrics.ts';

/** The steps queue carries a step's messages, a run's deadline timer and a bulk cancel's pages. */
const QueueMessageSchema = v.union([DeadlineMessageSchema, BulkCancelMessageSchema, StepMessageSchema]);

const parseMessage = (record: SQSRecord): StepMessage | DeadlineMessage | BulkCancelMessage => {
  try {
    return v.parse(QueueMessageSchema, JSON.parse(record.body));
  } catch (error) {
    logger.error('unreadable step message', { messageId: record.messageId });
    throw error;
  }
};

/** The steps queue's consumer: a step per record, each with its own logger; a failed batch is answered, not thrown. */
export const makeHandler = (deps: Deps, options: Partial<RunStepOptions> = {}) => {
  const resolved = { stepTimeoutMs: stepNodeTimeoutSeconds * 1000, ...options };
  const runRecord = (context?: TimeLeft) => async (record: SQSRecord) => {
    const message = parseMessage(record);
    const { jobId, nodeId, bulkActionId } = message as Partial<Record<'jobId' | 'nodeId' | 'bulkActionId', string>>;
    await withRecordKeys({ jobId, nodeId, bulkActionId, messageId: record.messageId }, () =>
      !('kind' in message)
        ? runStep(deps, message, withTimeLeft(resolved, context))
        : message.kind === 'deadline'
          ? enforceDeadline(deps, message)
          : runBulkCancelPage(deps, message, Number(record.attributes.ApproximateReceiveCount)),
    );
  };
  return withBatchContext(async (event: SQSEvent, context?: Context): Promise<SQSBatchResponse> => {
    try {
      // One per batch. A lone step's transient failure is a redelivery, not a FullBatchFailureError.
      const processor = new BatchProcessor(EventType.SQS);
      return await processPartialResponse(event, runRecord(context), processor, { throwOnFullBatchFailure: false });
    } finally {
      metrics.publishStoredMetrics();
    }
  });
};

export const handler = makeHandler(
  productionDeps({ ...dynamoDbClient(), ...sqsClient(), ...s3Client() }, stepExecutorWiring),
);
