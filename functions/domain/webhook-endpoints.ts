/**
 * A team's webhook endpoints: which events reach which endpoint, how each delivery is named and
 * signed, its retry schedule, and when a failing endpoint is disabled. Pure.
 *
 * - An endpoint hears an event when the event is in its `events`, and, for a run's event, the run's
 *   workflow is in its `workflowIds` (when given) and one of the run's tags is in its `tags` (when
 *   given). A `ping` (POST /webhook-endpoints/{id}/test) reaches only the endpoint it was asked of.
 * - Each delivery has its own id, a UUID whose first 48 bits are the event's time in milliseconds
 *   (the layout of UUIDv7) and whose rest is a hash of the endpoint, the run and the event: the same
 *   change handed over twice opens one delivery, and the log sorts by time.
 * - Retries follow a day-long schedule (`endpointRetryDelaySeconds`), as Svix's.
 * - An endpoint whose attempts have all failed for `disableAfterFailingMs` is disabled.
 */
import { createHash } from 'node:crypto';
import { forbiddenReason, isForbiddenAddress, parseHostLiteral } from './address-guard.ts';
import { standardWebhookSignature } from './webhook.ts';

/** The event a test sends: no run's. */
export const pingEvent = 'ping';

/** Most endpoints a team keeps: every event of every run is sent to each matching one. */
export const maxEndpointsPerTeam = 20;

/**
 * Seconds before the retry after attempt `failedAttempt` fails: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h,
 * 10 h (Svix's schedule); 27 h 35 min 5 s from the first attempt to the last. Undefined after the
 * last attempt.
 */
export const endpointRetryDelays = [5, 300, 1800, 7200, 18_000, 36_000, 36_000] as const;
export const endpointAttempts = endpointRetryDelays.length + 1;
export const endpointRetryDelaySeconds = (failedAttempt: number): number | undefined =>
  endpointRetryDelays[failedAttempt - 1];

/** How long an endpoint's attempts may all fail before it is disabled (its `failingSince` this old). */
export const disableAfterFailingMs = 5 * 24 * 3600_000;

/** How long a rotated secret keeps signing beside the new one. */
export const secretOverlapMs = 24 * 3600_000;

/** What an endpoint filters on. */
export interface EndpointFilter {
  events: readonly string[];
  workflowIds?: readonly string[] | undefined;
  tags?: readonly string[] | undefined;
  disabled?: boolean | undefined;
}

/** What a run's event is, for the filters. */
export interface EventSubject {
  event: string;
  workflowId: string;
  tags?: readonly string[] | undefined;
}

/** Whether an enabled endpoint hears the event: in its events, its workflows and its tags (each when given). */
export const endpointHears = (endpoint: EndpointFilter, subject: EventSubject): boolean =>
  endpoint.disabled !== true &&
  endpoint.events.includes(subject.event) &&
  (endpoint.workflowIds === undefined ||
    endpoint.workflowIds.length === 0 ||
    endpoint.workflowIds.includes(subject.workflowId)) &&
  (endpoint.tags === undefined ||
    endpoint.tags.length === 0 ||
    (subject.tags ?? []).some((tag) => endpoint.tags?.includes(tag)));

/**
 * The delivery's id: UUIDv7's layout, the event's time in its first 48 bits, the rest from `seed`
 * (the endpoint, the run, the event's name), so an event opens one delivery whatever the retries.
 */
export const endpointDeliveryId = (eventAtMs: number, seed: string): string => {
  const time = Math.max(0, Math.floor(eventAtMs)).toString(16).padStart(12, '0').slice(-12);
  const hash = createHash('sha256').update(seed).digest('hex');
  const variant = ((Number.parseInt(hash.slice(3, 4), 16) & 0x3) | 0x8).toString(16);
  return `${time.slice(0, 8)}-${time.slice(8, 12)}-7${hash.slice(0, 3)}-${variant}${hash.slice(4, 7)}-${hash.slice(7, 19)}`;
};

/** The `webhook-id` of a delivery: the same on every attempt and redelivery of it. */
export const endpointWebhookId = (deliveryId: string): string => `msg_${deliveryId.replaceAll('-', '')}`;

/** The secrets that sign now: the current one, and the one it replaced while its overlap lasts. */
export const signingSecrets = (
  endpoint: { secret: string; previousSecret?: string | undefined; previousSecretUntil?: string | undefined },
  now: Date,
): string[] =>
  endpoint.previousSecret !== undefined &&
  endpoint.previousSecretUntil !== undefined &&
  Date.parse(endpoint.previousSecretUntil) > now.getTime()
    ? [endpoint.secret, endpoint.previousSecret]
    : [endpoint.secret];

/**
 * `webhook-signature` signed with each secret, space-separated (Standard Webhooks: a receiver
 * accepts the message when any one verifies), so a receiver holding either secret verifies it.
 */
export const endpointSignature = (
  id: string,
  timestampSeconds: number,
  rawBody: string,
  secrets: readonly string[],
): string => secrets.map((secret) => standardWebhookSignature(id, timestampSeconds, rawBody, secret)).join(' ');

/** The headers of one endpoint delivery: Standard Webhooks', and the event's name. */
export const endpointHeaders = (input: {
  webhookId: string;
  event: string;
  rawBody: string;
  secrets: readonly string[];
  nowSeconds: number;
}): Record<string, string> => ({
  'content-type': 'application/json',
  'user-agent': 'workflow-run-api-webhooks/1.0',
  'x-service-event': input.event,
  'webhook-id': input.webhookId,
  'webhook-timestamp': String(input.nowSeconds),
  'webhook-signature': endpointSignature(input.webhookId, input.nowSeconds, input.rawBody, input.secrets),
});

/**
 * What an attempt's outcome does to its endpoint's failure streak: a success ends it; a failure
 * starts it (when none runs) or, once it has run `disableAfterFailingMs`, disables the endpoint.
 */
export type StreakChange = { kind: 'cleared' } | { kind: 'started' } | { kind: 'disable' } | { kind: 'none' };

export const streakAfterAttempt = (delivered: boolean, failingSince: string | undefined, now: Date): StreakChange => {
  if (delivered) return failingSince === undefined ? { kind: 'none' } : { kind: 'cleared' };
  if (failingSince === undefined) return { kind: 'started' };
  return now.getTime() - Date.parse(failingSince) >= disableAfterFailingMs ? { kind: 'disable' } : { kind: 'none' };
};

/** Hosts no endpoint may name, whatever they resolve to. */
const localNames = /(^|\.)(localhost|local|internal|localdomain)\.?$/i;

/**
 * Whether an endpoint's URL may be stored: https, and its host no address literal the address guard
 * refuses nor a local name. What it resolves to is checked at each delivery (functions/http-client/),
 * never here: a lookup at creation would tell the caller how our resolver sees the name. One answer
 * for every refusal, so the text tells nothing of why.
 */
export const isAcceptableEndpointUrl = (url: string, options: { allowLoopback?: boolean } = {}): boolean => {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return false;
  }
  if (parsed.protocol !== 'https:' || parsed.username !== '' || parsed.password !== '') return false;
  const host = parsed.hostname.replace(/^\[|\]$/g, '');
  if (host === '') return false;
  const literal = parseHostLiteral(host);
  // Local development's receivers listen on loopback (ALLOW_PRIVATE_CALLBACKS, as for callbacks).
  if (options.allowLoopback && (host === 'localhost' || forbiddenReason(literal?.address ?? '') === 'loopback'))
    return true;
  if (localNames.test(host)) return false;
  return literal === null || !isForbiddenAddress(literal.address);
};
