import type { SQSClient } from '@aws-sdk/client-sqs';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

/**
 * AWS SDK calls counted by a middleware at the `initialize` step: once per `send`, whatever the
 * retries, keyed by the low-level command (`TransactWriteItemsCommand`, `SendMessageBatchCommand`…).
 */
export interface CallCounts {
  total: number;
  /** Wall time spent inside those sends, summed. */
  ms: number;
  byCommand: Record<string, number>;
}

export const newCallCounts = (): CallCounts => ({ total: 0, ms: 0, byCommand: {} });

const record = (counts: CallCounts, commandName: string | undefined, started: number) => {
  counts.total++;
  counts.ms += performance.now() - started;
  const name = commandName ?? 'unknown';
  counts.byCommand[name] = (counts.byCommand[name] ?? 0) + 1;
};

const options = { step: 'initialize', name: 'benchCallCounter', priority: 'high' } as const;

/** Counts every DynamoDB call made through `client` (the DocumentClient shares its client's stack). */
export const countDynamoDbCalls = (client: DynamoDBDocumentClient, counts: CallCounts = newCallCounts()) => {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const started = performance.now();
      try {
        return await next(args);
      } finally {
        record(counts, context.commandName, started);
      }
    },
    options,
  );
  return counts;
};

/** Counts every SQS call made through `client`. */
export const countSqsCalls = (client: SQSClient, counts: CallCounts = newCallCounts()) => {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const started = performance.now();
      try {
        return await next(args);
      } finally {
        record(counts, context.commandName, started);
      }
    },
    options,
  );
  return counts;
};

/** A copy to subtract later: `since(before, counts)` is what happened in between. */
export const snapshot = (counts: CallCounts): CallCounts => structuredClone(counts);

export const since = (before: CallCounts, after: CallCounts): CallCounts => {
  const byCommand: Record<string, number> = {};
  for (const [name, count] of Object.entries(after.byCommand)) {
    const delta = count - (before.byCommand[name] ?? 0);
    if (delta !== 0) byCommand[name] = delta;
  }
  return { total: after.total - before.total, ms: after.ms - before.ms, byCommand };
};

/** `GetItem×1 TransactWriteItems×1` from a CallCounts (command names without the suffix). */
export const commandsText = (counts: CallCounts) =>
  Object.entries(counts.byCommand)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, count]) => `${name.replace(/Command$/, '')}×${count}`)
    .join(' ') || 'none';
