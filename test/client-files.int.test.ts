import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runKey } from '../functions/store/keys.ts';
import { main } from '../packages/client/src/cli.ts';
import {
  createClient,
  FileRejectedError,
  StorageRefusedError,
  UnknownContentTypeError,
  type UploadedFile,
  type UploadProgress,
  type WorkflowRunClient,
} from '../packages/client/src/index.ts';
import { runCli } from './support/cli.ts';
import { createWorkflow, type SeededTeam, seedUnthrottledTeam, stackPerFile } from './support/stack.ts';
import * as files from './support/upload-files.ts';

/**
 * A workflow whose `photo` is a TextEntry: it takes the fileId as its text, whatever loaders accept.
 * A fileId fed to an ImageLoader, through to a model step, is test/file-inputs.int.test.ts's.
 */
const photoSteps = [
  { key: 'photo', type: 'TextEntry', config: { text: 'no photo', apiInputKey: 'photo' } },
  { key: 'note', type: 'TextEntry', config: { text: '', apiInputKey: 'note' } },
  { key: 'prompt', type: 'PromptBuilder', config: { template: '{{0}} {{1}}' }, inputs: ['photo', 'note'] },
  { key: 'show', type: 'TextConsole', inputs: ['prompt'] },
];

const MiB = 1024 * 1024;

const { stack } = stackPerFile();

let team: SeededTeam;
let client: WorkflowRunClient;
let dir: string;
beforeAll(async () => {
  team = await seedUnthrottledTeam(stack.deps);
  client = createClient({ baseUrl: stack.baseUrl, apiKey: team.key });
  dir = await mkdtemp(join(tmpdir(), 'client-files-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Writes `bytes` to `name` in the test's directory and returns its path. */
const fileOf = async (name: string, bytes: Uint8Array) => {
  const path = join(dir, name);
  await writeFile(path, bytes);
  return path;
};

/** Counts the requests a client sends, by method and path (the API's and storage's alike). */
const countingFetch = () => {
  const requests: string[] = [];
  return {
    requests,
    fetch: (request: Request) => {
      requests.push(`${request.method} ${new URL(request.url).pathname}`);
      return fetch(request);
    },
  };
};

describe('client.uploadFile', () => {
  it('uploads a PNG from bytes: declared, sent, checked, and returned ready', async () => {
    const png = files.png(8, 6);
    const file = await client.uploadFile(png, { contentType: 'image/png', name: 'cat.png' });
    expect(file).toMatchObject({ name: 'cat.png', contentType: 'image/png', size: png.length, state: 'ready' });
    expect(file.fileId).toMatch(/^file_/);
    expect(await client.getFile(file.fileId)).toEqual(file);
  });

  it('uploads a PNG from a path, its content type and name told by the path', async () => {
    const png = files.png(5, 4);
    const path = await fileOf('from-disk.PNG', png);
    const counted = countingFetch();
    const file = await createClient({ baseUrl: stack.baseUrl, apiKey: team.key, fetch: counted.fetch }).uploadFile(
      path,
    );
    expect(file).toMatchObject({ name: 'from-disk.PNG', contentType: 'image/png', size: png.length, state: 'ready' });
    expect(counted.requests.map((r) => r.split(' ')[0])).toEqual(['POST', 'PUT', 'GET']);
  });

  it('reports progress chunk by chunk for a file larger than one chunk, adding up to its size', async () => {
    const size = 3 * MiB + 12_345;
    const text = new TextEncoder().encode('otters hold hands while they sleep\n'.repeat(Math.ceil(size / 35)));
    const path = await fileOf('big.txt', text.subarray(0, size));
    const seen: UploadProgress[] = [];
    const file = await client.uploadFile(path, { onProgress: (progress) => seen.push(progress) });
    expect(file).toMatchObject({ contentType: 'text/plain', size, state: 'ready' });
    // One call per 1 MiB chunk: 1, 2, 3 MiB, then the rest.
    expect(seen).toEqual(
      [1, 2, 3].map((n) => ({ sentBytes: n * MiB, totalBytes: size })).concat({ sentBytes: size, totalBytes: size }),
    );
  });

  it('a lying type (PNG bytes declared audio/wav) throws FileRejectedError with the reason', async () => {
    const error = await client.uploadFile(files.png(), { contentType: 'audio/wav' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FileRejectedError);
    const rejected = error as FileRejectedError<UploadedFile>;
    expect(rejected.reason).toBe('content is image/png, not the declared audio/wav');
    expect(rejected.file).toMatchObject({ fileId: rejected.fileId, state: 'rejected', reason: rejected.reason });
    expect((await client.getFile(rejected.fileId ?? '')).state).toBe('rejected');
  });

  it('an extension naming no accepted type throws UnknownContentTypeError before any request', async () => {
    const path = await fileOf('picture.bmp', files.png());
    const counted = countingFetch();
    const counting = createClient({ baseUrl: stack.baseUrl, apiKey: team.key, fetch: counted.fetch });
    const error = await counting.uploadFile(path).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnknownContentTypeError);
    expect((error as Error).message).toContain('(.bmp): pass contentType, or name it with one of .png');
    // Bytes carry no extension: their type must be given.
    await expect(counting.uploadFile(files.png())).rejects.toThrow('needs options.contentType');
    expect(counted.requests).toEqual([]);
    // With the type given, the extension does not matter.
    expect(await counting.uploadFile(path, { contentType: 'image/png' })).toMatchObject({ state: 'ready' });
  });

  it('a refusal of the PUT by storage throws StorageRefusedError with S3 code and message', async () => {
    // The signed URL altered on its way: storage refuses it as S3 does, with its own XML error.
    const tampering = (request: Request) =>
      fetch(
        request.method === 'PUT'
          ? new Request(request.url.replace(/X-Amz-Signature=[0-9a-f]/, 'X-Amz-Signature=x'), {
              method: 'PUT',
              headers: request.headers,
              body: request.body,
              duplex: 'half',
            } as RequestInit)
          : request,
      );
    const error = await createClient({ baseUrl: stack.baseUrl, apiKey: team.key, fetch: tampering })
      .uploadFile(files.png(), { contentType: 'image/png' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StorageRefusedError);
    expect(error).toMatchObject({ status: 403, code: 'SignatureDoesNotMatch' });
    expect((error as StorageRefusedError).storageMessage).toContain('does not match the signature you provided');
    expect((error as Error).message).toMatch(/^storage refused the upload of file_.+: 403 SignatureDoesNotMatch: /);
    expect((await client.getFile((error as StorageRefusedError).fileId ?? '')).state).toBe('awaiting_upload');
  });
});

/** Runs the CLI as a user would: a child process with the URL and key in its environment. */
const cli = (args: string[]) => runCli({ baseUrl: stack.baseUrl, key: team.key }, args);

/** The inputs the run was started with, as stored on its item. */
const storedInputs = async (jobId: string) => {
  const { Item } = await stack.deps.ddb.send(
    new GetCommand({ TableName: stack.resources.tableName, Key: runKey(jobId) }),
  );
  return Item?.inputs as Record<string, string> | undefined;
};

describe('workflow-run CLI', () => {
  it('run --input photo=@cat.png uploads the file, then starts the run with its fileId', async () => {
    const path = await fileOf('cat.png', files.png(6, 6));
    const workflowId = await createWorkflow(stack, team, photoSteps, 'Photo by CLI');
    const result = await cli(['run', workflowId, '--input', `photo=@${path}`, '--input', 'note=@@otter']);
    expect(result.code, result.stderr).toBe(0);
    const fileId = /^uploaded .+ as (file_\S+) \(image\/png, \d+ bytes\)$/m.exec(result.stderr)?.[1];
    expect(fileId, result.stderr).toBeDefined();
    const jobId = /^jobId: (\S+)$/m.exec(result.stdout)?.[1] ?? '';
    // `@@` is the way to send text that starts with `@`.
    expect(await storedInputs(jobId)).toEqual({ photo: fileId, note: '@otter' });
    expect(await client.getFile(fileId ?? '')).toMatchObject({ name: 'cat.png', state: 'ready' });
  });

  it('run --json with a large file: progress on stderr, only the run on stdout', async () => {
    const size = 3 * MiB;
    const path = await fileOf('notes.txt', new Uint8Array(size).fill(0x61));
    const workflowId = await createWorkflow(stack, team, photoSteps, 'Large by CLI');
    const result = await cli(['run', workflowId, '--input', `photo=@${path}`, '--input', 'note=plain', '--json']);
    expect(result.code, result.stderr).toBe(0);
    const started = JSON.parse(result.stdout) as { jobId: string; workflowId: string };
    expect(started).toMatchObject({ workflowId, status: 'queued' });
    const progress = result.stderr.trim().split('\n');
    expect(progress.length).toBeGreaterThan(1);
    expect(progress.at(-1)).toBe(`uploading ${path}: 3.0 MiB of 3.0 MiB (100%)`);
    const inputs = await storedInputs(started.jobId);
    expect(inputs).toMatchObject({ note: 'plain' });
    expect(await client.getFile(inputs?.photo ?? '')).toMatchObject({
      contentType: 'text/plain',
      size,
      state: 'ready',
    });
  });

  it('files upload prints the File ready; files get prints it, and --json as the API answers it', async () => {
    const path = await fileOf('scene.gltf', files.gltf());
    const uploaded = await cli(['files', 'upload', path, '--name', 'my scene.gltf', '--json']);
    expect(uploaded.code, uploaded.stderr).toBe(0);
    const file = JSON.parse(uploaded.stdout) as UploadedFile;
    expect(file).toMatchObject({ name: 'my scene.gltf', contentType: 'model/gltf+json', state: 'ready' });

    const shown = await cli(['files', 'get', file.fileId]);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toContain(`fileId: ${file.fileId}`);
    expect(shown.stdout).toContain('state: ready');
    const json = await cli(['files', 'get', file.fileId, '--json']);
    expect(JSON.parse(json.stdout)).toEqual(await client.getFile(file.fileId));
    const missing = await cli(['files', 'get', 'file_nope', '--json']);
    expect(missing.code).toBe(1);
    expect(JSON.parse(missing.stderr)).toEqual({ status: 404, body: { error: 'File not found' } });
  });

  it('a rejected file stops the run from starting; the error names the reason', async () => {
    const path = await fileOf('not-really.png', files.plainText());
    const workflowId = await createWorkflow(stack, team, photoSteps, 'Rejected by CLI');
    const result = await cli(['run', workflowId, '--input', `photo=@${path}`, '--json']);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    const error = JSON.parse(result.stderr) as { fileId: string; reason: string };
    expect(error.reason).toMatch(/^content is not image\/png/);
    expect((await client.getFile(error.fileId)).state).toBe('rejected');
    expect((await client.listRuns({ workflowId })).runs).toEqual([]);
  });

  it('an unknown extension or a missing file is a usage error, before any request', async () => {
    const counted = countingFetch();
    const bmp = await fileOf('photo.bmp', files.png());
    for (const input of [`photo=@${bmp}`, `photo=@${join(dir, 'absent.png')}`, 'photo=@']) {
      let stderr = '';
      const sink = new Writable({
        write(chunk, _encoding, callback) {
          stderr += chunk;
          callback();
        },
      });
      const code = await main(['run', 'wf', '--input', input], {
        stdout: sink,
        stderr: sink,
        env: { WORKFLOW_RUN_API_URL: stack.baseUrl, WORKFLOW_RUN_API_KEY: team.key },
        fetch: counted.fetch,
      });
      expect(code, input).toBe(2);
      expect(stderr).toMatch(/^workflow-run: --input photo/);
    }
    expect(counted.requests).toEqual([]);
  });
});
