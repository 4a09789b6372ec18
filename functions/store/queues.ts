import { SendMessageCommand } from '@aws-sdk/client-sqs';
import * as v from 'valibot';
import { WebhookEventSchema } from '../../schemas/runs.ts';
import type { Deps } from '../deps.ts';

/**
 * A message of the webhooks queue: deliver `event` of run `jobId`. The run's end sends the first
 * (attempt 1, due at once: functions/store/run-ledger.ts `queueWebhook`); each failed attempt sends
 * the next, due after its wait.
 */
export const WebhookMessageSchema = v.object({
  jobId: v.string(),
  event: WebhookEventSchema,
  /** Which attempt this message carries: 1 when absent. */
  attempt: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1))),
  /** When it is due (ISO 8601): a message that arrives earlier is sent on with the rest of the wait. */
  dueAt: v.optional(v.pipe(v.string(), v.isoTimestamp())),
});
export type WebhookMessage = v.InferOutput<typeof WebhookMessageSchema>;

/** Sends a webhook message that SQS hands over after `delaySeconds` (at most 900, SQS's limit). */
export const sendWebhookMessage = async (deps: Deps, message: WebhookMessage, delaySeconds: number) => {
  await deps.sqs.send(
    new SendMessageCommand({
      QueueUrl: deps.queueUrls.webhooks,
      MessageBody: JSON.stringify(message),
      DelaySeconds: delaySeconds,
    }),
  );
};
