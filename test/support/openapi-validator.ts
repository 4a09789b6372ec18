/**
 * Checks an HTTP response against the OpenAPI document: finds the operation by method and
 * concrete path, the response by status, and validates the body (and, when given, the documented
 * headers) with ajv's JSON Schema 2020-12 validator, the schema dialect of OpenAPI 3.1.
 */
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import ajvFormats from 'ajv-formats';
import type {
  HeaderObject,
  OpenAPIObject,
  OperationObject,
  PathItemObject,
  ReferenceObject,
  ResponseObject,
  SchemaObject,
} from 'openapi3-ts/oas31';

export interface ResponseToCheck {
  /** HTTP method, any case. */
  method: string;
  /** Concrete path, relative to the server url (`/runs/abc`) or with it (`/api/v1/runs/abc`); a query is ignored. */
  path: string;
  status: number;
  /** Parsed JSON body; `undefined` for none. */
  body: unknown;
  /** When given, required documented headers must be present and match their schema. */
  headers?: Headers | Record<string, string | undefined>;
}

export interface ValidationResult {
  valid: boolean;
  /** Readable reasons, empty when valid. */
  errors: string[];
}

// ajv-formats is CommonJS: under NodeNext its default import is the module, whose `default` is the plugin.
const addFormats = ajvFormats.default;

const componentsId = 'urn:openapi:components';
const schemaRefPrefix = '#/components/schemas/';

interface Compiled {
  ajv: Ajv2020;
  validators: Map<object, ValidateFunction>;
}

const compiledByDocument = new WeakMap<OpenAPIObject, Compiled>();

/** Rewrites the document's component `$ref`s so they resolve inside ajv. */
function rewriteRefs(node: unknown, prefix: string): unknown {
  if (Array.isArray(node)) return node.map((item) => rewriteRefs(item, prefix));
  if (node === null || typeof node !== 'object') return node;
  return Object.fromEntries(
    Object.entries(node).map(([key, value]) => [
      key,
      key === '$ref' && typeof value === 'string' && value.startsWith(schemaRefPrefix)
        ? `${prefix}${value.slice(schemaRefPrefix.length)}`
        : rewriteRefs(value, prefix),
    ]),
  );
}

function compiledFor(doc: OpenAPIObject): Compiled {
  let compiled = compiledByDocument.get(doc);
  if (!compiled) {
    const ajv = new Ajv2020({ allErrors: true, strict: true });
    addFormats(ajv);
    // OpenAPI's annotation on the steps' `oneOf` (an answer may carry steps): the `oneOf` itself checks them.
    ajv.addKeyword('discriminator');
    ajv.addSchema({ $id: componentsId, $defs: rewriteRefs(doc.components?.schemas ?? {}, '#/$defs/') });
    compiled = { ajv, validators: new Map() };
    compiledByDocument.set(doc, compiled);
  }
  return compiled;
}

function validatorFor(doc: OpenAPIObject, schema: SchemaObject | ReferenceObject): ValidateFunction {
  const { ajv, validators } = compiledFor(doc);
  let validate = validators.get(schema);
  if (!validate) {
    validate = ajv.compile(rewriteRefs(schema, `${componentsId}#/$defs/`) as object);
    validators.set(schema, validate);
  }
  return validate;
}

/** Follows a local `$ref` (e.g. `#/components/headers/Retry-After`) inside the document. */
function resolve<T>(doc: OpenAPIObject, value: T | ReferenceObject): T {
  if (value === null || typeof value !== 'object' || !('$ref' in value) || typeof value.$ref !== 'string') {
    return value as T;
  }
  const target = value.$ref
    .replace(/^#\//, '')
    .split('/')
    .map((part) => part.replaceAll('~1', '/').replaceAll('~0', '~'))
    .reduce<unknown>((node, part) => (node as Record<string, unknown> | undefined)?.[part], doc);
  if (target === undefined) throw new Error(`Unresolvable $ref ${value.$ref}`);
  return resolve(doc, target as T | ReferenceObject);
}

const methods = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;
type Method = (typeof methods)[number];

const isMethod = (method: string): method is Method => (methods as readonly string[]).includes(method);

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The document's path template matching a concrete path; literal paths win over templated ones. */
export function findPathTemplate(doc: OpenAPIObject, concretePath: string): string | undefined {
  let path = concretePath.split('?')[0] ?? '';
  const serverPath = doc.servers?.[0]?.url;
  if (serverPath?.startsWith('/') && serverPath !== '/' && path.startsWith(`${serverPath}/`)) {
    path = path.slice(serverPath.length);
  }
  const templates = Object.keys(doc.paths ?? {});
  if (templates.includes(path)) return path;
  return templates
    .filter((template) => {
      const pattern = template
        .split(/(\{[^}]+\})/)
        .map((part) => (part.startsWith('{') ? '[^/]+' : escapeRegExp(part)))
        .join('');
      return new RegExp(`^${pattern}$`).test(path);
    })
    .sort((a, b) => (a.match(/\{/g)?.length ?? 0) - (b.match(/\{/g)?.length ?? 0))[0];
}

function findOperation(doc: OpenAPIObject, method: string, path: string): OperationObject | string {
  const template = findPathTemplate(doc, path);
  if (!template) return `no path in the document matches ${path}`;
  const lower = method.toLowerCase();
  const pathItem: PathItemObject | undefined = doc.paths?.[template];
  const operation = pathItem && isMethod(lower) ? pathItem[lower] : undefined;
  return operation ?? `${method.toUpperCase()} ${template} is not in the document`;
}

const formatAjvError = (error: ErrorObject): string =>
  `${error.instancePath || '(body)'} ${error.message ?? 'is invalid'}${
    error.keyword === 'additionalProperties' ? `: '${String(error.params.additionalProperty)}'` : ''
  }${error.keyword === 'const' ? `: ${JSON.stringify(error.params.allowedValue)}` : ''}`;

function headerValue(headers: ResponseToCheck['headers'], name: string): string | undefined {
  if (!headers) return undefined;
  if (headers instanceof Headers) return headers.get(name) ?? undefined;
  const wanted = name.toLowerCase();
  return Object.entries(headers).find(([key]) => key.toLowerCase() === wanted)?.[1];
}

function checkHeaders(doc: OpenAPIObject, response: ResponseObject, headers: ResponseToCheck['headers']): string[] {
  const reasons: string[] = [];
  for (const [name, headerOrRef] of Object.entries(response.headers ?? {})) {
    const header = resolve<HeaderObject>(doc, headerOrRef);
    const raw = headerValue(headers, name);
    if (raw === undefined) {
      if (header.required) reasons.push(`header ${name} is required`);
      continue;
    }
    if (!header.schema) continue;
    const schema = resolve<SchemaObject>(doc, header.schema);
    // Header values are text; compare numbers as numbers.
    const value = (schema.type === 'integer' || schema.type === 'number') && raw.trim() !== '' ? Number(raw) : raw;
    const validate = validatorFor(doc, header.schema);
    if (!validate(value)) {
      reasons.push(...(validate.errors ?? []).map((error) => `header ${name}: ${formatAjvError(error)}`));
    }
  }
  return reasons;
}

/** Validates one response against the document. */
export function validateResponse(doc: OpenAPIObject, response: ResponseToCheck): ValidationResult {
  const operation = findOperation(doc, response.method, response.path);
  if (typeof operation === 'string') return { valid: false, errors: [operation] };
  const responses = operation.responses ?? {};
  const statusKey = [String(response.status), `${String(response.status)[0]}XX`, 'default'].find(
    (key) => key in responses,
  );
  if (!statusKey) {
    return {
      valid: false,
      errors: [`status ${response.status} is not documented for ${response.method.toUpperCase()} ${response.path}`],
    };
  }
  const documented = resolve<ResponseObject>(doc, responses[statusKey]);
  const errors: string[] = [];
  const schema = documented.content?.['application/json']?.schema;
  if (schema) {
    const validate = validatorFor(doc, schema);
    if (!validate(response.body)) errors.push(...(validate.errors ?? []).map(formatAjvError));
  } else if (response.body !== undefined && response.body !== '') {
    errors.push(`status ${response.status} documents no body, but one was sent`);
  }
  if (response.headers) errors.push(...checkHeaders(doc, documented, response.headers));
  return { valid: errors.length === 0, errors };
}

/** Throws a readable error unless the response matches the document. */
export function expectValidResponse(doc: OpenAPIObject, response: ResponseToCheck): void {
  const { valid, errors } = validateResponse(doc, response);
  if (valid) return;
  const body = JSON.stringify(response.body, null, 2) ?? 'undefined';
  throw new Error(
    `${response.method.toUpperCase()} ${response.path} ${response.status} does not match the OpenAPI document:\n` +
      `${errors.map((error) => `  - ${error}`).join('\n')}\nbody: ${body.length > 2000 ? `${body.slice(0, 2000)}…` : body}`,
  );
}
