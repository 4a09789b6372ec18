import { appendFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { dataTable, deadLetterQueue, libraryBucket } from '../platform/definitions.ts';
import { currentFunction, functionEntries } from './invocation.ts';
import type { LocalResources } from './provision.ts';

/**
 * The AWS command log of the least-privilege audit (`test/least-privilege.test.ts`): with
 * `AWS_COMMAND_LOG_DIR` set (the integration test project sets it), every AWS client of the local
 * deps carries one SDK middleware that appends, for each command a handler sends, which function
 * sent it (`invocation.ts`), the command and the resource, as ARNs in one canonical account.
 * Commands test code sends itself (seeding, assertions) run in no handler and are not logged.
 */

/** Where deployed resources would be: the account and region every logged ARN is written in. */
export const canonicalArn = { partition: 'aws', region: 'us-east-1', account: '000000000000' } as const;

export interface AwsCommandRecord {
  /** The route or worker id whose handler sent it; null when sent by a handler outside `invokedAs`. */
  function: string | null;
  /** With `function: null`: the handler module found on the call stack. */
  entry?: string;
  /** The client's service, e.g. `DynamoDB`, `SQS`, `S3`. */
  service: string;
  /** The SDK command as the client sends it (lib-dynamodb's `GetCommand` sends `GetItemCommand`). */
  command: string;
  /** In a transaction: the item operation (`Put`, `Update`, `Delete`, `ConditionCheck`, `Get`). */
  item?: string;
  /** The ARN of what it acts on: the table or index, the queue, the bucket's key prefix, the secret. */
  resource: string;
}

interface Target {
  resource: string;
  item?: string;
}

type Input = Record<string, unknown>;

const { partition, region, account } = canonicalArn;

/** The deps' own resources under their definition names (the logical names the CDK stack uses). */
const namer = (resources: LocalResources | undefined) => {
  const queueIds = new Map<string, string>();
  for (const [id, url] of Object.entries(resources?.queueUrls ?? {})) queueIds.set(url, id);
  if (resources?.dlqUrl) queueIds.set(resources.dlqUrl, deadLetterQueue.id);
  return {
    table: (name: unknown) => (name === resources?.tableName ? dataTable.id : String(name)),
    queue: (url: unknown) => queueIds.get(String(url)) ?? String(url).split('/').pop() ?? String(url),
    bucket: (name: unknown) => (name === resources?.bucket ? libraryBucket.id : String(name)),
  };
};

const targetsOf = (names: ReturnType<typeof namer>, service: string, input: Input): Target[] => {
  switch (service) {
    case 'DynamoDB': {
      const table = (name: unknown, index?: unknown) =>
        `arn:${partition}:dynamodb:${region}:${account}:table/${names.table(name)}${index ? `/index/${String(index)}` : ''}`;
      if (input.TableName !== undefined) return [{ resource: table(input.TableName, input.IndexName) }];
      if (input.RequestItems) return Object.keys(input.RequestItems).map((name) => ({ resource: table(name) }));
      if (Array.isArray(input.TransactItems)) {
        return (input.TransactItems as Record<string, { TableName?: string }>[]).flatMap((entry) =>
          Object.entries(entry).map(([item, operation]) => ({ resource: table(operation.TableName), item })),
        );
      }
      return [{ resource: '*' }];
    }
    case 'SQS':
      return [{ resource: `arn:${partition}:sqs:${region}:${account}:${names.queue(input.QueueUrl)}` }];
    case 'S3': {
      const prefixOf = (key: string) => (key.includes('/') ? key.slice(0, key.indexOf('/') + 1) : key);
      const key = String(input.Key ?? input.Prefix ?? '');
      const target = { resource: `arn:${partition}:s3:::${names.bucket(input.Bucket)}/${prefixOf(key)}` };
      if (input.CopySource === undefined) return [target];
      // A copy also reads its source, `<bucket>/<key>`.
      const [bucket = '', ...source] = decodeURIComponent(String(input.CopySource)).replace(/^\//, '').split('/');
      const read = { resource: `arn:${partition}:s3:::${names.bucket(bucket)}/${prefixOf(source.join('/'))}` };
      return [target, { ...read, item: 'CopySource' }];
    }
    case 'SecretsManager': {
      const id = String(input.SecretId);
      // A name resolves to the secret's ARN, which ends in `-` and six characters Secrets Manager picks.
      return [
        {
          resource: id.startsWith('arn:')
            ? id
            : `arn:${partition}:secretsmanager:${region}:${account}:secret:${id}-AbCdEf`,
        },
      ];
    }
    case 'SSM': {
      const names = Array.isArray(input.Names) ? input.Names : [input.Name];
      return names.map((name) => ({
        resource: `arn:${partition}:ssm:${region}:${account}:parameter/${String(name).replace(/^\//, '')}`,
      }));
    }
    case 'EventBridge': {
      // A local prefix's operator event bus (`<prefix>-operator-events`) is the stack's OperatorEventBus.
      const buses = (Array.isArray(input.Entries) ? (input.Entries as { EventBusName?: string }[]) : []).map((e) =>
        String(e.EventBusName ?? 'default').endsWith('-operator-events') ? 'OperatorEventBus' : String(e.EventBusName),
      );
      return [...new Set(buses)].map((bus) => ({
        resource: `arn:${partition}:events:${region}:${account}:event-bus/${bus}`,
      }));
    }
    case 'Lambda':
      return [{ resource: `arn:${partition}:lambda:${region}:${account}:function:${String(input.FunctionName)}` }];
    default:
      return [{ resource: '*' }];
  }
};

/** The handler module on the current call stack (awaited frames included), if any. */
const entryOnStack = (): string | undefined => {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 200;
  const stack = new Error().stack ?? '';
  Error.stackTraceLimit = limit;
  return functionEntries.find((entry) => stack.includes(entry));
};

/**
 * What one command a handler sent looks like, for a floor that sends the same bare (the cold-start
 * bench, `bench/first-request.ts`): its service and command, the index it reads, how many items a
 * batch names, and the operations of a transaction, in order.
 */
export interface AwsCommandShape {
  function: string | null;
  service: string;
  command: string;
  /** A Query's or Scan's index. */
  index?: string;
  /** Keys of a BatchGetItem, requests of a BatchWriteItem, entries of a SendMessageBatch or PutEvents. */
  count?: number;
  /** A transaction's item operations (`Put`, `Update`, `Delete`, `ConditionCheck`, `Get`), in order. */
  items?: string[];
  /**
   * Presigned, not sent (`@aws-sdk/s3-request-presigner` runs the command's middleware and answers
   * the signed request): known once the command resolves.
   */
  presigned?: true;
}

const shapeOf = (service: string, command: string, input: Input): Omit<AwsCommandShape, 'function'> => {
  const shape: Omit<AwsCommandShape, 'function'> = { service, command };
  if (typeof input.IndexName === 'string') shape.index = input.IndexName;
  if (Array.isArray(input.TransactItems)) {
    shape.items = (input.TransactItems as Record<string, unknown>[]).map((entry) => Object.keys(entry)[0] ?? '');
  }
  if (input.RequestItems && typeof input.RequestItems === 'object') {
    shape.count = Object.values(input.RequestItems as Record<string, unknown>).reduce(
      (sum: number, request) =>
        sum + (Array.isArray(request) ? request.length : ((request as { Keys?: unknown[] }).Keys?.length ?? 0)),
      0,
    );
  }
  if (Array.isArray(input.Entries)) shape.count = input.Entries.length;
  return shape;
};

/** Listeners given every command a logged client sends, in order, each time (`recordAwsCommands`). */
const listeners = new Set<(shape: AwsCommandShape) => void>();

/**
 * Calls `listener` with the shape of every command a handler sends through a client the command
 * log instruments (`withAwsCommandLog`) from now on, in order and each time (the log's file keeps
 * each record once); returns the function that stops it. Clients are instrumented when
 * `AWS_COMMAND_LOG_DIR` is set or a listener is registered at the time `withAwsCommandLog` sees them.
 */
export const recordAwsCommands = (listener: (shape: AwsCommandShape) => void): (() => void) => {
  listeners.add(listener);
  return () => listeners.delete(listener);
};

const written = new Set<string>();
const instrumented = new WeakSet<object>();

const append = (directory: string, record: AwsCommandRecord) => {
  const line = JSON.stringify(record);
  if (written.has(line)) return;
  if (written.size === 0) mkdirSync(directory, { recursive: true });
  written.add(line);
  appendFileSync(path.join(directory, `${process.pid}.jsonl`), `${line}\n`);
};

type Middleware = (
  next: (args: { input: unknown }) => Promise<unknown>,
  context: { clientName?: string; commandName?: string },
) => (args: { input: unknown }) => Promise<unknown>;

interface SdkClient {
  send: unknown;
  middlewareStack: {
    add(middleware: Middleware, options: { step: 'initialize'; name: string; priority: 'high' }): void;
  };
}

const isClient = (value: unknown): value is SdkClient =>
  typeof value === 'object' && value !== null && 'send' in value && 'middlewareStack' in value;

/**
 * `deps` (or any object holding clients) with the command log on every AWS client it holds
 * (DocumentClient, SQS, S3 and any other), when `AWS_COMMAND_LOG_DIR` is set; `deps` unchanged
 * otherwise. `resources` names the local table, queues and bucket as the stack does.
 */
export const withAwsCommandLog = <T extends object>(deps: T, resources?: LocalResources): T => {
  const directory = process.env.AWS_COMMAND_LOG_DIR;
  if (!directory && listeners.size === 0) return deps;
  const names = namer(resources);
  for (const client of Object.values(deps)) {
    if (!isClient(client) || instrumented.has(client.middlewareStack)) continue;
    instrumented.add(client.middlewareStack);
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const fn = currentFunction();
        const entry = fn ? undefined : entryOnStack();
        if (fn || entry) {
          const service = (context.clientName ?? 'unknown').replace(/Client$/, '');
          const command = context.commandName ?? 'unknown';
          const input = (args.input ?? {}) as Input;
          if (directory) {
            for (const target of targetsOf(names, service, input)) {
              append(directory, { function: fn ?? null, ...(entry ? { entry } : {}), service, command, ...target });
            }
          }
          // One shape for every listener, in the order the commands start; a presign is marked when it resolves.
          const shape: AwsCommandShape = { function: fn ?? null, ...shapeOf(service, command, input) };
          for (const listener of listeners) listener(shape);
          const result = await next(args);
          if ((result as { output?: { presigned?: unknown } }).output?.presigned !== undefined) shape.presigned = true;
          return result;
        }
        return next(args);
      },
      // First of all, so it runs in the caller's own call stack (which `entryOnStack` reads).
      { step: 'initialize', name: 'awsCommandLog', priority: 'high' },
    );
  }
  return deps;
};
