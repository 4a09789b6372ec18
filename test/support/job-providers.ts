/**
 * What the job adapters' tests (test/replicate-provider.test.ts, test/fal-provider.test.ts) share:
 * the provider's stand-in and a webhook catcher started for the file, every error an adapter threw
 * kept for the key check, and the cases both protocols answer alike, each run against its own
 * stand-in (the protocols differ; what the adapter makes of them does not).
 */
import { afterAll, afterEach, beforeAll, expect, it, vi } from 'vitest';
import type { JobProviderOptions } from '../../functions/nodes/providers/job-http.ts';
import {
  type JobProvider,
  type JobRef,
  ProviderError,
  WebhookRefusedError,
} from '../../functions/nodes/providers/types.ts';
import {
  type DeliveryOptions,
  type RecordedRequest,
  type SentWebhook,
  type SignedDelivery,
  startJsonServer,
  startWebhookCatcher,
} from '../stand-ins/http.ts';
import { readThrough } from './read-through.ts';
import { rejectionOf } from './rejection.ts';

/** What the Replicate and fal stand-ins both offer. */
export interface JobStandIn {
  url: string;
  requests: RecordedRequest[];
  webhooks: SentWebhook[];
  complete(id: string, output: unknown): Promise<SentWebhook | undefined>;
  /** The signed delivery of an ended job, not sent. */
  delivery(id: string, options?: DeliveryOptions): SignedDelivery;
  resend(sent: SentWebhook): Promise<SentWebhook>;
  failNextWith(status: number, retryAfter?: number, detail?: string, on?: RegExp): void;
  stallNext(on?: RegExp): void;
  close(): Promise<void>;
}

export interface JobProviderFile<S extends JobStandIn, O extends JobProviderOptions> {
  /** The file's stand-in, or (with options) one whose jobs end by themselves after some reads. */
  start(options?: { pollsUntilDone?: number; output?: unknown }): Promise<S>;
  /** The adapter on `standIn`, with the file's key and loopback allowed unless `options` say otherwise. */
  create(standIn: S, options?: Partial<O>): JobProvider;
  /** The model a submit names unless told otherwise. */
  model: string;
}

/** One provider call's deadline in these tests: generous, as on a loaded machine. */
export const callSignal = () => AbortSignal.timeout(30_000);

/** Starts the file's stand-in and webhook catcher (closed after its tests) and gives what its tests use. */
export const jobProviderFile = <S extends JobStandIn, O extends JobProviderOptions>(file: JobProviderFile<S, O>) => {
  let started: S | undefined;
  let catching: Awaited<ReturnType<typeof startWebhookCatcher>> | undefined;
  /** Every error an adapter threw in the file: none may carry the key. */
  const thrown: unknown[] = [];
  beforeAll(async () => {
    started = await file.start();
    catching = await startWebhookCatcher();
  });
  afterAll(async () => {
    await started?.close();
    await catching?.close();
  });
  afterEach(() => {
    vi.useRealTimers();
  });
  const standIn = readThrough(() => started, 'the stand-in');
  const catcher = readThrough(() => catching, 'the webhook catcher');

  const provider = (options: Partial<O> = {}) => file.create(standIn, options);

  /** The rejection of `promise`, kept for the key check. */
  const failureOf = async (promise: Promise<unknown>): Promise<unknown> => {
    const error = await rejectionOf(promise, 'a failure');
    thrown.push(error);
    return error;
  };

  const submit = (adapter: JobProvider, model = file.model, webhookUrl?: string) =>
    adapter.submit({
      model,
      input: { prompt: 'a red panda' },
      signal: callSignal(),
      ...(webhookUrl ? { webhookUrl } : {}),
    });

  /** The delivery the catcher received last, as our route hands it to the adapter. */
  const lastDelivery = (now = new Date()) => {
    const delivery = catcher.received.at(-1);
    if (!delivery) throw new Error('no delivery received');
    return { headers: delivery.headers, body: delivery.body, now };
  };

  /** Sends the last webhook again, byte for byte (a duplicate or a replay). */
  const resendLast = () => {
    const sent = standIn.webhooks.at(-1);
    if (!sent) throw new Error('no webhook sent');
    return standIn.resend(sent);
  };

  /** A job of the file's adapter that ended, its webhook caught. */
  const endedJob = async (adapter: JobProvider, output: unknown = {}) => {
    const ref = await submit(adapter, file.model, catcher.url);
    await standIn.complete(ref.id, output);
    return ref;
  };

  /** The cases both adapters answer alike; each registers one test where it is called. */
  const cases = {
    refusesModelNames: (title: string, models: string[]) =>
      it(title, async () => {
        const before = standIn.requests.length;
        for (const model of models) {
          const error = await failureOf(submit(provider(), model));
          expect(error).toBeInstanceOf(ProviderError);
          expect((error as ProviderError).retryable).toBe(false);
        }
        expect(standIn.requests.length).toBe(before);
      }),

    readsToItsEnd: (title: string, model: string, output: unknown) =>
      it(title, async () => {
        const own = await file.start({ pollsUntilDone: 3, output });
        try {
          const adapter = file.create(own);
          const ref = await submit(adapter, model);
          const states = [];
          for (let read = 0; read < 3; read += 1) states.push((await adapter.get(ref, callSignal())).status);
          expect(states).toEqual(['running', 'running', 'succeeded']);
        } finally {
          await own.close();
        }
      }),

    /** `tamper` changes the body of a job that ended with `output`; each of `broken` changes its headers. */
    refusesForgeries: (
      title: string,
      output: unknown,
      tamper: (body: string) => string,
      broken: Record<string, string | undefined>[],
    ) =>
      it(title, async () => {
        const adapter = provider();
        const ref = await endedJob(adapter, output);
        const now = new Date();
        const seconds = Math.floor(now.getTime() / 1000);
        const refusals = [
          standIn.delivery(ref.id, { forge: true }),
          standIn.delivery(ref.id, { tamper }),
          standIn.delivery(ref.id, { timestampSeconds: seconds - 301 }),
          standIn.delivery(ref.id, { timestampSeconds: seconds + 301 }),
        ];
        for (const delivery of refusals) {
          await expect(adapter.verifyWebhook({ ...delivery, now })).rejects.toBeInstanceOf(WebhookRefusedError);
        }
        const good = standIn.delivery(ref.id);
        for (const change of broken) {
          const headers = { ...good.headers, ...change };
          await expect(adapter.verifyWebhook({ headers, body: good.body, now })).rejects.toBeInstanceOf(
            WebhookRefusedError,
          );
        }
        await expect(adapter.verifyWebhook({ ...good, now })).resolves.toMatchObject({ id: ref.id });
      }),

    refusesReplays: () =>
      it('a delivery replayed 10 minutes later, byte for byte, is refused', async () => {
        vi.useFakeTimers({ toFake: ['Date'] });
        const adapter = provider();
        const ref = await endedJob(adapter);
        await expect(adapter.verifyWebhook(lastDelivery())).resolves.toMatchObject({ id: ref.id });
        vi.setSystemTime(Date.now() + 10 * 60 * 1000);
        await resendLast();
        await expect(adapter.verifyWebhook(lastDelivery())).rejects.toBeInstanceOf(WebhookRefusedError);
      }),

    /** `failKeyFetch`: the provider's next answer to the fetch of its webhook keys is an error. */
    keyFetchFailureIsRetryable: (title: string, failKeyFetch: () => void) =>
      it(title, async () => {
        const adapter = provider();
        const ref = await endedJob(adapter);
        failKeyFetch();
        const error = await failureOf(adapter.verifyWebhook(lastDelivery()));
        expect(error).toBeInstanceOf(ProviderError);
        expect((error as ProviderError).retryable).toBe(true);
        await expect(adapter.verifyWebhook(lastDelivery())).resolves.toMatchObject({ id: ref.id });
      }),

    /** `detail`: the stand-in's text of a 429, which the message carries. */
    throttled: (detail: string) =>
      it('429 with Retry-After: retryable, with the seconds', async () => {
        standIn.failNextWith(429, 12);
        const error = await failureOf(submit(provider()));
        expect(error).toBeInstanceOf(ProviderError);
        expect(error).toMatchObject({ status: 429, retryable: true, retryAfterSeconds: 12 });
        expect((error as Error).message).toContain(detail);
      }),

    refusedKey: (otherKey: string) =>
      it('a refused key: 401, not retryable', async () => {
        const error = await failureOf(submit(provider({ apiKey: otherKey } as Partial<O>)));
        expect(error).toMatchObject({ status: 401, retryable: false });
      }),

    unreachable: () =>
      it('a network error (nothing listening) is retryable', async () => {
        const closed = await startJsonServer(() => ({ status: 200 }));
        await closed.close();
        const error = await failureOf(submit(provider({ baseUrl: closed.url } as Partial<O>)));
        expect(error).toBeInstanceOf(ProviderError);
        expect(error).toMatchObject({ status: undefined, retryable: true });
      }),

    pastDeadline: (ref: JobRef) =>
      it('a call past its deadline is retryable', async () => {
        standIn.stallNext();
        const error = await failureOf(provider({ timeoutMs: 500 } as Partial<O>).get(ref, callSignal()));
        expect(error).toMatchObject({ retryable: true });
        expect((error as Error).message).toContain('did not answer within 500 ms');
      }),

    /** Last in the file: `secret` is in no error thrown before, nor in any request but its authorization. */
    keyKeptOut: (secret: string) =>
      it('appears in no error thrown in this file, and in no request but in its authorization header', () => {
        expect(thrown.length).toBeGreaterThan(10);
        for (const error of thrown) expect(String((error as Error).message)).not.toContain(secret);
        expect(standIn.requests.length).toBeGreaterThan(10);
        for (const { headers, path, body } of standIn.requests) {
          const { authorization: _, ...others } = headers;
          expect(JSON.stringify([path, body, others])).not.toContain(secret);
        }
      }),
  };

  return { standIn, catcher, provider, failureOf, submit, lastDelivery, resendLast, cases };
};
