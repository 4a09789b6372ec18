import { openRunEvents, type StreamTiming } from '../app/run-events.ts';
import { dynamoDbClient } from '../clients/dynamodb.ts';
import { type Deps, productionDeps } from '../deps.ts';
import { keyedStream, lambdaStreaming, sendWhole } from '../http/event-stream.ts';
import { eventStreamHead, noContent } from '../http/response.ts';

/**
 * GET /runs/{jobId}/events (issue 26): the run's events as `text/event-stream`, on a function URL
 * in RESPONSE_STREAM mode (API Gateway's HTTP API cannot stream). The key, its rate limit and the
 * scope are checked as on every keyed route, and every error before the stream opens is the same
 * JSON answer. `timing` is the platform's unless a test passes its own.
 */
export const makeHandler = (deps: Deps, timing?: StreamTiming) =>
  keyedStream(deps, 'GetRunEvents', async (event, auth, open) => {
    const opened = await openRunEvents(
      deps,
      { teamId: auth.teamId, workflowIds: auth.key.workflowIds },
      event.pathParameters?.jobId ?? '',
      event.headers['last-event-id'],
      timing,
    );
    if (opened.finished) return sendWhole(open, noContent());
    const sink = open(eventStreamHead);
    try {
      await opened.follow(sink);
    } finally {
      sink.end();
    }
  });

export const handler = lambdaStreaming(makeHandler(productionDeps({ ...dynamoDbClient() })));
