import { ChangeMessageVisibilityCommand } from '@aws-sdk/client-sqs';
import type { Deps } from '../deps.ts';

/**
 * Has SQS hand a received webhook message back after `seconds` (0: at once). Moving the visibility
 * rather than re-sending with a delay allows waits past SQS's 15-minute delay limit, and keeps the
 * receive count that sends the message to the DLQ after its last attempt.
 */
export const redeliverWebhookMessageIn = async (deps: Deps, receiptHandle: string, seconds: number) => {
  await deps.sqs.send(
    new ChangeMessageVisibilityCommand({
      QueueUrl: deps.queueUrls.webhooks,
      ReceiptHandle: receiptHandle,
      VisibilityTimeout: seconds,
    }),
  );
};
