import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import middy from '@middy/core';
import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { logger } from '../observability/logger.ts';
import { countAnsweredFailures } from '../observability/version-failures.ts';
import { errorMapping, errorResponse } from './error-map.ts';
import { type HttpResult, isServerFailure } from './response.ts';

/** The answer as it leaves the function: a 5xx is counted for the version that gave it. */
const countFailedAnswer = async (request: { response?: HttpResult | null; context: Context }) => {
  if (request.response && isServerFailure(request.response)) countAnsweredFailures(request.context, 1);
};

/** Adds the headers `of` gives for the request to its answer, whatever the answer is. */
const withHeaders =
  (of: (event: APIGatewayProxyEventV2) => Record<string, string> | undefined) =>
  async (request: { event: APIGatewayProxyEventV2; response?: HttpResult | null }) => {
    const headers = of(request.event);
    if (headers && request.response) {
      request.response = { ...request.response, headers: { ...request.response.headers, ...headers } };
    }
  };

/**
 * What every keyed API function does around its handler: Lambda context on every log line, the request id
 * (and the job id when the path names one) appended, the event never logged (it carries the bearer
 * key) whatever POWERTOOLS_LOGGER_LOG_EVENT says, keys reset after the invocation so a warm function
 * never logs the previous caller's team, any thrown error mapped through the one error table, and a
 * 5xx answer counted for the function's version (`countFailedAnswer`: used first, so it runs last,
 * on the answer the error mapping made). `answerHeaders` adds headers to every answer of a request
 * (the CORS headers of a run token's request), errors included.
 */
export const observedHandler = (
  answerHeaders?: (event: APIGatewayProxyEventV2) => Record<string, string> | undefined,
) => {
  const chain = middy<APIGatewayProxyEventV2, HttpResult, Error, Context>();
  // Used first, so it runs last: on every answer, the error mapping's included.
  if (answerHeaders) chain.use({ after: withHeaders(answerHeaders), onError: withHeaders(answerHeaders) });
  return chain
    .use({ after: countFailedAnswer, onError: countFailedAnswer })
    .use(injectLambdaContext(logger, { logEvent: false, resetKeys: true }))
    .before(async (request) => {
      const jobId = request.event.pathParameters?.jobId;
      logger.appendKeys({ requestId: request.event.requestContext.requestId, ...(jobId ? { jobId } : {}) });
    })
    .onError(async (request) => {
      const { requestId } = request.event.requestContext;
      if (!errorMapping(request.error)) logger.error('request failed', { requestId, error: request.error });
      request.response = errorResponse(request.error, requestId);
    });
};
