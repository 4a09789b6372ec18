import { buildOpenApiDocument } from '../docs/openapi.ts';
import { anyOrigin, type OriginCheck, originCheckFromEnv } from '../http/origin-check.ts';
import { publicHandler } from '../http/public-handler.ts';
import { okRaw } from '../http/response.ts';

/**
 * The document as sent, serialized once per cold start: it is large (every node type's config is
 * typed), and serializing it again on every request was most of the request's time.
 */
let serialized: string | undefined;
const documentText = (): string => {
  serialized ??= JSON.stringify(buildOpenApiDocument());
  return serialized;
};

/** GET /openapi.json (spec 4.7): the API description, no key needed. */
/** `deps`: what the local server passes every route; only the edge's origin check is read. */
export const makeHandler = ({ originCheck = anyOrigin }: { originCheck?: OriginCheck } = {}) =>
  publicHandler(async () => okRaw({ 'content-type': 'application/json' }, documentText()), originCheck);

export const handler = makeHandler({ originCheck: originCheckFromEnv() });
