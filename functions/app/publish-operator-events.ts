import type { DynamoDBRecord } from 'aws-lambda';
import { type OperatorEvent, operatorEventOf, operatorEventSource } from '../domain/operator-events.ts';
import {
  type BusEntry,
  eventBridgeSender,
  operatorEventBusFromEnv,
  operatorImagesOf,
  type PutBusEntries,
} from '../store/operator-event-bus.ts';
import { type ItemChange, itemChangeOf } from '../store/stream-images.ts';

/** PutEvents' limits: ten entries and 256 KB a call. */
const putEventsLimits = { entries: 10, bytes: 256 * 1024 } as const;

/** An entry's size as EventBridge counts it: its source, detail type and detail in UTF-8, 14 bytes of time. */
const entrySize = (entry: BusEntry) =>
  Buffer.byteLength(entry.source) + Buffer.byteLength(entry.detailType) + Buffer.byteLength(entry.detail) + 14;

const entryOf = (event: OperatorEvent): BusEntry => ({
  source: operatorEventSource,
  detailType: event.detailType,
  detail: JSON.stringify(event.detail),
  time: event.time,
});

/** Consecutive calls of at most ten entries and 256 KB each, in stream order. */
const callsOf = <T extends { entry: BusEntry }>(items: T[]): T[][] => {
  const calls: T[][] = [];
  let bytes = 0;
  for (const item of items) {
    const size = entrySize(item.entry);
    const last = calls.at(-1);
    if (last && last.length < putEventsLimits.entries && bytes + size <= putEventsLimits.bytes) {
      last.push(item);
      bytes += size;
    } else {
      calls.push([item]);
      bytes = size;
    }
  }
  return calls;
};

export interface PublishReport {
  /** Events put on the bus. */
  put: number;
  /**
   * Sequence numbers of the changes to deliver again: the first whose event was not put and every
   * change after it (Lambda restarts a stream batch from the lowest one reported).
   */
  failed: string[];
  /** Why: each failed entry's error code, or the error a whole call threw. */
  errors: string[];
}

/**
 * Puts the operator event of each change (stream order, PutEvents calls of at most ten entries)
 * on the bus. A call that throws or an entry the bus refused (a throttle) stops the batch there:
 * that change and every later one are reported failed, so the stream delivers them again and
 * nothing is dropped; events already put may be put again then (consumers deduplicate on
 * `detail.eventId`). Never throws for the bus: the caller reports the failures.
 */
export const publishOperatorEvents = async (
  deps: { putEntries: PutBusEntries },
  changes: readonly ItemChange[],
): Promise<PublishReport> => {
  const events = changes.flatMap((change, index) => {
    const event = operatorEventOf(operatorImagesOf(change));
    return event ? [{ index, entry: entryOf(event) }] : [];
  });
  let put = 0;
  for (const call of callsOf(events)) {
    let codes: (string | undefined)[];
    try {
      codes = await deps.putEntries(call.map((item) => item.entry));
    } catch (error) {
      codes = call.map(() => (error as Error).name || 'Error');
    }
    const firstFailed = codes.findIndex((code) => code !== undefined);
    if (firstFailed === -1) {
      put += call.length;
      continue;
    }
    put += codes.filter((code) => code === undefined).length;
    const from = call[firstFailed]?.index ?? 0;
    return {
      put,
      failed: changes.slice(from).map((change) => change.sequenceNumber),
      errors: codes.filter((code): code is string => code !== undefined),
    };
  }
  return { put, failed: [], errors: [] };
};

/** What publishing needs: a way to put entries on the bus. */
export interface OperatorEventsDeps {
  putEntries: PutBusEntries;
}

/** The table stream's records, published: the operator events' publisher's whole work. */
export const publishStreamRecords = (deps: OperatorEventsDeps, records: readonly DynamoDBRecord[]) =>
  publishOperatorEvents(deps, records.map(itemChangeOf));

/** Publishing through `client` to the stage's operator event bus, named in `env`. */
export const operatorEventsDepsFromEnv = (env: NodeJS.ProcessEnv = process.env) => {
  const busName = operatorEventBusFromEnv(env);
  return (client: Parameters<typeof eventBridgeSender>[0]): OperatorEventsDeps => ({
    putEntries: eventBridgeSender(client, busName),
  });
};
