import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { logLine } from '../observability/log-line.ts';
import { errorMapping, errorResponse } from './error-map.ts';
import type { HttpResult } from './response.ts';

/**
 * An unauthenticated handler (GET /openapi.json, GET /docs, GET /docs/assets/{name}): any thrown
 * error is mapped through the one error table like the keyed ones', and a server failure is logged
 * as one JSON line with the request id and Lambda's request id. No middy, no Powertools and no AWS
 * client: these functions record no metric and log nothing else, so their bundles carry none of
 * that code and they start faster.
 */
export const publicHandler =
  (fn: (event: APIGatewayProxyEventV2) => Promise<HttpResult>) =>
  async (event: APIGatewayProxyEventV2, context?: Context): Promise<HttpResult> => {
    try {
      return await fn(event);
    } catch (error) {
      const { requestId } = event.requestContext;
      if (!errorMapping(error)) {
        logLine('ERROR', 'request failed', {
          requestId,
          function_name: context?.functionName,
          function_request_id: context?.awsRequestId,
          error,
        });
      }
      return errorResponse(error, requestId);
    }
  };
