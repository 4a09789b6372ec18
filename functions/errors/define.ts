/**
 * How an error is declared: one row (its facts, its message, and what the HTTP edge answers for it)
 * becomes a class named for it. The rows are functions/errors/table.ts; code below the edge only
 * constructs and catches these classes, only functions/http/error-map.ts reads a row's status, body
 * and Retry-After, and the OpenAPI document (functions/docs/openapi.ts) lists each row's bodies
 * under its status in the operations of the routes it names.
 */
import type * as v from 'valibot';
import type { RouteId } from '../../platform/routes.ts';

/** The base of every error the service throws on purpose; `cause` keeps the failure behind it. */
export class ServiceError extends Error {
  override name = 'ServiceError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** One error: the facts its constructor's arguments become, its log message, and its answer. */
export interface ErrorRow<TArgs extends unknown[], TFacts extends object, TSchemas extends readonly v.GenericSchema[]> {
  /** The facts the constructor's arguments become, as fields of the error. */
  facts: (...args: TArgs) => TFacts;
  /** The message for logs; never shown to a caller (the body is). */
  message: (facts: TFacts) => string;
  status: number;
  /**
   * The body schemas of the contract (schemas/), each one of the OpenAPI document's components (a
   * schema the document does not name yet joins them under its export name in schemas/errors.ts).
   */
  schemas: TSchemas;
  body: (facts: TFacts) => NoInfer<v.InferOutput<TSchemas[number]>>;
  /** Seconds the caller should wait before trying again, answered as `Retry-After`. */
  retryAfter?: (facts: TFacts) => number;
  /** Further headers of its answer (`WWW-Authenticate` of a 401). */
  headers?: (facts: TFacts) => Record<string, string>;
  /** The routes that answer it, whose operations in the OpenAPI document list its bodies under its status. */
  routes: readonly RouteId[];
  /**
   * A sentence for the document, after the operation's own words for its status (schemas/openapi.ts);
   * needed where an operation answers its status with no words of its own.
   */
  described?: string;
}

/** A class built from a row; an optional last argument `{ cause }` keeps the failure behind it. */
export type ErrorClass<TArgs extends unknown[], TFacts extends object> = {
  new (...args: TArgs): ServiceError & Readonly<TFacts>;
  new (...args: [...TArgs, options: { cause?: unknown }]): ServiceError & Readonly<TFacts>;
};

/** What the HTTP edge and the OpenAPI document read of a row, for any error. */
export interface ErrorAnswer {
  error: abstract new (...args: never[]) => ServiceError;
  status: number;
  body: (error: never) => unknown;
  retryAfter?: (error: never) => number;
  headers?: (error: never) => Record<string, string>;
  schemas: readonly v.GenericSchema[];
  routes: readonly RouteId[];
  described?: string;
}

/** Every row declared, in declaration order: the error table. */
export const declaredErrors: ErrorAnswer[] = [];

/** Declares an error named `name` (the name of its export) from its row, and adds it to the table. */
export const defineError = <
  TArgs extends unknown[],
  TFacts extends object,
  TSchemas extends readonly v.GenericSchema[],
>(
  name: string,
  row: ErrorRow<TArgs, TFacts, TSchemas>,
): ErrorClass<TArgs, TFacts> => {
  const arity = row.facts.length;
  const error = class extends ServiceError {
    constructor(...args: unknown[]) {
      const options = args.length > arity ? (args[arity] as { cause?: unknown }) : undefined;
      const facts = row.facts(...(args.slice(0, arity) as TArgs));
      super(row.message(facts), options);
      this.name = name;
      Object.assign(this, facts);
    }
  };
  Object.defineProperty(error, 'name', { value: name });
  declaredErrors.push({
    error,
    status: row.status,
    body: row.body as ErrorAnswer['body'],
    retryAfter: row.retryAfter as ErrorAnswer['retryAfter'],
    ...(row.headers === undefined ? {} : { headers: row.headers as ErrorAnswer['headers'] }),
    schemas: row.schemas,
    routes: row.routes,
    ...(row.described === undefined ? {} : { described: row.described }),
  });
  return error as unknown as ErrorClass<TArgs, TFacts>;
};
