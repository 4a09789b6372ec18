/**
 * The HTTP API of the template in front of the function processes: each `AWS::ApiGatewayV2::Route`
 * (`METHOD /path/{param}`) goes to the function of its Lambda proxy integration, served by the local
 * API's own `gatewayListener` (`local/api-gateway.ts`): the same payload 2.0 event, the answer mapped
 * the same way. A function error is API Gateway's 500 `{"message":"Internal Server Error"}`; a path
 * no route matches is 404 `{"message":"Not Found"}`.
 */
import { createServer, type Server } from 'node:http';
import type { Route } from '../../platform/routes.ts';
import { type ApiResult, gatewayListener, listenLocal, pathPattern, type ServedRoute } from '../api-gateway.ts';
import type { RouteSpec } from './assembly.ts';
import type { FunctionProcess } from './function-process.ts';

export interface HttpFront {
  server: Server;
  /** The address of the API's base path, e.g. http://127.0.0.1:3000/api/v1 */
  baseUrl: string;
  close(): Promise<void>;
}

const served = (spec: RouteSpec, fn: FunctionProcess, basePath: string): ServedRoute => ({
  ...pathPattern(spec.path),
  // toEventV2 writes the route key as `${basePath}${path}`; the template's path already has it.
  route: { method: spec.method as Route['method'] | 'OPTIONS', path: spec.path.slice(basePath.length) },
  invoke: async (event) => {
    const outcome = await fn.invoke(event);
    if (!outcome.ok) throw new Error(outcome.error.errorMessage);
    return outcome.result as ApiResult | string | undefined;
  },
});

export const startHttpFront = async (options: {
  routes: readonly RouteSpec[];
  functionOf: (logicalId: string) => FunctionProcess;
  /** The path every route lives under (shown in `baseUrl`). */
  basePath: string;
  port: number;
  host: string;
}): Promise<HttpFront> => {
  const compiled = options.routes.map((spec) => {
    if (spec.payloadFormatVersion !== '2.0') throw new Error(`${spec.routeKey}: payload ${spec.payloadFormatVersion}`);
    if (!spec.path.startsWith(options.basePath)) throw new Error(`${spec.routeKey} is not under ${options.basePath}`);
    // OPTIONS: the CORS preflight of a route that accepts a run token.
    if (!['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'].includes(spec.method)) {
      throw new Error(`${spec.routeKey}: unexpected method`);
    }
    return served(spec, options.functionOf(spec.functionLogicalId), options.basePath);
  });
  return listenLocal(createServer(gatewayListener(compiled)), options, options.basePath);
};
