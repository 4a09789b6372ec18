/**
 * The event Lambda hands a function URL's function (payload 2.0, routeKey `$default`) for
 * GET {basePath}/runs/{jobId}/events: what the run event stream's tests and its cost bench invoke
 * the handler with.
 */
import { randomUUID } from 'node:crypto';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { basePath } from '../../platform/routes.ts';

/** The function URL's own domain in the events below, for a caller named `caller`. */
export const functionUrlDomain = (caller = 'test') => `${caller}.lambda-url.us-east-1.on.aws`;

export const runEventsUrlEvent = (
  jobId: string,
  headers: Record<string, string>,
  caller = 'test',
): APIGatewayProxyEventV2 => {
  const path = `${basePath}/runs/${jobId}/events`;
  const now = new Date();
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: path,
    rawQueryString: '',
    headers,
    isBase64Encoded: false,
    requestContext: {
      accountId: 'anonymous',
      apiId: caller,
      domainName: functionUrlDomain(caller),
      domainPrefix: caller,
      http: { method: 'GET', path, protocol: 'HTTP/1.1', sourceIp: '127.0.0.1', userAgent: caller },
      requestId: randomUUID(),
      routeKey: '$default',
      stage: '$default',
      time: now.toUTCString(),
      timeEpoch: now.getTime(),
    },
  };
};
