/**
 * The browser script that starts Swagger UI on the reference page, served as `docs.js` (a file of
 * its own, so the page's Content-Security-Policy needs no 'unsafe-inline'). Plain ES2020, no imports:
 * `SwaggerUIBundle` is the global the renderer's bundle defines. The OpenAPI document's address is
 * the page's `data-openapi-url`, relative to the page.
 */
export const initScript = `'use strict';
(() => {
  const root = document.getElementById('swagger-ui');
  window.ui = SwaggerUIBundle({
    url: root.dataset.openapiUrl,
    domNode: root,
    presets: [SwaggerUIBundle.presets.apis],
    deepLinking: true,
    displayOperationId: true,
    displayRequestDuration: true,
    defaultModelsExpandDepth: 0,
    docExpansion: 'list',
    filter: true,
    // A key typed into Authorize stays in this tab's memory only and is sent only to this origin.
    persistAuthorization: false,
    withCredentials: false,
    // No call to the public validator service: the page makes no request beyond its own origin.
    validatorUrl: null,
  });
})();
`;
