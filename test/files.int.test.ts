/**
 * Uploads: `POST /files` and `GET /files/{fileId}` through the local API and the real
 * handlers, the bytes PUT with fetch to the presigned URL on the local S3 (fauxqs behind the presign
 * guard, which refuses as S3 does). Every answer must match the served OpenAPI document.
 */
import { HeadObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { uploadLifetimeSeconds, uploadUrlSeconds } from '../functions/app/uploads.ts';
import { buildOpenApiDocument } from '../functions/docs/openapi.ts';
import { uploadKey } from '../functions/store/keys.ts';
import { uploadObjectKey } from '../functions/store/uploads.ts';
import { maxUploadBytes } from '../schemas/file-limits.ts';
import { uploadContentTypes } from '../schemas/upload-types.ts';
import { expectValidResponse } from './support/openapi-validator.ts';
import { call, type SeededTeam, seedTeam, stackPerFile } from './support/stack.ts';
import * as files from './support/upload-files.ts';

const doc = buildOpenApiDocument();
/** Plenty for one file's requests with one key (the default is 60 a minute). */
const manyRequests = { rateLimitPerMinute: 10_000 };

/** The service's clock runs `offsetMs` from the wall clock: a declaration made in the past has an expired URL. */
let offsetMs = 0;
const { stack } = stackPerFile({ now: () => new Date(Date.now() + offsetMs) });

let team: SeededTeam;
let other: SeededTeam;
beforeAll(async () => {
  team = await seedTeam(stack.deps, { key: manyRequests });
  other = await seedTeam(stack.deps, { key: manyRequests });
});

interface Upload {
  method: string;
  url: string;
  headers: Record<string, string>;
  expiresAt: string;
}

const checked = (method: string, path: string, response: Awaited<ReturnType<typeof call>>) => {
  expectValidResponse(doc, { method, path, status: response.status, body: response.body });
  return response;
};

const declare = async (body: unknown, key = team.key) =>
  checked('POST', '/files', await call(stack.baseUrl, '/files', { key, method: 'POST', body }));

const read = async (fileId: string, key = team.key) =>
  checked('GET', `/files/${fileId}`, await call(stack.baseUrl, `/files/${encodeURIComponent(fileId)}`, { key }));

/** Declares a file of `bytes` as `contentType`; its id and how to upload it. */
const declared = async (contentType: string, bytes: Uint8Array, key = team.key) => {
  const response = await declare({ name: 'upload.bin', contentType, size: bytes.length }, key);
  expect(response.status).toBe(201);
  return { fileId: response.body.fileId as string, upload: response.body.upload as unknown as Upload };
};

/** Sends `bytes` exactly as the upload says (its method, URL and headers). */
const send = (upload: Upload, bytes: Uint8Array, headers: Record<string, string> = {}) => {
  const { 'content-length': _, ...rest } = upload.headers;
  // fetch sets content-length from the body: the declared size is what a correct client sends.
  return fetch(upload.url, { method: upload.method, headers: { ...rest, ...headers }, body: bytes });
};

/** Whether the file's object is in the bucket. */
const objectExists = async (teamId: string, fileId: string) => {
  try {
    await stack.deps.s3.send(
      new HeadObjectCommand({ Bucket: stack.resources.bucket, Key: uploadObjectKey(teamId, fileId) }),
    );
    return true;
  } catch {
    return false;
  }
};

const s3Code = async (response: Response) => /<Code>([^<]+)<\/Code>/.exec(await response.text())?.[1];

describe('POST /files then PUT then GET /files/{fileId}', () => {
  it('uploads a PNG through the presigned URL; the read finds it ready, with its type and size', async () => {
    const png = files.png(8, 6);
    const response = await declare({ name: 'cat.png', contentType: 'image/png', size: png.length });
    expect(response.status).toBe(201);
    const body = response.body as Record<string, unknown> & { upload: Upload };
    expect(body).toMatchObject({
      name: 'cat.png',
      contentType: 'image/png',
      size: png.length,
      state: 'awaiting_upload',
    });
    expect(body.fileId).toMatch(/^file_[0-9a-f-]{36}$/);
    expect(body.upload).toMatchObject({
      method: 'PUT',
      headers: { 'content-type': 'image/png', 'content-length': String(png.length) },
    });
    // The URL's lifetime and the file's, from the declaration.
    const createdAt = Date.parse(body.createdAt as string);
    expect(Date.parse(body.upload.expiresAt) - createdAt).toBe(uploadUrlSeconds * 1000);
    expect(Date.parse(body.expiresAt as string) - createdAt).toBe(uploadLifetimeSeconds * 1000);
    // Content type and length are signed: storage refuses any other.
    expect(new URL(body.upload.url).searchParams.get('X-Amz-SignedHeaders')).toBe('content-length;content-type;host');
    const fileId = body.fileId as string;

    expect((await read(fileId)).body).toMatchObject({ fileId, state: 'awaiting_upload' });
    expect((await send(body.upload, png)).status).toBe(200);
    // Concurrent reads settle it once, and agree.
    const [first, second] = await Promise.all([read(fileId), read(fileId)]);
    for (const answer of [first, second]) {
      expect(answer.status).toBe(200);
      expect(answer.body).toEqual({
        fileId,
        name: 'cat.png',
        contentType: 'image/png',
        size: png.length,
        state: 'ready',
        createdAt: body.createdAt,
        expiresAt: body.expiresAt,
      });
    }
    // The item keeps what the check read: the object's ETag and the image's dimensions; it expires with the file.
    const { Item } = await stack.deps.ddb.send(
      new GetCommand({ TableName: stack.resources.tableName, Key: uploadKey(team.teamId, fileId) }),
    );
    expect(Item).toMatchObject({ width: 8, height: 6, ttl: Math.floor(Date.parse(body.expiresAt as string) / 1000) });
    expect(Item?.etag).toMatch(/^"/);
    expect(await objectExists(team.teamId, fileId)).toBe(true);
  });

  it('accepts each content type of the allow-list with bytes of that type', async () => {
    // The other WebP and FBX forms than the sniffing test's.
    const samples = { ...files.oneOfEachType(), 'image/webp': files.webpLossless(), 'model/fbx': files.fbxAscii() };
    expect(Object.keys(samples).sort()).toEqual([...uploadContentTypes].sort());
    const states = await Promise.all(
      Object.entries(samples).map(async ([contentType, bytes]) => {
        const { fileId, upload } = await declared(contentType, bytes);
        expect((await send(upload, bytes)).status, contentType).toBe(200);
        return [contentType, (await read(fileId)).body.state];
      }),
    );
    expect(Object.fromEntries(states)).toEqual(Object.fromEntries(uploadContentTypes.map((t) => [t, 'ready'])));
  });
});

describe('bad input: each gets a clear 4xx or a rejected state, and nothing refused is kept', () => {
  it('refuses a zero-byte, an oversize, an unaccepted type and a path for a name: 422 naming the limits', async () => {
    const cases: [unknown, string][] = [
      [
        { name: 'a.png', contentType: 'image/png', size: 0 },
        'size must be a whole number of bytes from 1 to 104857600 (100 MiB)',
      ],
      [{ name: 'a.png', contentType: 'image/png', size: maxUploadBytes + 1 }, 'size must be a whole number'],
      [{ name: 'a.png', contentType: 'image/png', size: 1.5 }, 'size must be a whole number'],
      [{ name: 'a.bin', contentType: 'application/octet-stream', size: 10 }, 'contentType must be one of image/png'],
      [{ name: '../etc/passwd', contentType: 'text/plain', size: 10 }, 'name must be 1 to 255 characters'],
      [{ name: '', contentType: 'text/plain', size: 10 }, 'name must be 1 to 255 characters'],
      [{ name: 'x'.repeat(256), contentType: 'text/plain', size: 10 }, 'name must be 1 to 255 characters'],
    ];
    for (const [body, detail] of cases) {
      const response = await declare(body);
      expect(response.status, JSON.stringify(body)).toBe(422);
      expect(response.body.error).toContain(`File not accepted: ${detail}`);
      expect(response.body).toMatchObject({ maxBytes: maxUploadBytes, contentTypes: [...uploadContentTypes] });
    }
  });

  it('refuses a body that is not JSON or has a field of the wrong type: 400', async () => {
    for (const body of [
      '{',
      '[]',
      { name: 'a', contentType: 'text/plain', size: '12' },
      { contentType: 'text/plain', size: 3 },
    ]) {
      const response = await declare(body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.body.error).toMatch(/^Invalid request body: /);
    }
    expect((await declare('x'.repeat(5000))).status).toBe(413);
  });

  it('rejects a lying content type (PNG bytes declared audio/wav) and deletes its bytes', async () => {
    const png = files.png();
    const { fileId, upload } = await declared('audio/wav', png);
    expect((await send(upload, png)).status).toBe(200);
    expect((await read(fileId)).body).toMatchObject({
      state: 'rejected',
      reason: 'content is image/png, not the declared audio/wav',
    });
    expect(await objectExists(team.teamId, fileId)).toBe(false);
    // Settled once: a later read answers the same.
    expect((await read(fileId)).body).toMatchObject({ state: 'rejected' });
  });

  it('rejects a PNG bomb (a tiny PNG whose header claims 100000 × 100000) and deletes it', async () => {
    const bomb = files.pngBomb();
    const { fileId, upload } = await declared('image/png', bomb);
    expect((await send(upload, bomb)).status).toBe(200);
    const { body } = await read(fileId);
    expect(body).toMatchObject({ state: 'rejected' });
    expect(body.reason).toMatch(/^image of 100000 × 100000 pixels is above the limit of 16777216 pixels/);
    expect(await objectExists(team.teamId, fileId)).toBe(false);
  });

  it('refuses at storage another content type, a longer or a shorter body; the file stays awaiting_upload', async () => {
    const png = files.png();
    const { fileId, upload } = await declared('image/png', png);
    expect(await s3Code(await send(upload, png, { 'content-type': 'image/jpeg' }))).toBe('SignatureDoesNotMatch');
    expect(await s3Code(await send(upload, new Uint8Array([...png, 0])))).toBe('SignatureDoesNotMatch');
    expect(await s3Code(await send(upload, png.subarray(1)))).toBe('SignatureDoesNotMatch');
    expect(await objectExists(team.teamId, fileId)).toBe(false);
    expect((await read(fileId)).body).toMatchObject({ state: 'awaiting_upload' });
    // The URL still takes the declared bytes.
    expect((await send(upload, png)).status).toBe(200);
    expect((await read(fileId)).body).toMatchObject({ state: 'ready' });
  });

  it('rejects an object whose size is not the declared one, however it got there', async () => {
    const { fileId } = await declared('text/plain', files.plainText());
    // Written past the presigned URL (as only the service's own credentials could).
    await stack.deps.s3.send(
      new PutObjectCommand({
        Bucket: stack.resources.bucket,
        Key: uploadObjectKey(team.teamId, fileId),
        Body: new TextEncoder().encode('short'),
      }),
    );
    expect((await read(fileId)).body).toMatchObject({
      state: 'rejected',
      reason: `size is 5 bytes, not the declared ${files.plainText().length}`,
    });
    expect(await objectExists(team.teamId, fileId)).toBe(false);
  });

  it('refuses an upload after its URL expired, and the file then reads rejected', async () => {
    // A team of its own: its key's rate counter sees this test's clock alone.
    const late = await seedTeam(stack.deps, { key: manyRequests });
    offsetMs = -(uploadUrlSeconds + 60) * 1000;
    const png = files.png();
    const { fileId, upload } = await declared('image/png', png, late.key);
    offsetMs = 0;
    const refused = await send(upload, png);
    expect(refused.status).toBe(403);
    expect(await refused.text()).toContain('<Message>Request has expired</Message>');
    expect(await objectExists(late.teamId, fileId)).toBe(false);
    const { body } = await read(fileId, late.key);
    expect(body).toMatchObject({ state: 'rejected' });
    expect(body.reason).toMatch(/^upload expired: nothing was sent before /);
  });

  it("answers another team's fileId exactly as an unknown one, and a malformed one the same", async () => {
    const png = files.png();
    const { fileId, upload } = await declared('image/png', png);
    expect((await send(upload, png)).status).toBe(200);
    const foreign = await read(fileId, other.key);
    const unknown = await read('file_8c6f2a1e-3b5d-4c7e-9f10-112233445566', other.key);
    for (const answer of [foreign, unknown, await read('nope', other.key), await read(`file_${'a'.repeat(4000)}`)]) {
      expect(answer.status).toBe(404);
      expect(answer.body).toEqual({ error: 'File not found' });
    }
    // The other team's look settled nothing: the file is still the owner's to settle.
    const { Item } = await stack.deps.ddb.send(
      new GetCommand({ TableName: stack.resources.tableName, Key: uploadKey(team.teamId, fileId) }),
    );
    expect(Item?.state).toBe('awaiting_upload');
  });

  it('asks the scopes: runs:create to declare, runs:read to read', async () => {
    const reader = await seedTeam(stack.deps, { key: { ...manyRequests, scopes: ['runs:read'] } });
    const response = await declare({ name: 'a.txt', contentType: 'text/plain', size: 3 }, reader.key);
    expect(response.status).toBe(403);
    expect((await call(stack.baseUrl, '/files', { method: 'POST', body: {} })).status).toBe(401);
  });
});
