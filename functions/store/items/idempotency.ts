/**
 * A remembered answer to a run start with an Idempotency-Key. One family of the stored items: see
 * item.ts for how every item is read and written.
 */
import * as v from 'valibot';
import { storedItem } from './item.ts';

/** A remembered answer to a run start with an Idempotency-Key. */
export const IdempotencyItemSchema = v.object({
  requestHash: v.string(),
  /** `status`: written by answers remembered before the HTTP edge chose it from the body; still read. */
  response: v.object({ status: v.optional(v.number()), body: v.unknown() }),
  /** Epoch seconds after which the key may be used again. */
  ttl: v.number(),
});
export const storedIdempotency = storedItem(IdempotencyItemSchema);
