import { BatchGetCommand } from '@aws-sdk/lib-dynamodb';
import * as v from 'valibot';
import type { Deps } from '../deps.ts';
import { StorageBusyError } from '../domain/errors.ts';
import { logger } from '../observability/logger.ts';
import { type ItemKey, ItemKeySchema, parseItem, unexpired } from './items.ts';

/** The items a BatchGet read, by `PK|SK`; pick them out with `itemFor`. */
export type ItemsByKey = ReadonlyMap<string, Record<string, unknown>>;

const UnprocessedKeysSchema = v.array(ItemKeySchema);

/**
 * Strongly consistent BatchGetItem of up to 100 keys, retrying unprocessed keys; returns the
 * items by `PK|SK` so callers pick them out by the keys they built. An item whose `ttl` has passed
 * is left out, as if DynamoDB had deleted it (`unexpired`).
 */
export const batchGet = async (deps: Deps, keys: readonly ItemKey[]): Promise<ItemsByKey> => {
  const found = new Map<string, Record<string, unknown>>();
  const now = deps.now();
  let pending = keys;
  for (let attempt = 0; pending.length > 0; attempt++) {
    if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, Math.min(1000, 25 * 2 ** attempt)));
    const chunk = pending.slice(0, 100);
    const rest = pending.slice(100);
    const { Responses, UnprocessedKeys } = await deps.ddb.send(
      new BatchGetCommand({ RequestItems: { [deps.tableName]: { Keys: chunk, ConsistentRead: true } } }),
    );
    for (const item of Responses?.[deps.tableName] ?? []) {
      if (unexpired(item, now)) found.set(`${item.PK}|${item.SK}`, item);
    }
    pending = [...v.parse(UnprocessedKeysSchema, UnprocessedKeys?.[deps.tableName]?.Keys ?? []), ...rest];
    // DynamoDB leaves keys unprocessed when it throttles them: load, not a defect (functions/store/read.ts).
    if (attempt > 10 && pending.length > 0) {
      logger.warn('read met contention on every try', {
        read: 'BatchGetItem',
        contention: 'throttled',
        tries: attempt + 1,
      });
      throw new StorageBusyError('throttled', attempt + 1);
    }
  }
  return found;
};

/** The item read for `key`, parsed with `schema` (functions/store/items.ts); undefined when there is none. */
export const itemFor = <TSchema extends v.GenericSchema>(
  items: ItemsByKey,
  key: ItemKey,
  schema: TSchema,
): v.InferOutput<TSchema> | undefined => {
  const item = items.get(`${key.PK}|${key.SK}`);
  return item === undefined ? undefined : parseItem(schema, item);
};
