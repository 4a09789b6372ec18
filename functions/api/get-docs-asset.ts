import { docsAssetResponse } from '../docs/asset-response.ts';
import { anyOrigin, type OriginCheck, originCheckFromEnv } from '../http/origin-check.ts';
import { publicHandler } from '../http/public-handler.ts';

/**
 * GET /docs/assets/{name} (no key): the API reference page's renderer (swagger-ui-dist) and start
 * script. A function of its own: the renderer's files (about 1.9 MB) ship beside its bundle and are
 * read on the first request for each, so no other function carries them.
 */
/** `deps`: what the local server passes every route; only the edge's origin check is read. */
export const makeHandler = ({ originCheck = anyOrigin }: { originCheck?: OriginCheck } = {}) =>
  publicHandler(
    (event) =>
      docsAssetResponse({
        name: event.pathParameters?.name ?? '',
        version: event.queryStringParameters?.v,
        ifNoneMatch: event.headers['if-none-match'],
        acceptEncoding: event.headers['accept-encoding'],
      }),
    originCheck,
  );

export const handler = makeHandler({ originCheck: originCheckFromEnv() });
