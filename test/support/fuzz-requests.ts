/**
 * Requests for the fuzz test (test/fuzz.int.test.ts), generated from the served OpenAPI document:
 * valid JSON values from a schema (a small JSON-Schema-to-fast-check walk, only the keywords the
 * document uses), hostile mutations of them, and a raw HTTP client that sends any method, path,
 * header and byte body, and reads the answer as bytes.
 */
import { Agent, request as httpRequest } from 'node:http';
import fc from 'fast-check';
import type { OpenAPIObject, ReferenceObject, SchemaObject } from 'openapi3-ts/oas31';

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type Path = (string | number)[];
type Node = SchemaObject | ReferenceObject;

/** Follows `#/components/schemas/…` references. */
export const resolveSchema = (doc: OpenAPIObject, node: Node): SchemaObject => {
  if (!('$ref' in node)) return node;
  const name = String(node.$ref).replace('#/components/schemas/', '');
  const schema = doc.components?.schemas?.[name];
  if (!schema) throw new Error(`no schema ${node.$ref}`);
  return resolveSchema(doc, schema);
};

/**
 * The option of a `oneOf` or `anyOf` that `value` is written in: the one its discriminator names (a
 * workflow step, by its `type`), else the first of its kind (a string or not).
 */
export const optionFor = (doc: OpenAPIObject, schema: SchemaObject, value: unknown): SchemaObject | undefined => {
  const { discriminator } = schema;
  if (discriminator) {
    const tag =
      value && typeof value === 'object' ? (value as Record<string, unknown>)[discriminator.propertyName] : undefined;
    const target =
      typeof tag === 'string' && Object.hasOwn(discriminator.mapping ?? {}, tag)
        ? discriminator.mapping?.[tag]
        : undefined;
    return target ? resolveSchema(doc, { $ref: target }) : undefined;
  }
  return (schema.anyOf ?? schema.oneOf ?? [])
    .map((option) => resolveSchema(doc, option))
    .find((option) => (option.type === 'string') === (typeof value === 'string'));
};

/** `body` with the value at `path` replaced (a copy; `__proto__` stays an own key, as JSON.parse makes it). */
export const withValue = (body: Json, path: Path, replacement: Json | undefined): Json => {
  if (path.length === 0) return replacement ?? null;
  const copy = JSON.parse(JSON.stringify(body)) as Record<string | number, Json>;
  let at = copy;
  for (const key of path.slice(0, -1)) at = at[key] as Record<string | number, Json>;
  const last = path[path.length - 1] as string | number;
  if (replacement === undefined) {
    if (Array.isArray(at)) at.splice(Number(last), 1);
    else delete at[last];
  } else Object.defineProperty(at, last, { value: replacement, enumerable: true, writable: true, configurable: true });
  return copy;
};

/** Values the generator uses for ids (`format: uuid`): real ones, so requests reach past the not-found checks. */
export interface Pools {
  ids: readonly string[];
}

/** A valid value of `node` (as far as the schema says; the handlers may still refuse it, e.g. an unknown id). */
export const schemaValue = (doc: OpenAPIObject, node: Node, pools: Pools): fc.Arbitrary<Json> => {
  const schema = resolveSchema(doc, node);
  if (schema.const !== undefined) return fc.constant(schema.const as Json);
  if (schema.enum) return fc.constantFrom(...(schema.enum as Json[]));
  const options = schema.anyOf ?? (schema.properties ? undefined : schema.oneOf);
  if (options) return fc.oneof(...options.map((option) => schemaValue(doc, option, pools)));
  switch (schema.type) {
    case 'string':
      return stringOf(schema, pools);
    case 'boolean':
      return fc.boolean();
    case 'integer':
      return fc.integer({ min: schema.minimum ?? -1e6, max: schema.maximum ?? 1e6 });
    case 'number': {
      // At most `x-decimals` decimals (maxMultiplier's 4; the document says it so, not as `multipleOf`,
      // which float-dividing validators refuse 0.7 by): whole steps between the bounds, rounded.
      const decimals = (schema as { 'x-decimals'?: unknown })['x-decimals'];
      if (typeof decimals === 'number' && typeof schema.minimum === 'number' && typeof schema.maximum === 'number') {
        const step = 10 ** -decimals;
        return fc
          .integer({ min: Math.ceil(schema.minimum / step), max: Math.floor(schema.maximum / step) })
          .map((n) => Number((n * step).toFixed(decimals)));
      }
      const min = typeof schema.exclusiveMinimum === 'number' ? schema.exclusiveMinimum : (schema.minimum ?? -1e6);
      const max = typeof schema.exclusiveMaximum === 'number' ? schema.exclusiveMaximum : (schema.maximum ?? 1e6);
      return fc.double({
        min,
        max,
        noNaN: true,
        noDefaultInfinity: true,
        minExcluded: typeof schema.exclusiveMinimum === 'number',
        maxExcluded: typeof schema.exclusiveMaximum === 'number',
      });
    }
    case 'array': {
      const items = schema.items ?? {};
      return fc.array(schemaValue(doc, items, pools), {
        minLength: schema.minItems ?? 0,
        maxLength: Math.max(schema.minItems ?? 0, Math.min(schema.maxItems ?? 3, 3)),
      });
    }
    case 'object':
      return objectOf(doc, schema, pools);
    default:
      return fc.constant(null);
  }
};

const stringOf = (schema: SchemaObject, pools: Pools): fc.Arbitrary<Json> => {
  if (schema.format === 'uuid') return fc.oneof(fc.constantFrom(...pools.ids), fc.uuid());
  if (schema.format === 'uri' || schema.pattern === '^https://') return fc.webUrl({ validSchemes: ['https'] });
  // A pattern (a step key's): its character class, kept to what the whole pattern takes (fast-check
  // cannot build from a lookahead).
  if (schema.pattern) {
    const pattern = new RegExp(schema.pattern);
    return fc.stringMatching(/^[A-Za-z0-9_-]{1,12}$/).filter((s) => pattern.test(s));
  }
  const minLength = schema.minLength ?? 0;
  return fc.string({ minLength, maxLength: Math.min(schema.maxLength ?? 12, Math.max(minLength, 12)) });
};

/**
 * An object with every required property and some optional ones. `oneOf` of `required` lists (the
 * create-workflow body: exactly one of agentId or projectId) picks one branch and leaves the others out.
 */
const objectOf = (doc: OpenAPIObject, schema: SchemaObject, pools: Pools): fc.Arbitrary<Json> => {
  const properties = schema.properties ?? {};
  const branches = (schema.oneOf ?? []).map((b) => resolveSchema(doc, b).required ?? []);
  const exclusive = new Set(branches.flat());
  const extra = schema.additionalProperties;
  if (extra && typeof extra === 'object' && Object.keys(properties).length === 0) {
    // Keys as `propertyNames` states them (a run start's metadata keys: a tag's characters).
    const names = schema.propertyNames;
    const keys = names ? stringOf(resolveSchema(doc, names), pools) : fc.string({ minLength: 1, maxLength: 8 });
    return fc.dictionary(keys as fc.Arbitrary<string>, schemaValue(doc, extra, pools), { maxKeys: 3 });
  }
  const build = (chosen: readonly string[]) => {
    const names = Object.keys(properties).filter((name) => !exclusive.has(name) || chosen.includes(name));
    const model = Object.fromEntries(names.map((name) => [name, schemaValue(doc, properties[name] as Node, pools)]));
    return fc.record(model, { requiredKeys: [...(schema.required ?? []), ...chosen].filter((n) => n in model) });
  };
  return (branches.length ? fc.oneof(...branches.map(build)) : build([])) as fc.Arbitrary<Json>;
};

/** Every field of `value` the schema declares: its path and the JSON type the schema gives it. */
export const fieldsOf = (
  doc: OpenAPIObject,
  node: Node,
  value: Json,
  path: Path = [],
): { path: Path; type: string; schema: SchemaObject }[] => {
  const schema = resolveSchema(doc, node);
  if (schema.anyOf ?? (schema.properties ? undefined : schema.oneOf)) {
    const option = optionFor(doc, schema, value);
    return option ? fieldsOf(doc, option, value, path) : [];
  }
  const constant = schema.const ?? schema.enum?.[0];
  const here = { path, type: String(schema.type ?? (constant === undefined ? 'unknown' : typeof constant)), schema };
  if (schema.type === 'array' && Array.isArray(value) && schema.items) {
    const items = schema.items;
    return [here, ...value.flatMap((item, i) => fieldsOf(doc, items, item, [...path, i]))];
  }
  if (schema.type !== 'object' || value === null || typeof value !== 'object' || Array.isArray(value)) return [here];
  const fields = [here];
  const extra = schema.additionalProperties;
  for (const [name, item] of Object.entries(value)) {
    const property = schema.properties?.[name] ?? (extra && typeof extra === 'object' ? extra : undefined);
    if (property) fields.push(...fieldsOf(doc, property, item, [...path, name]));
  }
  return fields;
};

/** Replaced, once serialized, by JSON nested `deepLevels` levels deep (built as text: no recursion). */
export const deepMarker = '\u0001deep\u0001';
export const deepLevels = 10_000;
export const deepJson = (levels = deepLevels) => `${'{"a":['.repeat(levels)}1${']}'.repeat(levels)}`;

/** The body as sent: JSON, with any deep marker expanded. */
export const serialize = (body: Json): string =>
  JSON.stringify(body).replaceAll(JSON.stringify(deepMarker), deepJson());

/** Hostile strings: NUL, astral, a lone surrogate (JSON.stringify escapes it), bidi overrides, long, and JS-ish words. */
export const hostileStrings: Json[] = [
  '\u0000',
  'a\u0000b',
  '😀𝔘𐍈',
  '\ud800',
  'x\udfff',
  '\u202eevil',
  '\ufeff',
  '%00',
  '../../etc/passwd',
  "' OR '1'='1",
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a template-injection probe, sent as text.
  '${7*7}{{7*7}}',
  'x'.repeat(70_000),
];

/** Keys that mean something to JavaScript objects. */
export const prototypeKeys = ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf'];

/** A value of another JSON type than `type`. */
export const wrongTypes = (type: string): Json[] =>
  (
    [
      ['string', 'text'],
      ['number', 12.5],
      ['integer', -1],
      ['boolean', true],
      ['null', null],
      ['array', ['x']],
      ['object', { x: 1 }],
    ] as [string, Json][]
  )
    .filter(([t]) => t !== type && !(type === 'number' && t === 'integer') && !(type === 'integer' && t === 'number'))
    .map(([, value]) => value);

/** One way to break a valid body. */
export type Mutation =
  | { kind: 'wrong type'; at: number; pick: number }
  | { kind: 'missing'; at: number }
  | { kind: 'extra'; at: number; key: string; pick: number }
  | { kind: 'hostile string'; at: number; pick: number }
  | { kind: 'deep'; at: number }
  | { kind: 'past a limit'; at: number };

export const mutationArb: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant('wrong type' as const), at: fc.nat(), pick: fc.nat() }),
  fc.record({ kind: fc.constant('missing' as const), at: fc.nat() }),
  fc.record({
    kind: fc.constant('extra' as const),
    at: fc.nat(),
    key: fc.oneof(fc.constantFrom(...prototypeKeys), fc.string({ minLength: 1, maxLength: 6 })),
    pick: fc.nat(),
  }),
  fc.record({ kind: fc.constant('hostile string' as const), at: fc.nat(), pick: fc.nat() }),
  fc.record({ kind: fc.constant('deep' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('past a limit' as const), at: fc.nat() }),
);

/**
 * A value one past a limit the schema states (`maxItems`, `maxProperties`, `maxLength`, a key's
 * `propertyNames.maxLength`), else undefined: e.g. a run start's sixth tag or seventeenth pair.
 * Items and values are otherwise valid where the schema is a string's, so the limit is what fails.
 */
export const pastLimit = (schema: SchemaObject): Json | undefined => {
  if (schema.type === 'array' && typeof schema.maxItems === 'number') {
    return Array.from({ length: schema.maxItems + 1 }, (_, i) => `t${i}`);
  }
  if (schema.type === 'object' && typeof schema.maxProperties === 'number') {
    return Object.fromEntries(Array.from({ length: schema.maxProperties + 1 }, (_, i) => [`k${i}`, 'v']));
  }
  const names = schema.propertyNames;
  if (schema.type === 'object' && names && 'maxLength' in names && typeof names.maxLength === 'number') {
    return { ['k'.repeat(names.maxLength + 1)]: 'v' };
  }
  if (schema.type === 'string' && typeof schema.maxLength === 'number') return 'x'.repeat(schema.maxLength + 1);
  return undefined;
};

const extraValues: Json[] = [{ polluted: true }, 'x', 1, null, ['a']];

/** Applies a mutation to a valid body of `schema`; `label` says what was done, for the report. */
export const mutate = (
  doc: OpenAPIObject,
  schema: Node,
  body: Json,
  m: Mutation,
): { body: Json; label: string } | undefined => {
  const fields = fieldsOf(doc, schema, body);
  const pickFrom = <T>(items: readonly T[], n: number) => items[n % items.length] as T;
  const show = (path: Path) => path.join('.') || '(body)';
  switch (m.kind) {
    case 'wrong type': {
      const field = pickFrom(fields, m.at);
      const value = pickFrom(wrongTypes(field.type), m.pick);
      return { body: withValue(body, field.path, value), label: `${show(field.path)} = ${JSON.stringify(value)}` };
    }
    case 'missing': {
      const named = fields.filter((f) => f.path.length > 0);
      if (!named.length) return undefined;
      const field = pickFrom(named, m.at);
      return { body: withValue(body, field.path, undefined), label: `without ${show(field.path)}` };
    }
    case 'extra': {
      const objects = fields.filter((f) => f.type === 'object');
      if (!objects.length) return undefined;
      const field = pickFrom(objects, m.at);
      const value = pickFrom(extraValues, m.pick);
      return {
        body: withValue(body, [...field.path, m.key], value),
        label: `${show([...field.path, m.key])} added`,
      };
    }
    case 'hostile string': {
      const field = pickFrom(fields, m.at);
      const value = pickFrom(hostileStrings, m.pick);
      return {
        body: withValue(body, field.path, value),
        label: `${show(field.path)} = hostile #${m.pick % hostileStrings.length}`,
      };
    }
    case 'deep': {
      const field = pickFrom(fields, m.at);
      return { body: withValue(body, field.path, deepMarker), label: `${show(field.path)} nested ${deepLevels} deep` };
    }
    case 'past a limit': {
      const limited = fields.filter((f) => pastLimit(f.schema) !== undefined);
      if (!limited.length) return undefined;
      const field = pickFrom(limited, m.at);
      return {
        body: withValue(body, field.path, pastLimit(field.schema)),
        label: `${show(field.path)} past its limit`,
      };
    }
  }
};

export interface RawRequest {
  method: string;
  /** Path with query, as sent on the request line (not normalised). */
  path: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
}

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  text: string;
}

/** A raw HTTP/1.1 client over a few keep-alive connections: any method, any path bytes, any body. */
export const rawClient = (baseUrl: string, connections: number) => {
  const origin = new URL(baseUrl);
  const agent = new Agent({ keepAlive: true, maxSockets: connections });
  const send = (req: RawRequest) =>
    new Promise<RawResponse>((resolve, reject) => {
      const request = httpRequest(
        {
          host: origin.hostname,
          port: origin.port,
          method: req.method,
          path: req.path,
          agent,
          headers:
            req.body === undefined ? req.headers : { 'content-length': Buffer.byteLength(req.body), ...req.headers },
        },
        (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () =>
            resolve({
              status: response.statusCode ?? 0,
              headers: Object.fromEntries(Object.entries(response.headers).map(([k, v]) => [k, String(v)])),
              text: Buffer.concat(chunks).toString('utf8'),
            }),
          );
          response.on('error', reject);
        },
      );
      request.on('error', reject);
      request.end(req.body);
    });
  return { send, close: () => agent.destroy() };
};

/** Runs `work` over `items`, `limit` at a time. */
export const inPool = async <T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>) => {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const item = items[next++] as T;
      await work(item);
    }
  };
  await Promise.all(Array.from({ length: limit }, worker));
};
