import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
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
      if (baseUrl && key && teamId && agentId && output.includes('Ctrl-C stops everything'))
        resolve({ child, output, baseUrl, key, teamId, agentId });
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

    // The demo key is kept across a restart, so a script written against it keeps working.
    const restarted = await start();
    expect(restarted.teamId).toBe(first.teamId);
    expect(restarted.key).toBe(first.key);
    expect(restarted.output).toContain('kept from the last start');
    const kept = await fetch(`${restarted.baseUrl}/workflows`, { headers: { authorization: `Bearer ${first.key}` } });
    expect(kept.status).toBe(200);
    await stop(restarted.child);

    // `--new-key` replaces it and revokes the old one.
    const renewed = await start('--new-key');
    expect(renewed.teamId).toBe(first.teamId);
    expect(renewed.key).not.toBe(first.key);
    const old = await fetch(`${renewed.baseUrl}/workflows`, { headers: { authorization: `Bearer ${first.key}` } });
    expect(old.status).toBe(401);
    const fresh = await fetch(`${renewed.baseUrl}/workflows`, { headers: { authorization: `Bearer ${renewed.key}` } });
    expect(fresh.status).toBe(200);
    await stop(renewed.child);

    const reset = await start('--reset');
    expect(reset.teamId).toBeDefined();
    expect(reset.teamId).not.toBe(first.teamId);
    await stop(reset.child);
    // Five starts, each a JVM and fauxqs coming up: minutes on a loaded machine, not seconds.
  }, 400_000);

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

  it('without --private-callbacks refuses a loopback receiver saying what to set; with it, a local https receiver gets the webhook', async () => {
    const closed = await start();
    expect(closed.output).toContain('--private-callbacks');
    const key = closed.key as string;
    const api = (path: string, body?: unknown) =>
      fetch(`${closed.baseUrl}${path}`, {
        method: body === undefined ? 'GET' : 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    const demo = JSON.parse(readFileSync(join(stateDir, 'demo.json'), 'utf8')) as { agentId: string };
    const created = await api('/workflows', {
      name: 'Loopback call',
      agentId: demo.agentId,
      steps: [{ key: 'call', type: 'CustomApiCall', config: { url: 'http://127.0.0.1:9/' } }],
    });
    expect(created.status).toBe(201);
    const { workflowId } = (await created.json()) as { workflowId: string };
    const started = await api(`/workflows/${workflowId}/runs`, {});
    const { jobId } = (await started.json()) as { jobId: string };
    const failed = await waitForEnd(api, jobId);
    expect(failed.status).toBe('failed');
    expect(failed.steps[0]?.error).toContain('npm start -- --private-callbacks');
    await stop(closed.child);

    const open = await start('--private-callbacks');
    const cert = /^\s+cert:\s+(\S+)/m.exec(open.output)?.[1];
    const keyFile = /^\s+key:\s+(\S+)/m.exec(open.output)?.[1];
    expect(cert && keyFile).toBeTruthy();
    const received: { body: string; event?: string }[] = [];
    const receiver = createHttpsServer(
      { cert: readFileSync(cert as string), key: readFileSync(keyFile as string) },
      (request, response) => {
        let body = '';
        request.on('data', (chunk) => {
          body += chunk;
        });
        request.on('end', () => {
          received.push({ body, event: request.headers['x-service-event'] as string | undefined });
          response.writeHead(200).end();
        });
      },
    );
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    try {
      const port = (receiver.address() as AddressInfo).port;
      const openApi = (path: string, body?: unknown) =>
        fetch(`${open.baseUrl}${path}`, {
          method: body === undefined ? 'GET' : 'POST',
          headers: { authorization: `Bearer ${open.key}`, 'content-type': 'application/json' },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
      const flow = await openApi('/workflows', {
        name: 'Hooked',
        agentId: demo.agentId,
        steps: [{ key: 'text', type: 'TextEntry', config: { text: 'hello' } }],
      });
      expect(flow.status).toBe(201);
      const hooked = await openApi(`/workflows/${((await flow.json()) as { workflowId: string }).workflowId}/runs`, {
        callbackUrl: `https://localhost:${port}/hook`,
      });
      expect(hooked.status).toBe(200);
      const hookedJob = ((await hooked.json()) as { jobId: string }).jobId;
      const deadline = Date.now() + 120_000;
      while (received.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
      expect(received.length).toBeGreaterThan(0);
      expect(JSON.parse(received[0]?.body ?? '{}')).toMatchObject({ jobId: hookedJob, status: 'completed' });
    } finally {
      receiver.closeAllConnections();
      await new Promise((resolve) => receiver.close(resolve));
      await stop(open.child);
    }
  }, 400_000);
});

/** Polls GET /runs/{jobId} through `api` until the run ends (a generous deadline: a loaded machine). */
const waitForEnd = async (api: (path: string) => Promise<Response>, jobId: string) => {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const run = (await (await api(`/runs/${jobId}`)).json()) as { status: string; steps: { error?: string }[] };
    if (['completed', 'failed', 'cancelled', 'stopped'].includes(run.status) || Date.now() > deadline) return run;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
};
