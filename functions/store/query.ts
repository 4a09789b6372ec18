import { paginateQuery, type QueryCommandInput } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../deps.ts';
import { unexpired } from './items/item.ts';

/** A Query of the table, or of one of its indexes (`IndexName`); `Limit`, when set, is the size of a page. */
export type TableQuery = Omit<QueryCommandInput, 'TableName' | 'ExclusiveStartKey'>;

/**
 * Every item a Query matches, page after page, each read once by `read` (a parser of
 * functions/store/items/) as it arrives; an item whose `ttl` has passed is left out, as if
 * DynamoDB had deleted it (`unexpired`). `counter.pages` counts the pages (a dispatcher tick
 * reports what its queries cost).
 */
export const queryAll = async <T>(
  deps: Deps,
  query: TableQuery,
  read: (item: Record<string, unknown>) => T,
  counter?: { pages: number },
): Promise<T[]> => {
  const out: T[] = [];
  const now = deps.now();
  // The paginator writes its cursor into the input it is given: a copy, so `query` can be reused.
  for await (const page of paginateQuery({ client: deps.ddb }, { ...query, TableName: deps.tableName })) {
    if (counter) counter.pages++;
    for (const item of page.Items ?? []) if (unexpired(item, now)) out.push(read(item));
  }
  return out;
};
