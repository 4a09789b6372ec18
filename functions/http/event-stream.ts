import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { basePath, type KeyedRouteId, routeById } from '../../platform/routes.ts';
import { logger } from '../observability/logger.ts';
import { countAnsweredFailures, type RunningVersion } from '../observability/version-failures.ts';
import type { AuthContext } from './authenticate.ts';
import { errorMapping, errorResponse } from './error-map.ts';
import { admitKeyed } from './keyed-handler.ts';
import { anyOrigin } from './origin-check.ts';
import { type HttpResult, isServerFailure, notFound } from './response.ts';

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
 * way to open the response with its head. Lambda (`lambdaStreaming`), the local server and tests
 * all call this same function.
 */
export type StreamHandler = (event: Event, open: (head: ResponseHead) => ResponseSink) => Promise<void>;

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

/**
 * A keyed streaming route: the same key check, rate limit and scope as every keyed route
 * (`admitKeyed`), and its errors answered from the same error table, as JSON, before the stream
 * opens. A failure after it opened cannot change the status: it is logged and the stream ends (the
 * client reconnects with the last id it got).
 */
export const keyedStream =
  (
    deps: Parameters<typeof admitKeyed>[0],
    route: KeyedRouteId,
    fn: (event: Event, auth: AuthContext, open: (head: ResponseHead) => ResponseSink) => Promise<void>,
  ): StreamHandler =>
  async (raw, open) => {
    const { requestId } = raw.requestContext;
    let opened: ResponseSink | undefined;
    const openOnce = (head: ResponseHead) => {
      opened = open(head);
      return opened;
    };
    try {
      // Not through the edge that fronts the stream: as API Gateway answers a path it does not have.
      if (!(await (deps.originCheck ?? anyOrigin)(raw.headers))) return sendWhole(open, notFound());
      const pathParameters = routeParameters(route, raw);
      if (!pathParameters || raw.requestContext.http.method !== routeById(route).method) {
        return sendWhole(open, notFound());
      }
      logger.appendKeys({ requestId, ...(pathParameters.jobId ? { jobId: pathParameters.jobId } : {}) });
      const { event, auth } = await admitKeyed(deps, route, { ...raw, pathParameters });
      await fn(event, auth, openOnce);
    } catch (error) {
      if (!errorMapping(error)) logger.error('request failed', { requestId, error });
      if (opened) opened.end();
      else sendWhole(open, errorResponse(error, requestId));
    } finally {
      logger.resetKeys();
    }
  };

/**
 * The runtime's `awslambda` (a global of Lambda's Node.js runtime, typed by @types/aws-lambda),
 * where it streams. Other code may set an `awslambda` of its own (Powertools' invoke store does),
 * so its streaming functions are what is looked for.
 */
const lambdaRuntime = (): typeof awslambda | undefined => {
  const runtime = (globalThis as unknown as { awslambda?: Partial<typeof awslambda> }).awslambda;
  return typeof runtime?.streamifyResponse === 'function' && runtime.HttpResponseStream
    ? (runtime as typeof awslambda)
    : undefined;
};

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

/** `open`, counting a 5xx head for the version that sent it, as every API function's 5xx is counted. */
const counted =
  <T>(open: (head: ResponseHead) => T, running: RunningVersion | undefined) =>
  (head: ResponseHead): T => {
    if (isServerFailure(head)) countAnsweredFailures(running, 1);
    return open(head);
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
      await handler(
        event,
        counted((head) => sinkOf(runtime.HttpResponseStream.from(stream, { ...head })), context),
      );
    });
  }
  return async (event: Event, context?: RunningVersion): Promise<HttpResult> => {
    let head: ResponseHead | undefined;
    const chunks: string[] = [];
    await handler(
      event,
      counted((opened) => {
        head = opened;
        return { write: (text: string) => chunks.push(text), end: () => undefined, closed: false };
      }, context),
    );
    // A handler that never opened its answer failed: a server failure, as any unmapped error.
    if (!head) {
      countAnsweredFailures(context, 1);
      return errorResponse(new Error('no answer'), event.requestContext.requestId);
    }
    return { ...head, body: chunks.join('') };
  };
};
