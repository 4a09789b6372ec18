import { BatchGetCommand } from '@aws-sdk/lib-dynamodb';
import * as v from 'valibot';
import type { Deps } from '../deps.ts';
import { StorageBusyError } from '../errors/table.ts';
import { logger } from '../observability/logger.ts';
import { type ItemKey, ItemKeySchema, parseItem, unexpired } from './items/item.ts';

/** The items a BatchGet read, by `PK|SK`; pick them out with `itemFor`. */
export type ItemsByKey = ReadonlyMap<string, Record<string, unknown>>;

const UnprocessedKeysSchema = v.array(ItemKeySchema);

/** A read of only some attributes (the key and `ttl` are always read), eventually consistent when asked. */
export interface BatchGetOptions {
  attributes?: readonly string[];
  consistent?: boolean;
}

/** The projection of `attributes`, each by a name placeholder (`status` and `ttl` are reserved words). */
const projectionOf = (attributes: readonly string[] | undefined) => {
  if (!attributes) return {};
  const all = [...new Set(['PK', 'SK', 'ttl', ...attributes])];
  return {
    ProjectionExpression: all.map((_, i) => `#a${i}`).join(', '),
    ExpressionAttributeNames: Object.fromEntries(all.map((name, i) => [`#a${i}`, name])),
  };
};

/**
 * BatchGetItem of up to 100 keys (strongly consistent unless `consistent: false`), retrying
 * unprocessed keys; returns the items by `PK|SK` so callers pick them out by the keys they built.
 * An item whose `ttl` has passed is left out, as if DynamoDB had deleted it (`unexpired`).
 */
export const batchGet = async (
  deps: Deps,
  keys: readonly ItemKey[],
  options: BatchGetOptions = {},
): Promise<ItemsByKey> => {
  const projection = projectionOf(options.attributes);
  const found = new Map<string, Record<string, unknown>>();
  const now = deps.now();
  let pending = keys;
  for (let attempt = 0; pending.length > 0; attempt++) {
    if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, Math.min(1000, 25 * 2 ** attempt)));
    const chunk = pending.slice(0, 100);
    const rest = pending.slice(100);
    const { Responses, UnprocessedKeys } = await deps.ddb.send(
      new BatchGetCommand({
        RequestItems: { [deps.tableName]: { Keys: chunk, ConsistentRead: options.consistent ?? true, ...projection } },
      }),
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

/** The item read for `key`, parsed with `schema` (functions/store/items/); undefined when there is none. */
export const itemFor = <TSchema extends v.GenericSchema>(
  items: ItemsByKey,
  key: ItemKey,
  schema: TSchema,
): v.InferOutput<TSchema> | undefined => {
  const item = items.get(`${key.PK}|${key.SK}`);
  return item === undefined ? undefined : parseItem(schema, item);
};
