/**
 * What the job adapters (Replicate, fal) share in verifying a provider's webhook: the timestamp's
 * window, the body read as JSON, and the provider's verifying material (a signing secret, a set of
 * keys) fetched once, shared by concurrent deliveries and fetched again when it is old or no longer
 * verifies. Each adapter keeps its own signature scheme.
 */
import { WebhookRefusedError } from './types.ts';

/** Both ways: older is a replay, newer a clock that cannot be trusted (both providers say 5 minutes). */
const toleranceSeconds = 5 * 60;

/** Refuses a delivery whose `header` (Unix seconds) is not within 5 minutes of `now`. */
export const checkWebhookTimestamp = (header: string, timestamp: string, now: Date): void => {
  if (!/^\d{1,12}$/.test(timestamp)) throw new WebhookRefusedError(`${header} is not a Unix time`);
  if (Math.abs(now.getTime() / 1000 - Number(timestamp)) > toleranceSeconds)
    throw new WebhookRefusedError(`${header} is more than 5 minutes away`);
};

/** A delivery's body as JSON, or a refusal. */
export const webhookJson = (body: string): unknown => {
  try {
    return JSON.parse(body);
  } catch {
    throw new WebhookRefusedError('the body is not JSON');
  }
};

export interface VerifierTimes {
  /** Older than this, it is fetched again before it is used (a withdrawn key stops verifying). */
  maxAgeMs: number;
  /**
   * Older than this, a delivery it does not verify fetches it again (it may have been rotated); no
   * sooner, so forged deliveries cannot make us hammer the provider.
   */
  refreshMs: number;
}

/**
 * The provider's verifying material, fetched by `load` when first needed. A fetch that fails throws
 * (a ProviderError, retryable: the route answers 5xx and the provider retries) and is not kept.
 */
export const webhookVerifier = <T>(load: () => Promise<T>, times: VerifierTimes) => {
  let held: { value: T; fetchedAt: number } | undefined;
  /** Concurrent deliveries share one fetch. */
  let pending: Promise<T> | undefined;
  const fetchNow = (): Promise<T> => {
    pending ??= load()
      .then((value) => {
        held = { value, fetchedAt: Date.now() };
        return value;
      })
      .finally(() => {
        pending = undefined;
      });
    return pending;
  };
  return {
    /** Whether `check` holds with the material, fetched again once when it is old enough to be stale. */
    async verifies(check: (value: T) => boolean): Promise<boolean> {
      const fresh = held && Date.now() - held.fetchedAt < times.maxAgeMs ? held.value : undefined;
      if (check(fresh ?? (await fetchNow()))) return true;
      return held !== undefined && Date.now() - held.fetchedAt > times.refreshMs && check(await fetchNow());
    },
  };
};
