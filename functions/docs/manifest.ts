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
 * A 48-bit digest of `text` as 12 hex digits (cyrb53): enough to tell two versions apart, and it
 * spares the page's function loading node:crypto at cold start (about 10 ms) for one hash.
 */
const versionDigest = (text: string): string => {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ code, 2654435761);
    h2 = Math.imul(h2 ^ code, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return (4294967296 * (2097151 & h2) + (h1 >>> 0)).toString(16).padStart(14, '0').slice(0, 12);
};

/**
 * Changes whenever an asset can change (a renderer upgrade, a new init script). The page asks for
 * `?v=<assetVersion>`, which the asset function lets browsers cache for good.
 */
export const assetVersion = versionDigest(`swagger-ui-dist@${rendererVersion}\n${initScript}`);

/** The asset's address relative to the page (`/api/v1/docs` → `/api/v1/docs/assets/<name>`). */
export const docsAssetHref = (name: DocsAssetName) => `./docs/assets/${name}?v=${assetVersion}`;
