import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { basePath, type KeyedRouteId, routeById } from '../../platform/routes.ts';
import { logger } from '../observability/logger.ts';
import { countAnsweredFailures } from '../observability/version-failures.ts';
import type { AuthContext } from './authenticate.ts';
import { errorMapping, errorResponse } from './error-map.ts';
import { type admitKeyed, crossOriginAnswer, isRunTokenPreflight, keyedHandler } from './keyed-handler.ts';
import { type HttpResult, notFound } from './response.ts';

type Event = APIGatewayProxyEventV2;

/** A response's status and headers, sent before its first byte. */
export interface ResponseHead {
  statusCode: number;
  headers: Record<string, string>;
}

/** An open response: written as it goes. `closed` once the caller went away. */
export interface ResponseSink {
  write(text: string): void;
  end(): void;
  readonly closed: boolean;
}

/**
 * A streaming handler, as this service writes it: the event (a function URL's, payload 2.0) and a
 * way to open the response with its head, and the invocation's Lambda context (none in the tests
 * and the bench). Lambda (`lambdaStreaming`), the local server and tests all call this same function.
 */
export type StreamHandler = (
  event: Event,
  open: (head: ResponseHead) => ResponseSink,
  context?: Context,
) => Promise<void>;

/** An answer that is whole at once (an error, a 204) sent through `open`. */
export const sendWhole = (open: (head: ResponseHead) => ResponseSink, result: HttpResult): void => {
  const sink = open({ statusCode: result.statusCode, headers: (result.headers ?? {}) as Record<string, string> });
  if (result.body) sink.write(result.body);
  sink.end();
};

/**
 * A function URL has no routes: every path reaches the function, with no `pathParameters`. The
 * route's path parameters are read from `rawPath` as API Gateway would (percent-decoded); a path
 * that is not the route's is API Gateway's 404.
 */
const routeParameters = (route: KeyedRouteId, event: Event): Record<string, string> | undefined => {
  const names: string[] = [];
  const source = `${basePath}${routeById(route).path}`
    .split('/')
    .map((segment) => {
      const name = /^\{(\w+)\}$/.exec(segment)?.[1];
      if (name) names.push(name);
      return name ? '([^/]+)' : segment.replace(/[.*+?^$()|[\]\\]/g, '\\$&');
    })
    .join('/');
  const match = new RegExp(`^${source}$`).exec(event.rawPath);
  if (!match) return undefined;
  const decoded = (value: string) => {
    try {
      return decodeURIComponent(value);
    } catch {
      return value;
    }
  };
  return Object.fromEntries(names.map((name, i) => [name, decoded(match[i + 1] ?? '')]));
};

/** The Lambda context of a stream's invocation, with the way to open its response. */
interface StreamContext extends Context {
  openResponse: (head: ResponseHead) => ResponseSink;
}

/** The context an invocation without one runs with (the tests, the bench): no deadline, as a plain call. */
const plainContext = (event: Event): Context =>
  ({ awsRequestId: event.requestContext.requestId, functionName: 'local', functionVersion: '$LATEST' }) as Context;

/**
 * A keyed streaming route, built on `keyedHandler`: the same middy chain as every keyed route (the
 * origin check, the key check, rate limit and scope, the logger's context and keys, any error
 * answered from the one error table and a 5xx answer counted), with `fn` handed a way to open the
 * response. An error before the stream opens is the chain's JSON answer, sent whole; a failure
 * after it opened cannot change the status: it is logged and the stream ends (the client
 * reconnects with the last id it got). Middy's own streaming mode is not used: docs/decisions/stream.md,
 * "The streaming route stays outside Middy's streaming mode".
 */
export const keyedStream = (
  deps: Parameters<typeof admitKeyed>[0],
  route: KeyedRouteId,
  fn: (event: Event, auth: AuthContext, open: (head: ResponseHead) => ResponseSink) => Promise<void>,
): StreamHandler => {
  const chain = keyedHandler(deps, route, async (event, auth, context) => {
    const { openResponse } = context as StreamContext;
    let head: ResponseHead | undefined;
    let sink: ResponseSink | undefined;
    // A run token's stream is read cross-origin: its head carries the CORS headers too.
    const crossOrigin = crossOriginAnswer(route, event);
    const open = (opened: ResponseHead) => {
      head = crossOrigin ? { ...opened, headers: { ...opened.headers, ...crossOrigin } } : opened;
      sink = openResponse(head);
      return sink;
    };
    try {
      await fn(event, auth, open);
    } catch (error) {
      if (!head) throw error;
      if (!errorMapping(error)) logger.error('request failed', { requestId: event.requestContext.requestId, error });
      sink?.end();
    }
    if (!head) throw new Error('the stream never opened its answer');
    // The answer the chain sees (and counts) is the head the stream went out with.
    return { statusCode: head.statusCode, headers: head.headers, body: '' };
  });
  return async (raw, open, context = plainContext(raw)) => {
    // A function URL has no routes: a path or method that is not the route's (or its CORS preflight,
    // where it accepts a run token) is API Gateway's 404.
    const pathParameters = routeParameters(route, raw);
    const method = raw.requestContext.http.method;
    if (!pathParameters || (method !== routeById(route).method && !isRunTokenPreflight(route, raw))) {
      return sendWhole(open, notFound());
    }
    let opened = false;
    const openResponse = (head: ResponseHead) => {
      opened = true;
      return open(head);
    };
    const streamContext: StreamContext = Object.assign(Object.create(context) as Context, { openResponse });
    const answer = await chain({ ...raw, pathParameters }, streamContext);
    if (!opened) sendWhole(open, answer);
  };
};

/**
 * The runtime's `awslambda` (a global of Lambda's Node.js runtime, typed by @types/aws-lambda),
 * where it streams. Other code may set an `awslambda` of its own (Powertools' invoke store does),
 * so its streaming functions are what is looked for.
 */
const lambdaRuntime = (): typeof awslambda | undefined =>
  typeof awslambda !== 'undefined' &&
  typeof awslambda.streamifyResponse === 'function' &&
  typeof awslambda.HttpResponseStream?.from === 'function'
    ? awslambda
    : undefined;

/** A writable as a sink: writes after the caller went away are dropped. */
const sinkOf = (stream: NodeJS.WritableStream): ResponseSink => {
  let closed = false;
  stream.on('close', () => {
    closed = true;
  });
  stream.on('error', () => {
    closed = true;
  });
  return {
    write: (text) => {
      if (!closed) stream.write(text);
    },
    end: () => {
      if (!closed) stream.end();
      closed = true;
    },
    get closed() {
      return closed;
    },
  };
};

/**
 * The Lambda entry point of a streaming handler: `awslambda.streamifyResponse` with the head sent
 * by `awslambda.HttpResponseStream.from` (the function URL's RESPONSE_STREAM mode). Where the
 * runtime has no `awslambda` (a plain invoke, as the deploy rehearsal makes one), the answer is
 * buffered and given back whole, as a function URL in BUFFERED mode would.
 */
export const lambdaStreaming = (handler: StreamHandler): unknown => {
  const runtime = lambdaRuntime();
  if (runtime) {
    return runtime.streamifyResponse(async (event: Event, stream, context) => {
      await handler(event, (head) => sinkOf(runtime.HttpResponseStream.from(stream, { ...head })), context);
    });
  }
  return async (event: Event, context?: Context): Promise<HttpResult> => {
    let head: ResponseHead | undefined;
    const chunks: string[] = [];
    await handler(
      event,
      (opened) => {
        head = opened;
        return { write: (text: string) => chunks.push(text), end: () => undefined, closed: false };
      },
      context,
    );
    // A handler that never opened its answer failed: a server failure, as any unmapped error.
    if (!head) {
      countAnsweredFailures(context, 1);
      return errorResponse(new Error('no answer'), event.requestContext.requestId);
    }
    return { ...head, body: chunks.join('') };
  };
};
