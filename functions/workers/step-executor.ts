import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import * as v from 'valibot';
import { stepsQueue } from '../../lib/definitions.ts';
import { type RunStepOptions, runStep, type StepMessage } from '../app/run-step.ts';
import { dynamoDbClient } from '../clients/dynamodb.ts';
import { s3Client } from '../clients/s3.ts';
import { sqsClient } from '../clients/sqs.ts';
import { type Deps, productionDeps } from '../deps.ts';
import { executorRegistryFor } from '../nodes/executors/index.ts';
import { logger } from '../observability/logger.ts';
import { metrics } from '../observability/metrics.ts';
import { secretStoreFromEnv } from '../store/secrets.ts';

const StepMessageSchema = v.object({ jobId: v.string(), workflowId: v.string(), nodeId: v.string() });
const parseMessage = (record: SQSRecord): StepMessage => {
  try {
    return v.parse(StepMessageSchema, JSON.parse(record.body));
  } catch (error) {
    logger.error('unreadable step message', { messageId: record.messageId });
    throw error;
  }
};

/** The steps queue's consumer: each record is one step run by `runStep` (a throw has SQS redeliver it). */
export const makeHandler = (deps: Deps, options: Partial<RunStepOptions> = {}) => {
  const resolved = { stepTimeoutMs: (stepsQueue.consumerTimeoutSeconds - 5) * 1000, ...options };
  const runRecord = async (record: SQSRecord) => {
    const message = parseMessage(record);
    logger.appendKeys({ jobId: message.jobId });
    await runStep(deps, message, resolved);
  };
  return async (event: SQSEvent): Promise<SQSBatchResponse> => {
    try {
      return await processPartialResponse(event, runRecord, new BatchProcessor(EventType.SQS)); // one per batch
    } finally {
      metrics.publishStoredMetrics();
      logger.resetKeys();
    }
  };
};

export const handler = makeHandler(
  productionDeps(
    { ...dynamoDbClient(), ...sqsClient(), ...s3Client() },
    { secrets: secretStoreFromEnv, executors: executorRegistryFor },
  ),
);
