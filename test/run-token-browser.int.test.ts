/**
 * A run token in a real browser (Debian's chromium, driven by playwright-core, as test/docs-page.int.test.ts
 * does): a page served on another origin than the API follows a run with `new EventSource(links.events)`
 * to `done` and reads the Run with `fetch(links.run)`, with no key and no relay, the workers running
 * the run meanwhile. Without chromium this file fails, it does not skip.
 */
import { existsSync } from 'node:fs';
import { createServer } from 'node:http';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listenLocal } from '../local/api-gateway.ts';
import {
  call,
  createWorkflow,
  type SeededTeam,
  seedUnthrottledTeam,
  startRunOk,
  startWorkingStack,
  type TestStack,
} from './support/stack.ts';

const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const chromiumArgs = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-dev-shm-usage',
];

/** The page: it knows only the token's links, given in its URL's fragment (never sent to a server). */
const page = `<!doctype html>
<meta charset="utf-8">
<title>Run follower</title>
<script>
  const links = JSON.parse(decodeURIComponent(location.hash.slice(1)));
  window.followed = new Promise((resolve, reject) => {
    const seen = [];
    const source = new EventSource(links.events);
    for (const name of ['step', 'output', 'status']) source.addEventListener(name, () => seen.push(name));
    source.addEventListener('done', async (event) => {
      source.close();
      try {
        const answer = await fetch(links.run);
        resolve({ seen, done: JSON.parse(event.data), status: answer.status, run: await answer.json() });
      } catch (error) {
        reject(String(error));
      }
    });
    source.onerror = () => {
      if (source.readyState === EventSource.CLOSED) reject('the stream was refused');
    };
  });
</script>`;

let stack: TestStack;
let team: SeededTeam;
let browser: Browser;
let site: { baseUrl: string; close(): Promise<void> };

beforeAll(async () => {
  if (!existsSync(chromiumPath)) {
    throw new Error(
      `Chromium not found at ${chromiumPath}: \`apt-get install -y --no-install-recommends chromium\`, or set CHROMIUM_PATH.`,
    );
  }
  stack = await startWorkingStack();
  team = await seedUnthrottledTeam(stack.deps, 1000);
  site = await listenLocal(
    createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      response.end(page);
    }),
    { port: 0, host: '127.0.0.1' },
    '',
  );
  browser = await chromium.launch({ executablePath: chromiumPath, args: chromiumArgs });
});

afterAll(async () => {
  await browser?.close();
  await site?.close();
  await stack?.close();
});

describe('a run token in a browser', () => {
  it('lets a page on another origin follow a run to done with EventSource and read it with fetch, with no relay', async () => {
    const workflowId = await createWorkflow(stack, team);
    const jobId = await startRunOk(stack, team.key, workflowId, { inputs: { topic: 'otters' } });
    const made = await call(stack.baseUrl, `/runs/${jobId}/tokens`, { key: team.key, method: 'POST' });
    expect(made.status).toBe(201);
    const links = made.body.links as { run: string; events: string };
    // Another origin: the page's host name and port are not the API's.
    const pageUrl = `${site.baseUrl.replace('127.0.0.1', 'localhost')}/follow#${encodeURIComponent(JSON.stringify(links))}`;
    expect(new URL(pageUrl).origin).not.toBe(new URL(links.events).origin);

    const context = await browser.newContext();
    try {
      const tab = await context.newPage();
      const sent: { url: string; headers: Record<string, string> }[] = [];
      tab.on('request', (request) => sent.push({ url: request.url(), headers: request.headers() }));
      await tab.goto(pageUrl);
      const followed = (await tab.evaluate('window.followed')) as {
        seen: string[];
        done: { jobId: string; status: string };
        status: number;
        run: { jobId: string; status: string };
      };
      expect(followed.done).toMatchObject({ jobId, status: 'completed' });
      expect(followed.seen).toContain('step');
      expect(followed.status).toBe(200);
      expect(followed.run).toEqual((await call(stack.baseUrl, `/runs/${jobId}`, { key: team.key })).body);
      // The page sent the API no key: the token in the address was its only credential.
      const toApi = sent.filter((request) => request.url.startsWith(new URL(links.run).origin));
      expect(toApi.map((request) => new URL(request.url).pathname)).toEqual(
        expect.arrayContaining([`/api/v1/runs/${jobId}/events`, `/api/v1/runs/${jobId}`]),
      );
      for (const request of toApi) expect(request.headers.authorization).toBeUndefined();
    } finally {
      await context.close();
    }
  });
});
