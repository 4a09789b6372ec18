/**
 * The per-key cap on open event streams, applied to one stream (rules:
 * functions/domain/stream-slots.ts): the stream takes a slot of its key before it opens and gives
 * it back when it ends, whatever its end (`done`, the cap's `retry:`, the caller gone, a failure);
 * a function killed mid-stream frees it when its lease runs out. Past the cap the stream does not
 * open: TooManyStreamsError, a 429 whose `Retry-After` is when the key's oldest stream reaches its cap.
 */
import { streamCapSeconds, streamFunctionTimeoutSeconds, streamsPerKey } from '../../platform/run-events.ts';
import type { Deps } from '../deps.ts';
import { streamLeaseSeconds, streamRetryAfterSeconds } from '../domain/stream-slots.ts';
import { leaseUntil, slotLease } from '../domain/team-steps.ts';
import { TooManyStreamsError } from '../errors/table.ts';
import { logger } from '../observability/logger.ts';
import { releaseStreamSlot, takeStreamSlot } from '../store/stream-slots.ts';

const leaseSeconds = streamLeaseSeconds(streamFunctionTimeoutSeconds);

/**
 * Runs `stream` (which opens the stream and follows it to its end) under a slot of key `keyId`, or
 * throws TooManyStreamsError at the cap, before `stream` is called.
 */
export const withStreamSlot = async (deps: Deps, keyId: string, stream: () => Promise<void>): Promise<void> => {
  const streamId = deps.newId();
  const until = new Date(deps.now().getTime() + leaseSeconds * 1000);
  const lease = slotLease(until, streamId);
  const taken = await takeStreamSlot(deps, keyId, streamId, { text: lease, until }, streamsPerKey);
  if (!taken.taken) {
    const retryAfter = streamRetryAfterSeconds(Object.values(taken.live).map(leaseUntil), deps.now(), {
      capSeconds: streamCapSeconds,
      leaseSeconds,
    });
    throw new TooManyStreamsError(streamsPerKey, retryAfter);
  }
  try {
    await stream();
  } finally {
    // A failed release leaves the lease to run out; it must not turn the stream's end into a failure.
    await releaseStreamSlot(deps, keyId, streamId, lease).catch((error: unknown) =>
      logger.warn('stream slot not given back; its lease frees it', { error: error as Error }),
    );
  }
};
