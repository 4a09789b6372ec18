import { docsAssetHref, rendererVersion } from './manifest.ts';

/** Where the page finds the OpenAPI document: relative, so it works under any host and stage. */
const openApiHref = './openapi.json';

/**
 * Only this origin's scripts, styles and fetches; images from this origin or inline SVG (the
 * renderer's icons are data: URLs in its CSS); no inline script or style element, no eval, no
 * plugins, no framing, no <base>, no form posts. Swagger UI sets styles through the DOM (allowed
 * without 'unsafe-inline'), and "Try it out" fetches this origin only.
 */
export const docsContentSecurityPolicy = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** Headers every response of the page and its assets carries. */
export const docsSecurityHeaders = {
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
} as const;

/** The reference page: the renderer's CSS and JS from the asset route, then the script that starts it. */
export const docsPageHtml = (): string => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Workflow Run API reference</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${docsAssetHref('swagger-ui.css')}">
</head>
<body>
<noscript>This reference needs JavaScript. The OpenAPI document is at <a href="${openApiHref}">openapi.json</a>.</noscript>
<div id="swagger-ui" data-openapi-url="${openApiHref}" data-renderer="swagger-ui-dist@${rendererVersion}"></div>
<script src="${docsAssetHref('swagger-ui-bundle.js')}"></script>
<script src="${docsAssetHref('docs.js')}"></script>
</body>
</html>
`;
