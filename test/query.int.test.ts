/**
 * queryAll (functions/store/query.ts) against DynamoDB Local: it follows every page of a Query, reads
 * each item once with the parser it is given, and counts the pages it read.
 */
import { randomUUID } from 'node:crypto';
import { BatchWriteCommand } from '@aws-sdk/lib-dynamodb';
import * as v from 'valibot';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MalformedItemError, parseItem } from '../functions/store/items/item.ts';
import { queryAll } from '../functions/store/query.ts';
import { startTestStack, type TestStack } from './support/stack.ts';

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack();
});
afterAll(() => stack.close());

/** Puts `count` items `{ n }` in a fresh partition (BatchWriteItem, 25 at a time); returns the partition. */
const fillPartition = async (count: number, item: (n: number) => Record<string, unknown> = (n) => ({ n })) => {
  const partition = `TEST#${randomUUID()}`;
  for (let first = 0; first < count; first += 25) {
    const puts = Array.from({ length: Math.min(25, count - first) }, (_, i) => ({
      PutRequest: { Item: { PK: partition, SK: `ITEM#${String(first + i).padStart(3, '0')}`, ...item(first + i) } },
    }));
    const { UnprocessedItems } = await stack.deps.ddb.send(
      new BatchWriteCommand({ RequestItems: { [stack.deps.tableName]: puts } }),
    );
    expect(UnprocessedItems?.[stack.deps.tableName] ?? []).toEqual([]);
  }
  return partition;
};

const NumberedSchema = v.object({ SK: v.string(), n: v.number() });

const ofPartition = (partition: string, limit: number) => ({
  KeyConditionExpression: 'PK = :pk',
  ExpressionAttributeValues: { ':pk': partition },
  ConsistentRead: true,
  Limit: limit,
});

describe('queryAll', () => {
  it('reads every page of a Query whose items do not fit in one, in order, each parsed once', async () => {
    const partition = await fillPartition(23);
    const counter = { pages: 0 };
    const read: string[] = [];
    const items = await queryAll(
      stack.deps,
      ofPartition(partition, 5),
      (item) => {
        const parsed = parseItem(NumberedSchema, item);
        read.push(parsed.SK);
        return parsed;
      },
      counter,
    );
    expect(items.map((i) => i.n)).toEqual(Array.from({ length: 23 }, (_, n) => n));
    expect(read).toHaveLength(23);
    // Pages of 5, 5, 5, 5 and 3: the short last page carries no LastEvaluatedKey.
    expect(counter.pages).toBe(5);
  });

  it('reads a last page that comes back empty when the items fill the pages exactly', async () => {
    const partition = await fillPartition(10);
    const counter = { pages: 0 };
    const items = await queryAll(stack.deps, ofPartition(partition, 5), (item) => item, counter);
    expect(items).toHaveLength(10);
    // Two full pages, then the page DynamoDB owes after a full one (it cannot know it was the last).
    expect(counter.pages).toBe(3);
  });

  it('leaves the query it was given as it was, so it can be run again', async () => {
    const partition = await fillPartition(7);
    const query = ofPartition(partition, 3);
    const first = await queryAll(stack.deps, query, (item) => item);
    const second = await queryAll(stack.deps, query, (item) => item);
    expect(query).toEqual(ofPartition(partition, 3));
    expect(second).toEqual(first);
    expect(first).toHaveLength(7);
  });

  it('stops with the error naming the key of the first malformed item it reads', async () => {
    const partition = await fillPartition(12, (n) => ({ n: n === 8 ? 'eight' : n }));
    const reading = queryAll(stack.deps, ofPartition(partition, 5), (item) => parseItem(NumberedSchema, item));
    await expect(reading).rejects.toThrow(MalformedItemError);
    await expect(reading).rejects.toThrow(`${partition}|ITEM#008`);
  });
});
