/**
 * The edge's files distribution (lib/edge-stack.ts, `FilesDistribution`) as a local front, for
 * tests and `FILES_BASE_URL` on a local stack: it forwards a GET or HEAD's path and whole query to
 * the bucket's endpoint with the endpoint's own Host (CloudFront's custom origin, the viewer's Host
 * not forwarded), so the local S3's presign check (s3-presign-guard.ts) sees the request the URL
 * was signed for, and answers S3's answer with `X-Content-Type-Options: nosniff` set over whatever
 * came (the response headers policy's `contentTypeOptions`, `override: true`). Nothing is cached,
 * as the distribution caches nothing. Another method is refused 403, as a distribution allowing
 * GET and HEAD refuses it.
 */
import { createServer, request as httpRequest } from 'node:http';
import { listenOnLoopback } from './loopback-server.ts';

export interface FilesEdge {
  /** The front's base URL (`http://127.0.0.1:<port>`): what `filesBaseUrl` names. */
  url: string;
  stop(): Promise<void>;
}

/** The viewer headers the distribution's origin request policy forwards: none but these, which CloudFront passes itself. */
const forwarded = ['range', 'if-match', 'if-none-match', 'if-modified-since', 'if-unmodified-since'];

export const startFilesEdge = async (options: { upstream: string; port?: number }): Promise<FilesEdge> => {
  const upstream = new URL(options.upstream);
  const server = createServer((viewer, answer) => {
    if (viewer.method !== 'GET' && viewer.method !== 'HEAD') {
      answer.writeHead(403, { 'content-type': 'text/plain', 'x-content-type-options': 'nosniff' });
      answer.end('This distribution is not configured to allow the HTTP request method that was used.');
      return;
    }
    const headers: Record<string, string> = { host: upstream.host };
    for (const name of forwarded) {
      const value = viewer.headers[name];
      if (typeof value === 'string') headers[name] = value;
    }
    const toOrigin = httpRequest(
      { hostname: upstream.hostname, port: upstream.port, method: viewer.method, path: viewer.url ?? '/', headers },
      (origin) => {
        answer.writeHead(origin.statusCode ?? 502, { ...origin.headers, 'x-content-type-options': 'nosniff' });
        origin.pipe(answer);
      },
    );
    toOrigin.on('error', () => {
      answer.writeHead(502, { 'content-type': 'text/plain', 'x-content-type-options': 'nosniff' });
      answer.end('Bad gateway');
    });
    toOrigin.end();
  });
  const { endpoint, stop } = await listenOnLoopback(server, options.port);
  return { url: endpoint, stop };
};
