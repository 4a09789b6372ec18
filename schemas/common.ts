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
