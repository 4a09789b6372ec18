import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import type { StreamTiming } from '../functions/app/run-stream.ts';
import type { Deps } from '../functions/deps.ts';
import type { StreamHandler } from '../functions/http/event-stream.ts';
import { basePath, type Route, routes } from '../platform/routes.ts';
import { streamFunctionTimeoutSeconds } from '../platform/run-stream.ts';
import { waitingFunctionTimeoutSeconds } from '../platform/run-wait.ts';
import { invokedAs } from './invocation.ts';
import { lambdaContext } from './lambda-context.ts';

export type ApiResult = {
  statusCode?: number;
  headers?: Record<string, string | number | boolean>;
  body?: string;
  isBase64Encoded?: boolean;
};
type ApiHandler = (event: APIGatewayProxyEventV2, context: Context) => Promise<ApiResult | string | undefined>;

/**
 * API Gateway HTTP APIs accept at most 10 MB of payload; past it they answer 413 themselves
 * (https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-quotas.html, read 2026-11-27).
 */
export const maxPayloadBytes = 10 * 1024 * 1024;

/**
 * Lambda takes at most 6 MB in a synchronous invocation, each way: the event API Gateway sends
 * (the body inside it, base64 for a binary one: 4/3 of its bytes) and the result the function gives
 * back (https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html and
 * https://docs.aws.amazon.com/lambda/latest/dg/API_Invoke.html, read 2026-11-27). 6 MiB: the bound
 * Lambda's own refusal names ("Request must be smaller than 6291456 bytes").
 */
export const maxInvokeBytes = 6 * 1024 * 1024;

/**
 * What an HTTP API answers when its Lambda integration fails, an event or a result Lambda refuses
 * for its size included: AWS documents no answer of its own for that case, only this one for a
 * failed integration (https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-troubleshooting-lambda.html,
 * read 2026-11-27), with the cause in the access log's `$context.integrationErrorMessage`.
 */
const integrationFailed = '{"message":"Internal Server Error"}';

const textTypes = /^(application\/(json|.*\+json|x-www-form-urlencoded|xml|yaml)|text\/)/i;

/**
 * A route path (`/runs/{jobId}`) as a pattern that matches a whole request path, and the names of
 * its parameters in order.
 */
export const pathPattern = (path: string): { pattern: RegExp; params: string[] } => {
  const params: string[] = [];
  const source = path
    .split('/')
    .map((segment) => {
      const param = /^\{(\w+)\}$/.exec(segment)?.[1];
      if (param) params.push(param);
      return param ? '([^/]+)' : segment.replace(/[.*+?^$()|[\]\\]/g, '\\$&');
    })
    .join('/');
  return { pattern: new RegExp(`^${source}$`), params };
};

/** One route as a local front serves it. */
export interface ServedRoute {
  /** Matches the whole request path (`pathPattern`). */
  pattern: RegExp;
  params: string[];
  /**
   * Its method, and its path as the event's route key names it (`${basePath}${path}`). OPTIONS: the
   * CORS preflight route of a route that accepts a run token, to the same function (lib/api-stack.ts).
   */
  route: { method: Route['method'] | 'OPTIONS'; path: string };
  /** Runs the route's function on the event; a throw is the integration failing (API Gateway's 500). */
  invoke: (event: APIGatewayProxyEventV2) => Promise<ApiResult | string | undefined>;
  /**
   * A streaming route's function (`transport: 'stream'`), answering as a function URL in
   * RESPONSE_STREAM mode does: its head, then each write as it happens. Served in place of `invoke`.
   */
  stream?: StreamHandler;
}

/** The time each route's function is given, as the template sets it (`lib/api-stack.ts`). */
export const routeTimeoutMs = 10_000;

/** A route's time as the template sets it: more for a route that waits (`Prefer: wait`). */
const templateTimeoutMs = (route: Route) => (route.waits ? waitingFunctionTimeoutSeconds * 1000 : routeTimeoutMs);

/**
 * Loads every route's handler module and builds it with `deps`, the way Lambda imports `handler`;
 * each given `timeoutMs`, else its template's.
 */
const compileRoutes = async (
  deps: Deps,
  timeoutMs: number | undefined,
  streamTiming?: StreamTiming,
): Promise<ServedRoute[]> =>
  (
    await Promise.all(
      routes.map(async (route): Promise<ServedRoute[]> => {
        if (route.transport === 'stream') return [await streamRoute(deps, route, streamTiming)];
        const module = (await import(new URL(`../${route.entry}`, import.meta.url).href)) as {
          makeHandler: (deps: Deps) => ApiHandler;
        };
        // Runs as its route's function, so the AWS command log knows who sent what.
        const handler = invokedAs(route.id, module.makeHandler(deps));
        const served: ServedRoute = {
          ...pathPattern(`${basePath}${route.path}`),
          route,
          invoke: (event) =>
            handler(
              event,
              lambdaContext(`local-${route.id}`, timeoutMs ?? templateTimeoutMs(route), event.requestContext.requestId),
            ),
        };
        // Its CORS preflight, as the stack routes it: OPTIONS to the same function.
        return route.runToken ? [served, { ...served, route: { method: 'OPTIONS', path: route.path } }] : [served];
      }),
    )
  ).flat();

/** A streaming route as the local server serves it: the same handler its Lambda runs, streamed. */
const streamRoute = async (deps: Deps, route: Route, timing?: StreamTiming): Promise<ServedRoute> => {
  const module = (await import(new URL(`../${route.entry}`, import.meta.url).href)) as {
    makeHandler: (deps: Deps, timing?: StreamTiming) => StreamHandler;
  };
  const handler = module.makeHandler(deps, timing);
  return {
    ...pathPattern(`${basePath}${route.path}`),
    route,
    invoke: () => Promise.reject(new Error(`${route.id} streams: it has no buffered answer`)),
    // Runs as its route's function, so the AWS command log knows who sent what; its context's
    // deadline is the stream function's timeout, as the template sets it.
    stream: invokedAs(route.id, (event, open) =>
      handler(
        event,
        open,
        lambdaContext(`local-${route.id}`, streamFunctionTimeoutSeconds * 1000, event.requestContext.requestId),
      ),
    ),
  };
};

/**
 * A function URL's event (payload 2.0, no route: `$default`, and no `pathParameters`, which the
 * function reads from `rawPath`) for a request to a streaming route.
 */
const functionUrlEvent = (request: IncomingMessage, url: URL): APIGatewayProxyEventV2 => {
  const event = toEventV2(request, url, Buffer.alloc(0), { route: { method: 'GET', path: '' }, pathParameters: {} });
  const { pathParameters: _none, ...rest } = event;
  return { ...rest, routeKey: '$default', requestContext: { ...rest.requestContext, routeKey: '$default' } };
};

/** Streams a streaming route's answer: the head at once, each write flushed as it comes. */
const serveStream = async (handler: StreamHandler, request: IncomingMessage, url: URL, response: ServerResponse) => {
  const event = functionUrlEvent(request, url);
  let closed = false;
  response.on('close', () => {
    closed = true;
  });
  await handler(event, (head) => {
    response.writeHead(head.statusCode, { ...head.headers, 'x-amzn-requestid': event.requestContext.requestId });
    response.flushHeaders();
    return {
      write: (text) => {
        if (!closed) response.write(text);
      },
      end: () => {
        if (!closed) response.end();
      },
      get closed() {
        return closed;
      },
    };
  });
  if (!response.writableEnded && !closed) response.end();
};

const readBody = (request: IncomingMessage): Promise<Buffer | 'too-large'> =>
  new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= maxPayloadBytes) chunks.push(chunk);
    });
    request.on('end', () => resolve(size > maxPayloadBytes ? 'too-large' : Buffer.concat(chunks)));
    request.on('error', reject);
  });

/**
 * A path parameter as API Gateway HTTP APIs hand it over: percent-decoded. A malformed escape
 * (`%E0%A4%A`, a bare `%`, an encoded lone surrogate) is passed on as sent rather than failing the
 * request, so the handler answers it (a path id that is not a uuid reads as not found).
 */
const decodedSegment = (segment: string): string => {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
};

/** Turns a Node request into an API Gateway HTTP API payload 2.0 event, as API Gateway would. */
export const toEventV2 = (
  request: IncomingMessage,
  url: URL,
  body: Buffer,
  match: { route: ServedRoute['route']; pathParameters: Record<string, string> },
): APIGatewayProxyEventV2 => {
  const headers: Record<string, string> = {};
  const cookies: string[] = [];
  for (const [name, value] of Object.entries(request.headers)) {
    if (value === undefined) continue;
    if (name === 'cookie') cookies.push(...String(value).split(/;\s*/));
    else headers[name] = Array.isArray(value) ? value.join(',') : value;
  }
  const queryStringParameters: Record<string, string> = {};
  for (const [name, value] of url.searchParams) {
    queryStringParameters[name] = queryStringParameters[name] ? `${queryStringParameters[name]},${value}` : value;
  }
  const isText = textTypes.test(headers['content-type'] ?? 'application/json');
  const now = new Date();
  const routeKey = `${match.route.method} ${basePath}${match.route.path}`;
  return {
    version: '2.0',
    routeKey,
    rawPath: url.pathname,
    rawQueryString: url.search.slice(1),
    ...(cookies.length ? { cookies } : {}),
    headers,
    ...(url.search ? { queryStringParameters } : {}),
    ...(Object.keys(match.pathParameters).length ? { pathParameters: match.pathParameters } : {}),
    requestContext: {
      accountId: '000000000000',
      apiId: 'local',
      domainName: headers.host ?? 'localhost',
      domainPrefix: (headers.host ?? 'localhost').split('.')[0] ?? 'localhost',
      http: {
        method: request.method ?? 'GET',
        path: url.pathname,
        protocol: `HTTP/${request.httpVersion}`,
        sourceIp: request.socket.remoteAddress ?? '127.0.0.1',
        userAgent: headers['user-agent'] ?? '',
      },
      requestId: randomUUID(),
      routeKey,
      stage: '$default',
      time: now.toUTCString(),
      timeEpoch: now.getTime(),
    },
    ...(body.length ? { body: isText ? body.toString('utf8') : body.toString('base64') } : {}),
    isBase64Encoded: body.length > 0 && !isText,
  };
};

const send = (response: ServerResponse, status: number, headers: Record<string, string>, body: Buffer | string) => {
  response.writeHead(status, { ...headers, 'content-length': String(Buffer.byteLength(body)) });
  response.end(body);
};

/** API Gateway's payload-2.0 rule: a result without statusCode is a 200 JSON body. */
const fromResult = (result: ApiResult | string | undefined) => {
  if (result === undefined || typeof result === 'string' || result.statusCode === undefined) {
    return { status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(result ?? null) };
  }
  const headers = Object.fromEntries(
    Object.entries(result.headers ?? {}).map(([k, v]) => [k.toLowerCase(), String(v)]),
  );
  const body = result.isBase64Encoded ? Buffer.from(result.body ?? '', 'base64') : (result.body ?? '');
  return { status: result.statusCode, headers, body };
};

/**
 * Starts `server` on loopback the way both local fronts (this one and the deploy rehearsal's) need:
 * keep-alive longer than clients keep idle connections, so a reused connection is never closed
 * under them, and a close that drops open connections.
 */
export const listenLocal = async (
  server: Server,
  options: { port: number; host: string },
  path: string,
): Promise<{ server: Server; baseUrl: string; close(): Promise<void> }> => {
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  return {
    server,
    baseUrl: `http://${host}:${port}${path}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
};

export interface LocalApi {
  server: Server;
  /** e.g. http://127.0.0.1:3000/api/v1 */
  baseUrl: string;
  close(): Promise<void>;
}

/**
 * Answers requests for `served` as API Gateway does: each request becomes a payload 2.0 event for
 * its route's function and the function's answer is sent back mapped API Gateway's way; a path no
 * route matches is 404 {"message":"Not Found"}, a body over 10 MB 413, and a failing integration
 * 500 {"message":"Internal Server Error"}: a function that throws, and an event or a result over
 * Lambda's 6 MB invoke limit (the function never sees such an event). Both local fronts (this one and the deploy rehearsal's)
 * serve through it.
 */
export const gatewayListener =
  (served: readonly ServedRoute[]) =>
  async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    try {
      // The Host header is the caller's: a garbled one must not fail the parse (it is only reported as domainName).
      const url = new URL(request.url ?? '/', 'http://localhost');
      let found: { entry: ServedRoute; pathParameters: Record<string, string> } | undefined;
      for (const entry of served) {
        // A function URL has no routes: every method reaches a streaming route's function, which answers it.
        const m = entry.route.method === request.method || entry.stream ? entry.pattern.exec(url.pathname) : null;
        if (m) {
          found = {
            entry,
            pathParameters: Object.fromEntries(entry.params.map((p, i) => [p, decodedSegment(m[i + 1] ?? '')])),
          };
          break;
        }
      }
      if (!found) return send(response, 404, { 'content-type': 'application/json' }, '{"message":"Not Found"}');
      const body = await readBody(request);
      if (body === 'too-large') {
        return send(response, 413, { 'content-type': 'application/json' }, '{"message":"Request Entity Too Large"}');
      }
      const { stream } = found.entry;
      if (stream) return await serveStream(stream, request, url, response);
      const event = toEventV2(request, url, body, { route: found.entry.route, pathParameters: found.pathParameters });
      // Lambda refuses the invocation before the function runs: nothing of ours can answer it.
      if (Buffer.byteLength(JSON.stringify(event)) > maxInvokeBytes) throw new Error('event over the invoke limit');
      const raw = await found.entry.invoke(event);
      // And a result over the limit fails the invocation after it ran.
      if (Buffer.byteLength(JSON.stringify(raw ?? null)) > maxInvokeBytes)
        throw new Error('result over the invoke limit');
      const result = fromResult(raw);
      send(
        response,
        result.status,
        { ...result.headers, 'apigw-requestid': event.requestContext.requestId },
        result.body,
      );
    } catch {
      // A stream that failed after it opened can only end.
      if (response.headersSent) return void response.end();
      // What API Gateway answers when the integration itself fails.
      send(response, 500, { 'content-type': 'application/json' }, integrationFailed);
    }
  };

/**
 * Serves the route table over HTTP the way API Gateway does (`gatewayListener`), each route by the
 * same handler module Lambda runs, given `timeoutMs` (the template's time for its route unless set).
 * Deps without a `publicBaseUrl` get this server's own address once it listens (the port may be
 * chosen then), so the file links it gives lead back to it; the handlers read it at each request.
 */
export const startLocalApi = async (options: {
  deps: Deps;
  port: number;
  host: string;
  timeoutMs?: number;
  /** The streaming routes' cap and polls (a test's shorter cap); default the platform's. */
  streamTiming?: StreamTiming;
}): Promise<LocalApi> => {
  const api = await listenLocal(
    createServer(gatewayListener(await compileRoutes(options.deps, options.timeoutMs, options.streamTiming))),
    options,
    basePath,
  );
  options.deps.publicBaseUrl ??= new URL(api.baseUrl).origin;
  return api;
};
