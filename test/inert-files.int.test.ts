/**
 * Outside content stays inert, through the real path: a Replicate step (the stand-in, over HTTP)
 * whose answer is a `data:text/html` URI or a PNG with HTML after its IEND, an ImageLoader whose
 * `config.url` (a loopback server) serves an SVG with a script, and an upload of a PNG with HTML
 * after its IEND (PUT to the local S3 behind the presign guard, settled by GET /files/{id}). Each
 * is refused, nothing of it stored; and a file's link leads to the strict local S3 with the type
 * and disposition signed into it: inline for an image, an attachment for anything else, and an
 * object of a type the service does not store (written before types came from the bytes) served
 * as an octet-stream attachment, never as its stored `text/html`.
 */
import { ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import { fileLinkFor } from '../functions/app/file-links.ts';
import { encodePng, makeImage } from '../functions/nodes/media/png.ts';
import { startFileServer } from './stand-ins/http.ts';
import { type ReplicateStandIn, startReplicateStandIn } from './stand-ins/replicate.ts';
import { stageStepExecutor } from './support/provider-steps.ts';
import { drainSteps } from './support/runs.ts';
import { call, createWorkflow, jobsStackPerFile, seedTeam, startRunOk } from './support/stack.ts';

const apiKey = 'r8_inert_files_test_key_never_logged';
const png = encodePng(makeImage(8, 8, () => [10, 120, 200, 255]));
const html = new TextEncoder().encode('<html><body><script>alert(document.domain)</script></body></html>');
const pngThenHtml = new Uint8Array([...png, ...html]);
const svg = new TextEncoder().encode(
  '<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"><script>alert(document.domain)</script></svg>',
);

let standIn: ReplicateStandIn;
let files: Awaited<ReturnType<typeof startFileServer>>;
const settings = (): NodeJS.ProcessEnv => ({
  PROVIDER_REPLICATE_API_KEY: apiKey,
  PROVIDER_REPLICATE_BASE_URL: standIn.url,
  ALLOW_PRIVATE_CALLBACKS: '1',
});
const { stack, closers } = jobsStackPerFile(settings);
const started = (async () => {
  standIn = await startReplicateStandIn({ apiKey });
  files = await startFileServer({
    '/good.png': { body: png, contentType: 'image/png' },
    '/tail.png': { body: pngThenHtml, contentType: 'image/png' },
    '/cat.svg': { body: svg, contentType: 'image/svg+xml' },
  });
  closers.push(
    () => standIn.close(),
    () => files.close(),
  );
})();

const executor = () => stageStepExecutor(stack.deps, settings(), { baseUrl: stack.baseUrl });
const drain = (handler: ReturnType<typeof executor>['handler']) => drainSteps(stack.deps, handler, { dropPolls: true });

interface RunBody {
  status: string;
  error?: unknown;
  output?: { node_id: string; result: unknown }[];
}
const runOf = async (key: string, jobId: string) =>
  (await call(stack.baseUrl, `/runs/${jobId}`, { key })).body as unknown as RunBody;

/** Every object a run stored, with its type. */
const runObjects = async (teamId: string, jobId: string) => {
  const listed = await stack.deps.s3.send(
    new ListObjectsV2Command({ Bucket: stack.deps.bucket, Prefix: `teams/${teamId}/runs/${jobId}/` }),
  );
  return (listed.Contents ?? []).map((object) => object.Key);
};

/** A run of prompt → ImageGen on Replicate whose prediction ends with `output`. */
const replicateRun = async (output: unknown) => {
  await started;
  const team = await seedTeam(stack.deps, { credits: 100 });
  const workflowId = await createWorkflow(stack, team, [
    { key: 'prompt', type: 'TextEntry', config: { text: 'a lighthouse' } },
    {
      key: 'image',
      type: 'ImageGen',
      inputs: ['prompt'],
      config: { provider: 'replicate', model: 'black-forest-labs/flux-schnell' },
    },
  ]);
  const jobId = await startRunOk(stack, team.key, workflowId);
  const steps = executor();
  await drain(steps.handler);
  const prediction = [...standIn.jobs.values()].at(-1)?.prediction as unknown as { id: string };
  await standIn.complete(prediction.id, output);
  await drain(steps.handler);
  return { team, jobId, run: await runOf(team.key, jobId) };
};

describe('outside content is refused, not stored', { timeout: 120_000 }, () => {
  it("a provider's data:text/html answer fails the step; nothing is stored", async () => {
    const { team, jobId, run } = await replicateRun(['data:text/html,<script>alert(document.domain)</script>']);
    expect(run.status, JSON.stringify(run)).toBe('failed');
    expect(JSON.stringify(run)).toContain("the provider's image file cannot be stored");
    expect(await runObjects(team.teamId, jobId)).toEqual([]);
  });

  it("a provider's PNG with HTML after its IEND fails the step; nothing is stored", async () => {
    const { team, jobId, run } = await replicateRun([`${files.url}/tail.png`]);
    expect(run.status, JSON.stringify(run)).toBe('failed');
    expect(JSON.stringify(run)).toContain('bytes follow its IEND chunk');
    expect(await runObjects(team.teamId, jobId)).toEqual([]);
  });

  it("ImageLoader's config.url serving an SVG with a script fails the step; a PNG is stored as image/png", async () => {
    await started;
    const team = await seedTeam(stack.deps, { credits: 100 });
    const load = async (url: string) => {
      const workflowId = await createWorkflow(stack, team, [{ key: 'img', type: 'ImageLoader', config: { url } }]);
      const jobId = await startRunOk(stack, team.key, workflowId);
      await drain(executor().handler);
      return { jobId, run: await runOf(team.key, jobId) };
    };
    const refused = await load(`${files.url}/cat.svg`);
    expect(refused.run.status, JSON.stringify(refused.run)).toBe('failed');
    expect(JSON.stringify(refused.run)).toContain('the image file cannot be stored');
    expect(await runObjects(team.teamId, refused.jobId)).toEqual([]);

    // A real image passes, and its link serves it inline as what its bytes are.
    const loaded = await load(`${files.url}/good.png`);
    expect(loaded.run.status, JSON.stringify(loaded.run)).toBe('completed');
    const link = JSON.stringify(loaded.run.output).match(/"url":"([^"]+)"/)?.[1] ?? '';
    const response = await fetch(link);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('image/png');
    expect(response.headers.get('content-disposition')).toBe('inline; filename="image.png"');
    expect(new Uint8Array(await response.arrayBuffer())).toEqual(png);
  });

  it('an upload of a PNG with HTML after its IEND is rejected', async () => {
    const team = await seedTeam(stack.deps, { credits: 10 });
    const declared = await call(stack.baseUrl, '/files', {
      key: team.key,
      method: 'POST',
      body: { name: 'photo.png', contentType: 'image/png', size: pngThenHtml.length },
    });
    expect(declared.status).toBe(201);
    const upload = declared.body.upload as { method: string; url: string; headers: Record<string, string> };
    const { 'content-length': _, ...headers } = upload.headers;
    expect((await fetch(upload.url, { method: upload.method, headers, body: pngThenHtml })).status).toBe(200);
    const read = await call(stack.baseUrl, `/files/${declared.body.fileId as string}`, { key: team.key });
    expect(read.body).toMatchObject({
      state: 'rejected',
      reason: `content is not a whole image/png: ${html.length} bytes follow its IEND chunk`,
    });
  });
});

describe("a file link's download carries its type and disposition", { timeout: 60_000 }, () => {
  /** Follows a file link to the key's object on the local S3 (the presign guard, strict as S3). */
  const download = async (teamId: string, key: string, contentType: string, body: Uint8Array) => {
    await stack.deps.s3.send(
      new PutObjectCommand({ Bucket: stack.deps.bucket, Key: key, Body: body, ContentType: contentType }),
    );
    const { url } = await fileLinkFor(stack.deps, teamId, key);
    return fetch(url);
  };

  it('anything but an image, a sound or a model is an attachment; a type not stored is an octet-stream', async () => {
    const team = await seedTeam(stack.deps, { credits: 10 });
    const prefix = `teams/${team.teamId}/runs/legacy/step`;
    const page = await download(team.teamId, `${prefix}/page.html`, 'text/html', html);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('application/octet-stream');
    expect(page.headers.get('content-disposition')).toBe('attachment; filename="page.html"');

    const drawing = await download(team.teamId, `${prefix}/cat.svg`, 'image/svg+xml', svg);
    expect(drawing.headers.get('content-type')).toBe('application/octet-stream');
    expect(drawing.headers.get('content-disposition')).toBe('attachment; filename="cat.svg"');

    const json = await download(team.teamId, `${prefix}/data.json`, 'application/json', html);
    expect(json.headers.get('content-type')).toBe('application/json');
    expect(json.headers.get('content-disposition')).toBe('attachment; filename="data.json"');

    const sound = await download(team.teamId, `${prefix}/a.png`, 'image/png', png);
    expect(sound.headers.get('content-type')).toBe('image/png');
    expect(sound.headers.get('content-disposition')).toBe('inline; filename="a.png"');
  });
});
