import { AsyncLocalStorage } from 'node:async_hooks';
import { Logger } from '@aws-lambda-powertools/logger';
import type {
  ConstructorOptions,
  LogAttributes,
  LogItemExtraInput,
  LogItemMessage,
} from '@aws-lambda-powertools/logger/types';
import type { Context } from 'aws-lambda';
import { logServiceName, redactSecrets } from './log-line.ts';
import { countingFailedRecords } from './version-failures.ts';

/**
 * A Powertools logger whose children keep their parent's `cold_start`. Powertools 2.36's
 * `createChild` hands the parent's context to the child's `addContext`, which asks the new child's
 * own cold-start flag: every child line of a warm invocation said `cold_start: true`.
 */
class ServiceLogger extends Logger {
  #givenColdStart: boolean | undefined;

  // Every line, the children's too (they are given their parent's options), with its secrets redacted.
  constructor(options: ConstructorOptions = {}) {
    super({ jsonReplacerFn: redactSecrets, ...options });
  }

  override addContext(context: Parameters<Logger['addContext']>[0]) {
    this.#givenColdStart = 'coldStart' in context ? context.coldStart : undefined;
    try {
      super.addContext(context);
    } finally {
      this.#givenColdStart = undefined;
    }
  }

  protected override getColdStart(): boolean {
    return this.#givenColdStart ?? super.getColdStart();
  }

  protected override createLogger(options?: ConstructorOptions): Logger {
    return new ServiceLogger(options);
  }
}

/** The logger of the invocation or record being processed here, if any. */
const scopes = new AsyncLocalStorage<Logger>();

/**
 * The function's logger. Within `withLambdaContext` or `withRecordKeys` a line (and a key appended
 * or reset) goes to that invocation's or record's own child logger instead, so the use cases and
 * stores below a worker log the record's keys without being handed a logger. Powertools processes
 * a batch's records in parallel: keys appended per record to one shared logger (as the step
 * executor did) put one record's `jobId` on another record's lines.
 */
class FunctionLogger extends ServiceLogger {
  /** Whether this is the environment's first invocation; true once, as Powertools counts it. */
  takeColdStart(): boolean {
    return this.getColdStart();
  }
  override debug(input: LogItemMessage, ...extra: LogItemExtraInput) {
    const scoped = scopes.getStore();
    scoped ? scoped.debug(input, ...extra) : super.debug(input, ...extra);
  }
  override info(input: LogItemMessage, ...extra: LogItemExtraInput) {
    const scoped = scopes.getStore();
    scoped ? scoped.info(input, ...extra) : super.info(input, ...extra);
  }
  override warn(input: LogItemMessage, ...extra: LogItemExtraInput) {
    const scoped = scopes.getStore();
    scoped ? scoped.warn(input, ...extra) : super.warn(input, ...extra);
  }
  override error(input: LogItemMessage, ...extra: LogItemExtraInput) {
    const scoped = scopes.getStore();
    scoped ? scoped.error(input, ...extra) : super.error(input, ...extra);
  }
  override critical(input: LogItemMessage, ...extra: LogItemExtraInput) {
    const scoped = scopes.getStore();
    scoped ? scoped.critical(input, ...extra) : super.critical(input, ...extra);
  }
  override appendKeys(attributes: Parameters<Logger['appendKeys']>[0]) {
    const scoped = scopes.getStore();
    scoped ? scoped.appendKeys(attributes) : super.appendKeys(attributes);
  }
  override resetKeys() {
    const scoped = scopes.getStore();
    scoped ? scoped.resetKeys() : super.resetKeys();
  }
}

const functionLogger = new FunctionLogger({ serviceName: logServiceName });

/** One structured JSON logger per function; level from POWERTOOLS_LOG_LEVEL. Never log keys or secrets. */
export const logger: Logger = functionLogger;

/**
 * A worker's handler with the Lambda context (`function_request_id`, `cold_start`, the function's
 * name, ARN, memory and version) on every line logged under it, as `injectLambdaContext` gives the
 * API's handlers. The invocation logs through a child of its own: what it appends ends with it, so
 * a warm function never carries one invocation's keys into the next. Tests and the local schedule
 * may pass no context: the lines then carry none (never a previous invocation's).
 */
export const withLambdaContext =
  <Event, Result>(handler: (event: Event, context?: Context) => Promise<Result>) =>
  (event: Event, context?: Context): Promise<Result> => {
    // Built afresh, not as a child: the function's logger may hold another handler's context (locally
    // every function shares one process) or keys appended outside any invocation.
    const invocation = new ServiceLogger({
      serviceName: logServiceName,
      logLevel: functionLogger.getLevelName(),
      persistentKeys: functionLogger.getPersistentLogAttributes(),
    });
    if (context) {
      const { functionName, functionVersion, invokedFunctionArn, memoryLimitInMB, awsRequestId, tenantId } = context;
      invocation.addContext({
        functionName,
        functionVersion,
        invokedFunctionArn,
        memoryLimitInMB,
        awsRequestId,
        tenantId,
        coldStart: functionLogger.takeColdStart(),
      });
    }
    return scopes.run(invocation, () => handler(event, context));
  };

/**
 * `withLambdaContext` for a worker that answers batch item failures: the records it hands back are
 * counted for the version that failed them (`countingFailedRecords`), since Lambda counts the
 * invocation a success.
 */
export const withBatchContext = <Event, Answer extends { batchItemFailures: readonly unknown[] }>(
  handler: (event: Event, context?: Context) => Promise<Answer>,
) => withLambdaContext(countingFailedRecords(handler));

/**
 * Runs `work` (one record of a batch) with every line logged under it, at any layer, carrying
 * `keys` and the invocation's context, and no other record's keys.
 */
export const withRecordKeys = <T>(keys: LogAttributes, work: () => Promise<T>): Promise<T> =>
  scopes.run((scopes.getStore() ?? functionLogger).createChild({ persistentKeys: keys }), work);
