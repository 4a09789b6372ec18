/**
 * The local S3 behaves like S3 for presigned requests (local/s3-presign-guard.ts in front of
 * fauxqs): a PUT presigned as `POST /files` presigns it is stored when sent as signed, and refused
 * with S3's own error when its signature, content type, length or expiry does not hold. The guard's
 * clock is this test's, so expiry is tested without waiting. It also keeps S3's ETag preconditions
 * on copies and reads, which fauxqs does not, and answers a missing key as S3 answers a caller
 * with or without `s3:ListBucket` (fauxqs answers 404 whatever the grants).
 */
import { connect } from 'node:net';
import {
  CopyObjectCommand,
  CreateBucketCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { s3ClientConfig } from '../functions/clients/s3.ts';
import { localAwsConfig } from '../local/emulators.ts';
import { type S3PresignGuard, startS3PresignGuard } from '../local/s3-presign-guard.ts';

let guard: S3PresignGuard;
let s3: S3Client;
let clock = new Date();
const bucket = `guard-${Date.now()}`;
const body = new TextEncoder().encode('hello, otters');

beforeAll(async () => {
  guard = await startS3PresignGuard({
    upstream: inject('emulators').sqsS3Endpoint,
    credentials: localAwsConfig.credentials,
    now: () => clock,
    bodyTimeoutMs: 500,
  });
  s3 = new S3Client({ ...localAwsConfig, ...s3ClientConfig, endpoint: guard.endpoint, forcePathStyle: true });
  await s3.send(new CreateBucketCommand({ Bucket: bucket }));
});

afterAll(async () => {
  s3.destroy();
  await guard.stop();
});

/** A PUT presigned as the upload route presigns it: content type and length signed. */
const presignPut = (key: string, options: { client?: S3Client; length?: number; signedAt?: Date } = {}) =>
  getSignedUrl(
    options.client ?? s3,
    new PutObjectCommand({ Bucket: bucket, Key: key, ContentType: 'text/plain', ContentLength: body.length }),
    {
      expiresIn: 900,
      signingDate: options.signedAt ?? clock,
      signableHeaders: new Set(['content-type', 'content-length']),
    },
  );

const put = (url: string, headers: Record<string, string>, bytes: Uint8Array = body) =>
  fetch(url, { method: 'PUT', headers, body: bytes });

const stored = async (key: string) => {
  try {
    return (await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key }))).ContentLength;
  } catch {
    return undefined;
  }
};

const s3Error = async (response: Response) => {
  const xml = await response.text();
  return {
    status: response.status,
    code: /<Code>([^<]+)<\/Code>/.exec(xml)?.[1],
    message: /<Message>([^<]+)/.exec(xml)?.[1],
  };
};

describe('the local S3 checks presigned PUTs as S3 does', () => {
  it('signs content-type and content-length into the URL, and stores a PUT sent as signed', async () => {
    clock = new Date();
    const url = await presignPut('ok');
    expect(new URL(url).searchParams.get('X-Amz-SignedHeaders')).toBe('content-length;content-type;host');
    // The client computes checksums only where S3 requires them: no CRC32 of an empty body in the URL.
    expect(url).not.toContain('checksum');
    const response = await put(url, { 'content-type': 'text/plain' });
    expect(response.status).toBe(200);
    expect(await stored('ok')).toBe(body.length);
  });

  it('refuses another content type: 403 SignatureDoesNotMatch, nothing stored', async () => {
    const url = await presignPut('wrong-type');
    expect(await s3Error(await put(url, { 'content-type': 'image/png' }))).toMatchObject({
      status: 403,
      code: 'SignatureDoesNotMatch',
    });
    expect(await stored('wrong-type')).toBeUndefined();
  });

  it('refuses a longer or a shorter body (another Content-Length): 403 SignatureDoesNotMatch', async () => {
    const url = await presignPut('wrong-length');
    const longer = new Uint8Array([...body, 33, 33]);
    expect(await s3Error(await put(url, { 'content-type': 'text/plain' }, longer))).toMatchObject({
      status: 403,
      code: 'SignatureDoesNotMatch',
    });
    expect(await s3Error(await put(url, { 'content-type': 'text/plain' }, body.subarray(1)))).toMatchObject({
      status: 403,
      code: 'SignatureDoesNotMatch',
    });
    expect(await stored('wrong-length')).toBeUndefined();
  });

  it('refuses a body that stops short of the signed Content-Length: 400 RequestTimeout', async () => {
    const url = new URL(await presignPut('short'));
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(url.port), url.hostname, () => {
        socket.write(
          `PUT ${url.pathname}${url.search} HTTP/1.1\r\nhost: ${url.host}\r\ncontent-type: text/plain\r\n` +
            `content-length: ${body.length}\r\n\r\n`,
        );
        socket.write(body.subarray(0, 4));
      });
      let text = '';
      socket.on('data', (chunk) => {
        text += chunk.toString();
      });
      socket.on('close', () => resolve(text));
      socket.on('error', reject);
    });
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    expect(answer).toContain('<Code>RequestTimeout</Code>');
    expect(await stored('short')).toBeUndefined();
  });

  it('refuses a tampered signature or key: 403 SignatureDoesNotMatch', async () => {
    const url = await presignPut('tampered');
    const forged = url.replace(
      /X-Amz-Signature=([0-9a-f])/,
      (_, c: string) => `X-Amz-Signature=${c === '0' ? '1' : '0'}`,
    );
    expect(await s3Error(await put(forged, { 'content-type': 'text/plain' }))).toMatchObject({
      status: 403,
      code: 'SignatureDoesNotMatch',
    });
    const elsewhere = url.replace('/tampered?', '/someone-else?');
    expect(await s3Error(await put(elsewhere, { 'content-type': 'text/plain' }))).toMatchObject({
      status: 403,
      code: 'SignatureDoesNotMatch',
    });
    expect(await stored('tampered')).toBeUndefined();
    expect(await stored('someone-else')).toBeUndefined();
  });

  it('refuses an expired URL: 403 AccessDenied, Request has expired', async () => {
    clock = new Date();
    const url = await presignPut('late', { signedAt: clock });
    clock = new Date(clock.getTime() + 901_000);
    expect(await s3Error(await put(url, { 'content-type': 'text/plain' }))).toEqual({
      status: 403,
      code: 'AccessDenied',
      message: 'Request has expired',
    });
    clock = new Date(clock.getTime() - 2_000);
    expect((await put(url, { 'content-type': 'text/plain' })).status).toBe(200);
  });

  it('refuses a key it does not know, and a PUT without Content-Length where the URL did not sign one', async () => {
    clock = new Date();
    const stranger = new S3Client({
      ...localAwsConfig,
      ...s3ClientConfig,
      credentials: { accessKeyId: 'stranger', secretAccessKey: 'x' },
      endpoint: guard.endpoint,
      forcePathStyle: true,
    });
    expect(
      await s3Error(await put(await presignPut('stranger', { client: stranger }), { 'content-type': 'text/plain' })),
    ).toMatchObject({
      status: 403,
      code: 'InvalidAccessKeyId',
    });
    stranger.destroy();
    const unbound = await getSignedUrl(s3, new PutObjectCommand({ Bucket: bucket, Key: 'chunked' }), { expiresIn: 60 });
    const streamed = new ReadableStream({
      start(controller) {
        controller.enqueue(body);
        controller.close();
      },
    });
    const response = await fetch(unbound, { method: 'PUT', body: streamed, duplex: 'half' } as RequestInit);
    expect(await s3Error(response)).toMatchObject({ status: 411, code: 'MissingContentLength' });
  });

  it('holds the bytes to a checksum the URL carries: the SDK default (a CRC32 of no body) fails as BadDigest', async () => {
    const defaults = new S3Client({ ...localAwsConfig, endpoint: guard.endpoint, forcePathStyle: true });
    const url = await presignPut('checksum', { client: defaults });
    defaults.destroy();
    expect(url).toContain('x-amz-checksum-crc32=AAAAAA%3D%3D');
    expect(await s3Error(await put(url, { 'content-type': 'text/plain' }))).toMatchObject({
      status: 400,
      code: 'BadDigest',
    });
    expect(await stored('checksum')).toBeUndefined();
  });

  it('forwards the SDK’s own requests (signed in a header) unchanged', async () => {
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'sdk', Body: body, ContentType: 'text/plain' }));
    expect(await stored('sdk')).toBe(body.length);
  });
});

describe('the local S3 keeps ETag preconditions as S3 does', () => {
  /** An object put by the SDK, then replaced with other bytes: its first ETag is now stale. */
  const replaced = async (key: string) => {
    const first = await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }));
    const second = await s3.send(
      new PutObjectCommand({ Bucket: bucket, Key: key, Body: new TextEncoder().encode('hello, beavers') }),
    );
    expect(first.ETag).not.toBe(second.ETag);
    return { stale: first.ETag ?? '', current: second.ETag ?? '' };
  };

  /** The status and S3 error code a command failed with. */
  const failure = async (command: Promise<unknown>) => {
    try {
      await command;
    } catch (error) {
      const e = error as { name: string; message: string; $metadata: { httpStatusCode?: number } };
      return { status: e.$metadata.httpStatusCode, code: e.name, message: e.message };
    }
    throw new Error('the command succeeded');
  };

  const copy = (key: string, ifMatch: string, to: string) =>
    s3.send(
      new CopyObjectCommand({ Bucket: bucket, Key: to, CopySource: `${bucket}/${key}`, CopySourceIfMatch: ifMatch }),
    );

  it('refuses a copy whose x-amz-copy-source-if-match is stale: 412 PreconditionFailed, nothing copied', async () => {
    const { stale, current } = await replaced('copy-source');
    expect(await failure(copy('copy-source', stale, 'copy-stale'))).toEqual({
      status: 412,
      code: 'PreconditionFailed',
      message: 'At least one of the pre-conditions you specified did not hold',
    });
    expect(await stored('copy-stale')).toBeUndefined();
    // The current ETag copies, quoted as HeadObject gives it or bare as S3 also takes it.
    await copy('copy-source', current, 'copy-current');
    expect(await stored('copy-current')).toBe(14);
    await copy('copy-source', current.replaceAll('"', ''), 'copy-bare');
    expect(await stored('copy-bare')).toBe(14);
    // A missing source is S3's answer to a missing key (403 without s3:ListBucket), whatever the condition.
    expect(await failure(copy('no-such-source', stale, 'copy-none'))).toMatchObject({
      status: 403,
      code: 'AccessDenied',
    });
  });

  it('refuses a GET or HEAD whose If-Match is stale: 412; the current ETag, quoted or bare, reads', async () => {
    const { stale, current } = await replaced('read');
    const get = (ifMatch: string) =>
      s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'read', Range: 'bytes=0-4', IfMatch: ifMatch }));
    expect(await failure(get(stale))).toEqual({
      status: 412,
      code: 'PreconditionFailed',
      message: 'At least one of the pre-conditions you specified did not hold',
    });
    const read = await get(current);
    expect(await read.Body?.transformToString()).toBe('hello');
    expect(await (await get(current.replaceAll('"', ''))).Body?.transformToString()).toBe('hello');

    const head = (ifMatch: string) => s3.send(new HeadObjectCommand({ Bucket: bucket, Key: 'read', IfMatch: ifMatch }));
    // HEAD answers no body: the SDK names the failure by its status.
    expect((await failure(head(stale))).status).toBe(412);
    expect((await head(current)).ETag).toBe(current);

    // A presigned GET carries If-Match as a header: held to it as well, S3's error XML naming the condition.
    const url = await getSignedUrl(s3, new GetObjectCommand({ Bucket: bucket, Key: 'read' }), { expiresIn: 60 });
    const refused = await fetch(url, { headers: { 'if-match': stale } });
    const xml = await refused.text();
    expect(refused.status).toBe(412);
    expect(xml).toContain('<Code>PreconditionFailed</Code>');
    expect(xml).toContain('<Condition>If-Match</Condition>');
    expect((await fetch(url, { headers: { 'if-match': current } })).status).toBe(200);
  });
});

describe('the local S3 answers a missing key as S3 does: 403 without s3:ListBucket, 404 with it', () => {
  let listing: S3PresignGuard;
  let lister: S3Client;
  beforeAll(async () => {
    listing = await startS3PresignGuard({
      upstream: inject('emulators').sqsS3Endpoint,
      credentials: localAwsConfig.credentials,
      listBucket: true,
    });
    lister = new S3Client({ ...localAwsConfig, ...s3ClientConfig, endpoint: listing.endpoint, forcePathStyle: true });
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'here', Body: body }));
  });
  afterAll(async () => {
    lister.destroy();
    await listing.stop();
  });

  /** The status, S3 error code and message a command failed with. */
  const failure = async (command: Promise<unknown>) => {
    try {
      await command;
    } catch (error) {
      const e = error as { name: string; message: string; $metadata: { httpStatusCode?: number } };
      return { status: e.$metadata.httpStatusCode, code: e.name, message: e.message };
    }
    throw new Error('the command succeeded');
  };
  const head = (client: S3Client, key: string) => client.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
  const get = (client: S3Client, key: string) => client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  const copy = (client: S3Client, key: string) =>
    client.send(new CopyObjectCommand({ Bucket: bucket, Key: `copy-of-${key}`, CopySource: `${bucket}/${key}` }));

  it('without s3:ListBucket (the default, as our functions are granted): HEAD, GET and a copy of a missing key are 403', async () => {
    // HEAD answers no body: the status alone (the SDK names a bodiless 403 `Unknown`, as it does S3's).
    expect(await failure(head(s3, 'absent'))).toMatchObject({ status: 403, code: 'Unknown' });
    expect(await failure(get(s3, 'absent'))).toEqual({ status: 403, code: 'AccessDenied', message: 'Access Denied' });
    expect(await failure(copy(s3, 'absent'))).toEqual({ status: 403, code: 'AccessDenied', message: 'Access Denied' });
    // A presigned GET as well: S3's error XML.
    const url = await getSignedUrl(s3, new GetObjectCommand({ Bucket: bucket, Key: 'absent' }), { expiresIn: 60 });
    const refused = await fetch(url);
    expect(refused.status).toBe(403);
    expect(await s3Error(refused)).toEqual({ status: 403, code: 'AccessDenied', message: 'Access Denied' });
    // What exists reads, and a missing bucket is still S3's 404 NoSuchBucket.
    expect((await head(s3, 'here')).ContentLength).toBe(body.length);
    expect(await (await get(s3, 'here')).Body?.transformToString()).toBe('hello, otters');
    await copy(s3, 'here');
    expect(await stored('copy-of-here')).toBe(body.length);
    expect(await failure(s3.send(new GetObjectCommand({ Bucket: `${bucket}-none`, Key: 'absent' })))).toMatchObject({
      status: 404,
      code: 'NoSuchBucket',
    });
  });

  it('with s3:ListBucket: the same requests are 404 NoSuchKey', async () => {
    expect(await failure(head(lister, 'absent'))).toMatchObject({ status: 404, code: 'NotFound' });
    expect(await failure(get(lister, 'absent'))).toMatchObject({ status: 404, code: 'NoSuchKey' });
    expect(await failure(copy(lister, 'absent'))).toMatchObject({ status: 404, code: 'NoSuchKey' });
    const url = await getSignedUrl(lister, new GetObjectCommand({ Bucket: bucket, Key: 'absent' }), { expiresIn: 60 });
    expect(await s3Error(await fetch(url))).toMatchObject({ status: 404, code: 'NoSuchKey' });
  });
});
