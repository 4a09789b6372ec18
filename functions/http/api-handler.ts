import middy from '@middy/core';
import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import type { Scope } from '../../lib/routes.ts';
import type { Deps } from '../deps.ts';
import { type AuthContext, authenticate } from './authenticate.ts';
import { errorResponse } from './error-map.ts';
import { logger } from './logger.ts';
import type { HttpResult } from './response.ts';

type Event = APIGatewayProxyEventV2;

/**
 * A keyed API Gateway v2 handler: authenticate (auth → rate limit → scope), run `fn`, and map any
 * thrown error through the one error table. Every entry point in `functions/api` is built with it.
 */
export const keyedHandler = (deps: Deps, scope: Scope, fn: (event: Event, auth: AuthContext) => Promise<HttpResult>) =>
  middy<Event, HttpResult, Error, Context>()
    .before(async (request) => {
      logger.appendKeys({ requestId: request.event.requestContext.requestId });
    })
    .onError(async (request) => {
      request.response = errorResponse(request.error, request.event.requestContext.requestId);
    })
    .handler(async (event) => {
      const auth = await authenticate(deps, event.headers.authorization, scope);
      logger.appendKeys({ teamId: auth.teamId });
      return fn(event, auth);
    });
