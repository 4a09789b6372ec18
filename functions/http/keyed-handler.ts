import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { type KeyedRouteId, scopeOf } from '../../lib/routes.ts';
import type { Deps } from '../deps.ts';
import { logger } from '../observability/logger.ts';
import { type AuthContext, authenticate } from './authenticate.ts';
import { observedHandler } from './observed-handler.ts';
import type { HttpResult } from './response.ts';

type Event = APIGatewayProxyEventV2;

/** A middleware around the keyed handler: the one that publishes the invocation's metrics. */
type Middleware = Parameters<ReturnType<typeof observedHandler>['use']>[0];

/**
 * A keyed API Gateway v2 handler: authenticate (auth → rate limit → the scope `lib/routes.ts` gives
 * the route), run `fn`, and map any thrown error through the one error table. Every keyed entry
 * point in `functions/api` is built with it. A function that records metrics (the run starts) passes
 * `publishing`, Powertools' `logMetrics`, which publishes them at the invocation's end; the others
 * record none and carry no Powertools metrics code.
 */
export const keyedHandler = (
  deps: Deps,
  route: KeyedRouteId,
  fn: (event: Event, auth: AuthContext) => Promise<HttpResult>,
  publishing?: Middleware,
) => {
  const scope = scopeOf(route);
  const handler = observedHandler();
  if (publishing) handler.use(publishing);
  return handler.handler(async (event) => {
    const auth = await authenticate(deps, event.headers.authorization, scope);
    logger.appendKeys({ teamId: auth.teamId });
    return fn(event, auth);
  });
};
