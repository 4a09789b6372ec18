import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';

export type HttpResult = APIGatewayProxyStructuredResultV2 & { statusCode: number; body: string };

/**
 * A JSON response. No CORS headers: keys belong on servers, never in browsers (spec section 5).
 * Its status is one of the answers below, or an error's row (functions/http/error-map.ts).
 */
export const json = (statusCode: number, body: unknown, headers: Record<string, string> = {}): HttpResult => ({
  statusCode,
  headers: { 'content-type': 'application/json', ...headers },
  body: JSON.stringify(body),
});

/** An answer that failed on our side (a 5xx): counted per function version for the canary. */
export const isServerFailure = (result: Pick<HttpResult, 'statusCode'>): boolean => result.statusCode >= 500;

// The answers that are no error, named: with the error table's rows, the only status codes the
// service writes (test/errors.test.ts holds every other file of functions/ to none).

export const ok = (body: unknown, headers?: Record<string, string>): HttpResult => json(200, body, headers);
export const created = (body: unknown): HttpResult => json(201, body);
export const accepted = (body: unknown, headers?: Record<string, string>): HttpResult => json(202, body, headers);

/** A body that is no JSON (the reference page and its files), as text or, `isBase64Encoded`, bytes. */
export const okRaw = (headers: Record<string, string>, body: string, isBase64Encoded?: true): HttpResult => ({
  statusCode: 200,
  headers,
  body,
  ...(isBase64Encoded ? { isBase64Encoded } : {}),
});

/** A redirect to `location` (a file link's storage URL), never cached: the target lives minutes. */
export const found = (location: string): HttpResult => ({
  statusCode: 302,
  headers: { location, 'cache-control': 'no-store' },
  body: '',
});

/** The browser's copy is current (`If-None-Match` matched the `ETag`). */
export const notModified = (headers: Record<string, string>): HttpResult => ({ statusCode: 304, headers, body: '' });

/** What API Gateway itself answers for a path it does not route: for a file the reference page does not have. */
export const notFound = (): HttpResult => json(404, { message: 'Not Found' });

/** The head of an event stream (GET /runs/{jobId}/events): never cached, never buffered on the way. */
export const eventStreamHead = {
  statusCode: 200,
  headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'x-accel-buffering': 'no' },
};

/** Nothing more to send: an event stream's reconnect after its `done` (an EventSource then stops). */
export const noContent = (): HttpResult => ({ statusCode: 204, headers: {}, body: '' });

/**
 * The CORS headers of an answer to a request a run token authenticated (`?access_token=`): any
 * origin may read it, since the token in the URL, not a cookie, is the credential (so never
 * `Allow-Credentials`). `Retry-After` is exposed for a 429's wait, `Preference-Applied` for a
 * `Prefer: wait` read.
 */
export const crossOriginHeaders = {
  'access-control-allow-origin': '*',
  'access-control-expose-headers': 'retry-after, preference-applied',
};

/**
 * The answer to a CORS preflight (OPTIONS) of a route that accepts a run token: GET from any
 * origin, with `Last-Event-ID` (an event stream's resume) and `Prefer`; cached by the browser for
 * two hours (Chromium's ceiling).
 */
export const preflight = (): HttpResult => ({
  statusCode: 204,
  headers: {
    'access-control-allow-origin': '*',
    'access-control-allow-methods': 'GET',
    'access-control-allow-headers': 'last-event-id, prefer',
    'access-control-max-age': '7200',
  },
  body: '',
});
