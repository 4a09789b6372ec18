import middy from '@middy/core';
import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { errorResponse } from './error-map.ts';
import type { HttpResult } from './response.ts';

/**
 * An unauthenticated handler with the same error mapping (GET /openapi.json, GET /docs). Kept apart
 * from `keyedHandler` so these functions load no DynamoDB client at all (faster cold starts).
 */
export const publicHandler = (fn: (event: APIGatewayProxyEventV2) => Promise<HttpResult>) =>
  middy<APIGatewayProxyEventV2, HttpResult, Error, Context>()
    .onError(async (request) => {
      request.response = errorResponse(request.error, request.event.requestContext.requestId);
    })
    .handler(fn);
