import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { idempotencyKeyHeader } from '../../schemas/runs.ts';
import { type RunStart, startRunFor } from '../app/start-run.ts';
import type { Deps } from '../deps.ts';
import { metrics } from '../observability/metrics.ts';
import type { RunnableWorkflow } from '../store/run/index.ts';
import { parseRunRequest } from './body.ts';
import { keyedHandler } from './keyed-handler.ts';
import { json } from './response.ts';

/** What a run-start request asks for: its body, its Idempotency-Key, and the route and path it was sent to. */
export const runStartOf = (event: APIGatewayProxyEventV2): RunStart => ({
  request: parseRunRequest(event),
  idempotencyKey: event.headers[idempotencyKeyHeader.toLowerCase()],
  target: `${event.routeKey}\n${JSON.stringify(event.pathParameters ?? {})}`,
});

/**
 * Both run starts (spec 4.3 and 4.4) differ only in how the path's id names the workflow:
 * `load(deps, teamId, id)` finds it; the rest (body, idempotency, admission) is shared.
 */
export const runStartHandler = (
  deps: Deps,
  route: 'RunWorkflow' | 'RunAgent',
  load: (deps: Deps, teamId: string, id: string) => Promise<RunnableWorkflow>,
) =>
  keyedHandler(
    deps,
    route,
    async (event, auth) => {
      const answer = await startRunFor(deps, auth.key, runStartOf(event), () =>
        load(deps, auth.teamId, event.pathParameters?.id ?? ''),
      );
      return json(answer.status, answer.body);
    },
    // A started run is counted (countRunStarted): published at the invocation's end.
    logMetrics(metrics),
  );
