import {
  DeleteMessageBatchCommand,
  type Message,
  type MessageAttributeValue,
  ReceiveMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import type { Context, SQSBatchResponse, SQSEvent, SQSMessageAttributes, SQSRecord } from 'aws-lambda';
import { type WorkerTrigger, workers } from '../lib/workers.ts';
import type { QueueDefinition } from '../platform/definitions.ts';
import { localAwsConfig } from './emulators.ts';
import { invokedAs } from './invocation.ts';
import { lambdaContext } from './lambda-context.ts';

export type SqsHandler = (event: SQSEvent, context: Context) => Promise<SQSBatchResponse | undefined>;

const attributesOf = (attributes: Record<string, MessageAttributeValue> = {}): SQSMessageAttributes =>
  Object.fromEntries(
    Object.entries(attributes).map(([name, value]) => [
      name,
      {
        dataType: value.DataType ?? 'String',
        ...(value.StringValue !== undefined ? { stringValue: value.StringValue } : {}),
        ...(value.BinaryValue !== undefined ? { binaryValue: Buffer.from(value.BinaryValue).toString('base64') } : {}),
        stringListValues: [],
        binaryListValues: [],
      },
    ]),
  );

/** An SQS message as a Lambda event source mapping hands it to the function (one record). */
export const toRecord = (message: Message, queueArn: string): SQSRecord => ({
  messageId: message.MessageId ?? '',
  receiptHandle: message.ReceiptHandle ?? '',
  body: message.Body ?? '',
  attributes: {
    ApproximateReceiveCount: message.Attributes?.ApproximateReceiveCount ?? '1',
    SentTimestamp: message.Attributes?.SentTimestamp ?? String(Date.now()),
    SenderId: message.Attributes?.SenderId ?? '000000000000',
    ApproximateFirstReceiveTimestamp: message.Attributes?.ApproximateFirstReceiveTimestamp ?? String(Date.now()),
    ...(message.Attributes?.AWSTraceHeader ? { AWSTraceHeader: message.Attributes.AWSTraceHeader } : {}),
  },
  messageAttributes: attributesOf(message.MessageAttributes),
  md5OfBody: message.MD5OfBody ?? '',
  eventSource: 'aws:sqs',
  eventSourceARN: queueArn,
  awsRegion: localAwsConfig.region,
});

/** The id of the worker a trigger invokes (as the AWS command log names the function). */
export const workerOf = (trigger: WorkerTrigger): string => {
  const worker = workers.find((w) => JSON.stringify(w.trigger) === JSON.stringify(trigger));
  if (!worker) throw new Error(`No worker for ${JSON.stringify(trigger)}`);
  return worker.id;
};

export interface QueuePoller {
  stop(): Promise<void>;
}

/**
 * Polls a queue the way a Lambda event source mapping does: receive up to `batchSize`, invoke the
 * handler with an SQS event, delete the messages it did not report in `batchItemFailures`, and on a
 * thrown error delete none (they reappear after the visibility timeout, then go to the DLQ).
 */
export const startQueuePoller = (options: {
  endpoint: string;
  queueUrl: string;
  definition: QueueDefinition;
  handler: SqsHandler;
  /** Long-poll wait; short keeps Ctrl-C and tests snappy. */
  waitSeconds?: number;
  onError?: (error: unknown) => void;
}): QueuePoller => {
  const sqs = new SQSClient({ ...localAwsConfig, endpoint: options.endpoint });
  const queueName = options.queueUrl.split('/').pop() ?? 'queue';
  const queueArn = `arn:aws:sqs:${localAwsConfig.region}:000000000000:${queueName}`;
  const handler = invokedAs(workerOf({ kind: 'queue', queue: options.definition.id }), options.handler);
  let running = true;
  const loop = (async () => {
    while (running) {
      try {
        const { Messages = [] } = await sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: options.queueUrl,
            MaxNumberOfMessages: options.definition.batchSize,
            WaitTimeSeconds: options.waitSeconds ?? 1,
            VisibilityTimeout: options.definition.visibilityTimeoutSeconds,
            MessageSystemAttributeNames: ['All'],
          }),
        );
        if (Messages.length === 0 || !running) continue;
        let failed = new Set<string>(Messages.map((m) => m.MessageId ?? ''));
        try {
          const result = await handler(
            { Records: Messages.map((m) => toRecord(m, queueArn)) },
            lambdaContext(`local-${options.definition.id}`, options.definition.consumerTimeoutSeconds * 1000),
          );
          failed = new Set((result?.batchItemFailures ?? []).map((f) => f.itemIdentifier));
        } catch (error) {
          options.onError?.(error);
        }
        const done = Messages.filter((m) => !failed.has(m.MessageId ?? ''));
        if (done.length > 0) {
          await sqs.send(
            new DeleteMessageBatchCommand({
              QueueUrl: options.queueUrl,
              Entries: done.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle ?? '' })),
            }),
          );
        }
      } catch (error) {
        if (!running) break;
        options.onError?.(error);
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      sqs.destroy();
    },
  };
};

/** Ticks a scheduled handler every `intervalMs`, like an EventBridge rate rule; one tick at a time. */
export const startSchedule = (options: {
  intervalMs: number;
  handler: (event: unknown, context: Context) => Promise<unknown>;
  onError?: (error: unknown) => void;
}) => {
  const handler = invokedAs(workerOf({ kind: 'schedule' }), options.handler);
  let busy = false;
  const timer = setInterval(async () => {
    if (busy) return;
    busy = true;
    try {
      await handler(
        {
          version: '0',
          id: crypto.randomUUID(),
          'detail-type': 'Scheduled Event',
          source: 'aws.events',
          account: '000000000000',
          time: new Date().toISOString(),
          region: localAwsConfig.region,
          resources: [],
          detail: {},
        },
        lambdaContext('local-deferred-dispatcher', 50_000),
      );
    } catch (error) {
      options.onError?.(error);
    } finally {
      busy = false;
    }
  }, options.intervalMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
};
