/**
 * The guide's Standard Webhooks verification (docs/api.md, "Verifying with the Standard Webhooks
 * libraries"), run as written in a Node process of its own against real deliveries of the webhook
 * worker, for a caller's own secret, a caller's `whsec_` secret and one the service issued.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WebhookOptions } from '../functions/app/deliver-webhook.ts';
import { signatureHeader } from '../functions/domain/webhook.ts';
import { makeHandler } from '../functions/workers/webhook-delivery.ts';
import { invokedAs } from '../local/invocation.ts';
import { receiveWebhookRecords } from './support/queue-contents.ts';
import { call, createWorkflow, seedTeam, startWorkingStack, type TestStack, waitForRun } from './support/stack.ts';
import { type Received, receiverCa, startReceiver } from './support/webhook-receiver.ts';

const options: WebhookOptions = { fetchOptions: { allowLoopback: true, ca: receiverCa } };
const repoRoot = new URL('..', import.meta.url);

let stack: TestStack;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
beforeAll(async () => {
  stack = await startWorkingStack();
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver.close();
  await stack.close();
});

/** The fenced `js` blocks of the guide's section `heading`, in order. */
const guideSnippets = (heading: string): string[] => {
  const guide = readFileSync(new URL('docs/api.md', repoRoot), 'utf8');
  const start = guide.indexOf(`\n### ${heading}\n`);
  expect(start, `docs/api.md has a "${heading}" section`).toBeGreaterThan(0);
  const end = guide.slice(start + 1).search(/\n#{2,3} /);
  const section = guide.slice(start, end < 0 ? undefined : start + 1 + end);
  return [...section.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1] as string);
};

/**
 * Runs a snippet as a receiver would (an ES module in the repository's folder, so its imports are
 * the installed packages), with `secret`, `rawBody` and `headers` defined; answers what it left in
 * `event`, or throws when the snippet threw.
 */
const runSnippet = async (
  snippet: string,
  given: { secret: string; rawBody: string; headers: Received['headers'] },
) => {
  const program = [
    'const { secret, rawBody, headers } = JSON.parse(process.env.DELIVERY);',
    snippet,
    'process.stdout.write(JSON.stringify(event));',
  ].join('\n');
  const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', program], {
    cwd: repoRoot,
    env: { PATH: process.env.PATH, DELIVERY: JSON.stringify(given) },
  });
  return JSON.parse(stdout) as Record<string, unknown>;
};

/** A finished run with this webhook body, its delivery made by the worker; the received request and the start's answer. */
const deliveredRun = async (webhook: Record<string, unknown>) => {
  const team = await seedTeam(stack.deps);
  const workflowId = await createWorkflow(stack, team);
  const started = await call(stack.baseUrl, `/workflows/${workflowId}/runs`, {
    key: team.key,
    method: 'POST',
    body: { callbackUrl: receiver.url, ...webhook },
  });
  expect(started.status, JSON.stringify(started.body)).toBe(200);
  const jobId = started.body.jobId as string;
  await waitForRun(stack, team.key, jobId);
  const records = await receiveWebhookRecords(stack.deps, [jobId]);
  const before = receiver.received.length;
  await invokedAs('WebhookDelivery', makeHandler(stack.deps, options))({ Records: records as SQSRecord[] } as SQSEvent);
  expect(receiver.received).toHaveLength(before + 1);
  return { jobId, team, started: started.body, delivery: receiver.received.at(-1) as Received };
};

describe('verifying with the Standard Webhooks libraries, as the guide says', () => {
  const snippets = guideSnippets('Verifying with the Standard Webhooks libraries');

  it('the guide shows one snippet for standardwebhooks and one for svix', () => {
    expect(snippets).toHaveLength(2);
    expect(snippets[0]).toContain("from 'standardwebhooks'");
    expect(snippets[1]).toContain("from 'svix'");
  });

  const ownWhsec = `whsec_${randomBytes(32).toString('base64')}`;
  const kinds: [string, Record<string, unknown>][] = [
    ['a secret of the caller’s own (any string)', { callbackSecret: 's3cret ünïcode' }],
    ['a whsec_ secret of the caller’s', { callbackSecret: ownWhsec }],
    ['a secret the service issued', { generateCallbackSecret: true }],
  ];
  for (const [kind, webhook] of kinds) {
    it(`verifies a real delivery with both libraries, for ${kind}; X-Service-Signature unchanged`, async () => {
      const { jobId, delivery, started } = await deliveredRun(webhook);
      const secret = (webhook.callbackSecret ?? started.callbackSecret) as string;
      expect(secret).toEqual(expect.any(String));
      const rawBody = delivery.body;
      // The contract's signature: keyed with the secret exactly as given, whatever its form.
      expect(delivery.headers['x-service-signature']).toBe(signatureHeader(rawBody, secret));
      for (const snippet of snippets) {
        expect(await runSnippet(snippet, { secret, rawBody, headers: delivery.headers })).toMatchObject({
          jobId,
          event: 'run.completed',
        });
        // A changed body, or another secret, is refused: the snippet throws.
        await expect(
          runSnippet(snippet, { secret, rawBody: `${rawBody} `, headers: delivery.headers }),
        ).rejects.toThrow();
        const other = `whsec_${randomBytes(32).toString('base64')}`;
        await expect(runSnippet(snippet, { secret: other, rawBody, headers: delivery.headers })).rejects.toThrow();
      }
    });
  }
});

describe('an issued secret', () => {
  it('is answered once by the start (and its Idempotency-Key retry), shown by no read of the run', async () => {
    const team = await seedTeam(stack.deps);
    const workflowId = await createWorkflow(stack, team);
    const start = () =>
      call(stack.baseUrl, `/workflows/${workflowId}/runs`, {
        key: team.key,
        method: 'POST',
        body: { callbackUrl: receiver.url, generateCallbackSecret: true },
        headers: { 'idempotency-key': 'issued-secret-1' },
      });
    const first = await start();
    expect(first.status).toBe(200);
    const secret = first.body.callbackSecret as string;
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(secret.slice(6), 'base64')).toHaveLength(32);
    const again = await start();
    expect(again.body).toEqual(first.body);
    const jobId = first.body.jobId as string;
    await waitForRun(stack, team.key, jobId);
    for (const path of [`/runs/${jobId}`, '/runs', `/runs/${jobId}/deliveries`]) {
      const read = await call(stack.baseUrl, path, { key: team.key });
      expect(read.status).toBe(200);
      expect(JSON.stringify(read.body)).not.toContain(secret.slice(6));
    }
    // Another start asking for one is issued another.
    const other = await call(stack.baseUrl, `/workflows/${workflowId}/runs`, {
      key: team.key,
      method: 'POST',
      body: { callbackUrl: receiver.url, generateCallbackSecret: true },
    });
    expect(other.status).toBe(200);
    expect(other.body.callbackSecret).not.toBe(secret);
  });

  it('is refused with a secret of the caller’s, without a callbackUrl; a whsec_ secret that is not padded base64 is refused', async () => {
    const team = await seedTeam(stack.deps);
    const workflowId = await createWorkflow(stack, team);
    const refused = async (body: unknown) =>
      call(stack.baseUrl, `/workflows/${workflowId}/runs`, { key: team.key, method: 'POST', body });
    expect(
      (await refused({ callbackUrl: receiver.url, callbackSecret: 'mine', generateCallbackSecret: true })).body,
    ).toEqual({
      error: 'Invalid request body: generateCallbackSecret: give callbackSecret or generateCallbackSecret, not both',
    });
    expect((await refused({ generateCallbackSecret: true })).body).toEqual({
      error: 'Invalid request body: generateCallbackSecret: generateCallbackSecret needs a callbackUrl to sign for',
    });
    // What the libraries could not decode as the caller meant: none, not base64, unpadded.
    for (const callbackSecret of ['whsec_', 'whsec_not base64!', 'whsec_c2hvcnQ']) {
      const answer = await refused({ callbackUrl: receiver.url, callbackSecret });
      expect(answer.status).toBe(400);
      expect(answer.body).toEqual({
        error:
          'Invalid request body: callbackSecret: a secret starting with whsec_ is whsec_ and padded base64 of its bytes',
      });
    }
    // A short one the libraries take is taken too (those the service makes are 32 bytes).
    expect((await refused({ callbackUrl: receiver.url, callbackSecret: 'whsec_c2hvcnQ=' })).status).toBe(200);
  });
});
