/**
 * What the provider stand-ins share: a loopback `node:http` server that records every request and can
 * be told to answer the next one with an error (or never), webhook sending, and a webhook catcher.
 * Framework-free, so the rehearsal and the local server can use the stand-ins too.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

/** One request a stand-in received, as it arrived (lower-case header names). */
export interface RecordedRequest {
  method: string;
  /** Path and query. */
  path: string;
  headers: Record<string, string>;
  body: string;
}

/** One webhook a stand-in sent, and how the receiver answered (undefined: unreachable). */
export interface SentWebhook {
  url: string;
  headers: Record<string, string>;
  body: string;
  status: number | undefined;
}

/** How a delivery is made, to test the receiver's refusals. */
export interface DeliveryOptions {
  /** The timestamp header (Unix seconds), signed as such: an old one is a replay. Default: the clock's now. */
  timestampSeconds?: number;
  /** Signs with a key the provider never published: a forgery. */
  forge?: boolean;
  /** Changes the body after signing. */
  tamper?: (body: string) => string;
}

/** A delivery as the receiving route sees it: lower-case headers, the raw body. */
export interface SignedDelivery {
  headers: Record<string, string>;
  body: string;
}

export interface JsonAnswer {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export type Route = (request: RecordedRequest, url: URL) => JsonAnswer;

const headersOf = (req: IncomingMessage): Record<string, string> => {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return headers;
};

const readBody = (req: IncomingMessage): Promise<string> =>
  new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });

const answer = (res: ServerResponse, { status, body, headers }: JsonAnswer) => {
  const text = body === undefined ? '' : JSON.stringify(body);
  res.writeHead(status, { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers });
  res.end(text);
};

const listen = async (server: Server): Promise<string> => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return `http://127.0.0.1:${port}`;
};

const close = (server: Server) =>
  new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });

/**
 * A recording JSON server: `route` answers each request, unless `failNextWith` or `stallNext` took
 * it first.
 */
export const startJsonServer = async (route: Route) => {
  const requests: RecordedRequest[] = [];
  /** Answers taken over, each for the first request whose path `on` matches (any request when absent). */
  const queued: { answer: JsonAnswer | 'stall'; on: RegExp | undefined }[] = [];
  const server = createServer((req, res) => {
    readBody(req).then(
      (body) => {
        const request: RecordedRequest = {
          method: req.method ?? 'GET',
          path: req.url ?? '/',
          headers: headersOf(req),
          body,
        };
        requests.push(request);
        const index = queued.findIndex(({ on }) => !on || on.test(request.path));
        const next = index === -1 ? undefined : queued.splice(index, 1)[0]?.answer;
        if (next === 'stall') return; // never answered: the caller's deadline ends it
        if (next) return answer(res, next);
        try {
          answer(res, route(request, new URL(request.path, 'http://stand-in')));
        } catch (error) {
          answer(res, { status: 500, body: { detail: `stand-in failed: ${(error as Error).message}` } });
        }
      },
      () => res.destroy(),
    );
  });
  const url = await listen(server);
  return {
    url,
    requests,
    /** The next request (whose path and query `on` matches, when given) answers `status`, with `Retry-After` when given. */
    failNextWith(status: number, body: unknown, retryAfter?: number, on?: RegExp) {
      const headers: Record<string, string> = retryAfter === undefined ? {} : { 'retry-after': String(retryAfter) };
      queued.push({ answer: { status, body, headers }, on });
    },
    /** The next request (whose path `on` matches, when given) is never answered. */
    stallNext(on?: RegExp) {
      queued.push({ answer: 'stall', on });
    },
    close: () => close(server),
  };
};

/** Posts a webhook the way providers do (JSON, no redirects followed) and records the receiver's answer. */
export const postWebhook = async (url: string, delivery: SignedDelivery): Promise<SentWebhook> => {
  let status: number | undefined;
  try {
    const response = await fetch(url, {
      method: 'POST',
      headers: delivery.headers,
      body: delivery.body,
      redirect: 'manual',
      signal: AbortSignal.timeout(15_000),
    });
    await response.arrayBuffer();
    status = response.status;
  } catch {
    status = undefined;
  }
  return { url, headers: delivery.headers, body: delivery.body, status };
};

/** Sends an earlier webhook again, byte for byte (a duplicate or a replay), and records it in `webhooks`. */
export const resender = (webhooks: SentWebhook[]) => async (sent: SentWebhook) => {
  const again = await postWebhook(sent.url, { headers: sent.headers, body: sent.body });
  webhooks.push(again);
  return again;
};

/**
 * A webhook receiver on loopback (plain http): keeps every delivery and answers 200, so a test can
 * hand what arrived to an adapter's `verifyWebhook` as our route would.
 */
export const startWebhookCatcher = async () => {
  const received: SignedDelivery[] = [];
  const server = createServer((req, res) => {
    readBody(req).then(
      (body) => {
        received.push({ headers: headersOf(req), body });
        res.writeHead(200);
        res.end('ok');
      },
      () => res.destroy(),
    );
  });
  const url = await listen(server);
  return { url: `${url}/hooks/step-token`, received, close: () => close(server) };
};

/**
 * A provider's file host (Replicate's `replicate.delivery`, fal's CDN) on loopback: each path
 * answers its bytes with its type; any other path a 404. `served` counts the downloads per path.
 */
export const startFileServer = async (files: Record<string, { body: Uint8Array; contentType: string }>) => {
  const served = new Map<string, number>();
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://files').pathname;
    const file = Object.hasOwn(files, path) ? files[path] : undefined;
    served.set(path, (served.get(path) ?? 0) + 1);
    if (!file) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': file.contentType, 'content-length': String(file.body.byteLength) });
    res.end(file.body);
  });
  const url = await listen(server);
  return { url, served, close: () => close(server) };
};
