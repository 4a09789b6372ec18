/**
 * The Idempotency-Key rule of both run starts (our design, as payment APIs do):
 *
 * - identity: an answer is remembered per API key and per Idempotency-Key, the header kept only as
 *   its SHA-256 (`idempotencyKeyHash`; the record's key is functions/store/keys.ts's `IDEM#`);
 * - fingerprint: one Idempotency-Key names one request: its route, its path's ids and its body
 *   (`requestFingerprint`), whose `metadata` and `tags` are read as sets: their order,
 *   and an empty one against none, make no other request, as they make no other run; so is
 *   `webhookEvents`: its order makes no other request, but which events it names does;
 * - window: the answer is remembered 24 hours, or the retention of the run it names if that were
 *   shorter (a retention is at least one day, so it never is) (`rememberedUntil`); an expired record
 *   reads as absent and may be replaced;
 * - the same key with the same request answers as the first did, even when both raced and the other
 *   committed first; with another request it is refused (`replayOf`: IdempotencyKeyReusedError, 422).
 *
 * The use case applying it is functions/app/start-run.ts; the record is read and written by
 * functions/store/idempotency.ts, inside the start's transaction.
 */
import { createHash } from 'node:crypto';
import { IdempotencyKeyReusedError } from '../errors/table.ts';
import { isRecord } from '../is-record.ts';
import { epochSeconds, retentionExpiry } from './retention.ts';

/** How long an answer is remembered. */
export const idempotencyWindowSeconds = 24 * 3600;

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** The identity of an Idempotency-Key header: its SHA-256, never the header itself. */
export const idempotencyKeyHash = (header: string): string => sha256(header);

/** Where a run start was sent: the route and its path parameters. */
export interface RequestTarget {
  routeKey: string;
  pathParameters: Record<string, string | undefined> | undefined;
}

const byText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * The body as fingerprinted: `metadata` pairs and `tags` sorted, each left out when empty. A body
 * without them is its JSON as before, so answers remembered before these fields existed still match.
 */
const canonicalBody = (body: unknown): unknown => {
  if (!isRecord(body)) return body;
  const sets = Array.isArray(body.webhookEvents) ? webhookEventsAsSet(body) : body;
  if (!(Object.hasOwn(sets, 'metadata') || Object.hasOwn(sets, 'tags'))) return sets;
  const { metadata, tags, ...rest } = sets;
  const pairs = isRecord(metadata) ? Object.entries(metadata).sort(([a], [b]) => byText(a, b)) : [];
  const set = Array.isArray(tags) ? tags.map(String).sort(byText) : [];
  return {
    ...rest,
    ...(pairs.length > 0 ? { metadata: Object.fromEntries(pairs) } : {}),
    ...(set.length > 0 ? { tags: set } : {}),
  };
};

/**
 * `webhookEvents` read as a set, sorted in place in the body's own key order: the events
 * chosen, not the order they were listed in, make the request (as they make the run). A body
 * without it is untouched.
 */
const webhookEventsAsSet = (body: Record<string, unknown>): Record<string, unknown> =>
  Object.fromEntries(
    Object.entries(body).map(([key, value]) =>
      key === 'webhookEvents' && Array.isArray(value) ? [key, value.map(String).sort(byText)] : [key, value],
    ),
  );

/** The fingerprint of one request: the same key sent to another route, id or body is another request. */
export const requestFingerprint = (target: RequestTarget, body: unknown): string =>
  sha256(`${target.routeKey}\n${JSON.stringify(target.pathParameters ?? {})}\n${JSON.stringify(canonicalBody(body))}`);

/** Epoch seconds until which an answer given at `now` is remembered. */
export const rememberedUntil = (now: Date, retentionDays: number): number =>
  Math.min(epochSeconds(now) + idempotencyWindowSeconds, retentionExpiry(now, retentionDays));

/**
 * The answer to give again for a remembered one, if any: the same request gets the first answer;
 * another request with the same key is refused.
 */
export const replayOf = <TAnswer>(
  remembered: { requestHash: string; answer: TAnswer } | undefined,
  fingerprint: string,
): TAnswer | undefined => {
  if (remembered && remembered.requestHash !== fingerprint) throw new IdempotencyKeyReusedError();
  return remembered?.answer;
};
