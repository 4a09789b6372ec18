import { buildOpenApiDocument } from '../docs/openapi.ts';
import { publicHandler } from '../http/public-handler.ts';
import { ok } from '../http/response.ts';

/** GET /openapi.json (spec 4.7): the API description, no key needed. Built once per cold start. */
export const makeHandler = () => publicHandler(async () => ok(buildOpenApiDocument()));

export const handler = makeHandler();
