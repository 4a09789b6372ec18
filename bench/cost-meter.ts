/**
 * What a run costs on AWS, measured rather than guessed: an SDK middleware asks DynamoDB for the
 * capacity every call consumed (`ReturnConsumedCapacity: TOTAL`; DynamoDB Local computes it with
 * AWS's rules: 1 KB per write unit, 4 KB per read unit, transactions double) and counts SQS
 * requests; wrapped handlers count Lambda invocations and the time spent in them. `priceRun` turns
 * the counts into dollars at public on-demand rates.
 *
 * One exception: DynamoDB Local under-reports TransactWriteItems (four puts of tiny items report 2
 * units where AWS bills 8), so for those the meter reads each item before and after (with an
 * unmetered client) and applies AWS's rule itself: 2 units per item per started KB of the larger image.
 */
import type { SQSClient } from '@aws-sdk/client-sqs';
import { type DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { functionMemoryMb } from '../lib/definitions.ts';
import { type CallCounts, countDynamoDbCalls, countSqsCalls, newCallCounts } from './counters.ts';

/** us-east-1 on-demand prices, November 2026 (arm64 Lambda). */
export const awsPrices = {
  lambdaRequest: 0.2 / 1e6,
  lambdaGbSecond: 0.0000133334,
  dynamoDbWriteUnit: 0.625 / 1e6,
  dynamoDbReadUnit: 0.125 / 1e6,
  sqsRequest: 0.4 / 1e6,
  /** AWS Step Functions Standard, per state transition: the floor the target is set against. */
  stepFunctionsTransition: 0.025 / 1e3,
} as const;

const readCommands = new Set([
  'GetItemCommand',
  'BatchGetItemCommand',
  'QueryCommand',
  'ScanCommand',
  'TransactGetItemsCommand',
]);

export interface Meter {
  dynamoDb: {
    /** Calls by command (bench/counters.ts). */
    calls: CallCounts;
    readUnits: number;
    writeUnits: number;
    /**
     * Writes refused by a condition. DynamoDB bills them but returns no capacity with the error,
     * so each is priced as one write unit per item it named (transactions: two).
     */
    refusedWriteUnits: number;
  };
  /** Requests by command (bench/counters.ts), the event source's receives and deletes included. */
  sqs: CallCounts;
  lambda: { invocations: number; ms: number; byFunction: Record<string, number> };
}

export const newMeter = (): Meter => ({
  dynamoDb: { calls: newCallCounts(), readUnits: 0, writeUnits: 0, refusedWriteUnits: 0 },
  sqs: newCallCounts(),
  lambda: { invocations: 0, ms: 0, byFunction: {} },
});

/** Zeroes `meter` in place: the clients' middlewares hold on to its counters. */
export const resetMeter = (meter: Meter) => {
  Object.assign(meter.dynamoDb, {
    ...newMeter().dynamoDb,
    calls: Object.assign(meter.dynamoDb.calls, newCallCounts()),
  });
  Object.assign(meter.sqs, newCallCounts());
  meter.lambda = newMeter().lambda;
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
  const sizes = (targets: ReturnType<typeof transactTargets>) =>
    Promise.all(targets.map(async (t) => itemSizeBytes((await reader.send(new GetCommand(t.input))).Item)));
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const name = context.commandName ?? 'unknown';
      const input = args.input as Record<string, unknown>;
      input.ReturnConsumedCapacity = 'TOTAL';
      const targets =
        name === 'TransactWriteItemsCommand' ? transactTargets(input.TransactItems as TransactItem[]) : [];
      const before = await sizes(targets);
      try {
        const result = await next(args);
        let units = unitsOf((result.output as { ConsumedCapacity?: Capacity }).ConsumedCapacity);
        if (targets.length > 0) {
          const after = await sizes(targets);
          units = targets.reduce(
            (sum, _, i) => sum + 2 * Math.max(1, Math.ceil(Math.max(before[i] ?? 0, after[i] ?? 0) / 1024)),
            0,
          );
        }
        if (readCommands.has(name)) meter.dynamoDb.readUnits += units;
        else meter.dynamoDb.writeUnits += units;
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
    meter.lambda.invocations++;
    meter.lambda.ms += performance.now() - started;
    bump(meter.lambda.byFunction, name);
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

export interface PricedLine {
  what: string;
  count: string;
  dollars: number;
}

/** The meter's counts priced at `awsPrices`, one line per service, for `runs` runs. */
export const priceRun = (meter: Meter, runs = 1): { lines: PricedLine[]; total: number } => {
  const per = (n: number) => n / runs;
  const gbSeconds = per(meter.lambda.ms / 1000) * (functionMemoryMb / 1024);
  const writeUnits = per(meter.dynamoDb.writeUnits + meter.dynamoDb.refusedWriteUnits);
  const lines: PricedLine[] = [
    {
      what: 'Lambda invocations',
      count: `${per(meter.lambda.invocations).toFixed(1)}`,
      dollars: per(meter.lambda.invocations) * awsPrices.lambdaRequest,
    },
    {
      what: `Lambda compute (${functionMemoryMb} MB × measured handler time)`,
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
  ];
  return { lines, total: lines.reduce((sum, l) => sum + l.dollars, 0) };
};

/** What AWS Step Functions Standard charges for the state transitions of a `steps`-step chain. */
export const stepFunctionsFloor = (steps: number) => steps * awsPrices.stepFunctionsTransition;

/** Dollars with enough digits for millionths. */
export const dollars = (value: number) => `$${value.toFixed(7)}`;
