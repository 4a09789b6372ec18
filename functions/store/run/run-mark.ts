import { GetCommand } from '@aws-sdk/lib-dynamodb';
import * as v from 'valibot';
import type { Deps } from '../../deps.ts';
import { parseItem, RunItemSchema, unexpired } from '../items.ts';
import { runKey } from '../keys.ts';

/** What the run stream watches of the run item: its status and its step counters. */
const RunMarkSchema = v.pick(RunItemSchema, ['status', 'stepsCompleted', 'stepsSkipped', 'endedAt']);

/** A run item's mark: it changes whenever the run's status or a step's count does. */
export const runMarkOf = (run: v.InferOutput<typeof RunMarkSchema>): string =>
  JSON.stringify([run.status, run.stepsCompleted, run.stepsSkipped, run.endedAt ?? null]);

/**
 * The run item's mark, in one eventually consistent GetItem (half the read units of a strong one):
 * the stream's once-a-second look. A stale answer only delays what the next look (or the strongly
 * consistent partition read it then makes) shows. Undefined when the run is gone.
 */
export const readRunMark = async (deps: Deps, jobId: string): Promise<string | undefined> => {
  const { Item } = await deps.ddb.send(
    new GetCommand({
      TableName: deps.tableName,
      Key: runKey(jobId),
      ConsistentRead: false,
      ProjectionExpression: '#status, stepsCompleted, stepsSkipped, endedAt, #ttl',
      ExpressionAttributeNames: { '#status': 'status', '#ttl': 'ttl' },
    }),
  );
  const item = unexpired(Item, deps.now());
  return item && runMarkOf(parseItem(RunMarkSchema, item));
};
