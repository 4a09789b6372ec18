import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { initScript } from './init-script.ts';
import type { DocsAssetName } from './manifest.ts';

/**
 * The renderer's files (swagger-ui-dist) as served by `GET /docs/assets/{name}`.
 *
 * Deployed, they are part of the function's bundle: esbuild inlines each `import(…, { with: { type:
 * 'text' } })` below as a string (esbuild's text loader), so the function needs no file beside its
 * bundle and no network. Run from source (`npm start`, the tests), Node cannot import text modules
 * without a flag, so the same files are read from node_modules; the bytes are identical.
 */
const runningFromSource = import.meta.url.endsWith('.ts');

const fromPackage = (specifier: string) => readFile(new URL(import.meta.resolve(specifier)), 'utf8');

const loaders: Record<DocsAssetName, () => Promise<string>> = {
  'swagger-ui-bundle.js': async () =>
    runningFromSource
      ? fromPackage('swagger-ui-dist/swagger-ui-bundle.js')
      : (await import('swagger-ui-dist/swagger-ui-bundle.js', { with: { type: 'text' } })).default,
  'swagger-ui.css': async () =>
    runningFromSource
      ? fromPackage('swagger-ui-dist/swagger-ui.css')
      : (await import('swagger-ui-dist/swagger-ui.css', { with: { type: 'text' } })).default,
  'docs.js': async () => initScript,
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
    asset = loaders[name]().then((text) => {
      const body = Buffer.from(text, 'utf8');
      return { body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"` };
    });
    asset.catch(() => loaded.delete(name));
    loaded.set(name, asset);
  }
  return asset;
};
