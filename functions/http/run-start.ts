import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { idempotencyKeyHeader } from '../../schemas/run-words.ts';
import { type RunWait, waitsForStart, withEndedRun } from '../app/run-wait.ts';
import type { RunStart, RunStartAnswer } from '../app/start-run.ts';
import type { ItemOutcome, ItemResult } from '../app/start-run-batch.ts';
import type { Deps } from '../deps.ts';
import { logger } from '../observability/logger.ts';
import { metrics } from '../observability/metrics.ts';
import type { ApiKeyItem } from '../store/items/api-keys.ts';
import { errorMapping, errorResponse } from './error-map.ts';
import { keyedHandler } from './keyed-handler.ts';
import { apiLocation, requestedWait, waitAppliedHeaders } from './prefer-wait.ts';
import { accepted, type HttpResult, ok } from './response.ts';
import { parseRunRequest } from './run-body.ts';

/** What a run-start request asks for: its body, its Idempotency-Key, and the route and path it was sent to. */
export const runStartOf = (event: APIGatewayProxyEventV2): RunStart => ({
  request: parseRunRequest(event),
  idempotencyKey: event.headers[idempotencyKeyHeader.toLowerCase()],
  target: { routeKey: event.routeKey, pathParameters: event.pathParameters },
});

/** Where what a start created is read: the run (GET /runs/{jobId}), or the deferred run. */
const startedLocation = (deps: Deps, answer: RunStartAnswer): Record<string, string> => {
  const { jobId, deferredJobId } = answer.body;
  if (typeof jobId === 'string') return { location: apiLocation(deps, `/runs/${jobId}`) };
  if (typeof deferredJobId === 'string') return { location: apiLocation(deps, `/deferred-runs/${deferredJobId}`) };
  return {};
};

/**
 * A started run answers 200, a deferred one 202 (spec 4.3), and so does one queued behind another
 * (ours), with `Location`. Asked to wait
 * (`Prefer: wait=N`), a started run is waited for (functions/app/run-wait.ts): `run` when it ended
 * within N seconds, and `Preference-Applied` either way; a deferred run is answered at once, without it.
 */
export const runStartResponse = async (
  deps: Deps,
  key: ApiKeyItem,
  started: RunStartAnswer,
  wait: RunWait | undefined,
): Promise<HttpResult> => {
  const applied = wait && waitsForStart(key, started) ? wait : undefined;
  const answer = await withEndedRun(deps, key, started, applied);
  const headers = { ...startedLocation(deps, answer), ...waitAppliedHeaders(applied) };
  return answer.deferred || answer.queued ? accepted(answer.body, headers) : ok(answer.body, headers);
};

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
    async (event, auth, context) => {
      const wait = requestedWait(deps, event, context);
      const answer = await start(deps, auth.key, runStartOf(event), event.pathParameters?.id ?? '');
      return runStartResponse(deps, auth.key, answer, wait);
    },
    // A started run is counted (countRunStarted): published at the invocation's end.
    logMetrics(metrics),
  );

/**
 * A batch item's answer (POST /runs/batch): the status and body its single start would have
 * answered (`runStartResponse`, without waiting), or its error's, as the error table maps it; a
 * failure without a row is that item's 500, logged as a request's is.
 */
export const batchItemResult = async (
  deps: Deps,
  key: ApiKeyItem,
  outcome: ItemOutcome,
  requestId: string,
): Promise<Omit<ItemResult, 'index'>> => {
  if ('error' in outcome && !errorMapping(outcome.error)) {
    logger.error('batch item failed', { requestId, error: outcome.error as Error });
  }
  const result =
    'answer' in outcome
      ? await runStartResponse(deps, key, outcome.answer, undefined)
      : errorResponse(outcome.error, requestId);
  return { status: result.statusCode, body: JSON.parse(result.body) };
};
