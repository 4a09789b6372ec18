import { promisify } from 'node:util';
import { brotliCompress, constants, gzip } from 'node:zlib';
import { type HttpResult, notFound, notModified, okRaw } from '../http/response.ts';
import { type LoadedAsset, loadAsset } from './assets.ts';
import { assetVersion, type DocsAssetName, docsAssetTypes, isDocsAssetName } from './manifest.ts';
import { docsSecurityHeaders } from './page.ts';

/**
 * The answer to GET /docs/assets/{name}. HTTP APIs do not compress responses, so this does: Brotli
 * or gzip as the browser accepts, compressed once per warm function. The page asks for
 * `?v=<assetVersion>`, cached for a year; a matching If-None-Match answers 304.
 */

type Encoding = 'br' | 'gzip' | 'identity';

/** The best coding the Accept-Encoding header allows (q=0 refuses one). */
export const pickEncoding = (header: string | undefined): Encoding => {
  const accepted = new Set<string>();
  for (const part of (header ?? '').toLowerCase().split(',')) {
    const [coding = '', ...params] = part.split(';').map((s) => s.trim());
    const q = params.find((p) => p.startsWith('q='));
    if (coding && !(q && Number(q.slice(2)) === 0)) accepted.add(coding);
  }
  if (accepted.has('br')) return 'br';
  if (accepted.has('gzip') || accepted.has('*')) return 'gzip';
  return 'identity';
};

const brotli = promisify(brotliCompress);
const gzipAsync = promisify(gzip);

const compressors: Record<Exclude<Encoding, 'identity'>, (body: Buffer) => Promise<Buffer>> = {
  // Quality 5: within a few per cent of the best ratio for a fraction of the time of quality 11.
  br: (body) =>
    brotli(body, {
      params: { [constants.BROTLI_PARAM_QUALITY]: 5, [constants.BROTLI_PARAM_SIZE_HINT]: body.length },
    }),
  gzip: (body) => gzipAsync(body, { level: 6 }),
};

const compressed = new Map<string, Promise<Buffer>>();

const encodedBody = (name: DocsAssetName, asset: LoadedAsset, encoding: Encoding): Promise<Buffer> => {
  if (encoding === 'identity') return Promise.resolve(asset.body);
  const key = `${name}:${encoding}`;
  let body = compressed.get(key);
  if (!body) {
    body = compressors[encoding](asset.body);
    body.catch(() => compressed.delete(key));
    compressed.set(key, body);
  }
  return body;
};

/** What the asset request asked for: the name in the path, `?v=`, If-None-Match and Accept-Encoding. */
export interface AssetRequest {
  name: string;
  version: string | undefined;
  ifNoneMatch: string | undefined;
  acceptEncoding: string | undefined;
}

/** The asset's response: 404 for an unknown name, 304 when the browser has it, else the (compressed) bytes. */
export const docsAssetResponse = async (request: AssetRequest): Promise<HttpResult> => {
  const { name } = request;
  if (!isDocsAssetName(name)) return notFound();
  const asset = await loadAsset(name);
  const versioned = request.version === assetVersion;
  const headers: Record<string, string> = {
    ...docsSecurityHeaders,
    'content-type': docsAssetTypes[name],
    'cache-control': versioned ? 'public, max-age=31536000, immutable' : 'public, max-age=300',
    etag: asset.etag,
    vary: 'accept-encoding',
  };
  if (request.ifNoneMatch === asset.etag) return notModified(headers);
  const encoding = pickEncoding(request.acceptEncoding);
  const body = await encodedBody(name, asset, encoding);
  if (encoding !== 'identity') headers['content-encoding'] = encoding;
  return okRaw(headers, body.toString('base64'), true);
};
