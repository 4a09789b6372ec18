/**
 * File links (functions/app/file-links.ts) through the real path: a run's file `url` in its read and
 * its webhook body is GET /file-links/…, which the local API answers 302 to the local S3, for two
 * hours by the injected clock and not after; anything altered answers the same 404.
 */
import { randomUUID } from 'node:crypto';
import { DeleteObjectCommand, GetObjectCommand } from '@aws-sdk/client-s3';
import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import type { SQSEvent } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Deps } from '../functions/deps.ts';
import { buildOpenApiDocument } from '../functions/docs/openapi.ts';
import { decodePng } from '../functions/nodes/media/png.ts';
import { makeHandler as webhookHandler } from '../functions/workers/webhook-delivery.ts';
import { type LocalApi, startLocalApi } from '../local/api-gateway.ts';
import { invokedAs } from '../local/invocation.ts';
import { expectValidResponse } from './support/openapi-validator.ts';
import { recordOf } from './support/queue-contents.ts';
import {
  createWorkflow,
  seedTeam,
  startRunOk,
  startWorkingStack,
  type TestStack,
  waitForRun,
} from './support/stack.ts';
import { type Received, receiverCa, startReceiver } from './support/webhook-receiver.ts';

let stack: TestStack;
/** A second front over the same stack whose clock the test sets (`later.at`, ms; null: the real one). */
const later: { at: number | null; api?: LocalApi } = { at: null };
beforeAll(async () => {
  stack = await startWorkingStack();
  const deps: Deps = { ...stack.deps, now: () => new Date(later.at ?? Date.now()) };
  later.api = await startLocalApi({ deps, port: 0, host: '127.0.0.1' });
});
afterAll(async () => {
  await later.api?.close();
  await stack.close();
});

const imageSteps = [
  { key: 'prompt', type: 'TextEntry', config: { text: 'a lighthouse' } },
  { key: 'image', type: 'ImageGen', inputs: ['prompt'], config: { provider: 'sandbox', width: 96, height: 64 } },
];

interface LinkedFile {
  availability: string;
  url: string;
  contentType: string;
  bytes: number;
  expiresAt: string;
}

const fileOf = (run: Record<string, unknown>): LinkedFile => {
  const output = run.output as { node_id: string; result: unknown }[];
  const found = JSON.stringify(output.find((o) => o.node_id === 'image')?.result).match(/\{"availability":[^}]*\}/);
  return JSON.parse(found?.[0] ?? '{}') as LinkedFile;
};

const startImageRun = async (body: Record<string, unknown> = {}) => {
  const team = await seedTeam(stack.deps);
  const workflowId = await createWorkflow(stack, team, imageSteps);
  return { team, jobId: await startRunOk(stack, team.key, workflowId, body) };
};

/** A finished image run of a new team, and its file as GET /runs/{jobId} gives it. */
const imageRun = async () => {
  const { team, jobId } = await startImageRun();
  const done = await waitForRun(stack, team.key, jobId);
  expect(done.body.status, JSON.stringify(done.body)).toBe('completed');
  return { team, jobId, run: done.body, file: fileOf(done.body) };
};

/** The link's request, answered by the front whose clock the test set, without following the redirect. */
const follow = async (url: string, at: number | null = null) => {
  later.at = at;
  const { pathname, search } = new URL(url);
  const response = await fetch(`${new URL(later.api?.baseUrl ?? '').origin}${pathname}${search}`, {
    redirect: 'manual',
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, text };
};

/** The link altered: its path's object, or one query parameter. */
const altered = (url: string, change: { object?: string; exp?: string; sig?: string }) => {
  const parsed = new URL(url);
  if (change.object !== undefined) parsed.pathname = parsed.pathname.replace(/[^/]+$/, change.object);
  if (change.exp !== undefined) parsed.searchParams.set('exp', change.exp);
  if (change.sig !== undefined) parsed.searchParams.set('sig', change.sig);
  return parsed.toString();
};

/** `text` with its last character replaced by a different one. */
const otherLast = (text: string) => `${text.slice(0, -1)}${text.endsWith('A') ? 'E' : 'A'}`;

const objectOf = (url: string) => new URL(url).pathname.split('/').pop() ?? '';
const notFound = JSON.stringify({ error: 'File not found' });

/** The stored object's bytes, read from the bucket directly. */
const storedBytes = async (url: string) => {
  const Key = Buffer.from(objectOf(url), 'base64url').toString('utf8');
  const { Body } = await stack.deps.s3.send(new GetObjectCommand({ Bucket: stack.deps.bucket, Key }));
  return new Uint8Array((await Body?.transformToByteArray()) ?? []);
};

describe('file links', () => {
  // First in this file's table: the delivery makes the first link, so it creates the signing key.
  it('gives the webhook receiver a file link of ours, made at delivery, that serves the file with no key', async () => {
    const receiver = await startReceiver();
    try {
      const { jobId } = await startImageRun({ callbackUrl: receiver.url });
      // The run's end queues its webhook: handed to the real worker as the event source would.
      let body: string | undefined;
      for (let i = 0; i < 60 && !body; i++) {
        const { Messages = [] } = await stack.deps.sqs.send(
          new ReceiveMessageCommand({ QueueUrl: stack.deps.queueUrls.webhooks, WaitTimeSeconds: 1 }),
        );
        const mine = Messages.find((m) => (JSON.parse(m.Body ?? '{}') as { jobId?: string }).jobId === jobId);
        if (!mine) continue;
        const record = recordOf({ messageId: mine.MessageId ?? '', body: mine.Body ?? '' });
        const handler = invokedAs(
          'WebhookDelivery',
          webhookHandler(stack.deps, { fetchOptions: { allowLoopback: true, ca: receiverCa } }),
        );
        await handler({ Records: [record] } as SQSEvent);
        body = (receiver.received[0] as Received | undefined)?.body;
      }
      const file = fileOf(JSON.parse(body ?? '{}'));
      expect(file).toMatchObject({ availability: 'ready', contentType: 'image/png' });
      expect(file.url.startsWith(`${stack.baseUrl}/file-links/`)).toBe(true);
      const served = await fetch(file.url);
      expect(served.status).toBe(200);
      expect(decodePng(new Uint8Array(await served.arrayBuffer()))).toMatchObject({ width: 96, height: 64 });
    } finally {
      await receiver.close();
    }
  });

  it('a run read gives a link to our API that redirects (302, no-store) to a 5-minute storage URL of the bytes', async () => {
    const { file } = await imageRun();
    const url = new URL(file.url);
    expect(`${url.origin}${url.pathname}`).toBe(`${stack.baseUrl}/file-links/${objectOf(file.url)}`);
    expect(url.searchParams.get('exp')).toBe(String(Date.parse(file.expiresAt) / 1000));
    expect(url.searchParams.get('sig')).toMatch(/^v1\.[A-Za-z0-9_-]{43}$/);
    expect(file.url).not.toContain('X-Amz-');

    const answer = await follow(file.url);
    expect(answer.status).toBe(302);
    expect(answer.headers.get('cache-control')).toBe('no-store');
    const location = new URL(answer.headers.get('location') ?? '');
    expect(location.searchParams.get('X-Amz-Expires')).toBe('300');
    const bytes = new Uint8Array(await (await fetch(location)).arrayBuffer());
    expect(bytes).toEqual(await storedBytes(file.url));
    expect(bytes.byteLength).toBe(file.bytes);
  });

  it('redirects until its expiresAt, two hours from the read, and answers 404 after, by the injected clock', async () => {
    const { file } = await imageRun();
    const end = Date.parse(file.expiresAt);
    const readAt = Date.now();
    expect(end - readAt).toBeGreaterThan(2 * 3600_000 - 60_000);
    expect(end - readAt).toBeLessThanOrEqual(2 * 3600_000);

    const justBefore = await follow(file.url, end - 1000);
    expect(justBefore.status).toBe(302);
    const bytes = new Uint8Array(await (await fetch(justBefore.headers.get('location') ?? '')).arrayBuffer());
    expect(bytes).toEqual(await storedBytes(file.url));

    const justAfter = await follow(file.url, end + 1000);
    expect(justAfter.status).toBe(404);
    expect(justAfter.text).toBe(notFound);
    expect(justAfter.headers.get('location')).toBeNull();

    // A fresh read gives a fresh link that works again.
    const fresh = await imageRun();
    const again = fresh.file;
    expect((await follow(again.url)).status).toBe(302);
  });

  it('answers the same 404 to a tampered, foreign or garbled link, and never says whether a file exists', async () => {
    const mine = await imageRun();
    const theirs = await imageRun();
    const bad = [
      // Its last character changed (to another, whatever it was: a signature may well end in 'A').
      altered(mine.file.url, { sig: otherLast(new URL(mine.file.url).searchParams.get('sig') ?? '') }),
      altered(mine.file.url, { sig: '' }),
      altered(mine.file.url, { exp: String(Number(new URL(mine.file.url).searchParams.get('exp')) + 1) }),
      altered(mine.file.url, { exp: 'soon' }),
      // Another team's object under this link's end and signature.
      altered(mine.file.url, { object: objectOf(theirs.file.url) }),
      // An object of this team that does not exist, signed as another.
      altered(mine.file.url, { object: Buffer.from(`teams/${mine.team.teamId}/none.png`).toString('base64url') }),
      `${stack.baseUrl}/file-links/${objectOf(mine.file.url)}`,
      `${stack.baseUrl}/file-links/%21%21%21?exp=1&sig=v1.x`,
      `${stack.baseUrl}/file-links/${randomUUID()}?exp=99999999999&sig=v1.${'A'.repeat(43)}`,
    ];
    for (const url of bad) {
      const answer = await follow(url);
      expect(answer.status, url).toBe(404);
      expect(answer.text, url).toBe(notFound);
      expect(answer.headers.get('location'), url).toBeNull();
      expectValidResponse(buildOpenApiDocument(), {
        method: 'GET',
        path: new URL(url).pathname.replace(/^\/api\/v1/, ''),
        status: 404,
        body: JSON.parse(answer.text),
      });
    }
    // The genuine links still work.
    expect((await follow(mine.file.url)).status).toBe(302);
    expect((await follow(theirs.file.url)).status).toBe(302);
  });

  it('does not look its object up: a link to a file deleted since redirects, and storage answers 403 AccessDenied', async () => {
    const { file } = await imageRun();
    const Key = Buffer.from(objectOf(file.url), 'base64url').toString('utf8');
    await stack.deps.s3.send(new DeleteObjectCommand({ Bucket: stack.deps.bucket, Key }));
    const answer = await follow(file.url);
    expect(answer.status).toBe(302);
    // S3's answer for a missing key to a signer without s3:ListBucket, as the functions are.
    const target = await fetch(answer.headers.get('location') ?? '');
    expect(target.status).toBe(403);
    expect(await target.text()).toContain('<Code>AccessDenied</Code>');
  });
});
