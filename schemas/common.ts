/**
 * Building blocks shared by every resource schema (spec section 2: ids are uuid strings,
 * timestamps ISO 8601 date-time strings).
 */
import * as v from 'valibot';

/** A uuid string: every id in the API. */
export const UuidSchema = v.pipe(v.string(), v.uuid());
export type Uuid = v.InferOutput<typeof UuidSchema>;

/** An ISO 8601 date-time string with a zone, as `Date.prototype.toISOString()` writes it. */
export const DateTimeSchema = v.pipe(v.string(), v.isoTimestamp());
export type DateTime = v.InferOutput<typeof DateTimeSchema>;

/** The object-like schemas a request uses (`object`, `looseObject`, `record`). */
type ObjectLikeSchema =
  | v.ObjectSchema<v.ObjectEntries, v.ErrorMessage<v.ObjectIssue> | undefined>
  | v.LooseObjectSchema<v.ObjectEntries, v.ErrorMessage<v.LooseObjectIssue> | undefined>
  | v.RecordSchema<
      v.BaseSchema<string, string | number | symbol, v.BaseIssue<unknown>>,
      v.GenericSchema,
      v.ErrorMessage<v.RecordIssue> | undefined
    >;

/** What an array is refused as: not an Object (its issue carries this schema's kind, type and expectation). */
const anyObject = v.object({});

/**
 * `schema`, refusing an array. valibot's object and record schemas take an array for an object
 * (`typeof [] === 'object'`): `[]` would read as `{}` and `["x"]` as `{ "0": "x" }`. An array is
 * refused with valibot's own type issue (`Invalid type: Expected Object but received Array`), as
 * the `type: object` the OpenAPI document gives the schema means; anything else is the schema's.
 * The schema keeps its kind, type and entries, so its JSON Schema is the same.
 */
export const notArray = <TSchema extends ObjectLikeSchema>(schema: TSchema): TSchema =>
  v._standardSchema<TSchema>({
    ...schema,
    '~run'(dataset, config) {
      if (!Array.isArray(dataset.value)) return schema['~run'](dataset, config);
      v._addIssue(anyObject, 'type', dataset, config, { received: 'Array' });
      return dataset;
    },
  });

/** A string that names something (a name, a step key, a handle, a secret): never empty. */
export const NameStringSchema = v.pipe(v.string(), v.minLength(1));

/**
 * A valibot issue's message as a caller reads it: a missing field is `<name> is required` (the
 * spec's own wording for `name` and `steps`) instead of valibot's `… but received undefined`, a
 * JavaScript word. Any other message is valibot's (or the schema's own).
 */
export const issueMessage = (issue: v.BaseIssue<unknown>): string => {
  if (!issue.message.endsWith(' but received undefined')) return issue.message;
  const key = issue.path?.at(-1)?.key;
  return typeof key === 'string' || typeof key === 'number' ? `${key} is required` : 'a value is required';
};
