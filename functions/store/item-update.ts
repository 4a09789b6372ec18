/**
 * An UpdateItem's expression built from the attributes it writes, typed by the item's one schema
 * (items/): an attribute the item does not have, or a value of another type than its schema
 * reads, does not compile. The same check runs when the update is built, so a cast cannot slip an
 * attribute past it either. Conditions stay DynamoDB's own text; their names and values are merged
 * in, and a placeholder the two would give different meanings is refused.
 */
import type { Deps } from '../deps.ts';
import { type ItemAttributes, type ItemDefinition, isItemAttribute, itemVersion } from './items/item.ts';

/** `if_not_exists(attribute, value)`: the stored value stays, else `value` is written. */
export class IfNotExists<TValue> {
  readonly value: TValue;
  constructor(value: TValue) {
    this.value = value;
  }
}
export const ifNotExists = <TValue>(value: TValue) => new IfNotExists(value);

/** The attributes an item may lose: those its schema does not require (and the table's optional ones). */
type RemovableAttribute<TAttributes> = {
  [K in keyof TAttributes]-?: undefined extends TAttributes[K] ? K : never;
}[keyof TAttributes];

/** The attributes ADD takes: numbers (added to, or set when absent) and sets (joined). */
type AddableAttributes<TAttributes> = {
  [K in keyof TAttributes as NonNullable<TAttributes[K]> extends number | ReadonlySet<string>
    ? K
    : never]?: NonNullable<TAttributes[K]>;
};

/** The map attributes whose entries an update may set or remove by key (`connections.#key`); not a written-only one. */
type MapAttribute<TAttributes> = {
  [K in keyof TAttributes]-?: unknown extends TAttributes[K]
    ? never
    : NonNullable<TAttributes[K]> extends ReadonlySet<unknown> | readonly unknown[]
      ? never
      : NonNullable<TAttributes[K]> extends Record<string, unknown>
        ? K
        : never;
}[keyof TAttributes];
type EntryOf<TMap> = NonNullable<TMap> extends Record<string, infer TEntry> ? TEntry : never;

/** The list attributes an update may append to (`list_append`), with the elements they take. */
type AppendableAttributes<TAttributes> = {
  [K in keyof TAttributes as unknown extends TAttributes[K]
    ? never
    : NonNullable<TAttributes[K]> extends readonly unknown[]
      ? K
      : never]?: NonNullable<TAttributes[K]>;
};

/** What one update writes: attributes to set, numbers and sets to add to, attributes and map entries to remove. */
export interface ItemUpdate<TAttributes> {
  /** An undefined value sets nothing. */
  set?: { [K in keyof TAttributes]?: TAttributes[K] | IfNotExists<TAttributes[K]> };
  add?: AddableAttributes<TAttributes>;
  remove?: readonly RemovableAttribute<TAttributes>[];
  setEntries?: { [K in MapAttribute<TAttributes>]?: Record<string, EntryOf<TAttributes[K]>> };
  /** Numbers added to a map's entries (`#map.#key = if_not_exists(#map.#key, 0) + :n`): ADD takes no nested path. */
  addEntries?: {
    [K in MapAttribute<TAttributes>]?: EntryOf<TAttributes[K]> extends number ? Record<string, number> : never;
  };
  removeEntries?: { [K in MapAttribute<TAttributes>]?: readonly string[] };
  /** Elements appended to a list, made when absent (`#list = list_append(if_not_exists(#list, :empty), :append_list)`). */
  append?: AppendableAttributes<TAttributes>;
}

/** A condition in DynamoDB's words, with the names and values it uses. */
export interface UpdateCondition {
  ConditionExpression: string;
  ExpressionAttributeNames?: Record<string, string>;
  ExpressionAttributeValues?: Record<string, unknown>;
}

export interface UpdateExpressionParts {
  UpdateExpression: string;
  ConditionExpression?: string;
  ExpressionAttributeNames: Record<string, string>;
  ExpressionAttributeValues?: Record<string, unknown>;
}

/** An update names an attribute its item neither reads nor declares (a bug, whatever the types said). */
export class UnknownItemAttributeError extends Error {
  override readonly name = 'UnknownItemAttributeError';
}

/** The one empty list an append starts from (one value, so two appends give `:empty_list` one meaning). */
const emptyList: readonly unknown[] = [];

/** Adds `placeholder` meaning `value`; the same placeholder may come twice only with the same meaning. */
const define = <TValue>(into: Record<string, TValue>, placeholder: string, value: TValue) => {
  if (Object.hasOwn(into, placeholder) && into[placeholder] !== value) {
    throw new Error(`the update and its condition give ${placeholder} two meanings`);
  }
  into[placeholder] = value;
};

/**
 * The UpdateExpression (and its names and values) that writes `update` on an item of `item`, with
 * `condition` merged in. Every attribute is named `#<attribute>`; a value is `:set_<attribute>` or
 * `:add_<attribute>`, an entry of a map `#<attribute>_<n>` = `:<attribute>_<n>`.
 */
export const itemUpdate = <TItem extends ItemDefinition>(
  item: TItem,
  update: ItemUpdate<ItemAttributes<TItem>>,
  condition?: UpdateCondition,
): UpdateExpressionParts => {
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {};
  const nameOf = (attribute: string) => {
    if (!isItemAttribute(item, attribute)) {
      throw new UnknownItemAttributeError(`an update writes ${attribute}, which its item does not have (items/)`);
    }
    define(names, `#${attribute}`, attribute);
    return `#${attribute}`;
  };
  const set: string[] = [];
  for (const [attribute, value] of Object.entries(update.set ?? {})) {
    if (value === undefined) continue;
    const name = nameOf(attribute);
    if (value instanceof IfNotExists) {
      define(values, `:set_${attribute}`, value.value);
      set.push(`${name} = if_not_exists(${name}, :set_${attribute})`);
    } else {
      define(values, `:set_${attribute}`, value);
      set.push(`${name} = :set_${attribute}`);
    }
  }
  const entries = (
    kind: 'setEntries' | 'removeEntries' | 'addEntries',
    each: (path: string, value: string) => void,
  ) => {
    for (const [attribute, byKey] of Object.entries(update[kind] ?? {})) {
      const name = nameOf(attribute);
      const keys = Array.isArray(byKey) ? byKey : Object.keys(byKey as object);
      // Added entries get placeholders of their own, so one update may add to a map and remove from it.
      const tag = kind === 'addEntries' ? 'add' : '';
      keys.forEach((key: string, n: number) => {
        define(names, `${name}_${tag}${n}`, key);
        each(`${name}.${name}_${tag}${n}`, `:${attribute}_${tag}${n}`);
        if (!Array.isArray(byKey)) define(values, `:${attribute}_${tag}${n}`, (byKey as Record<string, unknown>)[key]);
      });
    }
  };
  entries('setEntries', (path, value) => set.push(`${path} = ${value}`));
  if (update.addEntries && Object.keys(update.addEntries).some((k) => Object.hasOwn(update.setEntries ?? {}, k))) {
    throw new Error('an update both sets and adds to the entries of one map');
  }
  entries('addEntries', (path, value) => {
    define(values, ':zero', 0);
    set.push(`${path} = if_not_exists(${path}, :zero) + ${value}`);
  });
  for (const [attribute, elements] of Object.entries(update.append ?? {})) {
    if (elements === undefined || (elements as readonly unknown[]).length === 0) continue;
    const name = nameOf(attribute);
    define(values, ':empty_list', emptyList);
    define(values, `:append_${attribute}`, elements);
    set.push(`${name} = list_append(if_not_exists(${name}, :empty_list), :append_${attribute})`);
  }
  // `v` alone is no update: the caller gave nothing to write.
  const given = set.length + Object.values(update.add ?? {}).filter((value) => value !== undefined).length;
  if (given === 0 && (update.remove ?? []).length === 0 && Object.keys(update.removeEntries ?? {}).length === 0) {
    // (set counts the added entries: they are SET clauses)
    throw new Error('an update that writes nothing');
  }
  // Every write leaves the item in the current shape (items/item.ts, `itemVersion`), an update as a Put.
  define(values, ':set_v', itemVersion);
  set.push(`${nameOf('v')} = :set_v`);
  const add = Object.entries(update.add ?? {}).flatMap(([attribute, value]) => {
    if (value === undefined) return [];
    define(values, `:add_${attribute}`, value);
    return [`${nameOf(attribute)} :add_${attribute}`];
  });
  const remove = (update.remove ?? []).map((attribute) => nameOf(String(attribute)));
  entries('removeEntries', (path) => remove.push(path));
  const clauses = [
    set.length > 0 ? `SET ${set.join(', ')}` : '',
    add.length > 0 ? `ADD ${add.join(', ')}` : '',
    remove.length > 0 ? `REMOVE ${remove.join(', ')}` : '',
  ].filter((clause) => clause !== '');
  for (const [placeholder, name] of Object.entries(condition?.ExpressionAttributeNames ?? {})) {
    define(names, placeholder, name);
  }
  for (const [placeholder, value] of Object.entries(condition?.ExpressionAttributeValues ?? {})) {
    define(values, placeholder, value);
  }
  return {
    UpdateExpression: clauses.join(' '),
    ...(condition ? { ConditionExpression: condition.ConditionExpression } : {}),
    ExpressionAttributeNames: names,
    ...(Object.keys(values).length > 0 ? { ExpressionAttributeValues: values } : {}),
  };
};

/** An UpdateItem's input: `itemUpdate`'s expression for the item of `item` at `key` in the table. */
export const tableUpdate = <TItem extends ItemDefinition>(
  deps: Pick<Deps, 'tableName'>,
  item: TItem,
  key: Record<string, string>,
  update: ItemUpdate<ItemAttributes<TItem>>,
  condition?: UpdateCondition,
) => ({ TableName: deps.tableName, Key: key, ...itemUpdate(item, update, condition) });
