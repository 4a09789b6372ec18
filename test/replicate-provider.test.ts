/**
 * The Replicate adapter against the Replicate stand-in over HTTP (test/stand-ins/replicate.ts): the
 * requests it sends, the states it reads, its webhook verification (checked against the Standard
 * Webhooks reference library both ways), its errors by class, and the key kept out of every message.
 */
import { Webhook } from 'standardwebhooks';
import { describe, expect, it, vi } from 'vitest';
import {
  createReplicateProvider,
  type ReplicateOptions,
  replicateOptionsFromEnv,
} from '../functions/nodes/providers/replicate.ts';
import { ProviderError, WebhookRefusedError } from '../functions/nodes/providers/types.ts';
import { startJsonServer } from './stand-ins/http.ts';
import { type ReplicateStandIn, startReplicateStandIn } from './stand-ins/replicate.ts';
import { jobProviderFile, callSignal as signal } from './support/job-providers.ts';

const apiKey = 'r8_standInToken0123456789abcdefghijklmnop';
const version = '9dcd6d78e7c6560c340d916fe32e9f24aabfa331e5cce95fe31f77fb03121426';

const { standIn, catcher, provider, failureOf, submit, lastDelivery, resendLast, cases } = jobProviderFile({
  start: (options) => startReplicateStandIn({ apiKey, ...options }),
  create: (own: ReplicateStandIn, options: Partial<ReplicateOptions> = {}) =>
    createReplicateProvider({ apiKey, baseUrl: own.url, allowLoopback: true, ...options }),
  model: 'black-forest-labs/flux-schnell',
});

describe('submit', () => {
  it('creates a prediction of an official model at /v1/models/{owner}/{name}/predictions, with its webhook', async () => {
    const ref = await submit(provider(), 'black-forest-labs/flux-schnell', catcher.url);
    const request = standIn.requests.at(-1);
    expect(request?.method).toBe('POST');
    expect(request?.path).toBe('/v1/models/black-forest-labs/flux-schnell/predictions');
    expect(request?.headers.authorization).toBe(`Bearer ${apiKey}`);
    expect(request?.headers['content-type']).toBe('application/json');
    expect(JSON.parse(request?.body ?? '')).toEqual({
      input: { prompt: 'a red panda' },
      webhook: catcher.url,
      webhook_events_filter: ['completed'],
    });
    expect(ref).toEqual({ id: expect.stringMatching(/^[a-z0-9]{26}$/), model: 'black-forest-labs/flux-schnell' });
    expect(standIn.jobs.get(ref.id)?.createdBy).toBe('model');
  });

  it('creates a prediction of a version at /v1/predictions with the version id, no webhook fields without a webhook', async () => {
    const ref = await submit(provider(), `nightmareai/real-esrgan:${version}`);
    const request = standIn.requests.at(-1);
    expect(request?.path).toBe('/v1/predictions');
    expect(JSON.parse(request?.body ?? '')).toEqual({ input: { prompt: 'a red panda' }, version });
    expect(ref.model).toBe(`nightmareai/real-esrgan:${version}`);
    expect(standIn.jobs.get(ref.id)?.createdBy).toBe('version');
  });

  cases.refusesModelNames('refuses a model name that is not owner/name[:version] without calling Replicate', [
    'flux',
    '../../v1/webhooks/default/secret',
    'a/b/c',
    'owner/name:',
  ]);
});

describe('get and cancel', () => {
  it('reads a running prediction as running, then its success with the output', async () => {
    const adapter = provider();
    const ref = await submit(adapter);
    expect(await adapter.get(ref, signal())).toEqual({ status: 'running' }); // starting
    expect(await adapter.get(ref, signal())).toEqual({ status: 'running' }); // processing
    expect(standIn.jobs.get(ref.id)?.prediction.status).toBe('processing');
    await standIn.complete(ref.id, ['https://replicate.delivery/out-0.png']);
    // Its `metrics` as the work it reports: `predict_time` on every model.
    expect(await adapter.get(ref, signal())).toEqual({
      status: 'succeeded',
      usage: { predictSeconds: 1.5 },
      output: ['https://replicate.delivery/out-0.png'],
    });
    expect(standIn.requests.at(-1)?.path).toBe(`/v1/predictions/${ref.id}`);
  });

  it('reads a failed prediction with its error text', async () => {
    const adapter = provider();
    const ref = await submit(adapter);
    await standIn.fail(ref.id, 'CUDA out of memory');
    expect(await adapter.get(ref, signal())).toEqual({ status: 'failed', message: 'CUDA out of memory' });
  });

  cases.readsToItsEnd(
    'a prediction that ends by itself after some reads is read to its end',
    'meta/musicgen',
    'https://replicate.delivery/x.wav',
  );

  it('cancel reaches Replicate and the prediction reads as canceled; cancelling an ended one is no error', async () => {
    const adapter = provider();
    const ref = await submit(adapter);
    await adapter.cancel(ref, signal());
    expect(standIn.cancels).toContain(ref.id);
    const request = standIn.requests.at(-1);
    expect([request?.method, request?.path]).toEqual(['POST', `/v1/predictions/${ref.id}/cancel`]);
    expect(await adapter.get(ref, signal())).toEqual({ status: 'canceled' });
    await adapter.cancel(ref, signal());
    const done = await submit(adapter);
    await standIn.complete(done.id, 'out');
    await expect(adapter.cancel(done, signal())).resolves.toBeUndefined();
    // A text answer's token counts too, as Replicate's language models report them.
    expect(await adapter.get(done, signal())).toEqual({
      status: 'succeeded',
      output: 'out',
      usage: { predictSeconds: 1.5, inputTokens: 3, outputTokens: 1 },
    });
  });

  it('an unknown prediction is a 404 ProviderError, not retryable, with Replicate’s text', async () => {
    const error = await failureOf(provider().get({ id: 'nosuchprediction', model: 'a/b' }, signal()));
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({ status: 404, retryable: false });
    expect((error as Error).message).toContain('Not found.');
  });
});

describe('webhooks', () => {
  const secretReads = () => standIn.requests.filter((r) => r.path === '/v1/webhooks/default/secret').length;

  it('verifies the signed webhook Replicate sends at the end, fetching the secret once for many deliveries', async () => {
    const adapter = provider();
    const ref = await submit(adapter, 'black-forest-labs/flux-schnell', catcher.url);
    const sent = await standIn.complete(ref.id, ['https://replicate.delivery/a.png']);
    expect(sent?.status).toBe(200);
    const before = secretReads();
    expect(await adapter.verifyWebhook(lastDelivery())).toEqual({
      id: ref.id,
      state: { status: 'succeeded', output: ['https://replicate.delivery/a.png'], usage: { predictSeconds: 1.5 } },
    });
    const failed = await submit(adapter, 'black-forest-labs/flux-schnell', catcher.url);
    await standIn.fail(failed.id, 'NSFW content detected');
    expect(await adapter.verifyWebhook(lastDelivery())).toEqual({
      id: failed.id,
      state: { status: 'failed', message: 'NSFW content detected' },
    });
    const canceled = await submit(adapter, 'black-forest-labs/flux-schnell', catcher.url);
    await adapter.cancel(canceled, signal());
    await standIn.idle();
    expect(await adapter.verifyWebhook(lastDelivery())).toEqual({ id: canceled.id, state: { status: 'canceled' } });
    // A duplicate delivery (same bytes) verifies again: deduplication is the route's, by job id.
    await resendLast();
    expect((await adapter.verifyWebhook(lastDelivery())).id).toBe(canceled.id);
    expect(secretReads() - before).toBe(1);
  });

  cases.refusesForgeries(
    'refuses a forged signature, a tampered body, a timestamp over 5 minutes old or ahead, and missing headers',
    'out',
    (body) => body.replace('"out"', '"https://evil.example/x.png"'),
    [{ 'webhook-id': undefined }, { 'webhook-timestamp': undefined }, { 'webhook-signature': undefined }],
  );

  cases.refusesReplays();

  it('after a rotation, fetches the secret again once the cached one is over an hour old, and no sooner', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const adapter = provider();
    const ref = await submit(adapter, 'black-forest-labs/flux-schnell', catcher.url);
    await standIn.complete(ref.id, 'out');
    await adapter.verifyWebhook(lastDelivery());
    const before = secretReads();
    standIn.rotateSecret();
    vi.setSystemTime(Date.now() + 30 * 60 * 1000);
    await standIn.deliver(ref.id);
    // Within the hour a delivery that does not verify (forged, or signed after a rotation) fetches nothing.
    await expect(adapter.verifyWebhook(lastDelivery())).rejects.toBeInstanceOf(WebhookRefusedError);
    expect(secretReads()).toBe(before);
    vi.setSystemTime(Date.now() + 31 * 60 * 1000);
    await standIn.deliver(ref.id);
    await expect(adapter.verifyWebhook(lastDelivery())).resolves.toMatchObject({ id: ref.id });
    expect(secretReads()).toBe(before + 1);
    await standIn.deliver(ref.id, { forge: true });
    await expect(adapter.verifyWebhook(lastDelivery())).rejects.toBeInstanceOf(WebhookRefusedError);
    expect(secretReads()).toBe(before + 1);
  });

  it('agrees with the standardwebhooks reference library, both ways', async () => {
    const adapter = provider();
    const ref = await submit(adapter, 'black-forest-labs/flux-schnell', catcher.url);
    await standIn.complete(ref.id, ['https://replicate.delivery/b.png']);
    const library = new Webhook(standIn.secret);
    // The stand-in's delivery verifies with the library…
    const sent = lastDelivery();
    expect(library.verify(sent.body, sent.headers as Record<string, string>)).toMatchObject({ id: ref.id });
    // …and one the library signs verifies with the adapter.
    const body = JSON.stringify({ id: ref.id, status: 'succeeded', output: ['https://replicate.delivery/c.png'] });
    const now = new Date();
    const headers = {
      'webhook-id': 'msg_2Lh9KRb0pzN4LePd3XiA0Y7ZnC3',
      'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
      'webhook-signature': library.sign('msg_2Lh9KRb0pzN4LePd3XiA0Y7ZnC3', now, body),
    };
    expect(await adapter.verifyWebhook({ headers, body, now })).toEqual({
      id: ref.id,
      state: { status: 'succeeded', output: ['https://replicate.delivery/c.png'] },
    });
    // A second signature in the list (during a rotation) is accepted too.
    const rotated = `v1,${Buffer.alloc(32).toString('base64')} ${headers['webhook-signature']}`;
    await expect(
      adapter.verifyWebhook({ headers: { ...headers, 'webhook-signature': rotated }, body, now }),
    ).resolves.toMatchObject({ id: ref.id });
  });

  it('verifies a fixed vector computed apart from this code', async () => {
    const secret = 'whsec_dGVzdC1rZXktbm90LWEtcmVhbC1zZWNyZXQtMDAwMQ==';
    const own = await startJsonServer(() => ({ status: 200, body: { key: secret } }));
    try {
      const adapter = createReplicateProvider({ apiKey, baseUrl: own.url, allowLoopback: true });
      const headers = {
        'webhook-id': 'msg_2Lh9KRb0pzN4LePd3XiA0Y7ZnC3',
        'webhook-timestamp': '1732600000',
        'webhook-signature': 'v1,HXp8UIiDK5SxRhW++bQQQlVlJBnNCaIlFM6ExGY4Mcg=',
      };
      const body = '{"id":"gm3qorzdhgbfurvjtvhg6dckhu","status":"succeeded"}';
      expect(await adapter.verifyWebhook({ headers, body, now: new Date(1732600000 * 1000) })).toEqual({
        id: 'gm3qorzdhgbfurvjtvhg6dckhu',
        state: { status: 'succeeded', output: null },
      });
      expect(own.requests.map((r) => r.path)).toEqual(['/v1/webhooks/default/secret']);
    } finally {
      await own.close();
    }
  });

  cases.keyFetchFailureIsRetryable('a secret Replicate cannot give is a retryable ProviderError, not a refusal', () =>
    standIn.failNextWith(503),
  );
});

describe('errors by class', () => {
  cases.throttled('Request was throttled');

  it('400: not retryable, with Replicate’s detail', async () => {
    standIn.failNextWith(400, undefined, 'The input is not valid: prompt is too long');
    const error = await failureOf(submit(provider()));
    expect(error).toMatchObject({ status: 400, retryable: false });
    expect((error as Error).message).toContain('The input is not valid: prompt is too long');
  });

  it('a 5xx is retryable', async () => {
    standIn.failNextWith(502, undefined, 'Bad gateway');
    expect(await failureOf(provider().get({ id: 'x', model: 'a/b' }, signal()))).toMatchObject({
      status: 502,
      retryable: true,
    });
  });

  cases.refusedKey('r8_someoneElsesToken000000000000000');

  it('no key: a configuration error before any call', async () => {
    const before = standIn.requests.length;
    expect(await failureOf(submit(provider({ apiKey: undefined })))).toMatchObject({ retryable: false });
    expect(standIn.requests.length).toBe(before);
  });

  cases.unreachable();
  cases.pastDeadline({ id: 'x', model: 'a/b' });

  it('a loopback base URL is refused unless allowLoopback, before anything is sent', async () => {
    const before = standIn.requests.length;
    const error = await failureOf(submit(provider({ allowLoopback: false })));
    expect(error).toBeInstanceOf(ProviderError);
    expect((error as ProviderError).retryable).toBe(false);
    expect(standIn.requests.length).toBe(before);
    const secretError = await failureOf(
      provider({ allowLoopback: false }).verifyWebhook({
        headers: {
          'webhook-id': 'msg_1',
          'webhook-timestamp': String(Math.floor(Date.now() / 1000)),
          'webhook-signature': 'v1,x',
        },
        body: '{}',
        now: new Date(),
      }),
    );
    expect(secretError).toBeInstanceOf(ProviderError);
    expect(standIn.requests.length).toBe(before);
  });

  it('an injected fetch replaces the transport; its failures are classified the same way', async () => {
    const failing: typeof fetch = () => Promise.reject(new TypeError('fetch failed'));
    expect(await failureOf(submit(provider({ fetch: failing })))).toMatchObject({ retryable: true });
    const ok = await submit(provider({ fetch }));
    expect(standIn.jobs.has(ok.id)).toBe(true);
  });
});

describe('the key', () => {
  it('is cut out of a message even where Replicate quotes it', async () => {
    standIn.failNextWith(401, undefined, `Invalid token: ${apiKey}`);
    const error = await failureOf(submit(provider()));
    expect((error as Error).message).toContain('Invalid token: [key]');
  });

  cases.keyKeptOut(apiKey);
});

describe('replicateOptionsFromEnv', () => {
  it('reads the key, the base URL and ALLOW_PRIVATE_CALLBACKS', () => {
    expect(
      replicateOptionsFromEnv({
        PROVIDER_REPLICATE_API_KEY: 'r8_x',
        PROVIDER_REPLICATE_BASE_URL: 'http://127.0.0.1:9999',
        ALLOW_PRIVATE_CALLBACKS: '1',
      }),
    ).toEqual({ apiKey: 'r8_x', baseUrl: 'http://127.0.0.1:9999', allowLoopback: true });
    expect(replicateOptionsFromEnv({})).toEqual({ apiKey: undefined, baseUrl: undefined, allowLoopback: false });
  });
});
