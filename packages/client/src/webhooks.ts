/**
 * Verifying the run's webhook: the run-finished one, and the lifecycle events a run chose,
 * all signed the same way. Pass the raw body exactly as received (before any JSON parsing): a
 * re-serialised body does not match its signature. Both checks compare in constant time.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { components } from './openapi-types.ts';

/** The webhook body: the Run plus `event` (the end events, and `run.started` when chosen). */
export type WebhookBody = components['schemas']['WebhookBody'];
export type WebhookEvent = WebhookBody['event'];
/** A step event's body (`step.completed`, `step.failed`): the Run plus `event` and `step`. */
export type StepWebhookBody = components['schemas']['StepWebhookBody'];
/** Any body a run's webhook can carry; `X-Service-Event` (and `event`) says which. */
export type LifecycleWebhookBody = WebhookBody | StepWebhookBody;
/** A `webhookEvents` entry of a run start. */
export type LifecycleEvent = NonNullable<components['schemas']['RunRequest']['webhookEvents']>[number];

/** Whether a verified body is a step event's (it then has `step`). */
export const isStepWebhook = (body: LifecycleWebhookBody): body is StepWebhookBody =>
  body.event === 'step.completed' || body.event === 'step.failed';

type RawBody = string | Uint8Array;

const hmac = (secret: string, ...parts: RawBody[]) => {
  const mac = createHmac('sha256', secret);
  for (const part of parts) mac.update(part);
  return mac.digest();
};

/** Equal-length buffers in constant time; different lengths are simply unequal. */
const constantTimeEqual = (a: Buffer, b: Buffer): boolean => a.length === b.length && timingSafeEqual(a, b);

/**
 * Checks `X-Service-Signature: sha256=<hex HMAC-SHA256(secret, raw body)>`, sent when the run was
 * started with a `callbackSecret`. False for a missing, malformed or wrong signature.
 */
export const verifyWebhook = (
  rawBody: RawBody,
  signatureHeader: string | null | undefined,
  secret: string,
): boolean => {
  if (typeof signatureHeader !== 'string') return false;
  const match = /^sha256=([0-9a-fA-F]{64})$/.exec(signatureHeader.trim());
  if (!match?.[1]) return false;
  return constantTimeEqual(Buffer.from(match[1].toLowerCase(), 'hex'), hmac(secret, rawBody));
};

/** Header lookup over a `Headers` object, or a plain object as Node's `IncomingMessage.headers` gives. */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

const header = (headers: WebhookHeaders, name: string): string | undefined => {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  const record = headers as Record<string, string | string[] | undefined>;
  const key = Object.keys(record).find((k) => k.toLowerCase() === name);
  const value = key === undefined ? undefined : record[key];
  return Array.isArray(value) ? value[0] : value;
};

export interface StandardWebhookOptions {
  /** How far `webhook-timestamp` may be from now, either way (default 300 seconds). */
  toleranceSeconds?: number;
  /** The clock, in milliseconds (tests). */
  now?: () => number;
}

/**
 * Checks the Standard Webhooks headers sent beside `X-Service-Signature`: `webhook-id`,
 * `webhook-timestamp` (Unix seconds) and `webhook-signature: v1,<base64 HMAC-SHA256(secret,
 * "<id>.<timestamp>.<raw body>")>` (several space-separated signatures are accepted). Rejects a
 * timestamp outside the tolerance, so a captured delivery cannot be replayed later; store
 * `webhook-id` to drop repeats within the window.
 */
export const verifyStandardWebhook = (
  rawBody: RawBody,
  headers: WebhookHeaders,
  secret: string,
  options: StandardWebhookOptions = {},
): boolean => {
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  if (!id || !timestamp || !signatures || !/^\d+$/.test(timestamp)) return false;
  const nowSeconds = (options.now?.() ?? Date.now()) / 1000;
  if (Math.abs(nowSeconds - Number(timestamp)) > (options.toleranceSeconds ?? 300)) return false;
  const expected = hmac(secret, `${id}.${timestamp}.`, rawBody);
  let valid = false;
  for (const candidate of signatures.split(' ')) {
    const [version, signature] = candidate.split(',', 2);
    if (version !== 'v1' || !signature) continue;
    // Every candidate is compared, so the time taken does not tell which one matched.
    if (constantTimeEqual(Buffer.from(signature, 'base64'), expected)) valid = true;
  }
  return valid;
};
