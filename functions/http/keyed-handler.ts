import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import middy from '@middy/core';
import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { type KeyedRouteId, scopeOf } from '../../lib/routes.ts';
import type { Deps } from '../deps.ts';
import { logger } from '../observability/logger.ts';
import { metrics } from '../observability/metrics.ts';
import { type AuthContext, authenticate } from './authenticate.ts';
import { errorResponse } from './error-map.ts';
import type { HttpResult } from './response.ts';

type Event = APIGatewayProxyEventV2;

/**
 * What every API function does around its handler: Lambda context on every log line, the request id
 * (and the job id when the path names one) appended, the event never logged (it carries the bearer
 * key) whatever POWERTOOLS_LOGGER_LOG_EVENT says, keys reset after the invocation so a warm function
 * never logs the previous caller's team, and the invocation's metrics published.
 */
const apiMiddy = () =>
  middy<Event, HttpResult, Error, Context>()
    .use(injectLambdaContext(logger, { logEvent: false, resetKeys: true }))
    .use(logMetrics(metrics))
    .before(async (request) => {
      const jobId = request.event.pathParameters?.jobId;
      logger.appendKeys({ requestId: request.event.requestContext.requestId, ...(jobId ? { jobId } : {}) });
    })
    .onError(async (request) => {
      request.response = errorResponse(request.error, request.event.requestContext.requestId);
    });

/**
 * A keyed API Gateway v2 handler: authenticate (auth → rate limit → the scope `lib/routes.ts` gives
 * the route), run `fn`, and map any thrown error through the one error table. Every keyed entry
 * point in `functions/api` is built with it.
 */
export const keyedHandler = (
  deps: Deps,
  route: KeyedRouteId,
  fn: (event: Event, auth: AuthContext) => Promise<HttpResult>,
) => {
  const scope = scopeOf(route);
  return apiMiddy().handler(async (event) => {
    const auth = await authenticate(deps, event.headers.authorization, scope);
    logger.appendKeys({ teamId: auth.teamId });
    return fn(event, auth);
  });
};

/** An unauthenticated handler with the same error mapping (GET /openapi.json and the API reference page). */
export const publicHandler = (fn: (event: Event) => Promise<HttpResult>) => apiMiddy().handler(fn);
