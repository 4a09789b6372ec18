import { docsContentSecurityPolicy, docsPageHtml, docsSecurityHeaders } from '../docs/page.ts';
import { anyOrigin, type OriginCheck, originCheckFromEnv } from '../http/origin-check.ts';
import { publicHandler } from '../http/public-handler.ts';
import { okRaw } from '../http/response.ts';

/**
 * GET /docs (no key): the interactive API reference, Swagger UI rendering `./openapi.json`. The
 * renderer is served by this service (`GET /docs/assets/{name}`), so the page needs no CDN and works
 * offline; its Content-Security-Policy allows nothing from elsewhere.
 */
/** `deps`: what the local server passes every route; only the edge's origin check is read. */
export const makeHandler = ({ originCheck = anyOrigin }: { originCheck?: OriginCheck } = {}) => {
  const body = docsPageHtml();
  return publicHandler(
    async () =>
      okRaw(
        {
          ...docsSecurityHeaders,
          'content-type': 'text/html; charset=utf-8',
          'content-security-policy': docsContentSecurityPolicy,
          'x-frame-options': 'DENY',
          'cache-control': 'no-cache',
        },
        body,
      ),
    originCheck,
  );
};

export const handler = makeHandler({ originCheck: originCheckFromEnv() });
