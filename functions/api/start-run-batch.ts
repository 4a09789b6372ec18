import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import { idempotencyKeyHeader } from '../../schemas/run-words.ts';
import { type BatchItem, startRunBatch } from '../app/start-run-batch.ts';
import { dynamoDbClient } from '../clients/dynamodb.ts';
import { s3Client } from '../clients/s3.ts';
import { sqsClient } from '../clients/sqs.ts';
import { type Deps, productionDeps } from '../deps.ts';
import { keyedHandler } from '../http/keyed-handler.ts';
import { ok } from '../http/response.ts';
import { parseBatchItem, parseBatchRequest } from '../http/run-body.ts';
import { batchItemResult } from '../http/run-start.ts';
import { metrics } from '../observability/metrics.ts';

/** An item read as its single start reads its body; what refuses it is that item's answer. */
const readItem = (item: unknown): BatchItem => {
  try {
    return parseBatchItem(item);
  } catch (error) {
    return { refused: error };
  }
};

/** POST /runs/batch (our design): up to 100 run starts, each answered as its single start, in order. */
export const makeHandler = (deps: Deps) =>
  keyedHandler(
    deps,
    'StartRunBatch',
    async (event, auth) => {
      const runs = parseBatchRequest(event);
      const { requestId } = event.requestContext;
      const answer = await startRunBatch(
        deps,
        auth.key,
        { items: runs.map(readItem), idempotencyKey: event.headers[idempotencyKeyHeader.toLowerCase()], body: runs },
        (outcome) => batchItemResult(deps, auth.key, outcome, requestId),
      );
      return ok(answer);
    },
    // Each started run is counted (countRunStarted): published at the invocation's end.
    logMetrics(metrics),
  );

export const handler = makeHandler(productionDeps({ ...dynamoDbClient(), ...sqsClient(), ...s3Client() }));
