import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import { idempotencyKeyHeader } from '../../schemas/run-words.ts';
import { resumeRun } from '../app/resume-run.ts';
import { dynamoDbClient } from '../clients/dynamodb.ts';
import { s3Client } from '../clients/s3.ts';
import { sqsClient } from '../clients/sqs.ts';
import { type Deps, productionDeps } from '../deps.ts';
import { keyedHandler } from '../http/keyed-handler.ts';
import { requestedWait } from '../http/prefer-wait.ts';
import { parseResumeRequest } from '../http/run-body.ts';
import { runStartResponse } from '../http/run-start.ts';
import { metrics } from '../observability/metrics.ts';

/** POST /runs/{jobId}/resume (our design): a new run of a failed or stopped one, without its completed steps. */
export const makeHandler = (deps: Deps) =>
  keyedHandler(
    deps,
    'ResumeRun',
    async (event, auth, context) => {
      const wait = requestedWait(deps, event, context);
      const start = {
        request: parseResumeRequest(event),
        idempotencyKey: event.headers[idempotencyKeyHeader.toLowerCase()],
        target: { routeKey: event.routeKey, pathParameters: event.pathParameters },
      };
      const answer = await resumeRun(deps, auth.key, start, event.pathParameters?.jobId ?? '');
      return runStartResponse(deps, auth.key, answer, wait);
    },
    // A resumed run is a started run (countRunStarted): published at the invocation's end.
    logMetrics(metrics),
  );

export const handler = makeHandler(productionDeps({ ...dynamoDbClient(), ...sqsClient(), ...s3Client() }));
