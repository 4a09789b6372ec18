import { nodeTypeReferences } from '../docs/node-types.ts';
import { anyOrigin, type OriginCheck, originCheckFromEnv } from '../http/origin-check.ts';
import { publicHandler } from '../http/public-handler.ts';
import { ok } from '../http/response.ts';

/** GET /node-types (no key): every node type's reference, generated from the catalogue. */
/** `deps`: what the local server passes every route; only the edge's origin check is read. */
export const makeHandler = ({ originCheck = anyOrigin }: { originCheck?: OriginCheck } = {}) =>
  publicHandler(async () => ok({ nodeTypes: nodeTypeReferences() }), originCheck);

export const handler = makeHandler({ originCheck: originCheckFromEnv() });
