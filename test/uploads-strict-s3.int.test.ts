/**
 * Uploads against a local S3 as strict as S3 is with our functions' grants: they may not list the
 * bucket, so S3 answers a missing key with 403 AccessDenied, not 404 (local/s3-presign-guard.ts,
 * `listBucket: false`). Through the local API and the real handlers, each place the store looks for
 * an object that is not there answers what docs/api.md says, never 500: a file read before its
 * bytes arrive, an upload never sent, and a run naming an upload that expired or whose bytes are gone.
 */
import { DeleteObjectCommand, HeadObjectCommand } from '@aws-sdk/client-s3';
import { beforeAll, describe, expect, it } from 'vitest';
import { uploadLifetimeSeconds, uploadUrlSeconds } from '../functions/app/uploads.ts';
import { buildOpenApiDocument } from '../functions/docs/openapi.ts';
import { uploadObjectKey } from '../functions/store/uploads.ts';
import { expectValidResponse } from './support/openapi-validator.ts';
import { call, createWorkflow, type SeededTeam, seedUnthrottledTeam, stackPerFile } from './support/stack.ts';
import * as files from './support/upload-files.ts';

const doc = buildOpenApiDocument();

/** The service's clock runs `offsetMs` from the wall clock: a file declared in the past has an expired URL. */
let offsetMs = 0;
const { stack } = stackPerFile({ now: () => new Date(Date.now() + offsetMs) });

const upscaleSteps = [
  { key: 'photo', type: 'ImageLoader', config: { apiInputKey: 'photo' } },
  { key: 'up', type: 'Upscaler', config: { scale: 4 }, inputs: ['photo'] },
  { key: 'show', type: 'ImageGallery', inputs: ['up'] },
];

let team: SeededTeam;
let workflowId: string;
beforeAll(async () => {
  team = await seedUnthrottledTeam(stack.deps);
  workflowId = await createWorkflow(stack, team, upscaleSteps);
});

interface Upload {
  method: string;
  url: string;
  headers: Record<string, string>;
}

/** Declares a PNG `secondsAgo` in the past; its id, bytes and upload. */
const declare = async (secondsAgo = 0) => {
  const png = files.png();
  offsetMs = -secondsAgo * 1000;
  const response = await call(stack.baseUrl, '/files', {
    key: team.key,
    method: 'POST',
    body: { name: 'cat.png', contentType: 'image/png', size: png.length },
  });
  offsetMs = 0;
  expect(response.status).toBe(201);
  return { fileId: response.body.fileId as string, png, upload: response.body.upload as unknown as Upload };
};

const send = ({ method, url, headers }: Upload, bytes: Uint8Array) => {
  const { 'content-length': _, ...rest } = headers;
  return fetch(url, { method, headers: rest, body: bytes });
};

const read = async (fileId: string) => {
  const response = await call(stack.baseUrl, `/files/${fileId}`, { key: team.key });
  expectValidResponse(doc, { method: 'GET', path: `/files/${fileId}`, status: response.status, body: response.body });
  return response;
};

const startRun = async (fileId: string) => {
  const path = `/workflows/${workflowId}/runs`;
  const response = await call(stack.baseUrl, path, {
    key: team.key,
    method: 'POST',
    body: { inputs: { photo: fileId } },
  });
  expectValidResponse(doc, { method: 'POST', path, status: response.status, body: response.body });
  return response;
};

/** How the local S3 answers the functions' HEAD of the file's object: its status. */
const headStatus = async (fileId: string) => {
  try {
    await stack.deps.s3.send(
      new HeadObjectCommand({ Bucket: stack.resources.bucket, Key: uploadObjectKey(team.teamId, fileId) }),
    );
    return 200;
  } catch (error) {
    return (error as { $metadata: { httpStatusCode?: number } }).$metadata.httpStatusCode;
  }
};

describe('a missing upload against S3 that answers it 403 (no s3:ListBucket)', () => {
  it('reads awaiting_upload before the bytes arrive, then ready once they have', async () => {
    const { fileId, png, upload } = await declare();
    // The local S3 answers the functions as S3 does: the object is missing, and they may not list.
    expect(await headStatus(fileId)).toBe(403);
    const before = await read(fileId);
    expect(before.status).toBe(200);
    expect(before.body).toMatchObject({ fileId, state: 'awaiting_upload' });
    expect((await send(upload, png)).status).toBe(200);
    expect((await read(fileId)).body).toMatchObject({ fileId, state: 'ready' });
  });

  it('reads rejected (upload expired) once the upload URL has expired with nothing sent', async () => {
    const { fileId } = await declare(uploadUrlSeconds + 60);
    expect(await headStatus(fileId)).toBe(403);
    const { status, body } = await read(fileId);
    expect(status).toBe(200);
    expect(body).toMatchObject({ fileId, state: 'rejected' });
    expect(body.reason).toMatch(/^upload expired: nothing was sent before /);
  });

  it('refuses a run naming an upload never sent, its URL expired: 422, the file rejected', async () => {
    const { fileId } = await declare(uploadUrlSeconds + 60);
    const { status, body } = await startRun(fileId);
    expect(status).toBe(422);
    expect(body).toMatchObject({ error: 'Input file not usable: photo', key: 'photo' });
    expect(body.reason).toMatch(new RegExp(`^file ${fileId} was rejected: upload expired: nothing was sent before `));
  });

  it('refuses a run naming a ready upload whose bytes are gone: 422 not found', async () => {
    const { fileId, png, upload } = await declare();
    expect((await send(upload, png)).status).toBe(200);
    expect((await read(fileId)).body).toMatchObject({ state: 'ready' });
    // As the bucket's lifecycle rule deletes an upload's bytes.
    await stack.deps.s3.send(
      new DeleteObjectCommand({ Bucket: stack.resources.bucket, Key: uploadObjectKey(team.teamId, fileId) }),
    );
    const { status, body } = await startRun(fileId);
    expect(status).toBe(422);
    expect(body).toEqual({ error: 'Input file not usable: photo', key: 'photo', reason: `file ${fileId} not found` });
  });

  it('refuses a run naming an upload past its lifetime: 422 not found, and the file reads 404', async () => {
    const { fileId, png, upload } = await declare(uploadLifetimeSeconds + 60);
    // Its URL expired long ago: storage refuses the bytes as S3 does.
    expect((await send(upload, png)).status).toBe(403);
    expect((await read(fileId)).status).toBe(404);
    const { status, body } = await startRun(fileId);
    expect(status).toBe(422);
    expect(body).toEqual({ error: 'Input file not usable: photo', key: 'photo', reason: `file ${fileId} not found` });
  });
});
