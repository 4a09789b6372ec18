import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { type KeyedRouteId, scopeOf } from '../../lib/routes.ts';
import type { Deps } from '../deps.ts';
import { logger } from '../observability/logger.ts';
import { metrics } from '../observability/metrics.ts';
import { type AuthContext, authenticate } from './authenticate.ts';
import { observedHandler } from './observed-handler.ts';
import type { HttpResult } from './response.ts';

type Event = APIGatewayProxyEventV2;

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
  // The invocation's metrics (runs started, credits charged, …) are published at its end.
  return observedHandler()
    .use(logMetrics(metrics))
    .handler(async (event) => {
      const auth = await authenticate(deps, event.headers.authorization, scope);
      logger.appendKeys({ teamId: auth.teamId });
      return fn(event, auth);
    });
};
