/**
 * The fal adapter against the fal stand-in over HTTP (test/stand-ins/fal.ts): the queue requests it
 * sends (sub-path on submit only), the states it reads (results and errors), its ED25519 webhook
 * verification with the JWKS fetched and cached, its errors by class, and the key kept out of every
 * message.
 */
import { describe, expect, it, vi } from 'vitest';
import { createFalProvider, type FalOptions, falOptionsFromEnv } from '../functions/nodes/providers/fal.ts';
import { ProviderError, WebhookRefusedError } from '../functions/nodes/providers/types.ts';
import { type FalStandIn, startFalStandIn } from './stand-ins/fal.ts';
import { startJsonServer } from './stand-ins/http.ts';
import { jobProviderFile, callSignal as signal } from './support/job-providers.ts';

/** fal keys are `<key id>:<key secret>`. */
const keySecret = 'f3c1e0d9b8a7f6e5d4c3b2a1f0e9d8c7';
const apiKey = `0b9e3a52-6f8d-4c1e-9a7b-2d4f6e8a0c1b:${keySecret}`;

const { standIn, catcher, provider, failureOf, submit, lastDelivery, resendLast, cases } = jobProviderFile({
  start: (options) => startFalStandIn({ apiKey, ...options }),
  create: (own: FalStandIn, options: Partial<FalOptions> = {}) =>
    createFalProvider({ apiKey, baseUrl: own.url, jwksUrl: own.jwksUrl, allowLoopback: true, ...options }),
  model: 'fal-ai/flux/schnell',
});

const jwksReads = () => standIn.requests.filter((r) => r.path === '/.well-known/jwks.json').length;

describe('submit', () => {
  it('queues at {base}/{app id, sub-path included}?fal_webhook=<url-encoded>, the input as the body', async () => {
    const webhook = `${catcher.url}?step=a&token=b c`;
    const ref = await submit(provider(), 'fal-ai/flux/schnell', webhook);
    const request = standIn.requests.at(-1);
    expect(request?.method).toBe('POST');
    expect(request?.path).toBe(`/fal-ai/flux/schnell?fal_webhook=${encodeURIComponent(webhook)}`);
    expect(request?.headers.authorization).toBe(`Key ${apiKey}`);
    expect(request?.headers['content-type']).toBe('application/json');
    expect(JSON.parse(request?.body ?? '')).toEqual({ prompt: 'a red panda' });
    expect(ref).toEqual({ id: expect.stringMatching(/^[0-9a-f-]{36}$/), model: 'fal-ai/flux/schnell' });
    expect(standIn.jobs.get(ref.id)?.webhook).toBe(webhook);
  });

  it('sends no fal_webhook without a webhook', async () => {
    await submit(provider(), 'fal-ai/birefnet');
    expect(standIn.requests.at(-1)?.path).toBe('/fal-ai/birefnet');
  });

  cases.refusesModelNames('refuses an app id that is not owner/alias[/path] without calling fal', [
    'flux',
    'fal-ai/../secret',
    'fal-ai//flux',
    'workflows/owner',
    'fal-ai/flux?x=1',
  ]);
});

describe('get and cancel', () => {
  it('reads IN_QUEUE and IN_PROGRESS as running at owner/alias only, then COMPLETED with the result as output', async () => {
    const adapter = provider();
    const ref = await submit(adapter, 'fal-ai/flux/schnell');
    expect(await adapter.get(ref, signal())).toEqual({ status: 'running' });
    expect(standIn.requests.at(-1)?.path).toBe(`/fal-ai/flux/requests/${ref.id}/status?logs=1`);
    expect(await adapter.get(ref, signal())).toEqual({ status: 'running' });
    const output = { images: [{ url: 'https://v3.fal.media/files/x.png', content_type: 'image/png' }], seed: 42 };
    await standIn.complete(ref.id, output);
    expect(await adapter.get(ref, signal())).toEqual({ status: 'succeeded', output });
    expect(standIn.requests.slice(-2).map((r) => `${r.method} ${r.path}`)).toEqual([
      `GET /fal-ai/flux/requests/${ref.id}/status?logs=1`,
      `GET /fal-ai/flux/requests/${ref.id}`,
    ]);
  });

  it("keeps a polled request's logs (status ?logs=1) as the step's provider log, the key redacted", async () => {
    const adapter = provider();
    const ref = await submit(adapter, 'fal-ai/flux/schnell');
    standIn.log(ref.id, 'loading weights');
    standIn.log(ref.id, `step 4/4 done (key ${apiKey})`);
    await standIn.complete(ref.id, { seed: 1 });
    const state = await adapter.get(ref, signal());
    expect(state).toMatchObject({ status: 'succeeded', output: { seed: 1 } });
    const logs = (state as { logs?: string }).logs ?? '';
    expect(logs.split('\n')).toEqual([
      expect.stringMatching(/^\d{4}-\d\d-\d\dT\S+ STDOUT loading weights$/),
      expect.stringMatching(/STDOUT step 4\/4 done \(key .*\)$/),
    ]);
    expect(logs).not.toContain(apiKey);
  });

  it('keeps three segments for the workflows/ and comfy/ namespaces', async () => {
    const adapter = provider();
    const ref = await submit(adapter, 'workflows/someone/upscale-chain/v2');
    expect(standIn.requests.at(-1)?.path).toBe('/workflows/someone/upscale-chain/v2');
    expect(await adapter.get(ref, signal())).toEqual({ status: 'running' });
    expect(standIn.requests.at(-1)?.path).toBe(`/workflows/someone/upscale-chain/requests/${ref.id}/status?logs=1`);
  });

  cases.readsToItsEnd('a request that completes by itself after some reads is read to its end', 'fal-ai/stable-audio', {
    audio_file: { url: 'https://v3.fal.media/a.wav' },
  });

  it('reads a failure from the result’s error (422 detail, or an app 5xx), or from COMPLETED’s own error', async () => {
    const adapter = provider();
    const invalid = await submit(adapter);
    await standIn.fail(invalid.id, 'field required');
    expect(await adapter.get(invalid, signal())).toEqual({ status: 'failed', message: 'body: field required' });
    const crashed = await submit(adapter);
    await standIn.fail(crashed.id, 'CUDA error: out of memory', { status: 500 });
    expect(await adapter.get(crashed, signal())).toEqual({
      status: 'failed',
      message: 'body: CUDA error: out of memory',
    });
    const inStatus = await submit(adapter);
    await standIn.fail(inStatus.id, 'Runner crashed', { inStatus: true });
    const before = standIn.requests.length;
    expect(await adapter.get(inStatus, signal())).toEqual({ status: 'failed', message: 'Runner crashed' });
    expect(standIn.requests.length - before).toBe(1); // the status only: no result read
  });

  it('a 429 or an ingress 5xx on the result read is the call’s failure (retryable), not the job’s', async () => {
    const adapter = provider();
    const ref = await submit(adapter);
    await standIn.complete(ref.id, { image: { url: 'https://v3.fal.media/y.png' } });
    standIn.failNextWith(429, 3, 'Too many requests', /\/requests\/[^/?]+$/);
    expect(await failureOf(adapter.get(ref, signal()))).toMatchObject({
      status: 429,
      retryable: true,
      retryAfterSeconds: 3,
    });
    standIn.failNextWith(503, undefined, '<html>nginx</html>', /\/requests\/[^/?]+$/);
    expect(await failureOf(adapter.get(ref, signal()))).toMatchObject({ status: 503, retryable: true });
    expect(await adapter.get(ref, signal())).toMatchObject({ status: 'succeeded' });
  });

  it('cancel reaches fal (PUT …/cancel at owner/alias) and the request reads as canceled; an ended one is no error', async () => {
    const adapter = provider();
    const queued = await submit(adapter);
    await adapter.cancel(queued, signal());
    const request = standIn.requests.at(-1);
    expect([request?.method, request?.path]).toEqual(['PUT', `/fal-ai/flux/requests/${queued.id}/cancel`]);
    expect(standIn.cancels).toContain(queued.id);
    expect(await adapter.get(queued, signal())).toEqual({ status: 'canceled' });
    const running = await submit(adapter);
    await adapter.get(running, signal());
    await adapter.get(running, signal());
    await adapter.cancel(running, signal()); // 202 CANCELLATION_REQUESTED
    expect(standIn.cancels).toContain(running.id);
    const done = await submit(adapter);
    await standIn.complete(done.id, {});
    await expect(adapter.cancel(done, signal())).resolves.toBeUndefined(); // 400 ALREADY_COMPLETED
    const error = await failureOf(adapter.cancel({ id: 'no-such-request', model: 'fal-ai/flux' }, signal()));
    expect(error).toMatchObject({ status: 404, retryable: false });
  });
});

describe('webhooks', () => {
  it('verifies the ED25519-signed webhooks fal sends, fetching the JWKS once, without the key', async () => {
    const adapter = provider();
    const before = jwksReads();
    const ok = await submit(adapter, 'fal-ai/flux/schnell', catcher.url);
    const output = { images: [{ url: 'https://v3.fal.media/files/z.png' }] };
    expect((await standIn.complete(ok.id, output))?.status).toBe(200);
    expect(await adapter.verifyWebhook(lastDelivery())).toEqual({ id: ok.id, state: { status: 'succeeded', output } });
    const failed = await submit(adapter, 'fal-ai/flux/schnell', catcher.url);
    await standIn.fail(failed.id, 'field required');
    expect(await adapter.verifyWebhook(lastDelivery())).toEqual({
      id: failed.id,
      state: { status: 'failed', message: 'Invalid status code: 422: body: field required' },
    });
    const lost = await submit(adapter, 'fal-ai/flux/schnell', catcher.url);
    await standIn.complete(lost.id, { big: true }, { payloadError: 'Payload too large' });
    expect(await adapter.verifyWebhook(lastDelivery())).toEqual({ id: lost.id, state: { status: 'running' } });
    expect(await adapter.get(lost, signal())).toEqual({ status: 'succeeded', output: { big: true } });
    // A duplicate (same bytes) verifies again: deduplication is the route's, by job id.
    await resendLast();
    expect((await adapter.verifyWebhook(lastDelivery())).id).toBe(lost.id);
    expect(jwksReads() - before).toBe(1);
    const jwksRequest = standIn.requests.filter((r) => r.path === '/.well-known/jwks.json').at(-1);
    expect(jwksRequest?.headers.authorization).toBeUndefined();
  });

  cases.refusesForgeries(
    'refuses a forged signature, a tampered body, a timestamp over 5 minutes old or ahead, and missing or bad headers',
    { image: { url: 'https://v3.fal.media/ok.png' } },
    (body) => body.replace('ok.png', 'evil.png'),
    [
      { 'x-fal-webhook-request-id': undefined },
      { 'x-fal-webhook-user-id': undefined },
      { 'x-fal-webhook-timestamp': undefined },
      { 'x-fal-webhook-signature': undefined },
      { 'x-fal-webhook-signature': 'zz' },
      { 'x-fal-webhook-user-id': 'someone-else' },
      { 'x-fal-webhook-request-id': 'another-request' },
    ],
  );

  cases.refusesReplays();

  it('after a key rotation, fetches the JWKS again on a failure at most once a minute, and after a day', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const adapter = provider();
    const ref = await submit(adapter, 'fal-ai/flux/schnell', catcher.url);
    await standIn.complete(ref.id, {});
    await adapter.verifyWebhook(lastDelivery());
    const before = jwksReads();
    standIn.rotateKeys();
    vi.setSystemTime(Date.now() + 30 * 1000);
    await standIn.deliver(ref.id);
    // Within the minute a delivery no cached key verifies (forged, or a new key) fetches nothing.
    await expect(adapter.verifyWebhook(lastDelivery())).rejects.toBeInstanceOf(WebhookRefusedError);
    expect(jwksReads()).toBe(before);
    vi.setSystemTime(Date.now() + 31 * 1000);
    await standIn.deliver(ref.id);
    await expect(adapter.verifyWebhook(lastDelivery())).resolves.toMatchObject({ id: ref.id });
    expect(jwksReads()).toBe(before + 1);
    await standIn.deliver(ref.id, { forge: true });
    await expect(adapter.verifyWebhook(lastDelivery())).rejects.toBeInstanceOf(WebhookRefusedError);
    expect(jwksReads()).toBe(before + 1);
    // Keys a day old are fetched again before verifying: a key fal withdrew stops verifying.
    const day = 24 * 60 * 60 * 1000;
    const signedWithWithdrawn = standIn.delivery(ref.id, { timestampSeconds: Math.floor((Date.now() + day) / 1000) });
    standIn.rotateKeys();
    vi.setSystemTime(Date.now() + day);
    await expect(adapter.verifyWebhook({ ...signedWithWithdrawn, now: new Date() })).rejects.toBeInstanceOf(
      WebhookRefusedError,
    );
    expect(jwksReads()).toBe(before + 2);
    await standIn.deliver(ref.id);
    await expect(adapter.verifyWebhook(lastDelivery())).resolves.toMatchObject({ id: ref.id });
    expect(jwksReads()).toBe(before + 2);
  });

  it('verifies a fixed vector computed apart from this code (seed 0x00..0x1f; the message as fal’s page gives it)', async () => {
    const jwks = await startJsonServer(() => ({
      status: 200,
      body: { keys: [{ kty: 'OKP', crv: 'Ed25519', x: 'A6EHv_POEL4dcN0Y50vAmWfk1jCbpQ1fHdyGZBJVMbg' }] },
    }));
    try {
      const requestId = '123e4567-e89b-12d3-a456-426614174000';
      const body = `{"request_id":"${requestId}","gateway_request_id":"${requestId}","status":"OK","payload":{"images":[{"url":"https://v3.fal.media/files/x.png"}]}}`;
      const headers = {
        'x-fal-webhook-request-id': requestId,
        'x-fal-webhook-user-id': 'user-123',
        'x-fal-webhook-timestamp': '1732600000',
        'x-fal-webhook-signature':
          '08dd8e9fab5e7175141ce9948703cf89dafb09acf2cbf45dd9ca478821af70ea9f9dd14108306ca61f46a6b664e6bd98e043a337e99c5b47f9b20ccc47e73401',
      };
      const adapter = provider({ jwksUrl: `${jwks.url}/.well-known/jwks.json` });
      expect(await adapter.verifyWebhook({ headers, body, now: new Date(1732600000 * 1000) })).toEqual({
        id: requestId,
        state: { status: 'succeeded', output: { images: [{ url: 'https://v3.fal.media/files/x.png' }] } },
      });
    } finally {
      await jwks.close();
    }
  });

  cases.keyFetchFailureIsRetryable('keys fal cannot give are a retryable ProviderError, not a refusal', () =>
    standIn.failNextWith(503, undefined, 'unavailable', /jwks/),
  );
});

describe('errors by class', () => {
  cases.throttled('Too many requests');

  it('400: not retryable, with fal’s detail; a 422 list of {loc, msg} is read too', async () => {
    standIn.failNextWith(400, undefined, 'Invalid timeout header');
    const error = await failureOf(submit(provider()));
    expect(error).toMatchObject({ status: 400, retryable: false });
    expect((error as Error).message).toContain('Invalid timeout header');
    const invalid = await failureOf(
      provider().submit({
        model: 'fal-ai/flux/schnell',
        input: [] as unknown as Record<string, unknown>,
        signal: signal(),
      }),
    );
    expect(invalid).toMatchObject({ status: 422, retryable: false });
    expect((invalid as Error).message).toContain('body: Input should be a valid dictionary');
  });

  cases.refusedKey('someone:else000000000000000000');
  cases.unreachable();
  cases.pastDeadline({ id: 'x', model: 'fal-ai/flux' });

  it('a loopback base or JWKS URL is refused unless allowLoopback, before anything is sent', async () => {
    const ref = await submit(provider());
    await standIn.complete(ref.id, {});
    const delivery = standIn.delivery(ref.id);
    const before = standIn.requests.length;
    const error = await failureOf(submit(provider({ allowLoopback: false })));
    expect(error).toBeInstanceOf(ProviderError);
    expect((error as ProviderError).retryable).toBe(false);
    const jwksError = await failureOf(
      provider({ allowLoopback: false }).verifyWebhook({ ...delivery, now: new Date() }),
    );
    expect(jwksError).toBeInstanceOf(ProviderError);
    expect(standIn.requests.length).toBe(before);
  });
});

describe('the key', () => {
  it('is cut out of a message, and so is its secret part, even where fal quotes them', async () => {
    standIn.failNextWith(401, undefined, `No user found for Key ID and Secret ${apiKey}`);
    expect(((await failureOf(submit(provider()))) as Error).message).toContain('Secret [key]');
    standIn.failNextWith(403, undefined, `secret ${keySecret} is revoked`);
    expect(((await failureOf(submit(provider()))) as Error).message).toContain('secret [key] is revoked');
  });

  cases.keyKeptOut(keySecret);
});

describe('falOptionsFromEnv', () => {
  it('reads the key, the base and JWKS URLs and ALLOW_PRIVATE_CALLBACKS', () => {
    expect(
      falOptionsFromEnv({
        PROVIDER_FAL_API_KEY: 'id:secret',
        PROVIDER_FAL_BASE_URL: 'http://127.0.0.1:9998',
        PROVIDER_FAL_JWKS_URL: 'http://127.0.0.1:9998/.well-known/jwks.json',
        ALLOW_PRIVATE_CALLBACKS: '1',
      }),
    ).toEqual({
      apiKey: 'id:secret',
      baseUrl: 'http://127.0.0.1:9998',
      jwksUrl: 'http://127.0.0.1:9998/.well-known/jwks.json',
      allowLoopback: true,
    });
    expect(falOptionsFromEnv({})).toEqual({
      apiKey: undefined,
      baseUrl: undefined,
      jwksUrl: undefined,
      allowLoopback: false,
    });
  });
});
