/**
 * An SQS event source mapping as the template declares it (`AWS::Lambda::EventSourceMapping`):
 * receive up to `BatchSize` messages (gathering for `MaximumBatchingWindowInSeconds`), invoke the
 * function with an SQS event, then delete what succeeded. With `ReportBatchItemFailures` only the
 * records the function names in `batchItemFailures` stay on the queue (a malformed answer fails
 * the whole batch, as Lambda treats it); without it a successful invocation deletes the batch. A
 * failed invocation deletes nothing: the messages come back after the queue's visibility timeout.
 * Visibility is the queue's own, as with Lambda. One batch at a time (Lambda may run up to
 * `ScalingConfig.MaximumConcurrency` at once; the rehearsal does not need the parallelism).
 */
import { DeleteMessageBatchCommand, type Message, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { localAwsConfig } from '../emulators.ts';
import { toRecord } from '../event-source.ts';
import type { QueueMappingSpec } from './assembly.ts';
import type { FunctionProcess } from './function-process.ts';

/** One invocation of the mapping: what went in, what the function answered, what was deleted. */
export interface BatchRecord {
  messageIds: string[];
  bodies: string[];
  /** Ids the function reported failed (every id when the invocation itself failed). */
  failed: string[];
  deleted: string[];
  functionError?: string;
}

/** The ids the function reports failed, or every id when its answer is not a valid partial response. */
const failedIds = (result: unknown, ids: string[]): string[] => {
  if (result === null || result === undefined) return [];
  const failures = (result as { batchItemFailures?: unknown }).batchItemFailures;
  if (failures === undefined) return [];
  if (!Array.isArray(failures)) return ids;
  const named = failures.map((f) => (f as { itemIdentifier?: unknown })?.itemIdentifier);
  if (named.some((id) => typeof id !== 'string' || !ids.includes(id))) return ids;
  return named as string[];
};

export interface QueueMapping {
  readonly batches: readonly BatchRecord[];
  stop(): Promise<void>;
}

export const startQueueMapping = (options: {
  mapping: QueueMappingSpec;
  fn: FunctionProcess;
  sqsEndpoint: string;
  queueUrl: string;
  queueArn: string;
  /** Long-poll wait per receive; short keeps stopping quick. */
  waitSeconds?: number;
  onError?: (error: unknown) => void;
}): QueueMapping => {
  const { mapping, fn } = options;
  const sqs = new SQSClient({ ...localAwsConfig, endpoint: options.sqsEndpoint });
  const batches: BatchRecord[] = [];
  let running = mapping.enabled;

  const receive = async (max: number, waitSeconds: number) =>
    (
      await sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: options.queueUrl,
          MaxNumberOfMessages: Math.min(10, max),
          WaitTimeSeconds: waitSeconds,
          MessageSystemAttributeNames: ['All'],
          MessageAttributeNames: ['All'],
        }),
      )
    ).Messages ?? [];

  /** A batch: the first receive long-polls, then more are gathered until full or the window ends. */
  const gather = async (): Promise<Message[]> => {
    const messages = await receive(mapping.batchSize, options.waitSeconds ?? 1);
    const windowEnds = Date.now() + mapping.maximumBatchingWindowSeconds * 1000;
    while (running && messages.length > 0 && messages.length < mapping.batchSize && Date.now() < windowEnds) {
      const more = await receive(mapping.batchSize - messages.length, 0);
      if (more.length === 0) await new Promise((resolve) => setTimeout(resolve, 100));
      messages.push(...more);
    }
    return messages;
  };

  const loop = (async () => {
    while (running) {
      try {
        const messages = await gather();
        if (messages.length === 0) continue;
        const ids = messages.map((m) => m.MessageId ?? '');
        const outcome = await fn.invoke({ Records: messages.map((m) => toRecord(m, options.queueArn)) });
        const failed = !outcome.ok ? ids : mapping.reportBatchItemFailures ? failedIds(outcome.result, ids) : [];
        const done = messages.filter((m) => !failed.includes(m.MessageId ?? ''));
        if (done.length > 0) {
          await sqs.send(
            new DeleteMessageBatchCommand({
              QueueUrl: options.queueUrl,
              Entries: done.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle ?? '' })),
            }),
          );
        }
        batches.push({
          messageIds: ids,
          bodies: messages.map((m) => m.Body ?? ''),
          failed,
          deleted: done.map((m) => m.MessageId ?? ''),
          ...(outcome.ok ? {} : { functionError: `${outcome.error.errorType}: ${outcome.error.errorMessage}` }),
        });
      } catch (error) {
        if (!running) break;
        options.onError?.(error);
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    }
  })();

  return {
    batches,
    stop: async () => {
      running = false;
      await loop;
      sqs.destroy();
    },
  };
};
