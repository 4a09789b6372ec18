/**
 * HTTP on a user's behalf (callback URLs, CustomApiCall, ApiPostAction, loaders; DESIGN section 7):
 * resolves the host, refuses when ANY address it resolves to is forbidden by the address guard,
 * then connects to the vetted address itself (a lookup that answers only that address, so a second
 * DNS answer cannot swap in another: no DNS rebinding). Never follows redirects (a 3xx is returned
 * as it is), stops at a deadline, and reads at most `maxBytes` of the body.
 */
import type { IncomingMessage, RequestOptions } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import { parseHostLiteral } from '../domain/address-guard.ts';
import { type AddressOptions, GuardedFetchError, parseTarget, vetTarget } from './address-vet.ts';

export {
  type AddressOptions,
  addressRefusedMessage,
  allowLoopbackFromEnv,
  GuardedFetchError,
  type GuardedFetchErrorCode,
  localStackFromEnv,
  type ResolvedAddress,
  vetUrl,
} from './address-vet.ts';

export interface GuardedFetchOptions extends AddressOptions {
  /** Deadline for the whole exchange, connection to last body byte. */
  timeoutMs: number;
  /** Most body bytes read; a longer body fails with `too_large` unless `truncate`. */
  maxBytes: number;
  /** Keep the first `maxBytes` of a longer body instead of failing (`truncated` tells). */
  truncate?: boolean;
  /** Extra trusted CA certificates (PEM) for https, e.g. a local receiver's self-signed one. */
  ca?: string | Buffer;
}

export interface GuardedRequestInit {
  method?: string;
  headers?: Record<string, string>;
  body?: string | Uint8Array;
  /** Aborts the request (on top of the deadline). */
  signal?: AbortSignal;
}

export interface GuardedResponse {
  status: number;
  statusText: string;
  /** Lower-case names; repeated headers joined with `, `. */
  headers: Record<string, string>;
  body: Uint8Array;
  /** The body was longer than `maxBytes` and cut (only with `truncate`). */
  truncated: boolean;
  /** The address connected to. */
  address: string;
  text(): string;
  /** Parses the body as JSON; throws SyntaxError when it is not. */
  json(): unknown;
}

const readBody = (
  response: IncomingMessage,
  options: GuardedFetchOptions,
): Promise<{ body: Uint8Array; truncated: boolean }> =>
  new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let capped = false;
    response.on('data', (chunk: Buffer) => {
      if (capped) return;
      if (size + chunk.length > options.maxBytes) {
        capped = true;
        chunks.push(chunk.subarray(0, options.maxBytes - size));
        size = options.maxBytes;
        if (options.truncate) resolve({ body: new Uint8Array(Buffer.concat(chunks)), truncated: true });
        else reject(new GuardedFetchError('too_large', `Response body is larger than ${options.maxBytes} bytes`));
        response.destroy();
        return;
      }
      chunks.push(chunk);
      size += chunk.length;
    });
    response.on('end', () => resolve({ body: new Uint8Array(Buffer.concat(chunks)), truncated: false }));
    response.on('error', reject);
    response.on('aborted', () => reject(new GuardedFetchError('network', 'Connection closed before the body ended')));
  });

/** Node's codes for a failed TLS handshake (untrusted, expired or misnamed certificate, protocol). */
const isTlsFailure = (error: unknown): boolean =>
  /CERT|TLS|SSL|SIGNATURE|EPROTO/.test(String((error as { code?: unknown }).code ?? ''));

/** An HTTP(S) request through the address guard. See the module comment. */
export const guardedFetch = async (
  url: string | URL,
  init: GuardedRequestInit,
  options: GuardedFetchOptions,
): Promise<GuardedResponse> => {
  const { target, hostname } = parseTarget(url);

  const deadline = AbortSignal.timeout(options.timeoutMs);
  const signal = init.signal ? AbortSignal.any([deadline, init.signal]) : deadline;
  const abortError = () =>
    deadline.aborted
      ? new GuardedFetchError('timeout', `No complete answer within ${options.timeoutMs} ms`)
      : new GuardedFetchError('aborted', 'Request aborted');
  if (signal.aborted) throw abortError();

  const address = await vetTarget(target, hostname, options);
  if (signal.aborted) throw abortError();

  // Connect to the vetted address only, whatever the socket layer asks for.
  const pinned: LookupFunction = (_host, lookupOptions, callback) => {
    if (lookupOptions.all) callback(null, [{ address: address.address, family: address.family }]);
    else callback(null, address.address, address.family);
  };
  const headers: Record<string, string> = { ...init.headers };
  const body = typeof init.body === 'string' ? Buffer.from(init.body) : init.body;
  if (body && !Object.keys(headers).some((h) => h.toLowerCase() === 'content-length')) {
    headers['content-length'] = String(body.byteLength);
  }
  const requestOptions: RequestOptions & { servername?: string; ca?: string | Buffer } = {
    protocol: target.protocol,
    hostname,
    port: target.port || undefined,
    path: `${target.pathname}${target.search}`,
    method: init.method ?? 'GET',
    headers,
    lookup: pinned,
    agent: false,
    signal,
  };
  if (target.protocol === 'https:') {
    if (parseHostLiteral(hostname) === null) requestOptions.servername = hostname;
    if (options.ca) requestOptions.ca = options.ca;
  }

  // Plain http (a loopback receiver on the local default) loads node:http on first use: it costs
  // about 25-40 ms at a cold start, and https, which the deployed functions use, does not need it.
  const send = target.protocol === 'https:' ? httpsRequest : (await import('node:http')).request;
  return new Promise<GuardedResponse>((resolve, reject) => {
    const fail = (error: unknown) => {
      if (error instanceof GuardedFetchError) reject(error);
      else if (signal.aborted) reject(abortError());
      else if (isTlsFailure(error)) reject(new GuardedFetchError('tls', (error as Error).message));
      else reject(new GuardedFetchError('network', (error as Error).message));
    };
    const request = send(requestOptions, (response) => {
      readBody(response, options).then(({ body: bytes, truncated }) => {
        const responseHeaders: Record<string, string> = {};
        for (const [name, value] of Object.entries(response.headers)) {
          if (value !== undefined) responseHeaders[name] = Array.isArray(value) ? value.join(', ') : value;
        }
        resolve({
          status: response.statusCode ?? 0,
          statusText: response.statusMessage ?? '',
          headers: responseHeaders,
          body: bytes,
          truncated,
          address: address.address,
          text: () => Buffer.from(bytes).toString('utf8'),
          json: () => JSON.parse(Buffer.from(bytes).toString('utf8')) as unknown,
        });
      }, fail);
    });
    request.on('error', fail);
    request.end(body);
  });
};
