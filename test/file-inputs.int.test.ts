/**
 * Files as run inputs (item 2): a loader step's `config.apiInputKey` fed a `fileId` or an
 * https URL, through the local API and the real handlers: the bytes PUT with fetch to the presigned
 * URL on the local S3 (behind the presign guard), the run started over HTTP, its steps run by the
 * real step executor on the sandbox provider, its output read through its file link.
 */
import { randomUUID } from 'node:crypto';
import { DeleteObjectCommand, GetObjectCommand, HeadObjectCommand } from '@aws-sdk/client-s3';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildOpenApiDocument } from '../functions/docs/openapi.ts';
import { readMediaMark, readPngMark } from '../functions/nodes/media/marks.ts';
import { decodePng } from '../functions/nodes/media/png.ts';
import { getDeferredRun } from '../functions/store/deferred-runs.ts';
import { setLiveMultiplier } from '../functions/store/price-multiplier.ts';
import { uploadObjectKey } from '../functions/store/uploads.ts';
import { loopbackServer } from './support/loopback-server.ts';
import { expectValidResponse } from './support/openapi-validator.ts';
import { dispatcherHandler, drainSteps, ledgerOf, realStepHandler, runParts } from './support/runs.ts';
import {
  call,
  createWorkflow,
  type SeededTeam,
  seedUnthrottledTeam,
  stackPerFile,
  testExecutors,
} from './support/stack.ts';
import * as files from './support/upload-files.ts';

const doc = buildOpenApiDocument();

// Loopback (the file server below, plain http) passes as on the local default; private addresses do not.
const { stack } = stackPerFile({ allowLoopback: true, executors: testExecutors({ ALLOW_PRIVATE_CALLBACKS: '1' }) });

/** ImageLoader (its apiInputKey `photo`) → Upscaler ×4 → ImageGallery. */
const upscaleSteps = [
  { key: 'photo', type: 'ImageLoader', config: { apiInputKey: 'photo' } },
  { key: 'up', type: 'Upscaler', config: { scale: 4 }, inputs: ['photo'] },
  { key: 'show', type: 'ImageGallery', inputs: ['up'] },
];

/** What the file server below answers, and how often each path was asked for. */
const served: Record<string, { type: string; body: Uint8Array }> = {
  '/cat.png': { type: 'image/png', body: files.png(5, 3) },
  // An image by its header, which its bytes are not.
  '/fake.png': { type: 'image/png', body: files.plainText() },
};
const hits: Record<string, number> = {};
const server = loopbackServer((request, response) => {
  const path = request.url ?? '';
  hits[path] = (hits[path] ?? 0) + 1;
  const file = served[path];
  if (!file) {
    response.writeHead(404).end();
    return;
  }
  response.writeHead(200, { 'content-type': file.type, 'content-length': String(file.body.length) });
  response.end(file.body);
});

let team: SeededTeam;
let other: SeededTeam;
beforeAll(async () => {
  team = await seedUnthrottledTeam(stack.deps);
  other = await seedUnthrottledTeam(stack.deps);
});

interface Upload {
  method: string;
  url: string;
  headers: Record<string, string>;
}

/** Sends `bytes` as an upload answer says: its method, URL and headers (fetch sets the length). */
const send = async ({ method, url, headers }: Upload, bytes: Uint8Array) => {
  const { 'content-length': _, ...rest } = headers;
  expect((await fetch(url, { method, headers: rest, body: bytes })).status).toBe(200);
};

/** Declares a file, and sends its bytes as the answer says unless `sendBytes` is false; its id and upload. */
const declareAndSend = async (
  owner: SeededTeam,
  name: string,
  contentType: string,
  bytes: Uint8Array,
  sendBytes = true,
) => {
  const declared = await call(stack.baseUrl, '/files', {
    key: owner.key,
    method: 'POST',
    body: { name, contentType, size: bytes.length },
  });
  expect(declared.status).toBe(201);
  const upload = declared.body.upload as unknown as Upload;
  if (sendBytes) await send(upload, bytes);
  return { fileId: declared.body.fileId as string, upload };
};

/** Declares a file, and sends its bytes as the answer says unless `sendBytes` is false; its id. */
const upload = async (owner: SeededTeam, name: string, contentType: string, bytes: Uint8Array, sendBytes = true) =>
  (await declareAndSend(owner, name, contentType, bytes, sendBytes)).fileId;

const startRun = async (owner: SeededTeam, workflowId: string, body: Record<string, unknown>) => {
  const response = await call(stack.baseUrl, `/workflows/${workflowId}/runs`, { key: owner.key, method: 'POST', body });
  const path = `/workflows/${workflowId}/runs`;
  expectValidResponse(doc, { method: 'POST', path, status: response.status, body: response.body });
  return response;
};

const runToEnd = async (owner: SeededTeam, jobId: string) => {
  await drainSteps(stack.deps, realStepHandler(stack.deps));
  const run = await call(stack.baseUrl, `/runs/${jobId}`, { key: owner.key });
  expect(run.status).toBe(200);
  return run.body;
};

/** The bytes of a run's output file, through its file link (a 302 to the storage URL). */
const outputImage = async (body: Record<string, unknown>) => {
  const [show] = body.output as { node_id: string; result: { url: string }[] }[];
  const link = show?.result[0]?.url ?? '';
  const response = await fetch(link);
  expect(response.status).toBe(200);
  return new Uint8Array(await response.arrayBuffer());
};

const objectBytes = async (key: string) => {
  const { Body } = await stack.deps.s3.send(new GetObjectCommand({ Bucket: stack.resources.bucket, Key: key }));
  return (await Body?.transformToByteArray()) ?? new Uint8Array();
};

const uploadExists = async (owner: SeededTeam, fileId: string) => {
  try {
    await stack.deps.s3.send(
      new HeadObjectCommand({ Bucket: stack.resources.bucket, Key: uploadObjectKey(owner.teamId, fileId) }),
    );
    return true;
  } catch {
    return false;
  }
};

const deleteUpload = (owner: SeededTeam, fileId: string) =>
  stack.deps.s3.send(
    new DeleteObjectCommand({ Bucket: stack.resources.bucket, Key: uploadObjectKey(owner.teamId, fileId) }),
  );

describe('a fileId as a run input', () => {
  it('runs ImageLoader → Upscaler on the uploaded PNG: the output is the upload ×4, AI-marked; the loader’s is not', async () => {
    const workflowId = await createWorkflow(stack, team, upscaleSteps);
    // Never read before the run: the start checks the bytes that arrived.
    const fileId = await upload(team, 'cat photo.png', 'image/png', files.png(8, 8));
    const started = await startRun(team, workflowId, { inputs: { photo: fileId } });
    expect(started.status).toBe(200);
    const jobId = started.body.jobId as string;

    // The run holds its own copy: the upload's object deleted after the start changes nothing.
    await deleteUpload(team, fileId);
    const body = await runToEnd(team, jobId);
    expect(body.status).toBe('completed');
    const image = await outputImage(body);
    expect(decodePng(image)).toMatchObject({ width: 32, height: 32 });
    expect(readPngMark(image)).not.toBeNull();

    const { run, steps } = await runParts(stack.deps, jobId);
    const held = (run?.inputFiles as Record<string, { key: string }> | undefined)?.photo;
    expect(held).toEqual({
      kind: 'file',
      key: `teams/${team.teamId}/inputs/${jobId}/${fileId}/cat_photo.png`,
      name: 'cat photo.png',
      contentType: 'image/png',
      bytes: files.png(8, 8).length,
      availability: 'ready',
    });
    // The loader's output is the held copy itself: the caller's bytes, unmarked, in object and metadata.
    expect(steps.get('photo')?.outputs).toEqual({ image: held });
    const loaded = await objectBytes(held?.key ?? '');
    expect(loaded).toEqual(files.png(8, 8));
    expect(readMediaMark(loaded)).toBeNull();
    const head = await stack.deps.s3.send(
      new HeadObjectCommand({ Bucket: stack.resources.bucket, Key: held?.key ?? '' }),
    );
    expect(head).toMatchObject({ ContentType: 'image/png', Metadata: { 'ai-generated': 'false' } });
  });

  it('copies a deferred run’s upload when it is dispatched, not before; one gone by then expires it', async () => {
    await setLiveMultiplier(stack.deps, 1);
    const workflowId = await createWorkflow(stack, team, upscaleSteps);
    const fileId = await upload(team, 'later.png', 'image/png', files.png(6, 4));
    const accepted = await startRun(team, workflowId, { inputs: { photo: fileId }, defer: true, maxMultiplier: 1 });
    expect(accepted.status).toBe(202);
    const deferredJobId = accepted.body.deferredJobId as string;
    const deferred = await getDeferredRun(stack.deps, team.teamId, deferredJobId);
    expect(deferred.inputFiles).toEqual({});
    expect(deferred.inputUploads.photo).toMatchObject({ fileId, name: 'later.png', contentType: 'image/png' });

    const report = await dispatcherHandler(stack.deps)();
    const jobId = report.dispatched.find((d) => d.deferredJobId === deferredJobId)?.jobId ?? '';
    expect(jobId).not.toBe('');
    const { run } = await runParts(stack.deps, jobId);
    expect((run?.inputFiles as Record<string, { key: string }> | undefined)?.photo?.key).toBe(
      `teams/${team.teamId}/inputs/${jobId}/${fileId}/later.png`,
    );
    const body = await runToEnd(team, jobId);
    expect(body.status).toBe('completed');
    expect(decodePng(await outputImage(body))).toMatchObject({ width: 24, height: 16 });

    // An upload deleted while its deferred run waited: the dispatch cannot copy it, so the run expires.
    const gone = await upload(team, 'gone.png', 'image/png', files.png(6, 4));
    const waiting = await startRun(team, workflowId, { inputs: { photo: gone }, defer: true, maxMultiplier: 1 });
    await deleteUpload(team, gone);
    const next = await dispatcherHandler(stack.deps)();
    expect(next.expired).toContain(waiting.body.deferredJobId);
  });

  it('runs an agent’s workflow with a fileId as well', async () => {
    const owner = await seedUnthrottledTeam(stack.deps);
    await createWorkflow(stack, owner, upscaleSteps);
    const fileId = await upload(owner, 'agent.png', 'image/png', files.png(2, 3));
    const started = await call(stack.baseUrl, `/agents/${owner.agentId}/runs`, {
      key: owner.key,
      method: 'POST',
      body: { inputs: { photo: fileId } },
    });
    expect(started.status).toBe(200);
    const body = await runToEnd(owner, started.body.jobId as string);
    expect(body.status).toBe('completed');
    expect(decodePng(await outputImage(body))).toMatchObject({ width: 8, height: 12 });
  });
});

describe('a run input that cannot be used: 422 naming its key, nothing held', () => {
  let workflowId: string;
  beforeAll(async () => {
    workflowId = await createWorkflow(stack, team, upscaleSteps);
  });

  /** Starts the run with `photo` set to `value`: the 422, its reason, and the team's ledger unchanged. */
  const refused = async (value: string, reason: string | RegExp, agentOf?: SeededTeam) => {
    const owner = agentOf ?? team;
    const before = await ledgerOf(stack.deps, owner.teamId);
    const response = agentOf
      ? await call(stack.baseUrl, `/agents/${agentOf.agentId}/runs`, {
          key: agentOf.key,
          method: 'POST',
          body: { inputs: { photo: value } },
        })
      : await startRun(owner, workflowId, { inputs: { photo: value } });
    expect(response.status, value).toBe(422);
    expect(response.body).toEqual({ error: 'Input file not usable: photo', key: 'photo', reason: expect.any(String) });
    if (typeof reason === 'string') expect(response.body.reason).toBe(reason);
    else expect(response.body.reason).toMatch(reason);
    expect(await ledgerOf(stack.deps, owner.teamId)).toEqual(before);
  };

  it('an unknown fileId, and another team’s, read alike', async () => {
    const unknown = `file_${randomUUID()}`;
    await refused(unknown, `file ${unknown} not found`);
    const theirs = await upload(other, 'theirs.png', 'image/png', files.png());
    expect((await call(stack.baseUrl, `/files/${theirs}`, { key: other.key })).body.state).toBe('ready');
    await refused(theirs, `file ${theirs} not found`);
    await refused('file_not-an-id', 'file file_not-an-id not found');
  });

  it('a file never uploaded (awaiting_upload), and one rejected by the start’s own check', async () => {
    const never = await upload(team, 'never.png', 'image/png', files.png(), false);
    await refused(never, `file ${never} is awaiting_upload: its bytes have not arrived`);
    // PNG bytes declared audio/wav, never read: the start settles it, rejects it and deletes its bytes.
    const lying = await upload(team, 'lying.wav', 'audio/wav', files.png());
    await refused(lying, `file ${lying} was rejected: content is image/png, not the declared audio/wav`);
    expect(await uploadExists(team, lying)).toBe(false);
    // The same through an agent's run.
    const owner = await seedUnthrottledTeam(stack.deps);
    await createWorkflow(stack, owner, upscaleSteps);
    const theirs = await upload(owner, 'lying.wav', 'audio/wav', files.png());
    await refused(theirs, `file ${theirs} was rejected: content is image/png, not the declared audio/wav`, owner);
  });

  it('a file replaced through its still-valid upload URL after it was checked (a PNG bomb of the same size)', async () => {
    const original = files.png(8, 8);
    const { fileId, upload: sent } = await declareAndSend(team, 'swap.png', 'image/png', original);
    expect((await call(stack.baseUrl, `/files/${fileId}`, { key: team.key })).body.state).toBe('ready');
    // Other bytes, the same declared type and size: the signed URL takes them, as S3's would.
    const bomb = files.pngBomb(100_000, 100_000, original.length);
    expect(bomb.length).toBe(original.length);
    await send(sent, bomb);
    expect(await objectBytes(uploadObjectKey(team.teamId, fileId))).toEqual(bomb);
    // The file stays `ready`, but the run's copy holds it to the ETag that was checked.
    await refused(fileId, `file ${fileId} changed after it was checked: upload it again`);
    expect((await call(stack.baseUrl, `/files/${fileId}`, { key: team.key })).body.state).toBe('ready');
  });

  it('a file of a type the step cannot read (a WAV to an ImageLoader)', async () => {
    const wav = await upload(team, 'sound.wav', 'audio/wav', files.wav());
    await refused(wav, 'ImageLoader reads image/png, image/jpeg, image/webp, image/gif, not audio/wav');
  });

  it('a URL on a private, link-local or metadata address, or plain http, or no URL at all', async () => {
    const refusedAddress = 'The address was refused: it must resolve, and only to public addresses';
    await refused('https://169.254.169.254/latest/meta-data/', refusedAddress);
    await refused('https://10.0.0.7/cat.png', refusedAddress);
    await refused('https://[fd00::1]/cat.png', refusedAddress);
    await refused('http://93.184.215.14/cat.png', 'only https URLs are allowed');
    await refused('ftp://example.com/cat.png', 'only https URLs are allowed');
    await refused('cat.png', /^not a fileId \(file_…\) nor a valid https URL/);
  });
});

describe('a loader with nothing to load: 422 at the start naming what it waits for, nothing held', () => {
  it('a run without the loader’s input (its apiInputKey) nor its setting, now or deferred; and a loader with neither', async () => {
    const fresh = await seedUnthrottledTeam(stack.deps);
    const workflowId = await createWorkflow(stack, fresh, upscaleSteps);
    const before = await ledgerOf(stack.deps, fresh.teamId);
    const waiting = {
      success: false,
      errors: [
        {
          code: 'missing_required_input',
          key: 'photo',
          path: 'config.apiInputKey',
          message:
            'ImageLoader step "photo" has nothing to load: give the run input "photo" (inputs.photo), or set config.url',
        },
      ],
    };
    for (const body of [{}, { inputs: {} }, { defer: true }]) {
      const response = await startRun(fresh, workflowId, body);
      expect(response.status, JSON.stringify(body)).toBe(422);
      expect(response.body).toEqual(waiting);
    }
    // A loader that neither a run nor its settings can feed.
    const bare = await createWorkflow(stack, fresh, [
      { key: 'data', type: 'JsonLoader' },
      { key: 'show', type: 'JsonInspector', inputs: ['data'] },
    ]);
    const response = await startRun(fresh, bare, {});
    expect(response.status).toBe(422);
    expect(response.body).toEqual({
      success: false,
      errors: [
        {
          code: 'invalid_config',
          key: 'data',
          path: 'config.data',
          message:
            'JsonLoader step "data" has nothing to load: set config.data or config.url, or config.apiInputKey for a run to give it',
        },
      ],
    });
    expect(await ledgerOf(stack.deps, fresh.teamId)).toEqual(before);
    expect((await call(stack.baseUrl, '/deferred-runs', { key: fresh.key })).body.deferredRuns ?? []).toEqual([]);
  });
});

describe('a URL as a run input', () => {
  it('is fetched once by its step, checked, and stored with the run’s files, unmarked', async () => {
    const workflowId = await createWorkflow(stack, team, upscaleSteps);
    const started = await startRun(team, workflowId, { inputs: { photo: `${server.url}/cat.png` } });
    expect(started.status).toBe(200);
    const jobId = started.body.jobId as string;
    const body = await runToEnd(team, jobId);
    expect(body.status).toBe('completed');
    expect(hits['/cat.png']).toBe(1);
    expect(decodePng(await outputImage(body))).toMatchObject({ width: 20, height: 12 });
    const { steps } = await runParts(stack.deps, jobId);
    const loaded = steps.get('photo')?.outputs as { image: { key: string } } | undefined;
    expect(loaded?.image.key).toBe(`teams/${team.teamId}/runs/${jobId}/photo/image.png`);
    expect(readMediaMark(await objectBytes(loaded?.image.key ?? ''))).toBeNull();
  });

  it('fails its step when the bytes are not an image the step reads', async () => {
    const workflowId = await createWorkflow(stack, team, upscaleSteps);
    const started = await startRun(team, workflowId, { inputs: { photo: `${server.url}/fake.png` } });
    expect(started.status).toBe(200);
    const body = await runToEnd(team, started.body.jobId as string);
    expect(body.status).toBe('failed');
    const steps = body.steps as { node_id: string; error?: string }[];
    expect(steps.find((s) => s.node_id === 'photo')?.error).toBe(
      "ImageLoader: the run's input file is not usable: content is not image/png (its first bytes do not match)",
    );
  });
});
