import { nodeTypeReferences } from '../docs/node-types.ts';
import { anyOrigin, type OriginCheck, originCheckFromEnv } from '../http/origin-check.ts';
import { publicHandler } from '../http/public-handler.ts';
import { notFound, ok } from '../http/response.ts';

/** GET /node-types/{type} (no key): one node type's reference; a name that is none answers as a path with no route. */
/** `deps`: what the local server passes every route; only the edge's origin check is read. */
export const makeHandler = ({ originCheck = anyOrigin }: { originCheck?: OriginCheck } = {}) =>
  publicHandler(async (event) => {
    const type = event.pathParameters?.type;
    const reference = nodeTypeReferences().find((node) => node.type === type);
    return reference ? ok(reference) : notFound();
  }, originCheck);

export const handler = makeHandler({ originCheck: originCheckFromEnv() });
