/**
 * The stored items as the code reads them. Each item is parsed once, where it comes out of
 * DynamoDB (GetItem, BatchGetItem, Query, an update's returned attributes), so the rest of the code
 * works on typed objects; an item without the expected shape is a MalformedItemError naming its key
 * (a bug or a hand-edited item), never a silent undefined. Each schema lists only the fields the
 * code reads (`v.object` drops the others), which keeps parsing cheap on the step path.
 *
 * One schema per item: every read of an item (or of an index entry projected from it, or of the
 * attributes an update returns) parses with its schema or a `v.pick` of it, so a field's type is
 * stated once. Every write is typed by the same schema's input: a Put's item `satisfies
 * StoredItem<typeof storedX>`, an update is built by `itemUpdate(storedX, …)` (item-update.ts).
 * `storedX` pairs the schema with the attributes the item is written with that no read needs.
 * The items are written by the store module of each entity; their keys are built in keys.ts.
 *
 * This module is what every item shares (the parse, the versions, the definition); each family of
 * items is a module of its own beside it (runs.ts, tenancy.ts, …), so a function builds only the
 * schemas of the items it reads, and the schemas of the contract (schemas/) those name. index.ts
 * passes them all on, for tests and tools only: a function imports the family it reads.
 */
import * as v from 'valibot';
import { isExpired } from '../../domain/retention.ts';
import { ServiceError } from '../../errors/define.ts';

/**
 * A stored item that does not have the shape the code reads: a server error, never the caller's.
 * The message names the key and the first field at fault, never the stored value (it is logged).
 */
export class MalformedItemError extends ServiceError {
  override readonly name = 'MalformedItemError';
  /** `issues`: the schema's; or what is wrong, in words (a version this code does not read). */
  constructor(where: string, issues: readonly v.BaseIssue<unknown>[] | string) {
    if (typeof issues === 'string') {
      super(`Malformed item ${where}: ${issues}`);
      return;
    }
    const first = issues[0];
    const path = first?.path?.map((item) => String(item.key)).join('.') ?? 'the item';
    const fault = first?.received === 'undefined' ? 'missing' : `expected ${first?.expected ?? 'another shape'}`;
    super(`Malformed item ${where}: ${path} ${fault}`);
  }
}

/**
 * `item` as `schema` reads it, or a MalformedItemError naming its key: its own PK and SK, else
 * `key` (for an item read without them, such as the old image in a refusal).
 */
export const parseItem = <TSchema extends v.GenericSchema>(
  schema: TSchema,
  item: Record<string, unknown>,
  key?: { PK: string; SK: string },
): v.InferOutput<TSchema> => {
  const version = itemVersionOf(item);
  const parsed = v.safeParse(schema, item);
  if (parsed.success && readableItemVersions.includes(version as number)) return parsed.output;
  const where =
    typeof item.PK === 'string' && typeof item.SK === 'string'
      ? `${item.PK}|${item.SK}`
      : key
        ? `${key.PK}|${key.SK}`
        : 'without a key';
  if (!parsed.success) throw new MalformedItemError(where, parsed.issues);
  throw new MalformedItemError(
    where,
    `v ${JSON.stringify(version)} is a shape this code does not read (${readableItemVersions.join(', ')})`,
  );
};

/**
 * The item as read, or undefined when there is none or its `ttl` has passed. DynamoDB's TTL deletes
 * an expired item up to a few days late, so every read of an item that expires (a run, its steps
 * and deliveries, an ended deferred run, an idempotency record) goes through this: `batchGet`,
 * `queryAll` and the store's GetItem reads of those items. An expired run reads as a missing one.
 */
export const unexpired = (item: Record<string, unknown> | undefined, now: Date): Record<string, unknown> | undefined =>
  item === undefined || isExpired(item.ttl, now) ? undefined : item;

/**
 * The table's own attributes, which any item may carry beside what its schema reads: its key and
 * its index keys (keys.ts), its kind for operators reading the table (`type`), and when DynamoDB
 * may delete it (`ttl`, epoch seconds: functions/domain/retention.ts).
 */
export interface TableAttributes {
  PK: string;
  SK: string;
  GSI1PK: string;
  GSI1SK: string;
  GSI2PK: string;
  GSI2SK: string;
  GSI3PK: string;
  GSI3SK: string;
  GSI4PK: string;
  GSI4SK: string;
  type: string;
  ttl: number;
  /** The shape version the item was written with (`itemVersion`); none on items written before it. */
  v: number;
}

const tableAttributes: Record<keyof TableAttributes, true> = {
  PK: true,
  SK: true,
  GSI1PK: true,
  GSI1SK: true,
  GSI2PK: true,
  GSI2SK: true,
  GSI3PK: true,
  GSI3SK: true,
  GSI4PK: true,
  GSI4SK: true,
  type: true,
  ttl: true,
  v: true,
};

/**
 * The shape every writer writes (the `v` attribute of each Put's item, set by every update built
 * by `itemUpdate`). A shape changes by expand, then contract (docs/architecture.md, "Changing
 * stored items"): first a deploy whose readers accept the next version beside this one (it is
 * added to `readableItemVersions`) while its writers still write this one; then a deploy that
 * writes the next (this constant moves); a later one drops the old reader. Each deploy can be
 * rolled back to the one before it, whose readers accept everything it wrote.
 */
export const itemVersion = 1;

/**
 * The versions this code reads: 0, the items written before versions existed (no `v`, the same
 * shape as 1), and 1. An item of any other version is a MalformedItemError, never misread.
 */
export const readableItemVersions: readonly number[] = [0, 1];

/**
 * The version an item was written with: its `v`, or 0 for an item written before versions. A
 * refused write's old item comes as attribute values (`{ v: { N: "1" } }`, functions/store/refusals.ts).
 */
export const itemVersionOf = (item: Record<string, unknown>): unknown => {
  const version = item.v;
  if (typeof version === 'object' && version !== null && 'N' in version && typeof version.N === 'string') {
    return Number(version.N);
  }
  return version ?? 0;
};

/** The schema of an item: an object schema, whose entries name the attributes it reads. */
export type ItemSchema = v.ObjectSchema<v.ObjectEntries, v.ErrorMessage<v.ObjectIssue> | undefined>;

/**
 * One stored item: the schema every read of it goes through, and the attributes it is written with
 * that no read needs (kept for operators), declared here once so a writer cannot add another.
 */
export interface ItemDefinition<TSchema extends ItemSchema = ItemSchema, TWrittenOnly extends string = string> {
  readonly schema: TSchema;
  readonly writtenOnly: readonly TWrittenOnly[];
}

/** An item's definition: its schema and the attributes written only for operators. */
export const storedItem = <TSchema extends ItemSchema, const TWrittenOnly extends string = never>(
  schema: TSchema,
  writtenOnly: readonly TWrittenOnly[] = [],
): ItemDefinition<TSchema, TWrittenOnly> => ({ schema, writtenOnly });

/**
 * What a Put's item is checked against: `{...} satisfies StoredItem<typeof storedRun>`. The item
 * must give every field the schema that parses it requires, each of the type the schema takes, and
 * its written-only attributes; any other field, such as a misspelt optional one, does not compile.
 * The key and index attributes come from spreads (keys.ts), which `satisfies` does not check for excess.
 */
export type StoredItem<TItem extends ItemDefinition> = v.InferInput<TItem['schema']> & {
  [attribute in TItem['writtenOnly'][number]]: unknown;
} & { v: typeof itemVersion } & Partial<TableAttributes>;

/** Every attribute a writer may give an item, as an update writes some of them (item-update.ts). */
export type ItemAttributes<TItem extends ItemDefinition> = v.InferInput<TItem['schema']> & {
  [attribute in TItem['writtenOnly'][number]]?: unknown;
} & Partial<TableAttributes>;

/** Whether `attribute` is one the item's schema reads, one it is declared written with, or the table's own. */
export const isItemAttribute = (item: ItemDefinition, attribute: string): boolean =>
  Object.hasOwn(item.schema.entries, attribute) ||
  item.writtenOnly.includes(attribute) ||
  Object.hasOwn(tableAttributes, attribute);

/** Amounts in hundredths of a credit; a counter the item gains with its first ADD reads 0 before it. */
export const hundredths = v.number();
export const counter = v.optional(v.number(), 0);

/** The table key of any item, e.g. an entry of a KEYS_ONLY index. */
export const ItemKeySchema = v.object({ PK: v.string(), SK: v.string() });
export type ItemKey = v.InferOutput<typeof ItemKeySchema>;
