import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { idempotencyKeyHeader } from '../../schemas/runs.ts';
import type { RunStart, RunStartAnswer } from '../app/start-run.ts';
import type { Deps } from '../deps.ts';
import { metrics } from '../observability/metrics.ts';
import type { ApiKeyItem } from '../store/items.ts';
import { parseRunRequest } from './body.ts';
import { keyedHandler } from './keyed-handler.ts';
import { accepted, type HttpResult, ok } from './response.ts';

/** What a run-start request asks for: its body, its Idempotency-Key, and the route and path it was sent to. */
export const runStartOf = (event: APIGatewayProxyEventV2): RunStart => ({
  request: parseRunRequest(event),
  idempotencyKey: event.headers[idempotencyKeyHeader.toLowerCase()],
  target: { routeKey: event.routeKey, pathParameters: event.pathParameters },
});

/** A started run answers 200, a deferred one 202 (spec 4.3), and so does one queued behind another (ours). */
export const runStartResponse = (answer: RunStartAnswer): HttpResult =>
  answer.deferred || answer.queued ? accepted(answer.body) : ok(answer.body);

/**
 * Both run starts (spec 4.3 and 4.4) differ only in how the path's id names the workflow, which
 * `start` (functions/app/start-run.ts) resolves; the rest (body, idempotency, admission) is shared.
 */
export const runStartHandler = (
  deps: Deps,
  route: 'RunWorkflow' | 'RunAgent',
  start: (deps: Deps, key: ApiKeyItem, start: RunStart, id: string) => Promise<RunStartAnswer>,
) =>
  keyedHandler(
    deps,
    route,
    async (event, auth) => {
      const answer = await start(deps, auth.key, runStartOf(event), event.pathParameters?.id ?? '');
      return runStartResponse(answer);
    },
    // A started run is counted (countRunStarted): published at the invocation's end.
    logMetrics(metrics),
  );
