import { createHash } from 'node:crypto';
import swaggerUiPackage from 'swagger-ui-dist/package.json' with { type: 'json' };
import { initScript } from './init-script.ts';

/**
 * What the API reference page loads besides itself, shared by the page (`GET /docs`) and the asset
 * function (`GET /docs/assets/{name}`). Small on purpose: the page's bundle imports it, the
 * renderer's files ship only beside the asset function's bundle (`lib/bundling.ts`).
 */

export const docsAssetTypes = {
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'swagger-ui.css': 'text/css; charset=utf-8',
  'docs.js': 'text/javascript; charset=utf-8',
} as const;

export type DocsAssetName = keyof typeof docsAssetTypes;

export const isDocsAssetName = (name: string): name is DocsAssetName => Object.hasOwn(docsAssetTypes, name);

/** The renderer's version, for the page's footer and the asset URLs. */
export const rendererVersion: string = swaggerUiPackage.version;

/**
 * Changes whenever an asset can change (a renderer upgrade, a new init script). The page asks for
 * `?v=<assetVersion>`, which the asset function lets browsers cache for good.
 */
export const assetVersion = createHash('sha256')
  .update(`swagger-ui-dist@${rendererVersion}\n${initScript}`)
  .digest('hex')
  .slice(0, 12);

/** The asset's address relative to the page (`/api/v1/docs` → `/api/v1/docs/assets/<name>`). */
export const docsAssetHref = (name: DocsAssetName) => `./docs/assets/${name}?v=${assetVersion}`;
