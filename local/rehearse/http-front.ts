/**
 * The HTTP API of the template in front of the function processes: each `AWS::ApiGatewayV2::Route`
 * (`METHOD /path/{param}`) goes to the function of its Lambda proxy integration, with the payload
 * 2.0 event the local API builds (`toEventV2` in `local/api-gateway.ts`) and its answer mapped the
 * same way. A function error is API Gateway's 500 `{"message":"Internal Server Error"}`; a path
 * no route matches is 404 `{"message":"Not Found"}`.
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { Route } from '../../lib/routes.ts';
import { fromResult, listenLocal, readBody, toEventV2 } from '../api-gateway.ts';
import type { RouteSpec } from './assembly.ts';
import type { FunctionProcess } from './function-process.ts';

interface CompiledRoute {
  spec: RouteSpec;
  pattern: RegExp;
  params: string[];
  fn: FunctionProcess;
}

const compile = (spec: RouteSpec, fn: FunctionProcess): CompiledRoute => {
  const params: string[] = [];
  const source = spec.path
    .split('/')
    .map((segment) => {
      const param = /^\{(\w+)\}$/.exec(segment)?.[1];
      if (param) params.push(param);
      return param ? '([^/]+)' : segment.replace(/[.*+?^$()|[\]\\]/g, '\\$&');
    })
    .join('/');
  return { spec, pattern: new RegExp(`^${source}$`), params, fn };
};

const reply = (response: ServerResponse, status: number, headers: Record<string, string>, body: Buffer | string) => {
  response.writeHead(status, { ...headers, 'content-length': String(Buffer.byteLength(body)) });
  response.end(body);
};

export interface HttpFront {
  server: Server;
  /** The address of the API's base path, e.g. http://127.0.0.1:3000/api/v1 */
  baseUrl: string;
  close(): Promise<void>;
}

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
    if (!['GET', 'POST', 'DELETE'].includes(spec.method)) throw new Error(`${spec.routeKey}: unexpected method`);
    return compile(spec, options.functionOf(spec.functionLogicalId));
  });
  const server = createServer(async (request, response) => {
    try {
      const url = new URL(request.url ?? '/', `http://${request.headers.host ?? 'localhost'}`);
      let found: { route: CompiledRoute; pathParameters: Record<string, string> } | undefined;
      for (const route of compiled) {
        const m = route.spec.method === request.method ? route.pattern.exec(url.pathname) : null;
        if (m) {
          const pathParameters = Object.fromEntries(
            route.params.map((p, i) => [p, decodeURIComponent(m[i + 1] ?? '')]),
          );
          found = { route, pathParameters };
          break;
        }
      }
      if (!found) return reply(response, 404, { 'content-type': 'application/json' }, '{"message":"Not Found"}');
      const body = await readBody(request);
      if (body === 'too-large') {
        return reply(response, 413, { 'content-type': 'application/json' }, '{"message":"Request Entity Too Large"}');
      }
      const { spec } = found.route;
      // toEventV2 writes the route key as `${basePath}${path}`; the template's path already has it.
      const event = toEventV2(request, url, body, {
        route: { method: spec.method as Route['method'], path: spec.path.slice(options.basePath.length) },
        pathParameters: found.pathParameters,
      });
      const outcome = await found.route.fn.invoke(event);
      if (!outcome.ok) throw new Error(outcome.error.errorMessage);
      const result = fromResult(outcome.result as Parameters<typeof fromResult>[0]);
      reply(
        response,
        result.status,
        { ...result.headers, 'apigw-requestid': event.requestContext.requestId },
        result.body,
      );
    } catch {
      reply(response, 500, { 'content-type': 'application/json' }, '{"message":"Internal Server Error"}');
    }
  });
  return listenLocal(server, options, options.basePath);
};
