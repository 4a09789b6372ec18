/**
 * Every conditional or transactional DynamoDB write goes through here, and its answer is
 * classified once:
 *
 * - a failed condition is a business answer: returned as a typed result (`written: false`, with the
 *   old item or the cancellation reasons) for the caller to decide, never retried;
 * - contention, where DynamoDB refused the write before applying any of it, is retried with jittered
 *   exponential backoff: `TransactionConflict` (another transaction on one of its items; a
 *   cancellation naming it, or `TransactionConflictException` for a single write) and throttling
 *   (`ProvisionedThroughputExceededException`, `ThrottlingException`, `RequestLimitExceeded`, or a
 *   cancellation naming them);
 * - contention on every try is a StorageBusyError (503 with `Retry-After` at the HTTP edge, a failed
 *   record the queue redelivers in a worker), logged with its cause;
 * - anything else is thrown as it came.
 *
 * On the success path a write is one call, as before: the helper adds nothing to what it costs.
 */
import {
  DeleteCommand,
  type DeleteCommandOutput,
  PutCommand,
  type PutCommandOutput,
  TransactWriteCommand,
  type TransactWriteCommandInput,
  UpdateCommand,
  type UpdateCommandInput,
  type UpdateCommandOutput,
} from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../deps.ts';
import { StorageBusyError, type StorageContention } from '../errors/table.ts';
import { logger } from '../observability/logger.ts';
import { contentionOf } from './contention.ts';
import { type ItemUpdate, tableUpdate, type UpdateCondition } from './item-update.ts';
import type { ItemAttributes, ItemDefinition } from './items/item.ts';
import { type CancellationReason, cancellationReasons, isConditionalCheckFailed, refusedItem } from './refusals.ts';

// Where the classification lives, so the read side (read.ts) carries none of the write helper's code.

export type TransactItems = NonNullable<TransactWriteCommandInput['TransactItems']>;

/** What a write needs: the client, and the wait between tries (a timer unless the deps say otherwise). */
export type WriteDeps = Pick<Deps, 'ddb' | 'sleep'>;

/** Tries of a write that meets contention, the first included, and the base of the backoff between them. */
export const writeRetry = { tries: 4, baseMs: 50 } as const;

export interface WriteOptions {
  /** Tries in all (at least 1); `writeRetry.tries` unless told. */
  tries?: number;
}

/** Full jitter: a random wait up to `baseMs` × 2^(try − 1) after try `attempt`. */
export const backoffMs = (attempt: number, random: () => number = Math.random): number =>
  Math.floor(random() * writeRetry.baseMs * 2 ** (attempt - 1));

const timer = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Waits the backoff after try `attempt` (also used by callers that retry a whole read-and-write). */
export const backoff = (deps: Pick<Deps, 'sleep'>, attempt: number): Promise<void> =>
  (deps.sleep ?? timer)(backoffMs(attempt));

/**
 * The error for contention on every try, logged with its cause (the HTTP edge does not log what it
 * maps). `what` names the operation, never its key or item (an item may hold a callback secret).
 */
export const storageBusy = (what: string, contention: StorageContention, tries: number, cause: unknown) => {
  logger.warn('write met contention on every try', { write: what, contention, tries, error: cause as Error });
  return new StorageBusyError(contention, tries, { cause });
};

/** Sends `send` until it is not refused for contention, at most `tries` times. */
const withRetries = async <T>(deps: WriteDeps, what: string, options: WriteOptions, send: () => Promise<T>) => {
  const tries = Math.max(1, options.tries ?? writeRetry.tries);
  for (let attempt = 1; ; attempt++) {
    try {
      return await send();
    } catch (error) {
      const contention = contentionOf(error);
      if (!contention) throw error;
      if (attempt >= tries) throw storageBusy(what, contention, attempt, error);
      await backoff(deps, attempt);
    }
  }
};

/** A conditional write's answer: written (with what DynamoDB returned), or refused by its condition. */
export type ConditionalResult<TOutput> =
  | { written: true; output: TOutput }
  /** `oldItem`: the item as it stood, as attribute values, when the write asked for it (`ReturnValuesOnConditionCheckFailure`). */
  | { written: false; oldItem: Record<string, unknown> | undefined };

/** One PutItem, UpdateItem or DeleteItem with a ConditionExpression. */
export async function conditionalWrite(
  deps: WriteDeps,
  command: UpdateCommand,
  options?: WriteOptions,
): Promise<ConditionalResult<UpdateCommandOutput>>;
export async function conditionalWrite(
  deps: WriteDeps,
  command: PutCommand,
  options?: WriteOptions,
): Promise<ConditionalResult<PutCommandOutput>>;
export async function conditionalWrite(
  deps: WriteDeps,
  command: DeleteCommand,
  options?: WriteOptions,
): Promise<ConditionalResult<DeleteCommandOutput>>;
export async function conditionalWrite(
  deps: WriteDeps,
  command: UpdateCommand | PutCommand | DeleteCommand,
  options: WriteOptions = {},
): Promise<ConditionalResult<UpdateCommandOutput | PutCommandOutput | DeleteCommandOutput>> {
  const what =
    command instanceof PutCommand ? 'PutItem' : command instanceof DeleteCommand ? 'DeleteItem' : 'UpdateItem';
  try {
    const output = await withRetries(deps, what, options, () =>
      command instanceof PutCommand
        ? deps.ddb.send(command)
        : command instanceof DeleteCommand
          ? deps.ddb.send(command)
          : deps.ddb.send(command),
    );
    return { written: true, output };
  } catch (error) {
    if (isConditionalCheckFailed(error)) return { written: false, oldItem: refusedItem(error) };
    throw error;
  }
}

/**
 * One conditional UpdateItem of the item of `item` at `key` (`tableUpdate`), through conditionalWrite;
 * `returns` asks for its new image, or its old one when the condition refuses it.
 */
export const conditionalUpdate = <TItem extends ItemDefinition>(
  deps: WriteDeps & Pick<Deps, 'tableName'>,
  item: TItem,
  key: Record<string, string>,
  update: ItemUpdate<ItemAttributes<TItem>>,
  condition: UpdateCondition,
  returns: Pick<UpdateCommandInput, 'ReturnValues' | 'ReturnValuesOnConditionCheckFailure'> = {},
): Promise<ConditionalResult<UpdateCommandOutput>> =>
  conditionalWrite(deps, new UpdateCommand({ ...tableUpdate(deps, item, key, update, condition), ...returns }));

/** A transaction's answer: written, or cancelled by failed conditions (`reasons`, one per item in order). */
export type TransactResult = { written: true } | { written: false; reasons: CancellationReason[] };

/**
 * A cancellation for failed conditions and for no other reason: any other code (a conflict or
 * throttling on the last try, a validation error) is not a business answer.
 */
const conditionsFailed = (reasons: readonly CancellationReason[]) =>
  reasons.some((reason) => reason.Code === 'ConditionalCheckFailed') &&
  reasons.every(
    (reason) => reason.Code === undefined || reason.Code === 'ConditionalCheckFailed' || reason.Code === 'None',
  );

/** One TransactWriteItems. */
export const transactWrite = async (
  deps: WriteDeps,
  items: TransactItems,
  options: WriteOptions = {},
): Promise<TransactResult> => {
  try {
    await withRetries(deps, 'TransactWriteItems', options, () =>
      deps.ddb.send(new TransactWriteCommand({ TransactItems: items })),
    );
    return { written: true };
  } catch (error) {
    const reasons = cancellationReasons(error);
    if (reasons && conditionsFailed(reasons)) return { written: false, reasons };
    throw error;
  }
};
