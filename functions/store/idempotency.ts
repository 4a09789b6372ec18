import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../deps.ts';
import { epochSeconds } from '../domain/retention.ts';
import { ServiceError } from '../errors/define.ts';
import { IdempotencyItemSchema, type storedIdempotency } from './items/idempotency.ts';
import { itemVersion, parseItem, type StoredItem, unexpired } from './items/item.ts';
import { idempotencyRecordKey } from './keys.ts';
import { conditionalWrite } from './write.ts';

export interface IdempotentAnswer {
  requestHash: string;
  response: { body: unknown };
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
  const item = unexpired(Item, deps.now());
  if (!item) return undefined;
  const remembered = parseItem(IdempotencyItemSchema, item);
  return { requestHash: remembered.requestHash, response: remembered.response };
};

export interface IdempotencyRecord {
  keyHash: string;
  requestHash: string;
  // The body alone: the edge chooses the status (200 or 202) from it, as it does for a first answer.
  response: { body: unknown };
  /** Epoch seconds from which the key may be used again (the record's `ttl`). */
  expiresAt: number;
}

/**
 * The Put that remembers an answer, for the start's transaction; an expired record (one that reads
 * as absent: its `ttl` has come) may be replaced.
 */
export const idempotencyPut = (deps: Pick<Deps, 'tableName' | 'now'>, keyId: string, record: IdempotencyRecord) => ({
  Put: {
    TableName: deps.tableName,
    Item: {
      ...idempotencyRecordKey(keyId, record.keyHash),
      type: 'Idempotency',
      requestHash: record.requestHash,
      response: record.response,
      ttl: record.expiresAt,
      v: itemVersion,
    } satisfies StoredItem<typeof storedIdempotency>,
    ConditionExpression: 'attribute_not_exists(PK) OR #ttl <= :nowSeconds',
    ExpressionAttributeNames: { '#ttl': 'ttl' },
    ExpressionAttributeValues: { ':nowSeconds': epochSeconds(deps.now()) },
  },
});

/** Another request with the same Idempotency-Key committed first. */
export class IdempotencyRaceError extends ServiceError {
  override readonly name = 'IdempotencyRaceError';
  constructor(options?: { cause?: unknown }) {
    super('another request with the same Idempotency-Key committed first', options);
  }
}

/**
 * Remembers an answer on its own (not in a start's transaction: a batch's whole answer, written once
 * its items are done). False when another request with the same Idempotency-Key was remembered first.
 */
export const rememberAnswer = async (deps: Deps, keyId: string, record: IdempotencyRecord): Promise<boolean> =>
  (await conditionalWrite(deps, new PutCommand(idempotencyPut(deps, keyId, record).Put))).written;
