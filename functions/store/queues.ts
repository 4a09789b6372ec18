import { SendMessageCommand } from '@aws-sdk/client-sqs';
import * as v from 'valibot';
import { LifecycleEventSchema } from '../../schemas/webhook-events.ts';
import type { Deps } from '../deps.ts';

/**
 * A message of the webhooks queue: deliver `event` of run `jobId`. The run's end sends the first
 * (attempt 1, due at once: functions/store/run/ledger.ts `queueWebhook`); each failed attempt sends
 * the next, due after its wait.
 */
export const WebhookMessageSchema = v.object({
  jobId: v.string(),
  /** The run's end event; or, for a run that chose them, any lifecycle event it chose. */
  event: LifecycleEventSchema,
  /** The step of a step event (functions/domain/lifecycle-webhooks.ts); absent for a run event. */
  nodeId: v.optional(v.string()),
  /** Which attempt this message carries: 1 when absent. */
  attempt: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1))),
  /** When it is due (ISO 8601): a message that arrives earlier is sent on with the rest of the wait. */
  dueAt: v.optional(v.pipe(v.string(), v.isoTimestamp())),
});
export type WebhookMessage = v.InferOutput<typeof WebhookMessageSchema>;

/**
 * Any UTF-16 unit outside what both SQS and fauxqs take in a message body. SQS takes #x9, #xA, #xD,
 * #x20-#xD7FF, #xE000-#xFFFD and #x10000-#x10FFFF (docs/decisions/security.md, "Hostile input", says where
 * this was read) and refuses the rest; fauxqs checks UTF-16 units, so it refuses astral characters
 * too. Matching units (not characters) covers both: an astral character is escaped as its pair.
 */
const outsideSqsCharacters = /[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD]/g;

/**
 * A message body: `value` as JSON, with every character SQS could refuse written as a JSON escape
 * (`\uFFFE`). `JSON.stringify` escapes control characters and lone surrogates but leaves U+FFFE and
 * U+FFFF raw, and SQS refuses a body holding them: the run's messages were lost at every send. Only
 * string contents can hold such characters, and `JSON.parse` reads the escapes back as sent.
 */
export const sqsMessageBody = (value: unknown): string =>
  JSON.stringify(value).replace(
    outsideSqsCharacters,
    (unit) => `\\u${unit.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );

/**
 * The message group of a team's message: on a standard queue it makes the queue a fair queue, whose
 * tenant is the group (docs/operations.md, "Fair tenants"): when one team's backlog or slow messages
 * take a disproportionate share of the consumers, SQS delivers the other teams' messages first. A
 * message that names no team (sent before messages named it) is its own tenant.
 */
export const stepMessageGroup = (teamId: string | undefined): { MessageGroupId?: string } =>
  teamId === undefined ? {} : { MessageGroupId: teamId };

/**
 * SQS refused messages themselves (a batch entry failed by the sender's fault: the body, its size),
 * so sending them again as they are can never succeed. Any other failure may pass on a later try.
 */
export class MessagesRefusedError extends Error {
  override readonly name = 'MessagesRefusedError';
  /** SQS's code for each refused message (`InvalidMessageContents`…). */
  readonly codes: readonly string[];
  constructor(codes: readonly string[]) {
    super(`SQS refused ${codes.length} message(s): ${[...new Set(codes)].join(', ')}`);
    this.codes = codes;
  }
}

/** Sends a webhook message that SQS hands over after `delaySeconds` (at most 900, SQS's limit). */
export const sendWebhookMessage = async (deps: Deps, message: WebhookMessage, delaySeconds: number) => {
  await deps.sqs.send(
    new SendMessageCommand({
      QueueUrl: deps.queueUrls.webhooks,
      MessageBody: sqsMessageBody(message),
      DelaySeconds: delaySeconds,
    }),
  );
};

/**
 * A message of the webhooks queue for a team's webhook endpoint (functions/app/deliver-endpoint-webhook.ts):
 * attempt `attempt` of one delivery of its log, due at `dueAt` (a wait longer than SQS's longest
 * delay is sent on until due, as a run's webhook's is).
 */
export const EndpointMessageSchema = v.object({
  teamId: v.string(),
  endpointId: v.string(),
  deliveryId: v.string(),
  attempt: v.pipe(v.number(), v.integer(), v.minValue(1)),
  dueAt: v.optional(v.pipe(v.string(), v.isoTimestamp())),
});
export type EndpointMessage = v.InferOutput<typeof EndpointMessageSchema>;

/** Whether a webhooks-queue body is an endpoint's message (it names an endpoint) rather than a run's. */
export const isEndpointMessage = (body: unknown): boolean =>
  typeof body === 'object' && body !== null && 'endpointId' in body;

export const sendEndpointMessage = async (deps: Deps, message: EndpointMessage, delaySeconds: number) => {
  await deps.sqs.send(
    new SendMessageCommand({
      QueueUrl: deps.queueUrls.webhooks,
      MessageBody: sqsMessageBody(message),
      DelaySeconds: delaySeconds,
    }),
  );
};
