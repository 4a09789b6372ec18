/**
 * A proxy in front of fauxqs's S3 that checks presigned requests as S3 does. fauxqs ignores
 * signatures: a presigned PUT with a tampered signature, another content type, another length or
 * past its expiry is stored there as any other. S3 refuses each; so does this, with S3's own error
 * (its code and status, https://docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html), and
 * forwards what passes. The signature is recomputed from the request as it arrived, following the
 * SigV4 query-string rules (https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-query-string-auth.html)
 * with node:crypto, independently of the SDK that made the URL. A request without
 * `X-Amz-Signature` (the SDK's own calls, signed in a header) is forwarded with its signature
 * unchecked.
 *
 * Every request, presigned or not, is also held to the ETag preconditions fauxqs (2.4.1) does not
 * keep as S3 does: `x-amz-copy-source-if-match` on CopyObject and UploadPartCopy (fauxqs ignores it)
 * and `If-Match` on GetObject and HeadObject (fauxqs ignores it on HEAD and compares it on GET as a
 * raw string, quotes and all).
 *
 * And a missing key is answered as S3 answers a caller without `s3:ListBucket` on the bucket
 * (`listBucket: false`, the default, as our functions are granted): HeadObject, GetObject (presigned
 * or not) and CopyObject of a missing source are 403 AccessDenied, not fauxqs's 404 NoSuchKey
 * (the "Permissions" of https://docs.aws.amazon.com/AmazonS3/latest/API/API_HeadObject.html, API_GetObject.html,
 * API_CopyObject.html, read 2026-12-07). HEAD answers no body, as S3's does.
 *
 * A GET or HEAD's `response-*` overrides (`response-content-disposition`, `response-content-type`,
 * ...) are applied to its successful answer, as S3 applies them and fauxqs does not. Like S3, the
 * guard adds no header of its own (no `X-Content-Type-Options`: S3 cannot send it).
 */
import { createHash, createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { crc32 } from 'node:zlib';
import { listenOnLoopback } from './loopback-server.ts';

export interface S3PresignGuard {
  endpoint: string;
  stop(): Promise<void>;
}

export interface S3PresignGuardOptions {
  /** fauxqs's endpoint, where every request that passes goes. */
  upstream: string;
  /** The only key the guard knows (the emulators' static one). */
  credentials: { accessKeyId: string; secretAccessKey: string };
  port?: number;
  /** The clock a URL's expiry is read against; tests pass their own. */
  now?: () => Date;
  /** How long a body may stay short of its Content-Length before S3's RequestTimeout (S3 waits about 20 s). */
  bodyTimeoutMs?: number;
  /**
   * Whether the caller may list the bucket (`s3:ListBucket`): with it a missing key is S3's 404
   * NoSuchKey, without it 403 AccessDenied. Default false: our functions are not granted it
   * (`grantsBucketListing` in platform/access.ts), so the strict answer is the one they meet on AWS.
   */
  listBucket?: boolean;
}

/** S3's error body. */
const errorXml = (code: string, message: string, extra: Record<string, string> = {}) =>
  '<?xml version="1.0" encoding="UTF-8"?>\n' +
  `<Error><Code>${code}</Code><Message>${message}</Message>` +
  Object.entries(extra)
    .map(([name, value]) => `<${name}>${value}</${name}>`)
    .join('') +
  `<RequestId>${randomUUID().replaceAll('-', '').slice(0, 16).toUpperCase()}</RequestId><HostId>s3-presign-guard</HostId></Error>`;

/** A request S3 refuses: its status, its error code and message, and any elements its body adds. */
class S3Refusal extends Error {
  readonly status: number;
  readonly code: string;
  readonly extra: Record<string, string>;
  constructor(status: number, code: string, message: string, extra: Record<string, string> = {}) {
    super(message);
    this.status = status;
    this.code = code;
    this.extra = extra;
  }
}

const refuse = (response: ServerResponse, refusal: S3Refusal) => {
  response.writeHead(refusal.status, { 'content-type': 'application/xml', connection: 'close' });
  response.end(errorXml(refusal.code, refusal.message, refusal.extra));
};

/** S3's answer to a missing key for a caller without `s3:ListBucket`. */
const missingKeyDenied = () => new S3Refusal(403, 'AccessDenied', 'Access Denied');

/** RFC 3986 encoding, as SigV4 canonicalises query names and values. */
const uriEncode = (text: string) =>
  encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

const sha256Hex = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
const hmac = (key: Buffer | string, text: string) => createHmac('sha256', key).update(text, 'utf8').digest();

/** `20240101T000000Z` as a Date, or undefined. */
const parseAmzDate = (text: string | undefined): Date | undefined => {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(text ?? '');
  return m ? new Date(`${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6]}Z`) : undefined;
};

const queryAuthError = (message: string) => new S3Refusal(400, 'AuthorizationQueryParametersError', message);

/** The query's parameters, decoded, in order (a name may come twice). */
const parseQuery = (raw: string): [string, string][] =>
  raw === ''
    ? []
    : raw.split('&').map((pair) => {
        const at = pair.indexOf('=');
        const decode = (text: string) => decodeURIComponent(text);
        return at < 0 ? [decode(pair), ''] : [decode(pair.slice(0, at)), decode(pair.slice(at + 1))];
      });

/**
 * Checks a presigned request's signature and expiry; throws the refusal S3 would answer. Returns
 * the parameters the body is checked against afterwards.
 */
const verifyPresigned = (
  request: IncomingMessage,
  path: string,
  query: [string, string][],
  options: Required<Pick<S3PresignGuardOptions, 'credentials' | 'now'>>,
) => {
  const param = (name: string) => query.find(([key]) => key === name)?.[1];
  if (param('X-Amz-Algorithm') !== 'AWS4-HMAC-SHA256') {
    throw queryAuthError('X-Amz-Algorithm only supports "AWS4-HMAC-SHA256"');
  }
  const credential = (param('X-Amz-Credential') ?? '').split('/');
  const [accessKeyId, day, region, service, terminator] = credential;
  if (credential.length !== 5 || terminator !== 'aws4_request' || !day || !region || !service) {
    throw queryAuthError('Error parsing the X-Amz-Credential parameter');
  }
  if (accessKeyId !== options.credentials.accessKeyId) {
    throw new S3Refusal(403, 'InvalidAccessKeyId', 'The AWS Access Key Id you provided does not exist in our records.');
  }
  const amzDate = param('X-Amz-Date');
  const signedAt = parseAmzDate(amzDate);
  if (!signedAt || !amzDate?.startsWith(day)) throw queryAuthError('X-Amz-Date must be in the ISO8601 Long Format');
  const expires = Number(param('X-Amz-Expires'));
  if (!Number.isInteger(expires) || expires < 1) throw queryAuthError('X-Amz-Expires should be a number');
  if (expires > 604_800) throw queryAuthError('X-Amz-Expires must be less than a week (in seconds)');
  const signedHeaders = (param('X-Amz-SignedHeaders') ?? '').split(';').filter((h) => h !== '');
  if (!signedHeaders.includes('host')) throw queryAuthError('X-Amz-SignedHeaders must contain host');

  const canonicalQuery = query
    .filter(([key]) => key !== 'X-Amz-Signature')
    .map(([key, value]) => [uriEncode(key), uriEncode(value)] as const)
    .sort(([a, x], [b, y]) => (a < b ? -1 : a > b ? 1 : x < y ? -1 : x > y ? 1 : 0))
    .map(([key, value]) => `${key}=${value}`)
    .join('&');
  const headerValue = (name: string) => {
    const value = request.headers[name];
    return (Array.isArray(value) ? value.join(',') : (value ?? '')).trim().replace(/\s+/g, ' ');
  };
  const canonicalRequest = [
    request.method,
    path,
    canonicalQuery,
    ...signedHeaders.map((name) => `${name}:${headerValue(name)}`),
    '',
    signedHeaders.join(';'),
    param('X-Amz-Content-Sha256') ?? 'UNSIGNED-PAYLOAD',
  ].join('\n');
  const scope = `${day}/${region}/${service}/aws4_request`;
  const stringToSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256Hex(canonicalRequest)].join('\n');
  const signingKey = hmac(
    hmac(hmac(hmac(`AWS4${options.credentials.secretAccessKey}`, day), region), service),
    'aws4_request',
  );
  const expected = Buffer.from(hmac(signingKey, stringToSign).toString('hex'));
  const given = Buffer.from(param('X-Amz-Signature') ?? '');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    throw new S3Refusal(
      403,
      'SignatureDoesNotMatch',
      'The request signature we calculated does not match the signature you provided. Check your key and signing method.',
    );
  }
  const now = options.now();
  const endsAt = new Date(signedAt.getTime() + expires * 1000);
  if (now > endsAt) {
    throw new S3Refusal(403, 'AccessDenied', 'Request has expired', {
      'X-Amz-Expires': String(expires),
      Expires: endsAt.toISOString(),
      ServerTime: now.toISOString(),
    });
  }
  return { crc32: param('x-amz-checksum-crc32') ?? headerValue('x-amz-checksum-crc32') };
};

/** The body, exactly Content-Length bytes; S3's RequestTimeout when fewer arrive in time. */
const readBody = (request: IncomingMessage, length: number, timeoutMs: number): Promise<Buffer> =>
  new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const timer = setTimeout(
      () =>
        reject(
          new S3Refusal(
            400,
            'RequestTimeout',
            'Your socket connection to the server was not read from or written to within the timeout period. ' +
              'Idle connections will be closed.',
          ),
        ),
      timeoutMs,
    );
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      chunks.push(chunk);
    });
    request.on('end', () => {
      clearTimeout(timer);
      if (size === length) resolve(Buffer.concat(chunks));
      else
        reject(
          new S3Refusal(
            400,
            'IncompleteBody',
            'You did not provide the number of bytes specified by the Content-Length HTTP header.',
          ),
        );
    });
    request.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });

/**
 * S3's 412 for an ETag precondition that does not hold (sources read 2026-11-27). The conditions,
 * from the S3 API reference as the AWS SDK pages carry it: x-amz-copy-source-if-match (CopyObject,
 * UploadPartCopy) "Copies the object if its entity tag (ETag) matches the specified tag"
 * (https://docs.aws.amazon.com/sdk-for-kotlin/api/latest/s3/aws.sdk.kotlin.services.s3.model/-upload-part-copy-request/copy-source-if-match.html);
 * GetObject's and HeadObject's If-Match "otherwise, return a 412 Precondition Failed error"
 * (…/-get-object-request/if-match.html, …/-head-object-request/if-match.html). The code,
 * PreconditionFailed, is listed in https://docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html.
 * The message as S3 sends it (`pre-conditions`, no period) and the `<Condition>` element naming the
 * header are from an S3 answer to `If-Match` recorded in
 * https://github.com/versity/versitygw/issues/2044. What `<Condition>` says for a copy is recorded
 * nowhere we read, so none is invented for it (SDKs read only the code and status).
 */
const preconditionFailed = (condition?: string) =>
  new S3Refusal(
    412,
    'PreconditionFailed',
    'At least one of the pre-conditions you specified did not hold',
    condition ? { Condition: condition } : {},
  );

/**
 * Whether an `If-Match`-style header holds for `etag`: `*`, or any listed tag equal to it once the
 * quotes around each are set aside (S3 takes `abc` and `"abc"` alike). The comparison is strong, so
 * a weak `W/"…"` tag never matches.
 */
const etagMatches = (header: string, etag: string) => {
  const bare = (tag: string) => tag.trim().replace(/^"(.*)"$/, '$1');
  return header.split(',').some((tag) => tag.trim() === '*' || bare(tag) === bare(etag));
};

/** The ETag of the object at `path` on fauxqs, or undefined when there is none (its own 404 answers). */
const upstreamEtag = (upstream: URL, path: string): Promise<string | undefined> =>
  new Promise((resolve, reject) => {
    const head = httpRequest(
      { host: upstream.hostname, port: upstream.port, method: 'HEAD', path, headers: { host: upstream.host } },
      (answer) => {
        answer.resume();
        const etag = answer.headers.etag;
        resolve(answer.statusCode === 200 && etag ? etag : undefined);
      },
    );
    head.on('error', reject);
    head.end();
  });

/** `x-amz-copy-source` (`bucket/key`, URL-encoded, maybe `/`-led, maybe `?versionId=`) as a path. */
const copySourcePath = (source: string) => {
  const at = source.indexOf('?');
  const decoded = decodeURIComponent(at < 0 ? source : source.slice(0, at)).replace(/^\//, '');
  return `/${decoded.split('/').map(uriEncode).join('/')}`;
};

/** Whether the bucket at the head of `path` (`/bucket/key…`) exists on fauxqs. */
const upstreamBucketExists = (upstream: URL, path: string): Promise<boolean> =>
  new Promise((resolve, reject) => {
    const bucket = path.split('/')[1] ?? '';
    const head = httpRequest(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: 'HEAD',
        path: `/${bucket}`,
        headers: { host: upstream.host },
      },
      (answer) => {
        answer.resume();
        resolve(answer.statusCode === 200);
      },
    );
    head.on('error', reject);
    head.end();
  });

/**
 * The object a request reads (GetObject, HeadObject: `GET`/`HEAD` of `/bucket/key`) or copies from
 * (CopyObject, UploadPartCopy: its `x-amz-copy-source`), as a path; undefined for any other request.
 */
const objectRead = (request: IncomingMessage, path: string): string | undefined => {
  const source = request.headers['x-amz-copy-source'];
  if (request.method === 'PUT' && typeof source === 'string') return copySourcePath(source);
  const isObject = /^\/[^/]+\/./.test(path);
  return (request.method === 'GET' || request.method === 'HEAD') && isObject ? path : undefined;
};

/**
 * Throws S3's 403 AccessDenied when the object the request reads is missing (in a bucket that
 * exists: a missing bucket is fauxqs's NoSuchBucket, as S3's) and the caller may not list the bucket.
 */
const checkMissingKey = async (upstream: URL, request: IncomingMessage, path: string, listBucket: boolean) => {
  const read = listBucket ? undefined : objectRead(request, path);
  if (read === undefined) return;
  if ((await upstreamEtag(upstream, read)) !== undefined) return;
  if (await upstreamBucketExists(upstream, read)) throw missingKeyDenied();
};

/**
 * Holds the request to the ETag preconditions fauxqs does not keep; throws S3's 412 when one fails.
 * Returns the headers to forward: without the condition checked here, since fauxqs's own raw
 * comparison on GET would refuse a tag S3 accepts.
 */
const checkPreconditions = async (upstream: URL, request: IncomingMessage, path: string) => {
  const headers = { ...request.headers };
  const header = (name: string) => {
    const value = request.headers[name];
    return Array.isArray(value) ? value.join(',') : value;
  };
  const copySource = header('x-amz-copy-source');
  const copyIfMatch = header('x-amz-copy-source-if-match');
  if (request.method === 'PUT' && copySource && copyIfMatch !== undefined) {
    const etag = await upstreamEtag(upstream, copySourcePath(copySource));
    // No source: refused above without ListBucket; with it forwarded, so fauxqs answers S3's NoSuchKey, as S3 does before any condition.
    if (etag !== undefined && !etagMatches(copyIfMatch, etag)) throw preconditionFailed();
    delete headers['x-amz-copy-source-if-match'];
  }
  const ifMatch = header('if-match');
  if ((request.method === 'GET' || request.method === 'HEAD') && ifMatch !== undefined) {
    const etag = await upstreamEtag(upstream, path);
    if (etag !== undefined && !etagMatches(ifMatch, etag)) throw preconditionFailed('If-Match');
    delete headers['if-match'];
  }
  return headers;
};

/**
 * The response headers a GetObject or HeadObject request overrides with its `response-*` query
 * parameters, which S3 honours on a signed request (presigned or signed in a header) and applies
 * to a successful answer only ("Overriding response header values",
 * https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObject.html, read 2026-12-07). fauxqs
 * (2.4.1) ignores them and answers the object's own: a download would look safer here than on S3.
 */
const responseOverrides = [
  'cache-control',
  'content-disposition',
  'content-encoding',
  'content-language',
  'content-type',
  'expires',
];

const overriddenHeaders = (request: IncomingMessage, status: number, headers: IncomingMessage['headers']) => {
  if ((request.method !== 'GET' && request.method !== 'HEAD') || status < 200 || status > 299) return headers;
  const at = (request.url ?? '').indexOf('?');
  const query = parseQuery(at < 0 ? '' : (request.url ?? '').slice(at + 1));
  const answered = { ...headers };
  for (const name of responseOverrides) {
    const value = query.find(([key]) => key.toLowerCase() === `response-${name}`)?.[1];
    if (value !== undefined) answered[name] = value;
  }
  return answered;
};

/** Sends the request on to fauxqs and its answer back. */
const forward = (
  upstream: URL,
  request: IncomingMessage,
  response: ServerResponse,
  body: Buffer | IncomingMessage,
  requestHeaders: IncomingMessage['headers'] = request.headers,
): void => {
  const headers = { ...requestHeaders, host: upstream.host };
  const outgoing = httpRequest(
    { host: upstream.hostname, port: upstream.port, method: request.method, path: request.url, headers },
    (answer) => {
      const status = answer.statusCode ?? 502;
      response.writeHead(status, overriddenHeaders(request, status, answer.headers));
      answer.pipe(response);
    },
  );
  outgoing.on('error', (error) => {
    if (!response.headersSent) response.writeHead(502, { 'content-type': 'text/plain' });
    response.end(`s3-presign-guard: upstream failed: ${error.message}`);
  });
  if (Buffer.isBuffer(body)) outgoing.end(body);
  else body.pipe(outgoing);
};

const handle = async (
  request: IncomingMessage,
  response: ServerResponse,
  upstream: URL,
  options: Required<Omit<S3PresignGuardOptions, 'port' | 'upstream'>>,
) => {
  const url = request.url ?? '/';
  const at = url.indexOf('?');
  const path = at < 0 ? url : url.slice(0, at);
  const query = parseQuery(at < 0 ? '' : url.slice(at + 1));
  const presigned = query.some(([key]) => key === 'X-Amz-Signature');
  try {
    const checksum = presigned ? verifyPresigned(request, path, query, options).crc32 : undefined;
    await checkMissingKey(upstream, request, path, options.listBucket);
    const headers = await checkPreconditions(upstream, request, path);
    // The SDK's own PUTs (signed in a header) stream through as they come.
    if (!presigned || request.method !== 'PUT') return forward(upstream, request, response, request, headers);
    const declared = request.headers['content-length'];
    if (declared === undefined) {
      throw new S3Refusal(411, 'MissingContentLength', 'You must provide the Content-Length HTTP header.');
    }
    const body = await readBody(request, Number(declared), options.bodyTimeoutMs);
    if (checksum) {
      const actual = Buffer.alloc(4);
      actual.writeUInt32BE(crc32(body));
      if (actual.toString('base64') !== checksum) {
        throw new S3Refusal(400, 'BadDigest', 'The CRC32 you specified did not match the calculated checksum.');
      }
    }
    forward(upstream, request, response, body, headers);
  } catch (error) {
    if (!(error instanceof S3Refusal)) throw error;
    // HEAD carries no body: S3 answers its status alone.
    if (request.method === 'HEAD') response.writeHead(error.status, { connection: 'close' }).end();
    else refuse(response, error);
    // A refused body is not read further: the connection closes, as S3 closes it.
    request.resume();
  }
};

/** Starts the guard on loopback in front of `upstream`. */
export const startS3PresignGuard = async (options: S3PresignGuardOptions): Promise<S3PresignGuard> => {
  const upstream = new URL(options.upstream);
  const settings = {
    credentials: options.credentials,
    now: options.now ?? (() => new Date()),
    bodyTimeoutMs: options.bodyTimeoutMs ?? 20_000,
    listBucket: options.listBucket ?? false,
  };
  const server = createServer((request, response) => {
    handle(request, response, upstream, settings).catch((error: unknown) => {
      if (!response.headersSent) response.writeHead(500, { 'content-type': 'application/xml' });
      response.end(errorXml('InternalError', (error as Error).message));
    });
  });
  return listenOnLoopback(server, options.port);
};
