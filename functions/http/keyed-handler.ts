import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import * as v from 'valibot';
import { acceptsRunToken, type KeyedRouteId, scopeOf } from '../../platform/routes.ts';
import { UuidSchema } from '../../schemas/common.ts';
import { FileIdSchema, fileIdPrefix } from '../../schemas/file-limits.ts';
import type { Deps } from '../deps.ts';
import { accessTokenParameter } from '../domain/run-token.ts';
import { logger } from '../observability/logger.ts';
import { type AuthContext, authenticate, authenticateRunToken } from './authenticate.ts';
import { observedHandler } from './observed-handler.ts';
import { anyOrigin } from './origin-check.ts';
import { crossOriginHeaders, type HttpResult, notFound, preflight } from './response.ts';

type Event = APIGatewayProxyEventV2;

/** The uuid no item has. */
const nilUuid = '00000000-0000-0000-0000-000000000000';

/** The ids that are not bare uuids, by parameter name: what each must be, and the one that names nothing. */
const idFormats: Record<string, { schema: v.GenericSchema; none: string }> = {
  fileId: { schema: FileIdSchema, none: `${fileIdPrefix}${nilUuid}` },
  // A step's node id (a workflow's step key, or a canvas node's id): short word characters; none is empty.
  nodeId: { schema: v.pipe(v.string(), v.regex(/^[\w.:-]{1,128}$/)), none: '' },
  // A workflow's version number (GET /workflows/{id}/versions/{version}); 0 names none.
  version: { schema: v.pipe(v.string(), v.regex(/^[1-9][0-9]{0,8}$/)), none: '0' },
};

/**
 * Every keyed route's path parameters are ids, each a uuid unless `idFormats` says otherwise: one
 * that is not names nothing, so it is handed on as an id no item has and the route answers its own
 * 404. No key is then built from the caller's bytes (a 4,000-character id would exceed DynamoDB's
 * 2,048-byte key: a ValidationException, a 500).
 */
const withUuidIds = (event: Event): Event => {
  const params = event.pathParameters;
  const formatOf = (name: string) => idFormats[name] ?? { schema: UuidSchema, none: nilUuid };
  if (!params || Object.entries(params).every(([name, id]) => v.is(formatOf(name).schema, id))) return event;
  const ids = Object.entries(params).map(([name, id]) => {
    const format = formatOf(name);
    return [name, v.is(format.schema, id) ? id : format.none];
  });
  return { ...event, pathParameters: Object.fromEntries(ids) };
};

/**
 * The run token a request carries, on a route that accepts one (`runToken` in its row): the
 * `access_token` query parameter, even empty (then refused as any bad token, never read as no
 * token). Undefined on every other route: there the parameter means nothing and the key is asked for.
 */
export const runTokenOf = (route: KeyedRouteId, event: Event): string | undefined =>
  acceptsRunToken(route) ? event.queryStringParameters?.[accessTokenParameter] : undefined;

/** The CORS headers every answer to a run token's request carries (none for a key's). */
export const crossOriginAnswer = (route: KeyedRouteId, event: Event): Record<string, string> | undefined =>
  runTokenOf(route, event) === undefined ? undefined : crossOriginHeaders;

/** Whether the request is the CORS preflight of a route that accepts a run token. */
export const isRunTokenPreflight = (route: KeyedRouteId, event: Event): boolean =>
  acceptsRunToken(route) && event.requestContext.http.method === 'OPTIONS';

/**
 * What every keyed entry point does first, the HTTP API's and the event stream's alike: authenticate
 * (auth → rate limit → the scope `platform/routes.ts` gives the route; a run token in place of the
 * key where the route accepts one), the team on every log line, and the path's ids made safe to key
 * on (`withUuidIds`).
 */
export const admitKeyed = async (
  deps: Deps,
  route: KeyedRouteId,
  event: Event,
): Promise<{ event: Event; auth: AuthContext }> => {
  const safe = withUuidIds(event);
  const token = runTokenOf(route, event);
  const auth =
    token === undefined
      ? await authenticate(deps, event.headers.authorization, scopeOf(route))
      : await authenticateRunToken(deps, token, safe.pathParameters?.jobId ?? '', scopeOf(route));
  logger.appendKeys({ teamId: auth.teamId });
  return { event: safe, auth };
};

/** A middleware around the keyed handler: the one that publishes the invocation's metrics. */
type Middleware = Parameters<ReturnType<typeof observedHandler>['use']>[0];

/**
 * A keyed API Gateway v2 handler: authenticate (auth → rate limit → the scope `platform/routes.ts` gives
 * the route), run `fn`, and map any thrown error through the one error table. Every keyed entry
 * point in `functions/api` is built with it, the streaming one too (`keyedStream`). A function that records metrics (the run starts) passes
 * `publishing`, Powertools' `logMetrics`, which publishes them at the invocation's end; the others
 * record none and carry no Powertools metrics code.
 */
export const keyedHandler = (
  deps: Deps,
  route: KeyedRouteId,
  fn: (event: Event, auth: AuthContext, context: Context) => Promise<HttpResult>,
  publishing?: Middleware,
) => {
  const handler = observedHandler((event) => crossOriginAnswer(route, event));
  if (publishing) handler.use(publishing);
  return handler.handler(async (raw, context) => {
    // Not through the edge that fronts this stage: as API Gateway answers a path it does not have.
    if (!(await (deps.originCheck ?? anyOrigin)(raw.headers))) return notFound();
    // A preflight carries no credential: it is answered for any caller, and says only that GET may follow.
    if (isRunTokenPreflight(route, raw)) return preflight();
    const { event, auth } = await admitKeyed(deps, route, raw);
    return fn(event, auth, context);
  });
};
