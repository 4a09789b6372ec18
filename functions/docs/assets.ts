import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { docsRendererFiles } from '../../platform/beside-files.ts';
import { initScript } from './init-script.ts';
import type { DocsAssetName } from './manifest.ts';

/**
 * The renderer's files (swagger-ui-dist) as served by `GET /docs/assets/{name}`.
 *
 * Deployed, they are files beside the function's bundle (`docsRendererFiles` in `platform/beside-files.ts`:
 * copied into the asset directory when it is built), read with `fs` on the first request that asks
 * for each and kept for the life of the container; the bundle itself holds none of their bytes.
 * Run from source (`npm start`, the tests), the same files are read from node_modules.
 */
const runningFromSource = import.meta.url.endsWith('.ts');

/** Where a renderer file is: beside the bundle, or in the package when run from source. */
export const rendererFileUrl = (name: (typeof docsRendererFiles.names)[number]): URL =>
  runningFromSource
    ? new URL(import.meta.resolve(`${docsRendererFiles.package}/${name}`))
    : new URL(`./${docsRendererFiles.dir}/${name}`, import.meta.url);

const loaders: Record<DocsAssetName, () => Promise<Buffer>> = {
  'swagger-ui-bundle.js': () => readFile(rendererFileUrl('swagger-ui-bundle.js')),
  'swagger-ui.css': () => readFile(rendererFileUrl('swagger-ui.css')),
  'docs.js': async () => Buffer.from(initScript, 'utf8'),
};

export interface LoadedAsset {
  body: Buffer;
  /** Strong validator: a digest of the body. */
  etag: string;
}

const loaded = new Map<DocsAssetName, Promise<LoadedAsset>>();

/** The asset's bytes, read once per process. */
export const loadAsset = (name: DocsAssetName): Promise<LoadedAsset> => {
  let asset = loaded.get(name);
  if (!asset) {
    asset = loaders[name]().then((body) => ({
      body,
      etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`,
    }));
    asset.catch(() => loaded.delete(name));
    loaded.set(name, asset);
  }
  return asset;
};
