import { GetCommand } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../deps.ts';
import { idempotencyRecordKey } from './keys.ts';

export interface IdempotentAnswer {
  requestHash: string;
  response: { status: number; body: unknown };
}

/** The remembered answer for this key's Idempotency-Key, unless it expired. */
export const findIdempotentAnswer = async (
  deps: Deps,
  keyId: string,
  keyHash: string,
): Promise<IdempotentAnswer | undefined> => {
  const { Item } = await deps.ddb.send(
    new GetCommand({ TableName: deps.tableName, Key: idempotencyRecordKey(keyId, keyHash), ConsistentRead: true }),
  );
  if (!Item || (Item.ttl as number) < Math.floor(deps.now().getTime() / 1000)) return undefined;
  return { requestHash: Item.requestHash as string, response: Item.response as IdempotentAnswer['response'] };
};
