import { type EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import { envNames, operatorEventItems } from '../../platform/definitions.ts';
import type { ItemImages } from '../domain/operator-events.ts';
import { DeferredRunEventImageSchema } from './items/deferred-run-entries.ts';
import { parseItem } from './items/item.ts';
import { RunEventImageSchema } from './items/runs.ts';
import { WebhookEndpointEventImageSchema } from './items/webhook-endpoints.ts';
import { webhookEndpointSkPrefix } from './keys.ts';
import type { ItemChange } from './stream-images.ts';

/** One event as PutEvents takes it (on the bus the sender was built for). */
export interface BusEntry {
  source: string;
  detailType: string;
  /** The detail, as JSON text. */
  detail: string;
  /** ISO 8601: when the change happened. */
  time: string;
}

/** Puts up to ten entries in one call; answers, per entry in order, its error code or undefined when it was put. */
export type PutBusEntries = (entries: readonly BusEntry[]) => Promise<(string | undefined)[]>;

/** The operator event bus's name (`OPERATOR_EVENT_BUS`). */
export const operatorEventBusFromEnv = (env: NodeJS.ProcessEnv = process.env) => env[envNames.operatorEventBus] ?? '';

/**
 * PutEvents on `busName`. A whole-call failure throws; a partial one answers each failed entry's
 * `ErrorCode` (PutEvents answers 200 with `FailedEntryCount` and per-entry codes, e.g. a throttle).
 */
export const eventBridgeSender =
  (client: EventBridgeClient, busName: string): PutBusEntries =>
  async (entries) => {
    const answer = await client.send(
      new PutEventsCommand({
        Entries: entries.map((entry) => ({
          EventBusName: busName,
          Source: entry.source,
          DetailType: entry.detailType,
          Detail: entry.detail,
          Time: new Date(entry.time),
        })),
      }),
    );
    const failedCount = answer.FailedEntryCount ?? 0;
    return entries.map((_, i) => {
      const result = answer.Entries?.[i];
      if (result?.ErrorCode) return result.ErrorCode;
      // A failure the answer does not place on an entry: count every entry without an id as failed.
      return failedCount > 0 && !result?.EventId ? 'Unknown' : undefined;
    });
  };

/**
 * A change's images as the operator events read them, each with its item's schema (items/):
 * undefined for a removal (TTL) or another item. An image without the item's shape is a
 * MalformedItemError: the batch fails, and the mapping isolates the record into its dead-letter queue.
 */
export const operatorImagesOf = (change: Pick<ItemChange, 'oldImage' | 'newImage'>): ItemImages | undefined => {
  const { oldImage, newImage } = change;
  if (newImage?.SK === operatorEventItems.run) {
    return {
      item: 'run',
      old: oldImage && parseItem(RunEventImageSchema, oldImage),
      now: parseItem(RunEventImageSchema, newImage),
    };
  }
  if (newImage?.SK === operatorEventItems.deferredRun) {
    return {
      item: 'deferredRun',
      old: oldImage && parseItem(DeferredRunEventImageSchema, oldImage),
      now: parseItem(DeferredRunEventImageSchema, newImage),
    };
  }
  if (typeof newImage?.SK === 'string' && newImage.SK.startsWith(webhookEndpointSkPrefix)) {
    return {
      item: 'webhookEndpoint',
      old: oldImage && parseItem(WebhookEndpointEventImageSchema, oldImage),
      now: parseItem(WebhookEndpointEventImageSchema, newImage),
    };
  }
  return undefined;
};
