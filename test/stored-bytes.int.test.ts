/**
 * Stored bytes are bounded and paid for, through the real path: uploads PUT to the presigned URL
 * on the strict local S3, runs started, deferred, cancelled and resumed over HTTP, the real step
 * executor and dispatcher. What is measured is what the bucket holds under the team's prefix.
 */
import './support/test-providers.ts';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import type { Deps } from '../functions/deps.ts';
import { maxFileInputBytes, maxFileInputs } from '../functions/domain/stored-bytes.ts';
import { StepFailedError } from '../functions/nodes/executors/types.ts';
import { setLiveMultiplier } from '../functions/store/price-multiplier.ts';
import { readStorageUsage, setStorageQuota } from '../functions/store/stored-bytes.ts';
import { api, drainSteps, getRunCall, stepHandler } from './support/runs.ts';
import { call, createWorkflow, type SeededTeam, seedUnthrottledTeam, stackPerFile } from './support/stack.ts';
import * as files from './support/upload-files.ts';

const { stack } = stackPerFile();

/** Sends `bytes` as an upload answer says: its method, URL and headers (fetch sets the length). */
const upload = async (owner: SeededTeam, name: string, bytes: Uint8Array) => {
  const declared = await call(stack.baseUrl, '/files', {
    key: owner.key,
    method: 'POST',
    body: { name, contentType: 'image/png', size: bytes.length },
  });
  expect(declared.status, JSON.stringify(declared.body)).toBe(201);
  const { method, url, headers } = declared.body.upload as {
    method: string;
    url: string;
    headers: Record<string, string>;
  };
  const { 'content-length': _, ...rest } = headers;
  expect((await fetch(url, { method, headers: rest, body: bytes })).status).toBe(200);
  return declared.body.fileId as string;
};

/** The objects the bucket holds under the team's prefix (`teams/<team>/`, `prefix` below it): their count and bytes. */
const held = async (teamId: string, prefix = '') => {
  let count = 0;
  let bytes = 0;
  let token: string | undefined;
  do {
    const page = await stack.deps.s3.send(
      new ListObjectsV2Command({
        Bucket: stack.resources.bucket,
        Prefix: `teams/${teamId}/${prefix}`,
        ContinuationToken: token,
      }),
    );
    for (const object of page.Contents ?? []) {
      count += 1;
      bytes += object.Size ?? 0;
    }
    token = page.NextContinuationToken;
  } while (token);
  return { count, bytes };
};

/** `n` ImageLoaders, each fed by its own input key (`photo0`…). */
const loaders = (n: number) =>
  Array.from({ length: n }, (_, i) => ({ key: `l${i}`, type: 'ImageLoader', config: { apiInputKey: `photo${i}` } }));
const naming = (n: number, fileId: string) =>
  Object.fromEntries(Array.from({ length: n }, (_, i) => [`photo${i}`, fileId]));

describe('input-file copies', () => {
  const keys = 20;
  const png = files.png(16, 16);

  it('a deferred-and-cancelled request naming one upload under 20 input keys leaves no copy', async () => {
    await setLiveMultiplier(stack.deps, 3);
    const owner = await seedUnthrottledTeam(stack.deps);
    const workflowId = await createWorkflow(stack, owner, loaders(keys));
    const fileId = await upload(owner, 'one.png', png);
    const before = await held(owner.teamId);
    const deferred = await api(stack.baseUrl, 'POST', `/workflows/${workflowId}/runs`, {
      key: owner.key,
      body: { inputs: naming(keys, fileId), defer: true, maxMultiplier: 1 },
    });
    expect(deferred.status, JSON.stringify(deferred.body)).toBe(202);
    const whileWaiting = await held(owner.teamId);
    const cancelled = await api(stack.baseUrl, 'DELETE', `/deferred-runs/${deferred.body.deferredJobId}`, {
      key: owner.key,
    });
    expect(cancelled.status).toBe(200);
    const after = await held(owner.teamId);
    const figure = { waiting: whileWaiting.bytes - before.bytes, afterCancel: after.bytes - before.bytes };
    console.log(`stored per deferred-and-cancelled request (${keys} keys, one ${png.length}-byte upload):`, figure);
    expect(figure).toEqual({ waiting: 0, afterCancel: 0 });
  });

  it('a run naming one upload under 20 input keys holds one copy', async () => {
    const owner = await seedUnthrottledTeam(stack.deps);
    const workflowId = await createWorkflow(stack, owner, loaders(keys));
    const fileId = await upload(owner, 'one.png', png);
    const started = await api(stack.baseUrl, 'POST', `/workflows/${workflowId}/runs`, {
      key: owner.key,
      body: { inputs: naming(keys, fileId) },
    });
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    expect(await held(owner.teamId, 'inputs/')).toEqual({ count: 1, bytes: png.length });
  });
});

/** The real step executor, whose node `failing` fails once as a refused provider call does. */
const handlerFailing = (deps: Deps, failing: string, fails = { left: 1 }) =>
  stepHandler(deps, () => async (context) => {
    if (context.node.id === failing && fails.left > 0) {
      fails.left -= 1;
      throw new StepFailedError('the provider refused the request');
    }
    return deps.executors(context.node.type)(context);
  });

describe('a resume', () => {
  it('shares the original’s input copies and carried files: it stores no new byte', async () => {
    const owner = await seedUnthrottledTeam(stack.deps);
    const steps = [
      { key: 'photo', type: 'ImageLoader', config: { apiInputKey: 'photo' } },
      { key: 'again', type: 'ImageLoader', config: { apiInputKey: 'again' } },
      { key: 'up', type: 'Upscaler', config: { scale: 2 }, inputs: ['photo'] },
      { key: 'third', type: 'PromptBuilder', config: { template: 'x' } },
      { key: 'show', type: 'ImageGallery', inputs: ['up', 'again'] },
    ];
    const workflowId = await createWorkflow(stack, owner, steps);
    const fileId = await upload(owner, 'r.png', files.png(4, 4));
    const started = await api(stack.baseUrl, 'POST', `/workflows/${workflowId}/runs`, {
      key: owner.key,
      body: { inputs: { photo: fileId, again: fileId } },
    });
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    const jobId = started.body.jobId as string;
    await drainSteps(stack.deps, handlerFailing(stack.deps, 'show'));
    expect((await getRunCall(stack.baseUrl, owner.key, jobId)).body.status).toBe('failed');
    const before = await held(owner.teamId);
    const resumed = await api(stack.baseUrl, 'POST', `/runs/${jobId}/resume`, { key: owner.key });
    expect(resumed.status, JSON.stringify(resumed.body)).toBe(200);
    const newJobId = resumed.body.jobId as string;
    const afterResume = await held(owner.teamId);
    console.log(
      'bytes stored by a resume:',
      afterResume.bytes - before.bytes,
      'objects:',
      afterResume.count - before.count,
    );
    expect(afterResume).toEqual(before);
    await drainSteps(stack.deps, handlerFailing(stack.deps, 'none'));
    const read = await getRunCall(stack.baseUrl, owner.key, newJobId);
    expect(read.body.status).toBe('completed');
    // The shared files are linked and open.
    const show = (read.body.output as { node_id: string; result: { url: string }[] }[]).find(
      (o) => o.node_id === 'show',
    );
    const links = (show?.result ?? []).map((r) => r.url);
    expect(links.length).toBe(2);
    for (const link of links) expect((await fetch(link)).status).toBe(200);
  });
});

describe('the cap on file inputs', () => {
  it('refuses 21 input keys naming one upload with a 422 naming the cap, before reading any', async () => {
    const owner = await seedUnthrottledTeam(stack.deps);
    const workflowId = await createWorkflow(stack, owner, loaders(maxFileInputs + 1));
    const fileId = await upload(owner, 'one.png', files.png(2, 2));
    const before = await held(owner.teamId);
    const refused = await api(stack.baseUrl, 'POST', `/workflows/${workflowId}/runs`, {
      key: owner.key,
      body: { inputs: naming(maxFileInputs + 1, fileId), defer: true, maxMultiplier: 1 },
    });
    expect(refused.status).toBe(422);
    expect(refused.body).toEqual({
      error: 'Too many file inputs',
      fileInputs: maxFileInputs + 1,
      maxFileInputs,
      fileInputBytes: 0,
      maxFileInputBytes,
    });
    expect(await held(owner.teamId)).toEqual(before);
  });
});

describe('the team’s storage quota', () => {
  it('counts uploads, input copies and outputs; refuses an upload and a run start past it with a 409; readable', async () => {
    const owner = await seedUnthrottledTeam(stack.deps);
    const png = files.png(8, 8);
    expect(await readStorageUsage(stack.deps, owner.teamId)).toMatchObject({ usedBytes: 0 });
    const fileId = await upload(owner, 'a.png', png);
    expect((await readStorageUsage(stack.deps, owner.teamId)).usedBytes).toBe(png.length);

    const workflowId = await createWorkflow(stack, owner, [
      { key: 'photo', type: 'ImageLoader', config: { apiInputKey: 'photo' } },
      { key: 'up', type: 'Upscaler', config: { scale: 2 }, inputs: ['photo'] },
    ]);
    const started = await api(stack.baseUrl, 'POST', `/workflows/${workflowId}/runs`, {
      key: owner.key,
      body: { inputs: { photo: fileId } },
    });
    expect(started.status).toBe(200);
    await drainSteps(stack.deps, handlerFailing(stack.deps, 'none'));
    // The upload, its one copy, and the upscaled output: exactly what the bucket holds for the team.
    const objects = await held(owner.teamId);
    const usage = await readStorageUsage(stack.deps, owner.teamId);
    expect(usage.usedBytes).toBe(png.length + objects.bytes);

    // A quota of what it holds now: the next upload and the next run start are refused.
    await setStorageQuota(stack.deps, owner.teamId, usage.usedBytes);
    const declared = await call(stack.baseUrl, '/files', {
      key: owner.key,
      method: 'POST',
      body: { name: 'b.png', contentType: 'image/png', size: 100 },
    });
    expect(declared.status).toBe(409);
    expect(declared.body).toEqual({
      error: 'Storage quota reached',
      quotaBytes: usage.usedBytes,
      usedBytes: usage.usedBytes,
      neededBytes: 100,
    });
    const refused = await api(stack.baseUrl, 'POST', `/workflows/${workflowId}/runs`, {
      key: owner.key,
      body: { inputs: { photo: fileId } },
    });
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ error: 'Storage quota reached', neededBytes: 0 });

    // The team reads it.
    const read = await api(stack.baseUrl, 'GET', '/storage', { key: owner.key });
    expect(read.status).toBe(200);
    expect(read.body).toEqual({ usedBytes: usage.usedBytes, quotaBytes: usage.usedBytes });
  });

  it('of declarations racing for the last bytes, exactly those that fit pass; none is refused for another', async () => {
    const owner = await seedUnthrottledTeam(stack.deps);
    await setStorageQuota(stack.deps, owner.teamId, 250);
    const statuses = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        call(stack.baseUrl, '/files', {
          key: owner.key,
          method: 'POST',
          body: { name: `f${i}.png`, contentType: 'image/png', size: 100 },
        }).then((r) => r.status),
      ),
    );
    expect(statuses.sort()).toEqual([201, 201, 409, 409, 409, 409]);
    expect(await readStorageUsage(stack.deps, owner.teamId)).toEqual({ usedBytes: 200, quotaBytes: 250 });
  });

  it('forgets bytes whose expiry day has begun, with no write', async () => {
    const owner = await seedUnthrottledTeam(stack.deps);
    await upload(owner, 'a.png', files.png(3, 3));
    const later = { ...stack.deps, now: () => new Date(Date.now() + 3 * 86_400_000) };
    expect((await readStorageUsage(later, owner.teamId)).usedBytes).toBe(0);
  });
});
