import { GetCommand } from '@aws-sdk/lib-dynamodb';
import * as v from 'valibot';
import type { Deps } from '../../deps.ts';
import { parseItem, unexpired } from '../items/item.ts';
import { RunItemSchema } from '../items/runs.ts';
import { runKey } from '../keys.ts';

/**
 * What the run stream watches of the run item: its status, its step counters and the steps
 * they counted. The item is small (no step's outputs): the stream reads it each look.
 */
const RunProgressSchema = v.pick(RunItemSchema, [
  'jobId',
  'status',
  'stepsTotal',
  'stepsCompleted',
  'stepsSkipped',
  'doneSteps',
  'endedAt',
]);
export type RunProgress = v.InferOutput<typeof RunProgressSchema>;

/** A run item's mark: it changes whenever the run's status or a step's count does. */
export const runMarkOf = (run: Pick<RunProgress, 'status' | 'stepsCompleted' | 'stepsSkipped' | 'endedAt'>): string =>
  JSON.stringify([run.status, run.stepsCompleted, run.stepsSkipped, run.endedAt ?? null]);

/**
 * The run item's progress, in one eventually consistent GetItem (half the read units of a strong
 * one; the projection only says what is used: DynamoDB charges the whole item): the stream's
 * once-a-second look. A stale answer only delays what a later look shows. Undefined when the run
 * is gone.
 */
export const readRunProgress = async (deps: Deps, jobId: string): Promise<RunProgress | undefined> => {
  const { Item } = await deps.ddb.send(
    new GetCommand({
      TableName: deps.tableName,
      Key: runKey(jobId),
      ConsistentRead: false,
      ProjectionExpression: 'jobId, #status, stepsTotal, stepsCompleted, stepsSkipped, doneSteps, endedAt, #ttl',
      ExpressionAttributeNames: { '#status': 'status', '#ttl': 'ttl' },
    }),
  );
  const item = unexpired(Item, deps.now());
  return item && parseItem(RunProgressSchema, item);
};
