import { basePath } from '../../platform/routes.ts';
import { openRunEvents, type StreamTiming, timingUntil } from '../app/run-stream.ts';
import { withStreamSlot } from '../app/stream-slots.ts';
import { dynamoDbClient } from '../clients/dynamodb.ts';
import { type Deps, productionDeps } from '../deps.ts';
import { keyedStream, lambdaStreaming, sendWhole } from '../http/event-stream.ts';
import { eventStreamHead, noContent } from '../http/response.ts';

/**
 * The `done` Run's `links.events`: the stack sets the edge's address when the edge serves the
 * stream; without it the address is this function URL's own, which its environment cannot hold (a
 * cycle), so it is read from the request (`<id>.lambda-url.<region>.on.aws`). Locally, neither:
 * the local server's address (`publicBaseUrl`).
 */
const withOwnAddress = (deps: Deps, domainName: string): Deps =>
  deps.runEventsBaseUrl === undefined && domainName.endsWith('.on.aws')
    ? { ...deps, runEventsBaseUrl: `https://${domainName}${basePath}` }
    : deps;

/**
 * GET /runs/{jobId}/events: the run's events as `text/event-stream`, on a function URL
 * in RESPONSE_STREAM mode (API Gateway's HTTP API cannot stream). The key, its rate limit and the
 * scope are checked as on every keyed route, then the key's and the run's caps on open streams (a 429 past either),
 * and every error before the stream opens is the same JSON answer. `timing` is the platform's unless a test passes its own.
 */
export const makeHandler = (deps: Deps, timing?: StreamTiming) =>
  keyedStream(deps, 'GetRunEvents', async (event, auth, open) => {
    const jobId = event.pathParameters?.jobId ?? '';
    const opened = await openRunEvents(
      withOwnAddress(deps, event.requestContext.domainName),
      { teamId: auth.teamId, workflowIds: auth.key.workflowIds },
      jobId,
      event.headers['last-event-id'],
      timingUntil(deps, timing, auth.runToken?.expiresAt),
    );
    if (opened.finished) return sendWhole(open, noContent());
    // The key's and the run's caps on open streams: their 429 comes before the stream opens.
    await withStreamSlot(deps, auth.keyId, jobId, async () => {
      const sink = open(eventStreamHead);
      try {
        await opened.follow(sink);
      } finally {
        sink.end();
      }
    });
  });

export const handler = lambdaStreaming(makeHandler(productionDeps({ ...dynamoDbClient() })));
