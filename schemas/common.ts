/**
 * Building blocks shared by every resource schema (spec section 2: ids are uuid strings,
 * timestamps ISO 8601 date-time strings) and the generic error body of section 7.
 */
import * as v from 'valibot';
import { allScopes } from '../lib/routes.ts';

export type { Scope } from '../lib/routes.ts';

/** A uuid string: every id in the API. */
export const UuidSchema = v.pipe(v.string(), v.uuid());
export type Uuid = v.InferOutput<typeof UuidSchema>;

/** An ISO 8601 date-time string with a zone, as `Date.prototype.toISOString()` writes it. */
export const DateTimeSchema = v.pipe(v.string(), v.isoTimestamp());
export type DateTime = v.InferOutput<typeof DateTimeSchema>;

/** The shape most error bodies share; the exact bodies are in `errors.ts`. */
export const ErrorBodySchema = v.strictObject({ error: v.string() });
export type ErrorBody = v.InferOutput<typeof ErrorBodySchema>;

/** A key's scope (spec section 5); the names come from the route table so they cannot drift. */
export const ScopeSchema = v.picklist(allScopes);

/** Path parameters of the routes addressed by `{id}` (workflow, agent, deferred run). */
export const IdPathSchema = v.object({ id: UuidSchema });
export type IdPath = v.InferOutput<typeof IdPathSchema>;
