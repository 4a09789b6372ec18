import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  DescribeStreamCommand,
  DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
  type Shard,
  type _Record as StreamsRecord,
} from '@aws-sdk/client-dynamodb-streams';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import type { AttributeValue, Context, DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { eventBridgeSender } from '../functions/store/operator-event-bus.ts';
import { operatorEventsMapping, type StreamMappingId } from '../platform/definitions.ts';
import { withAwsCommandLog } from './aws-command-log.ts';
import { localAwsConfig } from './emulators.ts';
import { workerOf } from './event-source.ts';
import { invokedAs } from './invocation.ts';
import { lambdaContext } from './lambda-context.ts';
import { ensureTableStream } from './provision.ts';

/**
 * The local stand-in for the operator events' stream mapping: reads the table's stream on DynamoDB
 * Local with the DynamoDB Streams API (`@aws-sdk/client-dynamodb-streams`), keeps only the records
 * the mapping's filters pass (`operatorEventsMapping.filters`, the same data the CDK stack deploys),
 * and invokes the handler with Lambda-shaped records. As Lambda does, it redelivers from the lowest
 * sequence number the handler reports in `batchItemFailures` (or the whole batch when it throws),
 * up to `retryAttempts` times, then hands the batch's position to `onFailure` (the deployed DLQ)
 * and moves on. Not emulated: the batching window and splitting a failing batch in two.
 */

export type StreamHandler = (
  event: DynamoDBStreamEvent,
  context: Context,
) => Promise<DynamoDBBatchResponse | undefined>;

type Pattern = Record<string, unknown>;

/**
 * Whether `value` matches an event filter pattern, for the subset the mapping's filters use: an
 * object matches field by field, an array lists the values allowed (exact strings or numbers).
 */
const matchesPattern = (pattern: unknown, value: unknown): boolean => {
  if (Array.isArray(pattern)) return pattern.some((allowed) => allowed === value);
  if (typeof pattern !== 'object' || pattern === null) return false;
  if (typeof value !== 'object' || value === null) return false;
  return Object.entries(pattern as Pattern).every(([key, inner]) =>
    matchesPattern(inner, (value as Record<string, unknown>)[key]),
  );
};

/** Whether a mapping with `filters` passes a record to its function (any filter matches; none passes all). */
export const passes = (filters: readonly unknown[], record: DynamoDBRecord) =>
  filters.length === 0 || filters.some((filter) => matchesPattern(filter, record));

/** Whether the operator events' mapping passes a record to its function (any of its filters matches). */
export const passesOperatorEventsFilters = (record: DynamoDBRecord) => passes(operatorEventsMapping.filters, record);

/** An attribute value of the Streams API (binary as bytes) as Lambda's record carries it (binary as base64). */
const lambdaValue = (value: Record<string, unknown>): AttributeValue => {
  const [[type, inner] = []] = Object.entries(value).filter(([, v]) => v !== undefined);
  if (type === 'B') return { B: Buffer.from(inner as Uint8Array).toString('base64') };
  if (type === 'BS') return { BS: (inner as Uint8Array[]).map((b) => Buffer.from(b).toString('base64')) };
  if (type === 'M') return { M: lambdaImage(inner as Record<string, Record<string, unknown>>) ?? {} };
  if (type === 'L') return { L: (inner as Record<string, unknown>[]).map(lambdaValue) };
  return { [type as string]: inner } as AttributeValue;
};

const lambdaImage = (image: Record<string, Record<string, unknown>> | undefined) =>
  image && Object.fromEntries(Object.entries(image).map(([name, value]) => [name, lambdaValue(value)]));

/** A Streams API record as a Lambda stream event source hands it to the function. */
const toStreamRecord = (record: StreamsRecord, streamArn: string): DynamoDBRecord => {
  const data = record.dynamodb ?? {};
  const image = (name: 'Keys' | 'NewImage' | 'OldImage') => {
    const converted = lambdaImage(data[name] as Record<string, Record<string, unknown>> | undefined);
    return converted ? { [name]: converted } : {};
  };
  return {
    eventID: record.eventID ?? '',
    eventName: record.eventName as DynamoDBRecord['eventName'],
    eventVersion: record.eventVersion ?? '1.1',
    eventSource: 'aws:dynamodb',
    awsRegion: localAwsConfig.region,
    eventSourceARN: streamArn,
    dynamodb: {
      ApproximateCreationDateTime: Math.floor((data.ApproximateCreationDateTime?.getTime() ?? Date.now()) / 1000),
      ...image('Keys'),
      ...image('NewImage'),
      ...image('OldImage'),
      SequenceNumber: data.SequenceNumber ?? '',
      SizeBytes: data.SizeBytes ?? 0,
      StreamViewType: data.StreamViewType as 'NEW_AND_OLD_IMAGES',
    },
  };
};

export interface StreamPoller {
  stop(): Promise<void>;
}

/** Where a shard has been read to (its last sequence number handled), kept across `npm start`s. */
type Checkpoints = Record<string, string>;

/**
 * Polls the stream of `tableName` every `intervalMs` and feeds the filtered records to `handler`,
 * as the operator events' mapping does. With `checkpointFile`, where each shard was read to is kept
 * there, so a restart goes on from it (the deployed mapping keeps its own position); without, it
 * reads each shard from its oldest record (TRIM_HORIZON, the deployed starting position).
 */
export const startStreamPoller = (options: {
  dynamoDbEndpoint: string;
  tableName: string;
  handler: StreamHandler;
  intervalMs?: number;
  checkpointFile?: string;
  /**
   * Where a shard without a checkpoint is read from: its oldest record (TRIM_HORIZON, the default
   * and the deployed starting position), or, for the shards there at the first poll, only what is
   * written from then on (LATEST: a measurement on a table that already holds much). Shards found
   * later are read from their oldest record either way.
   */
  startingPosition?: 'TRIM_HORIZON' | 'LATEST';
  /** The mapping's settings; by default the operator events' (`operatorEventsMapping`). */
  mapping?: {
    /** Which mapping of `streamMappings` (the rehearsal's, read from the template, names none: the operator events'). */
    id?: StreamMappingId;
    filters: readonly unknown[];
    batchSize: number;
    retryAttempts: number;
    consumerTimeoutSeconds?: number;
  };
  /** A batch that failed every retry: the deployed mapping sends its position to the DLQ. */
  onFailure?: (failure: { shardId: string; firstSequenceNumber: string; lastSequenceNumber: string }) => void;
  onError?: (error: unknown) => void;
}): StreamPoller => {
  const config = { ...localAwsConfig, endpoint: options.dynamoDbEndpoint };
  const ddb = new DynamoDBClient(config);
  const streams = new DynamoDBStreamsClient(config);
  const mapping = options.mapping ?? operatorEventsMapping;
  const mappingId = mapping.id ?? operatorEventsMapping.id;
  const handler = invokedAs(workerOf({ kind: 'stream', mapping: mappingId }), options.handler);
  const checkpoints: Checkpoints =
    options.checkpointFile && existsSync(options.checkpointFile)
      ? (JSON.parse(readFileSync(options.checkpointFile, 'utf8')) as Checkpoints)
      : {};
  const saveCheckpoints = () => {
    if (options.checkpointFile) writeFileSync(options.checkpointFile, JSON.stringify(checkpoints, null, 2));
  };
  /** Each shard being read: its next iterator, the records waiting to be handled, and their failed tries. */
  const shards = new Map<string, { iterator?: string; pending: DynamoDBRecord[]; tries: number; closed: boolean }>();
  let running = true;

  const iteratorOf = async (streamArn: string, shard: Shard, firstListing: boolean) => {
    const after = checkpoints[shard.ShardId ?? ''];
    const latest = firstListing && options.startingPosition === 'LATEST';
    const { ShardIterator } = await streams.send(
      new GetShardIteratorCommand({
        StreamArn: streamArn,
        ShardId: shard.ShardId,
        ...(after
          ? { ShardIteratorType: 'AFTER_SEQUENCE_NUMBER', SequenceNumber: after }
          : { ShardIteratorType: latest ? 'LATEST' : 'TRIM_HORIZON' }),
      }),
    );
    return ShardIterator;
  };

  /** Hands the waiting records of a shard to the handler once; what it did not take stays waiting. */
  const deliver = async (shardId: string, state: { pending: DynamoDBRecord[]; tries: number }) => {
    const batch = state.pending.slice(0, mapping.batchSize);
    let failedFrom = batch.length;
    try {
      const result = await handler(
        { Records: batch },
        lambdaContext(`local-${mappingId}`, (mapping.consumerTimeoutSeconds ?? 30) * 1000),
      );
      const failed = new Set((result?.batchItemFailures ?? []).map((f) => f.itemIdentifier));
      const first = batch.findIndex((r) => failed.has(r.dynamodb?.SequenceNumber ?? ''));
      if (first !== -1) failedFrom = first;
    } catch (error) {
      options.onError?.(error);
      failedFrom = 0;
    }
    if (failedFrom < batch.length) {
      state.tries += 1;
      // -1: retried until the records expire, as Lambda does.
      if (mapping.retryAttempts === -1 || state.tries <= mapping.retryAttempts) {
        state.pending = state.pending.slice(failedFrom);
        return;
      }
      options.onFailure?.({
        shardId,
        firstSequenceNumber: batch[failedFrom]?.dynamodb?.SequenceNumber ?? '',
        lastSequenceNumber: batch.at(-1)?.dynamodb?.SequenceNumber ?? '',
      });
    }
    state.tries = 0;
    state.pending = state.pending.slice(batch.length);
    const last = batch.at(-1)?.dynamodb?.SequenceNumber;
    if (last) {
      checkpoints[shardId] = last;
      saveCheckpoints();
    }
  };

  /** Shards read to their end. */
  const done = new Set<string>();
  let knownStreamArn: string | undefined;
  let polls = 0;
  let shardEnded = false;
  let listedOnce = false;
  const pollOnce = async () => {
    knownStreamArn ??= (await ddb.send(new DescribeTableCommand({ TableName: options.tableName }))).Table
      ?.LatestStreamArn;
    const streamArn = knownStreamArn;
    if (!streamArn) return;
    // New shards are looked for now and then, and at once when one ended; not on every poll.
    const listed =
      polls++ % 20 === 0 || shardEnded
        ? ((await streams.send(new DescribeStreamCommand({ StreamArn: streamArn }))).StreamDescription?.Shards ?? [])
        : [];
    shardEnded = false;
    const firstListing = !listedOnce && listed.length > 0;
    if (firstListing) listedOnce = true;
    for (const shard of listed) {
      const id = shard.ShardId ?? '';
      if (shards.has(id) || done.has(id)) continue;
      // A child shard is read once its parent is done, so records stay in order.
      if (shard.ParentShardId && shards.has(shard.ParentShardId)) continue;
      shards.set(id, {
        iterator: await iteratorOf(streamArn, shard, firstListing),
        pending: [],
        tries: 0,
        closed: false,
      });
    }
    for (const [shardId, state] of shards) {
      if (!running) return;
      if (state.pending.length === 0 && state.iterator) {
        let page: { Records?: StreamsRecord[]; NextShardIterator?: string | undefined };
        try {
          page = await streams.send(new GetRecordsCommand({ ShardIterator: state.iterator, Limit: 1000 }));
        } catch (error) {
          // DynamoDB Local, loaded by a suite's files at once, answers an iterator it trimmed or
          // expired so, for good: read on from where this shard was read to (its oldest record
          // when none), as Lambda's poller does with a fresh iterator, instead of failing each poll.
          const name = (error as Error).name;
          if (name !== 'TrimmedDataAccessException' && name !== 'ExpiredIteratorException') throw error;
          state.iterator = await iteratorOf(streamArn, { ShardId: shardId }, false).catch(async () => {
            delete checkpoints[shardId];
            return iteratorOf(streamArn, { ShardId: shardId }, false);
          });
          continue;
        }
        const { Records = [], NextShardIterator } = page;
        state.iterator = NextShardIterator;
        if (!NextShardIterator) state.closed = true;
        const records = Records.map((r) => toStreamRecord(r, streamArn));
        const passed = records.filter((record) => passes(mapping.filters, record));
        if (passed.length === 0 && records.length > 0) {
          checkpoints[shardId] = records.at(-1)?.dynamodb?.SequenceNumber ?? '';
          saveCheckpoints();
        }
        state.pending = passed;
      }
      if (state.pending.length > 0) await deliver(shardId, state);
      if (state.closed && state.pending.length === 0) {
        shards.delete(shardId);
        done.add(shardId);
        shardEnded = true;
      }
    }
  };

  const loop = (async () => {
    while (running) {
      try {
        await pollOnce();
      } catch (error) {
        if (!running) break;
        options.onError?.(error);
      }
      await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 250));
    }
  })();

  return {
    stop: async () => {
      running = false;
      await loop;
      ddb.destroy();
      streams.destroy();
    },
  };
};

/**
 * The operator events' publisher (`functions/workers/operator-events.ts`, its real handler and SDK
 * call) on the stream of `tableName`, putting events on `busName` at the EventBridge emulator.
 */
export const startOperatorEvents = async (options: {
  dynamoDbEndpoint: string;
  tableName: string;
  eventBridgeEndpoint: string;
  busName: string;
  intervalMs?: number;
  checkpointFile?: string;
  onFailure?: Parameters<typeof startStreamPoller>[0]['onFailure'];
  onError?: (error: unknown) => void;
}): Promise<StreamPoller> => {
  const { makeHandler } = await import('../functions/workers/operator-events.ts');
  await ensureTableStream(options.dynamoDbEndpoint, options.tableName);
  const { events } = withAwsCommandLog({
    events: new EventBridgeClient({ ...localAwsConfig, endpoint: options.eventBridgeEndpoint }),
  });
  const poller = startStreamPoller({
    ...options,
    handler: makeHandler({ putEntries: eventBridgeSender(events, options.busName) }),
  });
  return {
    stop: async () => {
      await poller.stop();
      events.destroy();
    },
  };
};

/**
 * The lifecycle webhook events' consumer (`functions/workers/lifecycle-webhooks.ts`, its real
 * handler) on the stream of `deps.tableName`, with its own mapping's filters
 * (`lifecycleWebhooksMapping`), queueing deliveries on `deps`' webhooks queue.
 */
export const startLifecycleEvents = async (options: {
  dynamoDbEndpoint: string;
  deps: import('../functions/deps.ts').Deps;
  intervalMs?: number;
  checkpointFile?: string;
  onFailure?: Parameters<typeof startStreamPoller>[0]['onFailure'];
  onError?: (error: unknown) => void;
}): Promise<StreamPoller> => {
  const { makeHandler } = await import('../functions/workers/lifecycle-webhooks.ts');
  const { lifecycleWebhooksMapping } = await import('../platform/definitions.ts');
  await ensureTableStream(options.dynamoDbEndpoint, options.deps.tableName);
  return startStreamPoller({
    ...options,
    tableName: options.deps.tableName,
    mapping: lifecycleWebhooksMapping,
    handler: makeHandler(options.deps),
  });
};
