/**
 * The parts an operation of the OpenAPI document is written with: its spec (`OperationSpec`), a
 * JSON response naming components, a path parameter that is a UUID. Each resource module states
 * its own operations with them (e.g. `runOperations` in schemas/runs.ts) beside its schemas, and
 * schemas/openapi.ts gathers them into the document; this module imports neither (no JSON Schema
 * conversion here: a parameter may give its schema as a valibot schema, converted by the document).
 */
import type {
  ParameterObject,
  ReferenceObject,
  RequestBodyObject,
  ResponseObject,
  SchemaObject,
} from 'openapi3-ts/oas31';
import type * as v from 'valibot';
import type { RouteId } from '../platform/routes.ts';
import { UuidSchema } from './common.ts';

/** A reference to a named schema of the document (`#/components/schemas/<name>`). */
export const ref = (name: string): ReferenceObject => ({ $ref: `#/components/schemas/${name}` });

/** A response whose body is one of the named schemas (a `oneOf` when more than one). */
export function namedResponse(description: string, names: readonly string[]): ResponseObject {
  const schema = names.length === 1 ? ref(names[0] as string) : { oneOf: names.map(ref) };
  return { description, content: { 'application/json': { schema } } };
}

/** A JSON response whose body is one of the named schemas (components of the document). */
export function jsonResponse(description: string, ...names: [string, ...string[]]): ResponseObject {
  return namedResponse(description, names);
}

/** A parameter; its schema a schema object, or a valibot schema the document converts. */
export type DocumentedParameter = Omit<ParameterObject, 'schema'> & { schema?: SchemaObject | v.GenericSchema };

/** A path parameter that is a UUID. */
export const uuidPath = (name: string, description: string): DocumentedParameter => ({
  name,
  in: 'path',
  required: true,
  description,
  schema: UuidSchema,
});

/** The 503 of every operation that reads or writes the table (our design): it met contention past its retries. */
export const storageBusyText =
  'The service is busy (a read or write met throttling, a conflicting write or a DynamoDB failure on every ' +
  'try); nothing was written. Try again after `Retry-After` seconds.';

/** One operation's words; its method, path and scope are the route's in `platform/routes.ts`. */
export interface OperationSpec {
  /** The route's `id`, also the operationId. */
  operationId: RouteId;
  tag: string;
  summary: string;
  description: string;
  parameters?: DocumentedParameter[];
  requestBody?: RequestBodyObject;
  /** Its answers that are no row of the error table: its successes, and its 500 when it writes. */
  responses: Record<number, ResponseObject>;
  /** Its own words for an error status it answers (else the shared words); the bodies are the error rows'. */
  errorWords?: Partial<Record<number, string>>;
}
