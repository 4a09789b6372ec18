import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { logLine } from '../observability/log-line.ts';
import { errorMapping, errorResponse } from './error-map.ts';
import type { OriginCheck } from './origin-check.ts';
import { type HttpResult, notFound } from './response.ts';

/**
 * An unauthenticated handler (GET /openapi.json, GET /docs, GET /docs/assets/{name}): the edge's
 * origin check first (`originCheck`: `anyOrigin` where no edge fronts the stage), then any thrown
 * error is mapped through the one error table like the keyed ones', and a server failure is logged
 * as one JSON line with the request id and Lambda's request id. No middy, no Powertools and no AWS
 * client: these functions record no metric and log nothing else, so their bundles carry none of
 * that code and they start faster.
 */
export const publicHandler =
  (fn: (event: APIGatewayProxyEventV2) => Promise<HttpResult>, originCheck: OriginCheck) =>
  async (event: APIGatewayProxyEventV2, context?: Context): Promise<HttpResult> => {
    try {
      // Not through the edge that fronts this stage: as API Gateway answers a path it does not have.
      if (!(await originCheck(event.headers))) return notFound();
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
