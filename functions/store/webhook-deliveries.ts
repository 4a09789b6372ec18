import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { WebhookEvent } from '../../schemas/runs.ts';
import type { Deps } from '../deps.ts';
import { runKey, webhookDeliveryKey } from './keys.ts';

/** Where a run's webhook goes, and whether this event of it was delivered already. */
export interface DeliveryTarget {
  callbackUrl: string | undefined;
  callbackSecret: string | undefined;
  delivered: boolean;
}

/** Reads the run's callback and the event's delivery item (two strongly consistent Gets, at once). */
export const readDeliveryTarget = async (deps: Deps, jobId: string, event: WebhookEvent): Promise<DeliveryTarget> => {
  const [{ Item: run }, { Item: delivery }] = await Promise.all([
    deps.ddb.send(new GetCommand({ TableName: deps.tableName, Key: runKey(jobId), ConsistentRead: true })),
    deps.ddb.send(
      new GetCommand({ TableName: deps.tableName, Key: webhookDeliveryKey(jobId, event), ConsistentRead: true }),
    ),
  ]);
  return {
    callbackUrl: run?.callbackUrl as string | undefined,
    callbackSecret: run?.callbackSecret as string | undefined,
    delivered: Boolean(delivery?.deliveredAt),
  };
};

/** Records one attempt on the event's delivery item: its result, when, and (on success) that it was delivered. */
export const recordWebhookAttempt = async (
  deps: Deps,
  jobId: string,
  event: WebhookEvent,
  outcome: { delivered: boolean; result: string },
) => {
  await deps.ddb.send(
    new UpdateCommand({
      TableName: deps.tableName,
      Key: webhookDeliveryKey(jobId, event),
      UpdateExpression: `SET lastResult = :result, lastAttemptAt = :now${outcome.delivered ? ', deliveredAt = :now' : ''} ADD attempts :one`,
      ExpressionAttributeValues: { ':result': outcome.result, ':now': deps.now().toISOString(), ':one': 1 },
    }),
  );
};
