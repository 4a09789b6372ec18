/**
 * The caps on open event streams, applied to one stream (rules: functions/domain/stream-slots.ts):
 * per key (`streamsPerKey`) and per run (`streamsPerRun`, whatever keys opened them), one mechanism
 * for both. The stream takes a slot of its key, then of its run, before it opens and gives both back
 * when it ends, whatever its end (`done`, the cap's `retry:`, the caller gone, a failure); a
 * function killed mid-stream frees them when its lease runs out. Past a cap the stream does not
 * open: a 429 (TooManyStreamsError for the key's, TooManyRunStreamsError for the run's) whose
 * `Retry-After` is when the oldest stream holding that cap reaches its own cap.
 */
import {
  streamCapSeconds,
  streamFunctionTimeoutSeconds,
  streamsPerKey,
  streamsPerRun,
} from '../../platform/run-stream.ts';
import type { Deps } from '../deps.ts';
import { streamLeaseSeconds, streamRetryAfterSeconds } from '../domain/stream-slots.ts';
import { leaseUntil, slotLease } from '../domain/team-steps.ts';
import { TooManyRunStreamsError, TooManyStreamsError } from '../errors/table.ts';
import { logger } from '../observability/logger.ts';
import { releaseStreamSlot, type StreamHolder, takeStreamSlot } from '../store/stream-slots.ts';

const leaseSeconds = streamLeaseSeconds(streamFunctionTimeoutSeconds);

/** A cap on open streams: whose streams it counts, how many, and the 429 past it. */
interface StreamCap {
  holder: StreamHolder;
  cap: number;
  refused: (cap: number, retryAfterSeconds: number) => Error;
}

/** Gives a slot back; a failed release leaves the lease to run out, never failing the stream's end. */
const release = (deps: Deps, holder: StreamHolder, streamId: string, lease: string) =>
  releaseStreamSlot(deps, holder, streamId, lease).catch((error: unknown) =>
    logger.warn('stream slot not given back; its lease frees it', { error: error as Error }),
  );

/**
 * Runs `stream` (which opens the stream and follows it to its end) under a slot of each cap, taken
 * in order, or throws the first refusing cap's 429 before `stream` is called (slots already taken
 * are given back).
 */
const withSlots = async (deps: Deps, caps: readonly StreamCap[], stream: () => Promise<void>): Promise<void> => {
  const streamId = deps.newId();
  const until = new Date(deps.now().getTime() + leaseSeconds * 1000);
  const lease = slotLease(until, streamId);
  const held: StreamHolder[] = [];
  try {
    for (const { holder, cap, refused } of caps) {
      const taken = await takeStreamSlot(deps, holder, streamId, { text: lease, until }, cap);
      if (!taken.taken) {
        const retryAfter = streamRetryAfterSeconds(Object.values(taken.live).map(leaseUntil), deps.now(), {
          capSeconds: streamCapSeconds,
          leaseSeconds,
        });
        throw refused(cap, retryAfter);
      }
      held.push(holder);
    }
    await stream();
  } finally {
    for (const holder of held) await release(deps, holder, streamId, lease);
  }
};

/**
 * Runs `stream` under a slot of key `keyId` and one of run `jobId`, or throws TooManyStreamsError
 * (the key's cap) or TooManyRunStreamsError (the run's) before `stream` is called.
 */
export const withStreamSlot = (deps: Deps, keyId: string, jobId: string, stream: () => Promise<void>) =>
  withSlots(
    deps,
    [
      { holder: { keyId }, cap: streamsPerKey, refused: (cap, after) => new TooManyStreamsError(cap, after) },
      { holder: { jobId }, cap: streamsPerRun, refused: (cap, after) => new TooManyRunStreamsError(cap, after) },
    ],
    stream,
  );
