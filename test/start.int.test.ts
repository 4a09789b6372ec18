import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { encodePng, makeImage } from '../functions/nodes/media/png.ts';

const stateDir = mkdtempSync(join(tmpdir(), 'wra-start-'));
const children: ChildProcess[] = [];
afterAll(() => {
  for (const child of children) child.kill('SIGKILL');
});

/** Runs `node local/start.ts` (what `npm start` runs) and resolves once it printed its banner, or exited. */
const start = (...args: string[]) =>
  new Promise<{
    child: ChildProcess;
    output: string;
    baseUrl?: string;
    key?: string;
    teamId?: string;
    agentId?: string;
    code?: number | null;
  }>((resolve) => {
    const child = spawn(process.execPath, ['local/start.ts', ...args], {
      env: { ...process.env, LOCAL_STATE_DIR: stateDir, PORT: '0', DISPATCH_INTERVAL_SECONDS: '3600' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    let output = '';
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const baseUrl = /Base URL:\s+(\S+)/.exec(output)?.[1];
      const key = /Demo API key:\s+(\S+)/.exec(output)?.[1];
      const teamId = /Demo team:\s+(\S+)/.exec(output)?.[1];
      const agentId = /Demo agent:\s+(\S+)/.exec(output)?.[1];
      if (baseUrl && key && teamId && agentId) resolve({ child, output, baseUrl, key, teamId, agentId });
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.on('exit', (code) => resolve({ child, output, code }));
  });

const stop = (child: ChildProcess) =>
  new Promise<number | null>((resolve) => {
    child.once('exit', (code) => resolve(code));
    child.kill('SIGINT');
  });

const dynamoDbPids = () =>
  readdirSync(stateDir)
    .filter((f) => /^dynamodb-\d+\.pid$/.test(f))
    .map((f) => Number(/\d+/.exec(f)?.[0]));
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('npm start (the local default)', () => {
  it('serves the API with a demo key, refuses a second start, stops every child, keeps data, and resets', async () => {
    const first = await start();
    expect(first.baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/api\/v1$/);
    const listed = await fetch(`${first.baseUrl}/workflows`, { headers: { authorization: `Bearer ${first.key}` } });
    expect(listed.status).toBe(200);

    const second = await start();
    expect(second.code).toBe(1);
    expect(second.output).toContain('already running');

    const javaPids = dynamoDbPids();
    expect(javaPids).toHaveLength(1);
    expect(await stop(first.child)).toBe(0);
    expect(javaPids.every((pid) => !alive(pid))).toBe(true);

    const restarted = await start();
    expect(restarted.teamId).toBe(first.teamId);
    const old = await fetch(`${restarted.baseUrl}/workflows`, { headers: { authorization: `Bearer ${first.key}` } });
    expect(old.status).toBe(401);
    const fresh = await fetch(`${restarted.baseUrl}/workflows`, {
      headers: { authorization: `Bearer ${restarted.key}` },
    });
    expect(fresh.status).toBe(200);
    await stop(restarted.child);

    const reset = await start('--reset');
    expect(reset.teamId).toBeDefined();
    expect(reset.teamId).not.toBe(first.teamId);
    await stop(reset.child);
    // Four starts, each a JVM and fauxqs coming up: minutes on a loaded machine, not seconds.
  }, 300_000);

  it("serves a run's file link through the files front: X-Content-Type-Options: nosniff, inline for an image", async () => {
    const local = await start();
    const headers = { authorization: `Bearer ${local.key}`, 'content-type': 'application/json' };
    const created = await fetch(`${local.baseUrl}/workflows`, {
      method: 'POST',
      headers,
      body: JSON.stringify({
        name: 'Image',
        agentId: local.agentId,
        steps: [
          { key: 'prompt', type: 'TextEntry', config: { text: 'a lighthouse' } },
          {
            key: 'image',
            type: 'ImageGen',
            inputs: ['prompt'],
            config: { provider: 'sandbox', width: 64, height: 64 },
          },
        ],
      }),
    });
    expect(created.status, await created.clone().text()).toBe(201);
    const { workflowId } = (await created.json()) as { workflowId: string };
    const started = await fetch(`${local.baseUrl}/workflows/${workflowId}/runs`, {
      method: 'POST',
      headers,
      body: '{}',
    });
    expect(started.status).toBe(200);
    const { jobId } = (await started.json()) as { jobId: string };
    let run: Record<string, unknown> = {};
    for (let tries = 0; tries < 600 && run.status !== 'completed' && run.status !== 'failed'; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      run = (await (await fetch(`${local.baseUrl}/runs/${jobId}`, { headers })).json()) as Record<string, unknown>;
    }
    expect(run.status, JSON.stringify(run)).toBe('completed');
    const link = /"url":"([^"]+\/file-links\/[^"]+)"/.exec(JSON.stringify(run.output))?.[1];
    if (!link) throw new Error(`no file link in ${JSON.stringify(run.output)}`);
    const redirect = await fetch(link, { redirect: 'manual' });
    expect(redirect.status).toBe(302);
    const download = await fetch(redirect.headers.get('location') ?? '');
    expect(download.status).toBe(200);
    expect(download.headers.get('x-content-type-options')).toBe('nosniff');
    expect(download.headers.get('content-type')).toBe('image/png');
    expect(download.headers.get('content-disposition')).toMatch(/^inline; filename="[^"]+\.png"$/);
    await stop(local.child);
  }, 300_000);

  it('keeps an upload URL minted before a restart working after it (its S3 port is kept)', async () => {
    const first = await start();
    const bytes = encodePng(makeImage(4, 3, () => [1, 2, 3, 255]));
    const declared = await fetch(`${first.baseUrl}/files`, {
      method: 'POST',
      headers: { authorization: `Bearer ${first.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'before.png', contentType: 'image/png', size: bytes.length }),
    });
    expect(declared.status).toBe(201);
    const { upload } = (await declared.json()) as {
      upload: { method: string; url: string; headers: Record<string, string> };
    };
    expect(await stop(first.child)).toBe(0);

    const restarted = await start();
    expect(restarted.baseUrl).toBeDefined();
    const { 'content-length': _, ...headers } = upload.headers;
    const sent = await fetch(upload.url, { method: upload.method, headers, body: bytes });
    expect(sent.status).toBe(200);
    await stop(restarted.child);
  }, 300_000);
});
