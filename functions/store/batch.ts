import { BatchGetCommand } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../deps.ts';

type Key = { PK: string; SK: string };

/**
 * Strongly consistent BatchGetItem of up to 100 keys, retrying unprocessed keys; returns the
 * items by `PK|SK` so callers pick them out by the keys they built.
 */
export const batchGet = async (deps: Deps, keys: Key[]): Promise<Map<string, Record<string, unknown>>> => {
  const found = new Map<string, Record<string, unknown>>();
  let pending: Key[] = keys;
  for (let attempt = 0; pending.length > 0; attempt++) {
    if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, Math.min(1000, 25 * 2 ** attempt)));
    const chunk = pending.slice(0, 100);
    const rest = pending.slice(100);
    const { Responses, UnprocessedKeys } = await deps.ddb.send(
      new BatchGetCommand({ RequestItems: { [deps.tableName]: { Keys: chunk, ConsistentRead: true } } }),
    );
    for (const item of Responses?.[deps.tableName] ?? []) found.set(`${item.PK}|${item.SK}`, item);
    pending = [...((UnprocessedKeys?.[deps.tableName]?.Keys as Key[] | undefined) ?? []), ...rest];
    if (attempt > 10) throw new Error('DynamoDB left keys unprocessed after 10 retries');
  }
  return found;
};

export const itemFor = (items: Map<string, Record<string, unknown>>, key: Key) => items.get(`${key.PK}|${key.SK}`);
