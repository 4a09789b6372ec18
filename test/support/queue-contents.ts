/**
 * What a queue of the test stack holds right now, ready, delayed and in flight, read through fauxqs's
 * non-destructive inspection endpoint: a delayed message can be seen (its body and the delay it was
 * sent with) without waiting it out, and reading changes nothing.
 */
import { DeleteMessageCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import type { SQSRecord } from 'aws-lambda';
import type { Deps } from '../../functions/deps.ts';
import type { LocalResources } from '../../local/provision.ts';
import type { QueueDefinition } from '../../platform/definitions.ts';

export interface QueuedMessage {
  messageId: string;
  body: string;
  /** The DelaySeconds it was sent with (0 for none). */
  delaySeconds: number;
  state: 'ready' | 'delayed' | 'inflight';
}

interface InspectedMessage {
  messageId: string;
  body: string;
  sentTimestamp: number;
  delayUntil?: number;
}

interface Inspection {
  messages: { ready: InspectedMessage[]; delayed: InspectedMessage[]; inflight: { message: InspectedMessage }[] };
}

const queued = (m: InspectedMessage, state: QueuedMessage['state']): QueuedMessage => ({
  messageId: m.messageId,
  body: m.body,
  delaySeconds: m.delayUntil ? Math.round((m.delayUntil - m.sentTimestamp) / 1000) : 0,
  state,
});

/** Every message of the queue (or of the stage's one dead-letter queue with `dlq`), in each state. */
export const queueContents = async (
  resources: LocalResources,
  queueId: QueueDefinition['id'],
  options: { dlq?: boolean } = {},
): Promise<QueuedMessage[]> => {
  const url = options.dlq ? resources.dlqUrl : resources.queueUrls[queueId];
  const name = new URL(url).pathname.split('/').pop() ?? '';
  const response = await fetch(new URL(`/_fauxqs/queues/${name}`, resources.sqsS3Endpoint));
  if (!response.ok) throw new Error(`inspect ${name}: ${response.status}`);
  const { messages } = (await response.json()) as Inspection;
  return [
    ...messages.ready.map((m) => queued(m, 'ready')),
    ...messages.delayed.map((m) => queued(m, 'delayed')),
    ...messages.inflight.map((m) => queued(m.message, 'inflight')),
  ];
};

/** An SQS record as Lambda's event source mapping builds it from a queued message of `queue`. */
export const recordOf = (
  message: { messageId: string; body: string },
  receiveCount = 1,
  queue: 'steps' | 'webhooks' = 'webhooks',
): SQSRecord => ({
  messageId: message.messageId,
  receiptHandle: `r-${message.messageId}-${receiveCount}`,
  body: message.body,
  attributes: {
    ApproximateReceiveCount: String(receiveCount),
    SentTimestamp: String(Date.now()),
    SenderId: 'test',
    ApproximateFirstReceiveTimestamp: String(Date.now()),
  },
  messageAttributes: {},
  md5OfBody: '',
  eventSource: 'aws:sqs',
  eventSourceARN: `arn:aws:sqs:us-east-1:000000000000:${queue}`,
  awsRegion: 'us-east-1',
});

/**
 * Each run's first webhook message off the webhooks queue, as the event source would hand it over
 * (`take`: also deleted, so no later receive sees it; otherwise it comes back after its visibility).
 */
export const receiveWebhookRecords = async (
  deps: Pick<Deps, 'sqs' | 'queueUrls'>,
  jobIds: string[],
  { take = false } = {},
): Promise<SQSRecord[]> => {
  const found = new Map<string, SQSRecord>();
  for (let i = 0; i < 50 && found.size < jobIds.length; i++) {
    const { Messages = [] } = await deps.sqs.send(
      new ReceiveMessageCommand({ QueueUrl: deps.queueUrls.webhooks, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }),
    );
    for (const m of Messages) {
      const { jobId } = JSON.parse(m.Body ?? '{}') as { jobId: string };
      if (!jobIds.includes(jobId)) continue;
      found.set(jobId, recordOf({ messageId: m.MessageId ?? '', body: m.Body ?? '' }));
      if (take) {
        await deps.sqs.send(
          new DeleteMessageCommand({ QueueUrl: deps.queueUrls.webhooks, ReceiptHandle: m.ReceiptHandle }),
        );
      }
    }
  }
  if (found.size < jobIds.length) throw new Error('no webhook message');
  return jobIds.map((jobId) => found.get(jobId) as SQSRecord);
};
