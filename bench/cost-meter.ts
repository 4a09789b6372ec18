/**
 * What a run costs on AWS, measured rather than guessed: an SDK middleware asks DynamoDB for the
 * capacity every call consumed (`ReturnConsumedCapacity: TOTAL`; DynamoDB Local computes it with
 * AWS's rules: 1 KB per write unit, 4 KB per read unit, transactions double) and counts SQS
 * requests; wrapped handlers count Lambda invocations and the time spent in them; the flow counts
 * its HTTP API requests and the access log line each writes; bench/cost-logs.ts counts the log
 * lines the invocations write. `priceRun` turns the counts into dollars at public on-demand rates,
 * all in: Lambda, DynamoDB, SQS, API Gateway and CloudWatch Logs (X-Ray is off unless a stage
 * turns it on: priced apart).
 *
 * One exception: DynamoDB Local under-reports TransactWriteItems (four puts of tiny items report 2
 * units where AWS bills 8), so for those the meter reads each item before and after (with an
 * unmetered client) and applies AWS's rules itself: 2 units per item per started KB of the larger
 * image, and each index entry the item enters, changes or leaves (`indexWriteUnits`) at 1 unit per
 * started KB of the entry, as outside a transaction: the transactional doubling is the table's
 * alone (AWS's docs do not say; DynamoDB Local doubles the index writes too, and a DynamoDB
 * emulator's maintainers measured real DynamoDB charging them as plain writes: nubo-db/dynoxide
 * pull request 188, August 2026, read 2026-12-07). A single write's index writes DynamoDB Local
 * reports itself (`ReturnConsumedCapacity: INDEXES`), by the same rules.
 * And reads are billed at least their minimum (`minimumReadUnits`), which DynamoDB Local does not report.
 */
import type { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { type DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import type { Context, DynamoDBBatchResponse, DynamoDBStreamEvent, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { workers } from '../lib/workers.ts';
import { dataTable, functionMemoryMb } from '../platform/definitions.ts';
import type { accessLogFields } from '../platform/routes.ts';
import { type CallCounts, countDynamoDbCalls, countSqsCalls, newCallCounts } from './counters.ts';

/** us-east-1 on-demand prices, November 2026 (arm64 Lambda). */
export const awsPrices = {
  lambdaRequest: 0.2 / 1e6,
  lambdaGbSecond: 0.0000133334,
  dynamoDbWriteUnit: 0.625 / 1e6,
  dynamoDbReadUnit: 0.125 / 1e6,
  sqsRequest: 0.4 / 1e6,
  /** API Gateway HTTP API, per request (the first 300 million a month). */
  httpApiRequest: 1 / 1e6,
  /** EventBridge custom events put with PutEvents, per 64 KB chunk of an entry. */
  eventBridgeEvent: 1 / 1e6,
  /** CloudWatch Logs ingestion (standard class), per GB (2^30 bytes). */
  logsIngestedGb: 0.5,
  /** X-Ray, per trace recorded and per trace retrieved or scanned. */
  xrayTraceRecorded: 5 / 1e6,
  xrayTraceRetrieved: 0.5 / 1e6,
  /** CloudWatch custom metric (EMF), per metric and month: billed by the month, not by the run. */
  customMetricMonth: 0.3,
  /** AWS Step Functions Standard, per state transition: the floor the target is set against. */
  stepFunctionsTransition: 0.025 / 1e3,
} as const;

/**
 * CloudWatch Logs counts 26 bytes per log event beside its message (PutLogEvents' batch size); the
 * cost model counts them as ingested, the conservative reading.
 */
export const logEventOverheadBytes = 26;

const readCommands = new Set([
  'GetItemCommand',
  'BatchGetItemCommand',
  'QueryCommand',
  'ScanCommand',
  'TransactGetItemsCommand',
]);

/**
 * The least a read request is billed on AWS, which DynamoDB Local does not report (it answers 0 for
 * a Query that finds nothing, and nothing for a BatchGetItem key that is absent): half a unit per
 * item or request read eventually consistent, one read strongly consistent, two in a transaction.
 */
const minimumReadUnits = (name: string, input: Record<string, unknown>): number => {
  const unit = (consistent: unknown) => (consistent === true ? 1 : 0.5);
  if (name === 'BatchGetItemCommand') {
    const tables = Object.values(
      (input.RequestItems ?? {}) as Record<string, { Keys?: unknown[]; ConsistentRead?: boolean }>,
    );
    return tables.reduce((sum, t) => sum + (t.Keys?.length ?? 0) * unit(t.ConsistentRead), 0);
  }
  if (name === 'TransactGetItemsCommand') return 2 * ((input.TransactItems as unknown[] | undefined)?.length ?? 0);
  return unit(input.ConsistentRead);
};

export interface Meter {
  dynamoDb: {
    /** Calls by command (bench/counters.ts). */
    calls: CallCounts;
    readUnits: number;
    writeUnits: number;
    /**
     * Write units by what was written: the command and the item's kind (its key's first word,
     * `RUN`, `STEP`, `TEAM`...), index writes apart; what the bench prints under the total.
     */
    writeUnitsBy: Record<string, number>;
    /** Read units by what was read: the command, the kinds of the items it named, its consistency. */
    readUnitsBy: Record<string, number>;
    /**
     * Writes refused by a condition. DynamoDB bills them but returns no capacity with the error,
     * so each is priced as one write unit per item it named (transactions: two).
     */
    refusedWriteUnits: number;
  };
  /** Requests by command (bench/counters.ts), the event source's receives and deletes included. */
  sqs: CallCounts;
  lambda: {
    invocations: number;
    ms: number;
    byFunction: Record<string, number>;
    /** Handler time by function, priced at each function's memory. */
    msByFunction: Record<string, number>;
  };
  /** HTTP API requests the flow made, and the bytes of the access log line API Gateway writes for each. */
  api: { requests: number; accessLogBytes: number };
  /**
   * What the invocations wrote to stdout and stderr (each line one log event; bytes without the
   * newline), and apart from it the embedded-metric-format lines (EMF: metrics are log lines too).
   */
  logs: LogCounts;
  /**
   * The operator events' path: the EventPublisher's invocations on the table's stream (reading the
   * stream is free for Lambda) and what it put on the bus with PutEvents.
   */
  operatorEvents: OperatorEventCounts;
}

export interface OperatorEventCounts {
  /** EventPublisher invocations here (the local poller has no batching window) and their handler time. */
  invocations: number;
  ms: number;
  /** PutEvents calls, the entries they sent, their size as EventBridge counts it, and 64 KB chunks billed. */
  putCalls: number;
  entries: number;
  entryBytes: number;
  chunks: number;
  /** The largest entry sent, in bytes as EventBridge counts it. */
  largestEntryBytes: number;
  /** Events of the measured runs found in the EventBridge emulator's file (what the bus received). */
  delivered: number;
}

export interface LogCounts {
  events: number;
  bytes: number;
  emfEvents: number;
  emfBytes: number;
  /** Each metric the EMF lines carry, once: `namespace/name/dimension=value,...` (a custom metric each). */
  emfMetrics: string[];
}

export const newMeter = (): Meter => ({
  dynamoDb: {
    calls: newCallCounts(),
    readUnits: 0,
    writeUnits: 0,
    writeUnitsBy: {},
    readUnitsBy: {},
    refusedWriteUnits: 0,
  },
  sqs: newCallCounts(),
  lambda: { invocations: 0, ms: 0, byFunction: {}, msByFunction: {} },
  api: { requests: 0, accessLogBytes: 0 },
  logs: { events: 0, bytes: 0, emfEvents: 0, emfBytes: 0, emfMetrics: [] },
  operatorEvents: newOperatorEventCounts(),
});

const newOperatorEventCounts = (): OperatorEventCounts => ({
  invocations: 0,
  ms: 0,
  putCalls: 0,
  entries: 0,
  entryBytes: 0,
  chunks: 0,
  largestEntryBytes: 0,
  delivered: 0,
});

/** Zeroes `meter` in place: the clients' middlewares and the log capture hold on to its counters. */
export const resetMeter = (meter: Meter) => {
  const fresh = newMeter();
  Object.assign(meter.dynamoDb, {
    ...fresh.dynamoDb,
    calls: Object.assign(meter.dynamoDb.calls, newCallCounts()),
    writeUnitsBy: {},
    readUnitsBy: {},
  });
  Object.assign(meter.sqs, newCallCounts());
  meter.lambda = fresh.lambda;
  meter.api = fresh.api;
  Object.assign(meter.logs, fresh.logs);
  meter.operatorEvents = fresh.operatorEvents;
};

const bump = (counts: Record<string, number>, name: string, by = 1) => {
  counts[name] = (counts[name] ?? 0) + by;
};

type Capacity = { CapacityUnits?: number } | { CapacityUnits?: number }[] | undefined;
const unitsOf = (capacity: Capacity) =>
  (Array.isArray(capacity) ? capacity : capacity ? [capacity] : []).reduce((sum, c) => sum + (c.CapacityUnits ?? 0), 0);

/** An item's size as DynamoDB bills it: attribute names plus values (UTF-8; numbers about 1 byte per 2 digits). */
export const itemSizeBytes = (item: Record<string, unknown> | undefined): number => {
  if (!item) return 0;
  const valueSize = (value: unknown): number => {
    if (value === null || typeof value === 'boolean') return 1;
    if (typeof value === 'string') return Buffer.byteLength(value);
    if (typeof value === 'number' || typeof value === 'bigint')
      return Math.ceil(String(value).replace(/[-.]/g, '').replace(/^0+/, '').length / 2) + 1;
    if (value instanceof Uint8Array) return value.byteLength;
    if (value instanceof Set) return [...value].reduce((sum: number, v) => sum + valueSize(v), 0);
    if (Array.isArray(value)) return 3 + value.reduce((sum: number, v) => sum + valueSize(v) + 1, 0);
    if (typeof value === 'object')
      return 3 + Object.entries(value).reduce((sum, [k, v]) => sum + Buffer.byteLength(k) + valueSize(v) + 1, 0);
    return 0;
  };
  return Object.entries(item).reduce((sum, [name, value]) => sum + Buffer.byteLength(name) + valueSize(value), 0);
};

type Item = Record<string, unknown>;

/** An item's entry in `index` (its keys and what the index projects), or undefined when it is not in it. */
const indexEntry = (index: (typeof dataTable.indexes)[number], item: Item | undefined): Item | undefined => {
  if (!item || item[index.partitionKey.name] === undefined || item[index.sortKey.name] === undefined) return undefined;
  const names = [dataTable.partitionKey.name, dataTable.sortKey.name, index.partitionKey.name, index.sortKey.name];
  if (index.projection.type === 'INCLUDE') names.push(...index.projection.attributes);
  return Object.fromEntries(names.filter((n) => item[n] !== undefined).map((n) => [n, item[n]]));
};

const kb = (bytes: number) => Math.max(1, Math.ceil(bytes / 1024));
const sameValue = (a: unknown, b: unknown) =>
  JSON.stringify(a, (_, v) => (v instanceof Set ? [...v].sort() : v)) ===
  JSON.stringify(b, (_, v) => (v instanceof Set ? [...v].sort() : v));

/**
 * The index writes of one item's change, by AWS's rules for global secondary indexes: an entry
 * put or deleted is one write per started KB of it; a key changed, both; projected values changed,
 * one of the new entry; nothing projected changed, none.
 */
export const indexWriteUnits = (before: Item | undefined, after: Item | undefined): number =>
  dataTable.indexes.reduce((sum, index) => {
    const old = indexEntry(index, before);
    const now = indexEntry(index, after);
    if (!old && !now) return sum;
    if (!old || !now) return sum + kb(itemSizeBytes(old ?? now));
    if (sameValue(old, now)) return sum;
    const keyMoved = [index.partitionKey.name, index.sortKey.name].some((k) => old[k] !== now[k]);
    return sum + (keyMoved ? kb(itemSizeBytes(old)) : 0) + kb(itemSizeBytes(now));
  }, 0);

/** What an item is, for the write breakdown: its key's first word (`RUN#…` → `RUN`; a step's `SK` → `STEP`). */
const kindOf = (key: Item | undefined) => {
  const sk = String(key?.SK ?? '');
  if (sk.startsWith('STEP')) return 'STEP';
  return String(key?.PK ?? '?').split('#')[0] ?? '?';
};

/** What a read named, for the bench's breakdown: e.g. `BatchGetItem RUN+STEP×2 strong`, `Query GSI5 TEAM`. */
const readKind = (name: string, input: Record<string, unknown>) => {
  const command = name.replace('Command', '');
  const consistency = (consistent: unknown) => (consistent === true ? 'strong' : 'eventual');
  if (name === 'BatchGetItemCommand') {
    const tables = Object.values(
      (input.RequestItems ?? {}) as Record<string, { Keys?: Item[]; ConsistentRead?: boolean }>,
    );
    const counts = new Map<string, number>();
    for (const key of tables.flatMap((t) => t.Keys ?? [])) counts.set(kindOf(key), (counts.get(kindOf(key)) ?? 0) + 1);
    const kinds = [...counts].map(([kind, n]) => (n > 1 ? `${kind}×${n}` : kind)).join('+');
    return `${command} ${kinds} ${consistency(tables[0]?.ConsistentRead)}`;
  }
  if (name === 'QueryCommand' || name === 'ScanCommand') {
    const values = Object.values((input.ExpressionAttributeValues ?? {}) as Record<string, unknown>);
    const partition = String(values.find((value) => typeof value === 'string') ?? '?').split('#')[0];
    return `${command} ${(input.IndexName as string | undefined) ?? 'table'} ${partition} ${consistency(input.ConsistentRead)}`;
  }
  return `${command} ${kindOf(input.Key as Item | undefined)} ${consistency(input.ConsistentRead)}`;
};

type TransactItem = Record<
  string,
  { TableName: string; Key?: Record<string, unknown>; Item?: Record<string, unknown> }
>;

/** The items a TransactWriteItems names, as GetItem inputs. */
const transactTargets = (items: TransactItem[]) =>
  items.map((entry) => {
    const [kind, op] = Object.entries(entry)[0] as [
      string,
      { TableName: string; Key?: Record<string, unknown>; Item?: Record<string, unknown> },
    ];
    const key = op.Key ?? { PK: op.Item?.PK, SK: op.Item?.SK };
    return { kind, input: { TableName: op.TableName, Key: key, ConsistentRead: true } };
  });

/**
 * Meters every DynamoDB call made through `client` (the DocumentClient shares its client's stack);
 * `reader`, an unmetered client of the same table, reads transaction items before and after.
 */
export const meterDynamoDb = (client: DynamoDBDocumentClient, meter: Meter, reader: DynamoDBDocumentClient) => {
  const images = (targets: ReturnType<typeof transactTargets>) =>
    Promise.all(targets.map(async (t) => (await reader.send(new GetCommand(t.input))).Item));
  const by = (what: string, units: number) => bump(meter.dynamoDb.writeUnitsBy, what, units);
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const name = context.commandName ?? 'unknown';
      const input = args.input as Record<string, unknown>;
      input.ReturnConsumedCapacity = 'INDEXES';
      const targets =
        name === 'TransactWriteItemsCommand' ? transactTargets(input.TransactItems as TransactItem[]) : [];
      const before = await images(targets);
      try {
        const result = await next(args);
        const consumed = (result.output as { ConsumedCapacity?: Capacity }).ConsumedCapacity;
        let units = unitsOf(consumed);
        if (targets.length > 0) {
          const after = await images(targets);
          units = 0;
          targets.forEach((t, i) => {
            const item = 2 * kb(Math.max(itemSizeBytes(before[i]), itemSizeBytes(after[i])));
            const index = indexWriteUnits(before[i], after[i]);
            const kind = `${name.replace('Command', '')} ${kindOf(t.input.Key)}`;
            by(kind, item);
            if (index > 0) by(`${kind} (index entries)`, index);
            units += item + index;
          });
        } else if (!readCommands.has(name)) {
          const key = (input.Key ?? input.Item) as Item | undefined;
          const kind = `${name.replace('Command', '')} ${kindOf(key)}`;
          const single = Array.isArray(consumed) ? undefined : consumed;
          const table = (single as { Table?: { CapacityUnits?: number } } | undefined)?.Table?.CapacityUnits ?? units;
          by(kind, table);
          if (units > table) by(`${kind} (index entries)`, units - table);
        }
        if (readCommands.has(name)) {
          const read = Math.max(units, minimumReadUnits(name, input));
          meter.dynamoDb.readUnits += read;
          bump(meter.dynamoDb.readUnitsBy, readKind(name, input), read);
        } else meter.dynamoDb.writeUnits += units;
        return result;
      } catch (error) {
        const refused = (error as Error).name;
        if (refused === 'ConditionalCheckFailedException') meter.dynamoDb.refusedWriteUnits += 1;
        if (refused === 'TransactionCanceledException')
          meter.dynamoDb.refusedWriteUnits += 2 * ((input.TransactItems as unknown[] | undefined)?.length ?? 1);
        throw error;
      }
    },
    { step: 'initialize', name: 'costMeter', priority: 'high' },
  );
  countDynamoDbCalls(client, meter.dynamoDb.calls);
};

/** Counts every SQS request made through `client`. */
export const meterSqs = (client: SQSClient, meter: Meter) => countSqsCalls(client, meter.sqs);

let inFlight = 0;

/** Resolves once no metered invocation is running (a webhook's handler outlives its POST's reply). */
export const invocationsSettled = async () => {
  while (inFlight > 0) await new Promise((resolve) => setTimeout(resolve, 10));
};

/** Counts one Lambda invocation of `name` and the time it took. */
export const meterInvocation = async <T>(meter: Meter, name: string, invoke: () => Promise<T>): Promise<T> => {
  const started = performance.now();
  inFlight++;
  try {
    return await invoke();
  } finally {
    inFlight--;
    const ms = performance.now() - started;
    meter.lambda.invocations++;
    meter.lambda.ms += ms;
    bump(meter.lambda.byFunction, name);
    bump(meter.lambda.msByFunction, name, ms);
  }
};

type SqsHandler = (event: SQSEvent, context: Context) => Promise<SQSBatchResponse | undefined>;

/**
 * An SQS-fed handler as a Lambda event source mapping runs it: each invocation is billed one
 * ReceiveMessage that returned its batch and one DeleteMessageBatch (the local poller's own calls
 * are not metered, so its empty long polls do not count: on AWS they are the idle cost).
 */
export const meterSqsHandler =
  (meter: Meter, name: string, handler: SqsHandler): SqsHandler =>
  (event, context) => {
    meter.sqs.total += 2;
    bump(meter.sqs.byCommand, 'ReceiveMessageCommand (event source)');
    bump(meter.sqs.byCommand, 'DeleteMessageBatchCommand (event source)');
    return meterInvocation(meter, name, () => handler(event, context));
  };

type StreamHandler = (event: DynamoDBStreamEvent, context: Context) => Promise<DynamoDBBatchResponse | undefined>;

/** The EventPublisher as its stream mapping invokes it: counts each invocation and its handler time. */
export const meterPublisherHandler =
  (meter: Meter, handler: StreamHandler): StreamHandler =>
  async (event, context) => {
    const started = performance.now();
    inFlight++;
    try {
      return await handler(event, context);
    } finally {
      inFlight--;
      meter.operatorEvents.invocations++;
      meter.operatorEvents.ms += performance.now() - started;
    }
  };

/** EventBridge's size of a PutEvents entry: 14 bytes of time, source, detail type, detail and resources in UTF-8. */
export const putEventsEntrySize = (entry: {
  Time?: unknown;
  Source?: string;
  DetailType?: string;
  Detail?: string;
  Resources?: string[];
}) =>
  (entry.Time !== undefined ? 14 : 0) +
  Buffer.byteLength(entry.Source ?? '') +
  Buffer.byteLength(entry.DetailType ?? '') +
  Buffer.byteLength(entry.Detail ?? '') +
  (entry.Resources ?? []).reduce((sum, r) => sum + Buffer.byteLength(r), 0);

/** EventBridge bills a custom event per 64 KB chunk of its entry. */
export const eventBridgeChunk = 64 * 1024;

/** Counts every PutEvents entry sent through `client`, sized as EventBridge bills it (what the publisher actually sends). */
export const meterEventBridge = (client: EventBridgeClient, meter: Meter) =>
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === 'PutEventsCommand') {
        const { Entries = [] } = args.input as { Entries?: Parameters<typeof putEventsEntrySize>[0][] };
        const counts = meter.operatorEvents;
        counts.putCalls++;
        for (const entry of Entries) {
          const size = putEventsEntrySize(entry);
          counts.entries++;
          counts.entryBytes += size;
          counts.chunks += Math.max(1, Math.ceil(size / eventBridgeChunk));
          counts.largestEntryBytes = Math.max(counts.largestEntryBytes, size);
        }
      }
      return next(args);
    },
    { step: 'initialize', name: 'costMeterEventBridge', priority: 'high' },
  );

export interface PricedLine {
  what: string;
  count: string;
  dollars: number;
}

/** A typical HTTP API request id, request time and caller, for the access log's variables the flow cannot see. */
const typicalAccessLogValues = {
  apiId: 'a1b2c3d4e5',
  requestId: 'Y3z8dgtKoAMEbkw=',
  requestTime: '24/Nov/2026:20:44:25 +0000',
  sourceIp: '203.0.113.10',
  protocol: 'HTTP/1.1',
  integrationError: '-',
};

/**
 * The access log line API Gateway writes for one request (`accessLogFields`, the stack's format):
 * what the request measured (method, path, route, status, response length and latency), the rest
 * typical values of their usual length (`typicalAccessLogValues`; the user agent is what the
 * flow's client sent).
 */
export const accessLogLine = (request: {
  method: string;
  path: string;
  routeKey: string;
  status: number;
  responseLength: number;
  latencyMs: number;
  userAgent: string;
}) => {
  const latency = String(Math.max(1, Math.round(request.latencyMs)));
  const values: Record<keyof typeof accessLogFields, string> = {
    ...typicalAccessLogValues,
    userAgent: request.userAgent,
    method: request.method,
    path: request.path,
    routeKey: request.routeKey,
    status: String(request.status),
    responseLength: String(request.responseLength),
    responseLatency: latency,
    integrationLatency: latency,
  };
  return JSON.stringify(values);
};

/**
 * The lines Lambda itself writes to a function's log group per invocation (text format, no
 * tracing): START, END and REPORT, with a request id and figures of their usual length.
 */
export const lambdaPlatformLines = (memoryMb: number, durationMs: number) => {
  const requestId = '8f507cfc-5a3e-4697-b07a-ac58fc914c95';
  const duration = Math.max(1, durationMs);
  return [
    `START RequestId: ${requestId} Version: $LATEST`,
    `END RequestId: ${requestId}`,
    `REPORT RequestId: ${requestId}\tDuration: ${duration.toFixed(2)} ms\tBilled Duration: ${Math.ceil(duration)} ms\tMemory Size: ${memoryMb} MB\tMax Memory Used: ${Math.round(memoryMb / 5)} MB\t`,
  ];
};

/** Bytes CloudWatch Logs ingests for `events` log events of `bytes` in all. */
export const ingestedBytes = (events: number, bytes: number) => bytes + events * logEventOverheadBytes;

export interface PriceOptions {
  /** Memory of each function, by the id the meter names it (route or worker id); default `functionMemoryMb`. */
  memoryMb?: (functionId: string) => number;
}

/** The meter's counts priced at `awsPrices`, one line per service, for `runs` runs. */
export const priceRun = (
  meter: Meter,
  runs = 1,
  options: PriceOptions = {},
): { lines: PricedLine[]; total: number } => {
  const per = (n: number) => n / runs;
  const memoryOf = options.memoryMb ?? (() => functionMemoryMb);
  const gbSeconds = Object.entries(meter.lambda.msByFunction).reduce(
    (sum, [fn, ms]) => sum + (per(ms) / 1000) * (memoryOf(fn) / 1024),
    0,
  );
  const memories = [...new Set(Object.keys(meter.lambda.msByFunction).map(memoryOf))].join('/');
  const writeUnits = per(meter.dynamoDb.writeUnits + meter.dynamoDb.refusedWriteUnits);
  const invocations = per(meter.lambda.invocations);
  const meanMs = meter.lambda.invocations > 0 ? meter.lambda.ms / meter.lambda.invocations : 0;
  const platformBytes = Object.entries(meter.lambda.byFunction).reduce(
    (sum, [fn, n]) =>
      sum +
      per(n) *
        lambdaPlatformLines(memoryOf(fn), meanMs).reduce((b, l) => b + ingestedBytes(1, Buffer.byteLength(l)), 0),
    0,
  );
  const { logs } = meter;
  const logBytes =
    ingestedBytes(per(logs.events), per(logs.bytes)) +
    ingestedBytes(per(logs.emfEvents), per(logs.emfBytes)) +
    platformBytes +
    ingestedBytes(per(meter.api.requests), per(meter.api.accessLogBytes));
  const lines: PricedLine[] = [
    {
      what: 'Lambda invocations',
      count: `${invocations.toFixed(1)}`,
      dollars: invocations * awsPrices.lambdaRequest,
    },
    {
      what: `Lambda compute (${memories || functionMemoryMb} MB × measured handler time)`,
      count: `${gbSeconds.toFixed(4)} GB-s`,
      dollars: gbSeconds * awsPrices.lambdaGbSecond,
    },
    {
      what: 'DynamoDB write units',
      count: `${writeUnits.toFixed(1)} WRU`,
      dollars: writeUnits * awsPrices.dynamoDbWriteUnit,
    },
    {
      what: 'DynamoDB read units',
      count: `${per(meter.dynamoDb.readUnits).toFixed(1)} RRU`,
      dollars: per(meter.dynamoDb.readUnits) * awsPrices.dynamoDbReadUnit,
    },
    {
      what: 'SQS requests',
      count: `${per(meter.sqs.total).toFixed(1)}`,
      dollars: per(meter.sqs.total) * awsPrices.sqsRequest,
    },
    {
      what: 'API Gateway HTTP API requests',
      count: `${per(meter.api.requests).toFixed(1)}`,
      dollars: per(meter.api.requests) * awsPrices.httpApiRequest,
    },
    {
      what: 'CloudWatch Logs ingested (function lines, EMF, Lambda platform lines, access log)',
      count: `${(logBytes / 1024).toFixed(1)} KB`,
      dollars: (logBytes / 2 ** 30) * awsPrices.logsIngestedGb,
    },
    ...operatorEventLines(meter, runs, memoryOf),
  ];
  return { lines, total: lines.reduce((sum, l) => sum + l.dollars, 0) };
};

/**
 * The operator events' path per run, priced at its worst case: one EventPublisher invocation per
 * event (a quiet stage, each event alone in its batching window; at least the invocations measured),
 * each as long as a measured invocation; its START/END/REPORT lines; one custom event per 64 KB
 * chunk of each entry put.
 */
export const operatorEventCost = (
  meter: Meter,
  runs = 1,
  memoryOf: (fn: string) => number = () => functionMemoryMb,
) => {
  const per = (n: number) => n / runs;
  const o = meter.operatorEvents;
  const memoryMb = memoryOf('EventPublisher');
  const invocations = Math.max(per(o.invocations), per(o.entries));
  const msPerInvocation = o.invocations > 0 ? o.ms / o.invocations : 0;
  const gbSeconds = ((invocations * msPerInvocation) / 1000) * (memoryMb / 1024);
  const platformBytes =
    invocations *
    lambdaPlatformLines(memoryMb, msPerInvocation).reduce((b, l) => b + ingestedBytes(1, Buffer.byteLength(l)), 0);
  return {
    memoryMb,
    measuredInvocations: per(o.invocations),
    invocations,
    msPerInvocation,
    gbSeconds,
    entries: per(o.entries),
    chunks: per(o.chunks),
    meanEntryBytes: o.entries > 0 ? o.entryBytes / o.entries : 0,
    largestEntryBytes: o.largestEntryBytes,
    putCalls: per(o.putCalls),
    delivered: per(o.delivered),
    platformLines: invocations * 3,
    platformBytes,
  };
};

const operatorEventLines = (meter: Meter, runs: number, memoryOf: (fn: string) => number): PricedLine[] => {
  const c = operatorEventCost(meter, runs, memoryOf);
  return [
    {
      what: `EventPublisher invocations (worst case, one per event; ${c.measuredInvocations.toFixed(1)} here)`,
      count: `${c.invocations.toFixed(1)}`,
      dollars: c.invocations * awsPrices.lambdaRequest,
    },
    {
      what: `EventPublisher compute (${c.memoryMb} MB × ${c.msPerInvocation.toFixed(1)} ms measured an invocation)`,
      count: `${c.gbSeconds.toFixed(4)} GB-s`,
      dollars: c.gbSeconds * awsPrices.lambdaGbSecond,
    },
    {
      what: `EventBridge PutEvents entries: ${c.entries.toFixed(1)} of ${Math.round(c.meanEntryBytes)} bytes (largest ${c.largestEntryBytes}), per 64 KB chunk`,
      count: `${c.chunks.toFixed(1)}`,
      dollars: c.chunks * awsPrices.eventBridgeEvent,
    },
    {
      what: 'CloudWatch Logs ingested, EventPublisher (START/END/REPORT an invocation)',
      count: `${(c.platformBytes / 1024).toFixed(1)} KB`,
      dollars: (c.platformBytes / 2 ** 30) * awsPrices.logsIngestedGb,
    },
  ];
};

/** The parts of the log ingestion line, per run, in bytes as ingested (26 bytes per event included). */
export const logBreakdown = (meter: Meter, runs = 1, options: PriceOptions = {}) => {
  const per = (n: number) => n / runs;
  const memoryOf = options.memoryMb ?? (() => functionMemoryMb);
  const meanMs = meter.lambda.invocations > 0 ? meter.lambda.ms / meter.lambda.invocations : 0;
  const platformPerInvocation = (fn: string) =>
    lambdaPlatformLines(memoryOf(fn), meanMs).reduce((b, l) => b + ingestedBytes(1, Buffer.byteLength(l)), 0);
  return {
    functionLines: {
      events: per(meter.logs.events),
      bytes: ingestedBytes(per(meter.logs.events), per(meter.logs.bytes)),
    },
    emf: {
      events: per(meter.logs.emfEvents),
      bytes: ingestedBytes(per(meter.logs.emfEvents), per(meter.logs.emfBytes)),
    },
    platform: {
      events: per(meter.lambda.invocations) * 3,
      bytes: Object.entries(meter.lambda.byFunction).reduce(
        (sum, [fn, n]) => sum + per(n) * platformPerInvocation(fn),
        0,
      ),
    },
    accessLog: {
      events: per(meter.api.requests),
      bytes: ingestedBytes(per(meter.api.requests), per(meter.api.accessLogBytes)),
    },
  };
};

/**
 * X-Ray, were the stage traced (`-c tracing=true`): at the default sampling nearly every request
 * and queue invocation of a quiet service is a trace (one per API request, one per event-source
 * invocation; the dispatcher is never traced), each recorded once and, when someone looks,
 * retrieved once.
 */
export const xrayIfTraced = (meter: Meter, runs = 1) => {
  const queueInvocations = workers
    .filter((w) => w.trigger.kind === 'queue')
    .reduce((sum, w) => sum + (meter.lambda.byFunction[w.id] ?? 0), 0);
  const traces = (meter.api.requests + queueInvocations) / runs;
  return { traces, dollars: traces * awsPrices.xrayTraceRecorded };
};

/** What AWS Step Functions Standard charges for the state transitions of a `steps`-step chain. */
export const stepFunctionsFloor = (steps: number) => steps * awsPrices.stepFunctionsTransition;

/** Dollars with enough digits for millionths. */
export const dollars = (value: number) => `$${value.toFixed(7)}`;
