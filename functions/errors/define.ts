/**
 * How an error is declared: one row (its facts, its message, and what the HTTP edge answers for it)
 * becomes a class named for it. The rows are functions/errors/table.ts; code below the edge only
 * constructs and catches these classes, and only functions/http/error-map.ts reads a row's status,
 * body and Retry-After. What only the OpenAPI document needs (each error's body schemas and the
 * routes that answer it) is functions/docs/error-docs.ts, keyed by the rows' names and held by the
 * compiler to each row's body type, so a handler never builds those schemas or the route table.
 */

/** The base of every error the service throws on purpose; `cause` keeps the failure behind it. */
export class ServiceError extends Error {
  override name = 'ServiceError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** One error: the facts its constructor's arguments become, its log message, and its answer. */
export interface ErrorRow<TArgs extends unknown[], TFacts extends object, TBody> {
  /** The facts the constructor's arguments become, as fields of the error. */
  facts: (...args: TArgs) => TFacts;
  /** The message for logs; never shown to a caller (the body is). */
  message: (facts: TFacts) => string;
  status: number;
  /**
   * The body answered. Its schemas in the contract (schemas/) are the row's entry in
   * functions/docs/error-docs.ts, which the compiler holds to this body's type.
   */
  body: (facts: TFacts) => TBody;
  /** Seconds the caller should wait before trying again, answered as `Retry-After`. */
  retryAfter?: (facts: TFacts) => number;
  /** Further headers of its answer (`WWW-Authenticate` of a 401). */
  headers?: (facts: TFacts) => Record<string, string>;
}

/** The key of a class's body type: a type only, never set (see `BodyOf`). */
declare const answered: unique symbol;

/** A class built from a row; an optional last argument `{ cause }` keeps the failure behind it. */
export type ErrorClass<TArgs extends unknown[], TFacts extends object, TBody = unknown> = {
  new (...args: TArgs): ServiceError & Readonly<TFacts>;
  new (...args: [...TArgs, options: { cause?: unknown }]): ServiceError & Readonly<TFacts>;
  /** Type only: the body its row answers, which the document's schemas for it must accept. */
  readonly [answered]?: TBody;
};

/** The body a declared error's row answers (its type), for the document's schemas to be held to. */
export type BodyOf<TError> = TError extends { readonly [answered]?: infer TBody } ? TBody : never;

/** What the HTTP edge and the OpenAPI document read of a row, for any error. */
export interface ErrorAnswer {
  error: abstract new (...args: never[]) => ServiceError;
  status: number;
  body: (error: never) => unknown;
  retryAfter?: (error: never) => number;
  headers?: (error: never) => Record<string, string>;
}

/** Every row declared, in declaration order: the error table. */
export const declaredErrors: ErrorAnswer[] = [];

/** Declares an error named `name` (the name of its export) from its row, and adds it to the table. */
export const defineError = <TArgs extends unknown[], TFacts extends object, TBody>(
  name: string,
  row: ErrorRow<TArgs, TFacts, TBody>,
): ErrorClass<TArgs, TFacts, TBody> => {
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
  });
  return error as unknown as ErrorClass<TArgs, TFacts, TBody>;
};
