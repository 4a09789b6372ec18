import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { observedHandler } from './observed-handler.ts';
import type { HttpResult } from './response.ts';

/**
 * An unauthenticated handler (GET /openapi.json, GET /docs, GET /docs/assets/{name}): logged and
 * error-mapped like the keyed ones, but it loads no DynamoDB client and no metrics (it records none),
 * so these functions start faster.
 */
export const publicHandler = (fn: (event: APIGatewayProxyEventV2) => Promise<HttpResult>) =>
  observedHandler().handler(fn);
