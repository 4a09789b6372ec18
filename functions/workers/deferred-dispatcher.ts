import type { Context, ScheduledEvent } from 'aws-lambda';
import { dispatchDeferredRuns } from '../app/dispatch-deferred.ts';
import { sweepQueuedRuns } from '../app/sweep-queued-runs.ts';
import { dynamoDbClient } from '../clients/dynamodb.ts';
import { s3Client } from '../clients/s3.ts';
import { sqsClient } from '../clients/sqs.ts';
import { type Deps, productionDeps } from '../deps.ts';
import { logger, withLambdaContext } from '../observability/logger.ts';
import { countDeferred, metrics } from '../observability/metrics.ts';

/**
 * Woken every minute by EventBridge. Each tick moves deferred runs (dispatch at the current price
 * multiplier, expire, cancel) and re-sends the root steps of runs whose messages were lost after
 * their start committed (the sweep), failing a run whose messages SQS keeps refusing. A duplicate, late or concurrent tick is harmless: every move
 * is a conditional write.
 */
export const makeHandler = (deps: Deps) => {
  const tick = withLambdaContext(async () => {
    try {
      const report = await dispatchDeferredRuns(deps);
      countDeferred('dispatched', report.dispatched.length);
      countDeferred('expired', report.expired.length);
      countDeferred('cancelled', report.cancelled.length);
      const swept = await sweepQueuedRuns(deps);
      logger.info('dispatcher tick', {
        multiplier: report.multiplier,
        dispatched: report.dispatched.length,
        expired: report.expired.length,
        cancelled: report.cancelled.length,
        keptWaiting: report.keptWaiting.length,
        resent: swept.resent.length,
        failedUnqueued: swept.failed.length,
        settled: swept.settled.length,
        queueWaitEnded: swept.waitEnded.length,
        startedFromQueue: swept.startedFromQueue.length,
      });
      return { ...report, ...swept };
    } finally {
      // Also publishes the runs the dispatch started (counted where runs start).
      metrics.publishStoredMetrics();
    }
  });
  // The schedule's event says nothing the tick needs; the local schedule and tests pass none.
  return (event?: ScheduledEvent, context?: Context) => tick(event, context);
};

// S3: a dispatched run's copies of the uploads its inputs named.
export const handler = makeHandler(productionDeps({ ...dynamoDbClient(), ...sqsClient(), ...s3Client() }));
