import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { logLine } from '../observability/log-line.ts';
import { countAnsweredFailures } from '../observability/version-failures.ts';
import { errorMapping, errorResponse } from './error-map.ts';
import type { OriginCheck } from './origin-check.ts';
import { type HttpResult, isServerFailure, notFound } from './response.ts';

type PublicFn = (event: APIGatewayProxyEventV2) => Promise<HttpResult>;

/**
 * `fn`'s answer, or the error table's for what it threw; a server failure logged as one JSON line.
 * A request that did not come through the edge fronting the stage is answered as API Gateway
 * answers a path it does not have.
 */
const answerOf = async (
  fn: PublicFn,
  originCheck: OriginCheck,
  event: APIGatewayProxyEventV2,
  context?: Context,
): Promise<HttpResult> => {
  try {
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

/**
 * An unauthenticated handler (GET /openapi.json, GET /docs, GET /docs/assets/{name}): the edge's
 * origin check first (`originCheck`: `anyOrigin` where no edge fronts the stage), then any thrown
 * error is mapped through the one error table like the keyed ones', a server failure is logged
 * as one JSON line with the request id and Lambda's request id, and a 5xx answer is counted for
 * the function's version (one line, `countAnsweredFailures`). No middy, no Powertools and no AWS
 * SDK client: these functions log and count nothing else, so their bundles carry none of that code
 * and they start faster.
 */
export const publicHandler =
  (fn: PublicFn, originCheck: OriginCheck) =>
  async (event: APIGatewayProxyEventV2, context?: Context): Promise<HttpResult> => {
    const answer = await answerOf(fn, originCheck, event, context);
    if (isServerFailure(answer)) countAnsweredFailures(context, 1);
    return answer;
  };
