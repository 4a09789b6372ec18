/**
 * Downloads carry `X-Content-Type-Options: nosniff` when the stage's edge serves files: the API
 * gives every presigned GET on the edge's files host (`filesBaseUrl`), whose distribution forwards
 * the path and whole query to the bucket's host and sets nosniff (lib/edge-stack.ts). Here the
 * local files front (local/files-edge.ts) stands in for the distribution and the presign guard for
 * S3: the URL signed for the bucket's host passes S3's check through the front, an altered one is
 * still refused, and without the edge the link leads to the bucket's own host, which sends no
 * nosniff (S3 cannot).
 */
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { beforeAll, describe, expect, it } from 'vitest';
import { fileLinkFor } from '../functions/app/file-links.ts';
import type { Deps } from '../functions/deps.ts';
import { type LocalApi, startLocalApi } from '../local/api-gateway.ts';
import { type FilesEdge, startFilesEdge } from '../local/files-edge.ts';
import { seedTeam, stackPerFile } from './support/stack.ts';

const { stack, closers } = stackPerFile();
const html = new TextEncoder().encode('<html><body><script>alert(document.domain)</script></body></html>');

let edge: FilesEdge;
let edgeApi: LocalApi;
let edgeDeps: Deps;
beforeAll(async () => {
  edge = await startFilesEdge({ upstream: stack.resources.s3Endpoint });
  // Its own API, whose address its links name (the local API sets it when none is given).
  const { publicBaseUrl: _, ...deps } = stack.deps;
  edgeDeps = { ...deps, filesBaseUrl: edge.url };
  edgeApi = await startLocalApi({ deps: edgeDeps, port: 0, host: '127.0.0.1' });
  closers.push(
    () => edge.stop(),
    () => edgeApi.close(),
  );
});

/** A team's object of `contentType`, and where its file link (on `deps`) redirects. */
const linkTarget = async (deps: Deps, contentType: string) => {
  const team = await seedTeam(stack.deps, { credits: 1 });
  const key = `teams/${team.teamId}/runs/legacy/step/page.html`;
  await stack.deps.s3.send(
    new PutObjectCommand({ Bucket: stack.deps.bucket, Key: key, Body: html, ContentType: contentType }),
  );
  const { url } = await fileLinkFor(deps, team.teamId, key);
  const link = await fetch(url, { redirect: 'manual' });
  expect(link.status).toBe(302);
  return new URL(link.headers.get('location') ?? '');
};

describe('downloads through the edge carry nosniff', { timeout: 60_000 }, () => {
  it("with the edge's files host, the link leads there and the download says nosniff, attached", async () => {
    const target = await linkTarget(edgeDeps, 'text/html');
    expect(target.origin).toBe(edge.url);
    const download = await fetch(target);
    expect(download.status).toBe(200);
    expect(download.headers.get('x-content-type-options')).toBe('nosniff');
    expect(download.headers.get('content-type')).toBe('application/octet-stream');
    expect(download.headers.get('content-disposition')).toBe('attachment; filename="page.html"');
    expect(new Uint8Array(await download.arrayBuffer())).toEqual(html);
  });

  it('S3 still checks the signature behind the front: an altered URL is refused', async () => {
    const target = await linkTarget(edgeDeps, 'text/plain');
    expect(target.origin).toBe(edge.url);
    target.searchParams.set('response-content-type', 'text/html');
    const refused = await fetch(target);
    expect(refused.status).toBe(403);
    expect(await refused.text()).toContain('<Code>SignatureDoesNotMatch</Code>');
  });

  it("without the edge, the link leads to the bucket's own host, which sends no nosniff", async () => {
    const target = await linkTarget(stack.deps, 'text/html');
    expect(target.origin).toBe(new URL(stack.resources.s3Endpoint).origin);
    const download = await fetch(target);
    expect(download.status).toBe(200);
    expect(download.headers.get('x-content-type-options')).toBeNull();
    expect(download.headers.get('content-disposition')).toBe('attachment; filename="page.html"');
  });
});
