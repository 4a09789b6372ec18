import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { logLine } from '../observability/log-line.ts';
import { countAnsweredFailures } from '../observability/version-failures.ts';
import { errorMapping, errorResponse } from './error-map.ts';
import { type HttpResult, isServerFailure } from './response.ts';

type PublicFn = (event: APIGatewayProxyEventV2) => Promise<HttpResult>;

/** `fn`'s answer, or the error table's for what it threw; a server failure logged as one JSON line. */
const answerOf = async (fn: PublicFn, event: APIGatewayProxyEventV2, context?: Context): Promise<HttpResult> => {
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

/**
 * An unauthenticated handler (GET /openapi.json, GET /docs, GET /docs/assets/{name}): any thrown
 * error is mapped through the one error table like the keyed ones', a server failure is logged
 * as one JSON line with the request id and Lambda's request id, and a 5xx answer is counted for
 * the function's version (one line, `countAnsweredFailures`). No middy, no Powertools and no AWS
 * client: these functions log and count nothing else, so their bundles carry none of that code and
 * they start faster.
 */
export const publicHandler =
  (fn: PublicFn) =>
  async (event: APIGatewayProxyEventV2, context?: Context): Promise<HttpResult> => {
    const answer = await answerOf(fn, event, context);
    if (isServerFailure(answer)) countAnsweredFailures(context, 1);
    return answer;
  };
