import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../deps.ts';
import { type WindowCounts, windowIndex, windowSeconds } from '../domain/rate-limit.ts';
import { rateCounterKey } from './keys.ts';

/**
 * Counts one request for the key and returns the current and previous window counts, in ONE
 * UpdateItem shared by every Lambda instance: ADD to this window's attribute, drop the one before
 * the previous, and push the TTL out so idle keys' counters disappear.
 */
export const countRequest = async (deps: Deps, keyId: string, nowMs: number): Promise<WindowCounts> => {
  const window = windowIndex(nowMs);
  const { Attributes } = await deps.ddb.send(
    new UpdateCommand({
      TableName: deps.tableName,
      Key: rateCounterKey(keyId),
      UpdateExpression: 'ADD #current :one SET #ttl = :ttl REMOVE #stale',
      ExpressionAttributeNames: { '#current': `w${window}`, '#stale': `w${window - 2}`, '#ttl': 'ttl' },
      ExpressionAttributeValues: { ':one': 1, ':ttl': Math.floor(nowMs / 1000) + 3 * windowSeconds },
      ReturnValues: 'ALL_NEW',
    }),
  );
  const count = (attribute: string) => {
    const value = Attributes?.[attribute];
    return typeof value === 'number' ? value : undefined;
  };
  return { current: count(`w${window}`) ?? 1, previous: count(`w${window - 1}`) ?? 0 };
};
