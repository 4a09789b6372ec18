/**
 * A transaction built from named items, whose refusal is read by name. DynamoDB answers a cancelled
 * transaction with one reason per item, in order: read by position, inserting an item shifts every
 * meaning after it with no error. Here the names carry the meaning and the order is only the
 * object's (insertion order), so an item can be added anywhere.
 */
import type { CancellationReason } from './refusals.ts';
import { type TransactItems, transactWrite, type WriteDeps, type WriteOptions } from './write.ts';

export type TransactItem = TransactItems[number];

/** The items by name; an undefined one is left out (an item only some writes have). */
export type NamedItems<TName extends string> = Record<TName, TransactItem | undefined>;

export type NamedTransactResult<TName extends string> =
  | { written: true }
  | {
      written: false;
      /** Whether the named item's condition failed. */
      refused: (name: TName) => boolean;
      /** The reason DynamoDB gave for the named item (its old item, when asked for). */
      reason: (name: TName) => CancellationReason | undefined;
      /** The names whose condition failed, for a message. */
      refusedNames: TName[];
    };

/** The items in the order given, each with its name. */
export const inOrder = <TName extends string>(items: NamedItems<TName>) =>
  (Object.entries(items) as [TName, TransactItem | undefined][]).flatMap(([name, item]) =>
    item ? [{ name, item }] : [],
  );

/** One TransactWriteItems from named items; a refusal read by name. */
export const namedTransactWrite = async <TName extends string>(
  deps: WriteDeps,
  items: NamedItems<TName>,
  options: WriteOptions = {},
): Promise<NamedTransactResult<TName>> => {
  const ordered = inOrder(items);
  const result = await transactWrite(
    deps,
    ordered.map((entry) => entry.item),
    options,
  );
  if (result.written) return result;
  const byName = new Map(ordered.map((entry, index) => [entry.name, result.reasons[index]]));
  const refused = (name: TName) => byName.get(name)?.Code === 'ConditionalCheckFailed';
  return {
    written: false,
    refused,
    reason: (name) => byName.get(name),
    refusedNames: ordered.map((entry) => entry.name).filter(refused),
  };
};
