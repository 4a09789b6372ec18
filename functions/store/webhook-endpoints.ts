import { DeleteCommand, GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import * as v from 'valibot';
import {
  type EndStatus,
  endStatuses,
  type InProgressStatus,
  inProgressStatuses,
  RunStatus,
} from '../../platform/run-statuses.ts';
import type { Deps } from '../deps.ts';
import { runItemExpiry } from '../domain/retention.ts';
import { appendToAttemptLog, type DeliveryState, type WebhookAttempt } from '../domain/webhook.ts';
import { ifNotExists, tableUpdate } from './item-update.ts';
import { itemVersion, parseItem, type StoredItem, unexpired } from './items/item.ts';
import { RunItemSchema } from './items/runs.ts';
import {
  type EndpointDeliveryItem,
  EndpointDeliveryItemSchema,
  storedEndpointDelivery,
  storedEndpointSlots,
  storedWebhookEndpoint,
  type WebhookEndpointItem,
  WebhookEndpointItemSchema,
} from './items/webhook-endpoints.ts';
import {
  endpointDeliveryKey,
  endpointDeliveryPartition,
  endpointDeliverySkPrefix,
  runKey,
  teamPartition,
  webhookEndpointKey,
  webhookEndpointSkPrefix,
  webhookEndpointSlotsKey,
} from './keys.ts';
import { namedTransactWrite } from './named-transaction.ts';
import { queryAll } from './query.ts';
import type { ItemChange } from './stream-images.ts';
import { conditionalUpdate, conditionalWrite } from './write.ts';

/**
 * A team's webhook endpoints and their deliveries (functions/domain/webhook-endpoints.ts has the
 * rules). Every change of an endpoint is conditional on its existence, so a deleted one stays deleted.
 */

const exists = { ConditionExpression: 'attribute_exists(PK)' };

/** Every endpoint of the team, oldest first (one strongly consistent Query of its partition). */
export const listEndpoints = (deps: Deps, teamId: string): Promise<WebhookEndpointItem[]> =>
  queryAll(
    deps,
    {
      KeyConditionExpression: 'PK = :pk AND begins_with(SK, :prefix)',
      ExpressionAttributeValues: { ':pk': teamPartition(teamId), ':prefix': webhookEndpointSkPrefix },
      ConsistentRead: true,
    },
    (item) => parseItem(WebhookEndpointItemSchema, item),
  ).then((all) => all.sort((a, b) => a.createdAt.localeCompare(b.createdAt)));

export const readEndpoint = async (
  deps: Deps,
  teamId: string,
  endpointId: string,
): Promise<WebhookEndpointItem | undefined> => {
  const { Item } = await deps.ddb.send(
    new GetCommand({ TableName: deps.tableName, Key: webhookEndpointKey(teamId, endpointId), ConsistentRead: true }),
  );
  return Item && parseItem(WebhookEndpointItemSchema, Item);
};

/** The put of a new endpoint (its id is new: the condition only guards a collision). */
const endpointPut = (deps: Deps, endpoint: WebhookEndpointItem) => {
  const item = {
    ...webhookEndpointKey(endpoint.teamId, endpoint.endpointId),
    ...endpoint,
    v: itemVersion,
  } satisfies StoredItem<typeof storedWebhookEndpoint>;
  return { TableName: deps.tableName, Item: item, ConditionExpression: 'attribute_not_exists(PK)' };
};

/**
 * Creates the team's slots map with the endpoints it already has (kept before the map existed), if
 * it has none: an entry cannot be set in a map that is absent.
 */
const createEndpointSlots = async (deps: Deps, teamId: string) => {
  const existing = await listEndpoints(deps, teamId);
  await conditionalUpdate(
    deps,
    storedEndpointSlots,
    webhookEndpointSlotsKey(teamId),
    { set: { slots: ifNotExists(Object.fromEntries(existing.map((e) => [e.endpointId, e.createdAt]))) } },
    { ConditionExpression: 'attribute_not_exists(slots)' },
  );
};

/**
 * Writes a new endpoint and takes its slot among the team's in one transaction, so concurrent
 * creations never pass `cap` (each is refused or counted, atomically). False when the team holds `cap`.
 */
export const putEndpoint = async (deps: Deps, endpoint: WebhookEndpointItem, cap: number): Promise<boolean> => {
  const write = () =>
    namedTransactWrite(deps, {
      slot: {
        Update: {
          ...tableUpdate(
            deps,
            storedEndpointSlots,
            webhookEndpointSlotsKey(endpoint.teamId),
            { setEntries: { slots: { [endpoint.endpointId]: endpoint.createdAt } } },
            {
              ConditionExpression: 'size(#slots) < :cap',
              ExpressionAttributeNames: { '#slots': 'slots' },
              ExpressionAttributeValues: { ':cap': cap },
            },
          ),
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        },
      },
      endpoint: { Put: endpointPut(deps, endpoint) },
    });
  let result = await write();
  if (!result.written && result.refused('slot') && result.reason('slot')?.Item?.slots === undefined) {
    await createEndpointSlots(deps, endpoint.teamId);
    result = await write();
  }
  if (result.written) return true;
  if (result.refused('slot')) return false;
  throw new Error(`endpoint ${endpoint.endpointId} collided with an existing one`);
};

/** What a PATCH may change. */
export type EndpointChange = Partial<
  Pick<WebhookEndpointItem, 'url' | 'events' | 'workflowIds' | 'tags' | 'description' | 'disabled'>
>;

/**
 * Applies a PATCH: the fields given; `disabled: true` is `requested`, `disabled: false` also forgets
 * the failures that disabled it. Undefined when the endpoint is gone.
 */
export const updateEndpoint = async (
  deps: Deps,
  teamId: string,
  endpointId: string,
  change: EndpointChange,
): Promise<WebhookEndpointItem | undefined> => {
  const now = deps.now().toISOString();
  const { disabled, ...fields } = change;
  const updated = await conditionalUpdate(
    deps,
    storedWebhookEndpoint,
    webhookEndpointKey(teamId, endpointId),
    {
      set: {
        ...fields,
        updatedAt: now,
        ...(disabled === true && { disabled: true, disabledReason: 'requested' as const }),
        ...(disabled === false && { disabled: false }),
      },
      remove: disabled === false ? ['disabledReason', 'failingSince'] : [],
    },
    exists,
    { ReturnValues: 'ALL_NEW' },
  );
  return updated.written && updated.output.Attributes
    ? parseItem(WebhookEndpointItemSchema, updated.output.Attributes)
    : undefined;
};

/** Replaces the secret; the one it replaces keeps signing until `until`. Undefined when the endpoint is gone. */
export const rotateEndpointSecret = async (
  deps: Deps,
  endpoint: WebhookEndpointItem,
  secret: string,
  until: string,
): Promise<WebhookEndpointItem | undefined> => {
  const updated = await conditionalUpdate(
    deps,
    storedWebhookEndpoint,
    webhookEndpointKey(endpoint.teamId, endpoint.endpointId),
    {
      set: { secret, previousSecret: endpoint.secret, previousSecretUntil: until, updatedAt: deps.now().toISOString() },
    },
    // Only over the secret read: of two rotations at once, the second does not drop the first's new secret.
    {
      ConditionExpression: 'attribute_exists(PK) AND secret = :read',
      ExpressionAttributeValues: { ':read': endpoint.secret },
    },
    { ReturnValues: 'ALL_NEW' },
  );
  return updated.written && updated.output.Attributes
    ? parseItem(WebhookEndpointItemSchema, updated.output.Attributes)
    : undefined;
};

/** Deletes the endpoint; undefined when it was gone, else the endpoint as it was. */
export const deleteEndpoint = async (deps: Deps, endpoint: WebhookEndpointItem): Promise<boolean> => {
  const key = webhookEndpointKey(endpoint.teamId, endpoint.endpointId);
  const deleted = await namedTransactWrite(deps, {
    endpoint: { Delete: { TableName: deps.tableName, Key: key, ...exists } },
    slot: {
      Update: tableUpdate(
        deps,
        storedEndpointSlots,
        webhookEndpointSlotsKey(endpoint.teamId),
        { removeEntries: { slots: [endpoint.endpointId] } },
        { ConditionExpression: 'attribute_exists(#slots)', ExpressionAttributeNames: { '#slots': 'slots' } },
      ),
    },
  });
  if (deleted.written) return true;
  if (deleted.refused('endpoint')) return false;
  // No slots map yet (every endpoint was made before it): the endpoint alone.
  const alone = await conditionalWrite(deps, new DeleteCommand({ TableName: deps.tableName, Key: key, ...exists }));
  return alone.written;
};

/**
 * An attempt's effect on its endpoint's failure streak (functions/domain/webhook-endpoints.ts
 * `streakAfterAttempt`): each a conditional write, so concurrent attempts change it once.
 * True when this call disabled the endpoint.
 */
export const recordEndpointStreak = async (
  deps: Deps,
  endpoint: WebhookEndpointItem,
  change: 'cleared' | 'started' | 'disable',
  at: string,
): Promise<boolean> => {
  const key = webhookEndpointKey(endpoint.teamId, endpoint.endpointId);
  if (change === 'cleared') {
    await conditionalUpdate(deps, storedWebhookEndpoint, key, { remove: ['failingSince'] }, exists);
    return false;
  }
  if (change === 'started') {
    await conditionalUpdate(deps, storedWebhookEndpoint, key, { set: { failingSince: ifNotExists(at) } }, exists);
    return false;
  }
  const disabled = await conditionalUpdate(
    deps,
    storedWebhookEndpoint,
    key,
    { set: { disabled: true, disabledReason: 'failing', disabledAt: at, updatedAt: at } },
    {
      // Only an enabled endpoint, still failing since the same time (a success in between ends the streak).
      ConditionExpression: 'attribute_exists(PK) AND disabled = :no AND failingSince = :since',
      ExpressionAttributeValues: { ':no': false, ':since': endpoint.failingSince },
    },
  );
  return disabled.written;
};

/** A delivery as opened, before any attempt. */
export interface NewEndpointDelivery {
  deliveryId: string;
  endpointId: string;
  teamId: string;
  event: string;
  jobId?: string | undefined;
  createdAt: string;
  /** A single attempt asked for (a test's ping): no retry schedule follows it. */
  single?: boolean;
  /** The `ttl`: its run's (a ping's, its retention from now). */
  expiresAt: number;
}

/**
 * Opens a delivery, once: false when it was opened before (the same change handed over again) and
 * attempted since, so only the first open sends its message. One opened and never attempted is
 * reported as new again (its message may have been lost); the worker's conditions make a second
 * message of the same attempt a no-op or, at worst, the same `webhook-id` POSTed twice.
 */
export const openEndpointDelivery = async (deps: Deps, delivery: NewEndpointDelivery): Promise<boolean> => {
  const { single, expiresAt, jobId, ...rest } = delivery;
  const item = {
    ...endpointDeliveryKey(delivery.endpointId, delivery.deliveryId),
    ...rest,
    ...(jobId !== undefined && { jobId }),
    state: 'pending' as const,
    attempts: 0,
    attemptLog: [],
    ...(single && { redeliveryRequestedAt: delivery.createdAt }),
    ttl: expiresAt,
    v: itemVersion,
  } satisfies StoredItem<typeof storedEndpointDelivery>;
  const put = await conditionalWrite(
    deps,
    new PutCommand({
      TableName: deps.tableName,
      Item: item,
      ConditionExpression: 'attribute_not_exists(PK) OR attempts = :none',
      ExpressionAttributeValues: { ':none': 0 },
    }),
  );
  return put.written;
};

export const readEndpointDelivery = async (
  deps: Deps,
  endpointId: string,
  deliveryId: string,
): Promise<EndpointDeliveryItem | undefined> => {
  const { Item } = await deps.ddb.send(
    new GetCommand({
      TableName: deps.tableName,
      Key: endpointDeliveryKey(endpointId, deliveryId),
      ConsistentRead: true,
    }),
  );
  const item = unexpired(Item, deps.now());
  return item && parseItem(EndpointDeliveryItemSchema, item);
};

/** A page of the endpoint's deliveries, newest first, after `before` (a deliveryId) when given. */
export const listEndpointDeliveries = async (
  deps: Deps,
  endpointId: string,
  page: { limit: number; before?: string | undefined },
): Promise<{ deliveries: EndpointDeliveryItem[]; more: boolean }> => {
  const { Items = [], LastEvaluatedKey } = await deps.ddb.send(
    new QueryCommand({
      TableName: deps.tableName,
      KeyConditionExpression:
        page.before === undefined
          ? 'PK = :pk AND begins_with(SK, :prefix)'
          : 'PK = :pk AND SK BETWEEN :prefix AND :before',
      ExpressionAttributeValues: {
        ':pk': endpointDeliveryPartition(endpointId),
        ':prefix': endpointDeliverySkPrefix,
        // BETWEEN is inclusive: the cursor's own delivery is dropped below.
        ...(page.before !== undefined && { ':before': `${endpointDeliverySkPrefix}${page.before}` }),
      },
      ScanIndexForward: false,
      Limit: page.limit + 1,
      ConsistentRead: true,
    }),
  );
  const now = deps.now();
  const read = Items.filter((item) => item.SK !== `${endpointDeliverySkPrefix}${page.before}`).flatMap((item) => {
    const live = unexpired(item, now);
    return live ? [parseItem(EndpointDeliveryItemSchema, live)] : [];
  });
  return { deliveries: read.slice(0, page.limit), more: read.length > page.limit || LastEvaluatedKey !== undefined };
};

/**
 * Before attempt `attempt`'s POST: marks it as started, on the condition that the attempt before it
 * is the last recorded and the delivery is pending. False when a copy of the message got there first.
 */
export const markEndpointAttemptSending = async (
  deps: Deps,
  delivery: EndpointDeliveryItem,
  sending: { attempt: number; at: string },
): Promise<boolean> => {
  const marked = await conditionalUpdate(
    deps,
    storedEndpointDelivery,
    endpointDeliveryKey(delivery.endpointId, delivery.deliveryId),
    { set: { sending } },
    {
      ConditionExpression: 'attempts = :previous AND #state = :pending',
      ExpressionAttributeNames: { '#state': 'state' },
      ExpressionAttributeValues: { ':previous': sending.attempt - 1, ':pending': 'pending' },
    },
  );
  return marked.written;
};

/** Records an attempt and the state it leaves the delivery in, once (conditions as `markEndpointAttemptSending`). */
export const recordEndpointAttempt = async (
  deps: Deps,
  delivery: EndpointDeliveryItem,
  record: { messageId: string; entry: WebhookAttempt; state: DeliveryState },
): Promise<boolean> => {
  const { entry, state } = record;
  const recorded = await conditionalUpdate(
    deps,
    storedEndpointDelivery,
    endpointDeliveryKey(delivery.endpointId, delivery.deliveryId),
    {
      set: {
        state,
        attempts: entry.attempt,
        lastMessageId: record.messageId,
        attemptLog: appendToAttemptLog(delivery.attemptLog, entry),
        nextAttemptAt: entry.nextAttemptAt,
        ...(state === 'delivered' ? { deliveredAt: entry.at } : state === 'failed' ? { failedAt: entry.at } : {}),
      },
      remove: [...(entry.nextAttemptAt ? [] : (['nextAttemptAt'] as const)), 'redeliveryRequestedAt', 'sending'],
    },
    {
      ConditionExpression: 'attempts = :previous AND #state = :pending',
      ExpressionAttributeNames: { '#state': 'state' },
      ExpressionAttributeValues: { ':previous': entry.attempt - 1, ':pending': 'pending' },
    },
  );
  return recorded.written;
};

/** Ends a pending delivery without an attempt (its endpoint was disabled or deleted, or its run is gone). */
export const abandonEndpointDelivery = async (deps: Deps, delivery: EndpointDeliveryItem): Promise<void> => {
  await conditionalUpdate(
    deps,
    storedEndpointDelivery,
    endpointDeliveryKey(delivery.endpointId, delivery.deliveryId),
    {
      set: { state: 'failed', failedAt: deps.now().toISOString() },
      remove: ['nextAttemptAt', 'redeliveryRequestedAt', 'sending'],
    },
    {
      ConditionExpression: 'attempts = :seen AND #state = :pending',
      ExpressionAttributeNames: { '#state': 'state' },
      ExpressionAttributeValues: { ':seen': delivery.attempts, ':pending': 'pending' },
    },
  );
};

/**
 * Marks a delivery pending for one redelivery, on the condition that nothing moved since it was
 * read and it is not pending. False when another request (or an attempt) got there first.
 */
export const markEndpointRedelivery = async (deps: Deps, delivery: EndpointDeliveryItem): Promise<boolean> => {
  const requestedAt = deps.now().toISOString();
  const marked = await conditionalUpdate(
    deps,
    storedEndpointDelivery,
    endpointDeliveryKey(delivery.endpointId, delivery.deliveryId),
    { set: { state: 'pending', redeliveryRequestedAt: requestedAt, lastRedeliveryAt: requestedAt } },
    {
      ConditionExpression: 'attempts = :seen AND #state <> :pending',
      ExpressionAttributeNames: { '#state': 'state' },
      ExpressionAttributeValues: { ':seen': delivery.attempts, ':pending': 'pending' },
    },
  );
  return marked.written;
};

/** Undoes `markEndpointRedelivery` when its message could not be sent. */
export const unmarkEndpointRedelivery = async (deps: Deps, delivery: EndpointDeliveryItem): Promise<void> => {
  await conditionalUpdate(
    deps,
    storedEndpointDelivery,
    endpointDeliveryKey(delivery.endpointId, delivery.deliveryId),
    { set: { state: delivery.state }, remove: ['redeliveryRequestedAt'] },
    {
      ConditionExpression: 'attempts = :seen AND #state = :pending',
      ExpressionAttributeNames: { '#state': 'state' },
      ExpressionAttributeValues: { ':seen': delivery.attempts, ':pending': 'pending' },
    },
  );
};

/** What the endpoints' fan-out reads of a run item's change. */
const RunChangeImageSchema = v.pick(RunItemSchema, [
  'jobId',
  'teamId',
  'workflowId',
  'status',
  'createdAt',
  'endedAt',
  'tags',
]);

/** One run event a change of the table gives, for the team's endpoints. */
export interface RunEventChange {
  jobId: string;
  teamId: string;
  workflowId: string;
  tags: readonly string[];
  event: string;
  /** When it happened (ms): the run's creation, or its end. */
  atMs: number;
  /** The delivery's `ttl`: its run's. */
  expiresAt: number;
}

/**
 * The run event of one change the lifecycle mapping passed: `run.started` from a run item's insert,
 * `run.<status>` from its move from an in-progress status to an end status. Undefined for any other.
 */
export const runEventChangeOf = (
  change: Pick<ItemChange, 'oldImage' | 'newImage'>,
  now: Date,
  retentionDays: number,
): RunEventChange | undefined => {
  const { oldImage, newImage } = change;
  if (!newImage || newImage.SK !== runKey('').SK) return undefined;
  const run = parseItem(RunChangeImageSchema, newImage);
  // A run starts at its insert, or (one queued behind another: inserted `waiting`) when it moves to `queued`.
  const started =
    oldImage === undefined
      ? run.status !== RunStatus.waiting
      : oldImage.status === RunStatus.waiting && run.status === RunStatus.queued;
  const ended =
    oldImage !== undefined &&
    endStatuses.includes(run.status as EndStatus) &&
    (inProgressStatuses.includes(oldImage.status as InProgressStatus) || oldImage.status === RunStatus.waiting);
  if (!started && !ended) return undefined;
  // The delivery's id is derived from this time, so it must read the same on a redelivered record:
  // a queued run's start is dated by its acceptance, as a run's is by its insert.
  const at = started ? run.createdAt : (run.endedAt ?? now.toISOString());
  return {
    jobId: run.jobId,
    teamId: run.teamId,
    workflowId: run.workflowId,
    tags: run.tags ?? [],
    event: started ? 'run.started' : `run.${run.status}`,
    atMs: Date.parse(at),
    expiresAt: runItemExpiry(run.createdAt, now, retentionDays),
  };
};
