/**
 * Hostile input, proven: every path × every method of the served OpenAPI document, and for each
 * declared operation requests generated from its schema, valid and broken (wrong types, missing and
 * extra fields, `__proto__` keys, NUL and lone surrogates, huge and 10,000-deep bodies, invalid JSON,
 * wrong content types, non-uuid and huge ids, odd query strings, missing, garbage, narrow and other
 * teams' keys), sent through the local API Gateway emulation to the real handlers. Every answer:
 * below 500; from a handler, a status and body the document gives the operation (every 4xx the
 * spec's `{ error }` shape); from the gateway, its own `{"message"}`; and no stack trace, source
 * path, table, queue or bucket name, AWS error name, `undefined` or `[object Object]` in a body or
 * header. Generated with a fixed fast-check seed, so a failure names a request that fails again.
 */
import fc from 'fast-check';
import type { OpenAPIObject, OperationObject, ParameterObject, ResponseObject, SchemaObject } from 'openapi3-ts/oas31';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateApiKey } from '../functions/domain/api-key.ts';
import { revokeApiKey } from '../functions/store/api-keys.ts';
import {
  deepJson,
  deepMarker,
  hostileStrings,
  inPool,
  type Json,
  mutate,
  mutationArb,
  type RawRequest,
  type RawResponse,
  rawClient,
  resolveSchema,
  schemaValue,
  serialize,
  withValue,
} from './support/fuzz-requests.ts';
import { validateResponse } from './support/openapi-validator.ts';
import { pairSteps, startSecondApi } from './support/runs.ts';
import {
  addKey,
  call,
  createWorkflow,
  type SeededTeam,
  seedTeam,
  startTestStack,
  startWorkers,
  type TestStack,
  waitForRun,
} from './support/stack.ts';
import { throttledDeps } from './support/throttled-dynamo.ts';

const seed = 20261124;
const methods = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD'] as const;
const gatewayNotFound = '{"message":"Not Found"}';
const gatewayTooLarge = '{"message":"Request Entity Too Large"}';

let stack: TestStack;
let doc: OpenAPIObject;
let client: ReturnType<typeof rawClient>;
let basePath: string;
let team: SeededTeam;
/** Authorization headers: the full key first, then every other kind of caller. */
let auths: Record<string, string | undefined>;
/** Ids that exist (this team's and another team's) and ids that do not. */
let ids: string[];
let leaks: RegExp[];
let inputWorkflow: string;
/** Query values only the service makes (a list's `nextCursor`), by parameter name. */
// A usage period that parses, so generated usage reads also reach the rollups' Query.
const realQueryValues: Record<string, string[]> = { from: ['2026-11-01'], to: ['2026-12-07'] };

/** A workflow that takes an input (`topic`) and stores free-form JSON (`JsonLoader.data`, `ConditionalSwitch.value`). */
const goodSteps = (): Json[] => [
  { key: 'in', type: 'TextEntry', label: 'In', config: { text: 'hi', apiInputKey: 'topic' } },
  { key: 'data', type: 'JsonLoader', config: { data: { a: [1, 'b'] } } },
  { key: 'gate', type: 'ConditionalSwitch', config: { operator: 'truthy', value: 'x' }, inputs: ['data'] },
  { key: 'out', type: 'TextConsole', inputs: ['in'] },
];

const stats = { requests: 0, fiveHundreds: 0, byStatus: new Map<number, number>(), operations: new Set<string>() };

interface Operation {
  id: string;
  method: string;
  template: string;
  operation: OperationObject;
  params: ParameterObject[];
  bodySchema?: Parameters<typeof resolveSchema>[1];
}

const operations = (): Operation[] =>
  Object.entries(doc.paths ?? {}).flatMap(([template, item]) =>
    methods.flatMap((method) => {
      const operation = (item as Record<string, OperationObject | undefined>)[method.toLowerCase()];
      if (!operation?.operationId) return [];
      const params = (operation.parameters ?? []) as ParameterObject[];
      const body = operation.requestBody && 'content' in operation.requestBody ? operation.requestBody : undefined;
      return [
        {
          id: operation.operationId,
          method,
          template,
          operation,
          params,
          bodySchema: body?.content?.['application/json']?.schema,
        },
      ];
    }),
  );

/** An id no item has: a parameter's value when a literal path is checked as its template's. */
const nilId = () => '00000000-0000-4000-8000-000000000000';

/** Whether a literal path (no parameter) is one `template` routes: its words where the template has a parameter. */
const sameShape = (template: string, literal: string): boolean =>
  !literal.includes('{') && new RegExp(`^${template.replace(/\{\w+\}/g, '[^/]+')}$`).test(literal);

/** The template with each path parameter filled: `pick(parameter)` gives its (already encoded) value. */
const fill = (op: Operation, pick: (param: ParameterObject) => string) =>
  `${basePath}${op.template.replace(/\{(\w+)\}/g, (_, name: string) => {
    const param = op.params.find((p) => p.in === 'path' && p.name === name);
    return param ? pick(param) : 'x';
  })}`;

/** A valid value for a path parameter: an enum's value or an id that exists (any of them: the handler decides). */
const validParam = (param: ParameterObject, n: number): string => {
  const schema = param.schema ? resolveSchema(doc, param.schema) : {};
  // A number in the path (a workflow's version): the numbers a workflow has, and one it does not.
  const numbers = schema.type === 'integer' ? ['1', '2', '999'] : undefined;
  const values = (schema.enum as string[] | undefined) ?? numbers ?? ids;
  return encodeURIComponent(values[n % values.length] as string);
};

/** Path ids that are not uuids, as they would be typed into a URL (some encoded, some raw). */
const hostileIds = [
  'not-a-uuid',
  '1',
  'undefined',
  'null',
  '%00',
  '%E0%A4%A',
  '%',
  '%ZZ',
  '..%2F..%2Fopenapi.json',
  '%F0%9F%98%80',
  '%ED%A0%80',
  encodeURIComponent("' OR 1=1 --"),
  encodeURIComponent('{"$ne":null}'),
  '__proto__',
  'constructor',
  'A'.repeat(4000),
  '00000000-0000-0000-0000-000000000000',
  'FFFFFFFF-FFFF-4FFF-BFFF-FFFFFFFFFFFF',
  '%7B11111111-1111-4111-8111-111111111111%7D',
  '11111111-1111-4111-8111-111111111111%20',
];

const oddQueries = [
  '?',
  '?a=1&a=2&a=3',
  '?__proto__[polluted]=1',
  '?constructor[prototype][polluted]=1',
  '?%',
  '?x=%00',
  '?x=%E0%A4%A',
  `?x=${'y'.repeat(3000)}`,
  '?limit=-1&cursor=%00&status=%F0%9F%98%80',
  '?limit=999999999999999999999&cursor=not-a-cursor',
  '?limit=abc&nextToken=%7B%7D',
  '?&&&=&==',
];

const contentTypes = [
  undefined,
  'text/plain',
  'application/octet-stream',
  'multipart/form-data; boundary=x',
  'application/x-www-form-urlencoded',
  'application/json; charset=utf-16',
  'application/xml',
  'image/png',
];

/** Step keys (and apiInputKeys) that meant something to objects, SQS or DynamoDB, or sit just past the pattern. */
const hostileKeys: string[] = [
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'a\ufffe',
  '\uffff',
  'x\ud800',
  '\udfff',
  'k'.repeat(65),
  '',
  ' ',
  'a.b',
];

/** Numbers at the edges of their types: DynamoDB's range, 2^53, doubles' ends, and strings that look like numbers. */
const edgeNumbers: Json[] = [
  1e-200,
  -1e-200,
  5e-324,
  1e-130,
  1e308,
  -1e308,
  2 ** 53,
  2 ** 53 - 1,
  1.2345678901234568e29, // what JSON's 123456789012345678901234567890 becomes
  0.1 + 0.2,
  'NaN',
  'Infinity',
  '-0',
  '1e999',
];

const idempotencyKeys = ['', ' ', 'k', 'x'.repeat(255), 'x'.repeat(256), 'x'.repeat(6000), 'caf\u00e9', '\u00ff\u00fe'];

/**
 * `Prefer` values (RFC 7240): malformed or out of range (ignored, answered at once), and short waits
 * (1 s at most: a wait over 25 s is served as 25, which the run-wait tests show).
 */
const preferValues = [
  '',
  'wait',
  'wait=',
  'wait=0',
  'wait=-1',
  'wait=1.5',
  'wait=abc',
  'wait=1e3',
  'wait=1',
  'wait="1"',
  'WAIT = 1 ; x=y, respond-async',
  ',,;;==',
  `wait=${'x'.repeat(6000)}`,
  'caf\u00e9',
  '\u00ff\u00fe',
];

/** Query values (as sent, encoded) that no declared parameter takes. */
const badQueryValues = [
  '',
  'abc',
  '-1',
  '0',
  '101',
  '1.5',
  '1e3',
  '0x10',
  '%00',
  '%F0%9F%98%80',
  '%ED%A0%80',
  'x&limit=1&limit=2',
  'not-a-uuid',
  'eyJhIjoxfQ',
  `${'z'.repeat(3000)}`,
];

/** A valid query string for the operation's declared query parameters (each one present or not). */
const queryArb = (op: Operation): fc.Arbitrary<string> => {
  const params = op.params.filter((p) => p.in === 'query' && p.schema);
  if (!params.length) return fc.constant('');
  const model = Object.fromEntries(
    params.map((p) => {
      const fromSchema = schemaValue(doc, p.schema as SchemaObject, { ids });
      const real = realQueryValues[p.name] ?? [];
      return [p.name, real.length ? fc.oneof(fc.constantFrom(...real), fromSchema) : fromSchema];
    }),
  );
  return fc.record(model, { requiredKeys: [] }).map((values) =>
    Object.keys(values).length
      ? `?${Object.entries(values)
          .map(([name, value]) => `${name}=${encodeURIComponent(String(value))}`)
          .join('&')}`
      : '',
  );
};

/** Headers a caller controls that the gateway or a handler reads. */
const oddHeaders: [string, string][] = [
  ['host', 'a b:99999'],
  ['host', '[::1'],
  ['if-none-match', '*'],
  ['if-none-match', 'W/"x", "y"'],
  ['accept-encoding', 'br;q=2, gzip;q=-1, *'],
  ['x-forwarded-for', '999.1.1.1, ::ffff:zz'],
  ['cookie', '__proto__=1; a'],
  ['content-length', '0'],
];

/** The raw bodies sent to operations that read none. */
const ignoredBodies = ['not JSON', 'a raw NUL in a string', 'invalid UTF-8 bytes', 'deep arrays', '65537 bytes'];

/** Raw bodies that are not what the operation takes. */
const rawBodies = (): { label: string; body: string | Buffer }[] => {
  const padded = (size: number) => {
    const shell = '{"name":""}';
    return `{"name":"${'x'.repeat(Math.max(0, size - shell.length))}"}`;
  };
  return [
    { label: 'truncated JSON', body: '{"name":' },
    { label: 'not JSON', body: 'hello' },
    { label: 'JSON with a trailing comma', body: '{"a":1,}' },
    { label: 'a JSON string', body: '"x"' },
    { label: 'a JSON number', body: '1e999' },
    { label: 'JSON null', body: 'null' },
    { label: 'JSON true', body: 'true' },
    { label: 'an empty array', body: '[]' },
    { label: 'a raw NUL in a string', body: '{"name":"a\u0000b"}' },
    { label: 'a lone surrogate escaped', body: '{"name":"\\ud800","inputs":{"\\udfff":"\\ud800"}}' },
    { label: 'invalid UTF-8 bytes', body: Buffer.from([0x7b, 0x22, 0x6e, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]) },
    { label: 'a UTF-16 body', body: Buffer.from('{"name":"x"}', 'utf16le') },
    { label: 'a BOM', body: '\ufeff{}' },
    { label: '__proto__ at the top', body: '{"__proto__":{"polluted":true},"constructor":{"prototype":{"x":1}}}' },
    { label: 'duplicate keys', body: '{"name":"a","name":{"x":1}}' },
    { label: 'deep arrays', body: `${'['.repeat(10_000)}${']'.repeat(10_000)}` },
    { label: 'deep objects', body: deepJson() },
    { label: 'deep inputs', body: `{"inputs":{"x":${deepJson()}}}` },
    { label: 'deep step config', body: `{"name":"n","steps":[{"key":"a","type":"TextEntry","config":${deepJson()}}]}` },
    { label: 'whitespace only', body: ' \n\t ' },
    { label: 'a huge number', body: `{"maxMultiplier":1${'0'.repeat(400)}}` },
    // Numbers at the edges of what JSON, JavaScript and DynamoDB hold (-0 cannot be written by JSON.stringify).
    { label: 'negative zero', body: '{"defer":true,"maxMultiplier":-0,"inputs":{}}' },
    { label: 'a tiny multiplier', body: '{"defer":true,"maxMultiplier":1e-200}' },
    { label: 'a huge integer', body: '{"defer":true,"maxMultiplier":123456789012345678901234567890}' },
    { label: 'a tiny deadline', body: '{"deadlineSeconds":1e-200}' },
    { label: 'a startBy at the edge of dates', body: '{"defer":true,"startBy":"+275760-09-13T00:00:00.000Z"}' },
    {
      label: 'edge numbers in a step config',
      body: '{"name":"n","steps":[{"key":"a","type":"JsonLoader","config":{"data":[-0,1e-200,1e308,9007199254740993]}}]}',
    },
    ...[64 * 1024 - 1, 64 * 1024, 64 * 1024 + 1, 256 * 1024, 256 * 1024 + 1, 1024 * 1024].map((size) => ({
      label: `${size} bytes`,
      body: padded(size),
    })),
    { label: 'over API Gateway’s 10 MB', body: padded(10 * 1024 * 1024 + 1) },
  ];
};

interface Sent extends RawRequest {
  label: string;
  /** The operation the gateway should route it to, or undefined when no route matches. */
  op?: Operation;
  /** A CORS preflight (OPTIONS) of a path whose GET accepts a run token: answered 204 by its function. */
  preflight?: true;
  /** The path its answer is checked as, when a literal path is routed by a parameter's template (`GET /runs/batch`). */
  documentedAs?: string;
}

/** Whether the operation accepts a run token (`access_token`) in place of the key. */
const takesRunToken = (op: Operation) => op.operation.security?.some((r) => 'runToken' in r) === true;

/** `access_token` values (as sent, encoded), set in `beforeAll`: real tokens, altered ones, and garbage. */
let accessTokens: Record<string, string> = {};

const problemsOf = (sent: Sent, answer: RawResponse): string[] => {
  const problems: string[] = [];
  if (answer.status >= 500) problems.push(`status ${answer.status}`);
  const contentType = (answer.headers['content-type'] ?? '').split(';')[0]?.trim() ?? '';
  const isHead = sent.method === 'HEAD';
  if (sent.preflight) {
    if (answer.status !== 204 || answer.headers['access-control-allow-origin'] !== '*')
      problems.push(`preflight answered ${answer.status}`);
  } else if (!sent.op) {
    // Not a route: API Gateway's own answer, never a handler's.
    const tooLarge = Buffer.byteLength(sent.body ?? '') > 10 * 1024 * 1024;
    if (answer.status !== (tooLarge ? 413 : 404)) problems.push(`gateway answered ${answer.status}`);
    else if (!isHead && answer.text !== (tooLarge ? gatewayTooLarge : gatewayNotFound))
      problems.push(`gateway body ${answer.text.slice(0, 200)}`);
  } else if (Buffer.byteLength(sent.body ?? '') > 10 * 1024 * 1024) {
    if (answer.status !== 413 || answer.text !== gatewayTooLarge) problems.push(`over 10 MB: ${answer.status}`);
  } else if (contentType === 'application/json') {
    let body: unknown;
    try {
      body = JSON.parse(answer.text);
    } catch {
      problems.push('JSON content type, body not JSON');
    }
    const path = sent.documentedAs ?? sent.path.split('?')[0] ?? '';
    const { errors } = validateResponse(doc, {
      method: sent.method,
      path,
      status: answer.status,
      body,
      headers: answer.headers,
    });
    problems.push(...errors.map((e) => `not as documented: ${e}`));
    // The spec's error shape; the one exception is documented: an unknown asset of the public docs
    // page answers as the gateway does for a path with no route (the route stands for three files).
    const gatewayLike =
      sent.op.operation.security?.length === 0 && answer.status === 404 && answer.text === gatewayNotFound;
    if (answer.status >= 400 && typeof (body as { error?: unknown })?.error !== 'string' && !gatewayLike)
      problems.push('a 4xx without { error: string }');
  } else {
    // A public page or asset: a documented status and media type.
    const documented = sent.op.operation.responses?.[String(answer.status)] as ResponseObject | undefined;
    if (!documented) problems.push(`status ${answer.status} not documented`);
    else if (answer.text !== '' && !Object.keys(documented.content ?? {}).includes(contentType))
      problems.push(`content type ${contentType} not documented for ${answer.status}`);
  }
  // Static pages and assets are our own files (the renderer's code says `undefined`); everything else is checked.
  const staticContent = answer.status < 400 && contentType !== 'application/json';
  // A presigned URL (an upload's, a run file's) names its bucket by design: the caller must reach it.
  const answered = answer.status < 300 ? answer.text.replace(/"url":"[^"]*"/g, '"url":"…"') : answer.text;
  const texts = [...(staticContent ? [] : [answered]), ...Object.entries(answer.headers).map(([k, v]) => `${k}: ${v}`)];
  for (const text of texts)
    for (const leak of leaks) {
      const found = leak.exec(text)?.[0];
      if (found) problems.push(`leaks ${JSON.stringify(found)}: ${text.slice(0, 300)}`);
    }
  return problems;
};

/** Problems found, grouped by kind (operation, status, problem) with one example request each. */
const failures = new Map<string, { count: number; example: string }>();

const sendAll = async (requests: Sent[]) => {
  await inPool(requests, 4, async (sent) => {
    const answer = await client.send(sent);
    stats.requests++;
    stats.byStatus.set(answer.status, (stats.byStatus.get(answer.status) ?? 0) + 1);
    if (answer.status >= 500) stats.fiveHundreds++;
    if (sent.op) stats.operations.add(sent.op.id);
    for (const problem of problemsOf(sent, answer)) {
      // FUZZ_VERBOSE=1 lists every failing request instead of one per kind.
      const kind = `${sent.method} ${sent.op?.template ?? '(no route)'} → ${answer.status}: ${problem.slice(0, 60)}${process.env.FUZZ_VERBOSE ? sent.label : ''}`;
      const seen = failures.get(kind);
      if (seen) seen.count++;
      else failures.set(kind, { count: 1, example: `${sent.path.slice(0, 120)} [${sent.label}]: ${problem}` });
    }
  });
};

const expectNoFailures = () => {
  const found = [...failures.values()].map(({ count, example }) => `${count} × like ${example}`);
  failures.clear();
  expect(found, `${found.length} kinds of problem`).toEqual([]);
};

/**
 * Every message SQS (fauxqs, which refuses what SQS refuses) turned down during the fuzz. A refused
 * step message is a run that never leaves `queued`, holding its credits and its workflow's lock.
 */
const refusedMessages: string[] = [];

beforeAll(async () => {
  stack = await startTestStack();
  // The stack's own client, which the local API's handlers send with: its refusals are the runs'.
  stack.deps.sqs.middlewareStack.add(
    (next, context) => async (args) => {
      try {
        const result = await next(args);
        const failed = (result.output as { Failed?: { Code?: string }[] }).Failed ?? [];
        for (const f of failed) refusedMessages.push(`${context.commandName}: ${f.Code}`);
        return result;
      } catch (error) {
        refusedMessages.push(`${context.commandName}: ${(error as Error).name}`);
        throw error;
      }
    },
    { step: 'initialize', name: 'fuzzRefusals' },
  );
  const served = await call(stack.baseUrl, '/openapi.json');
  doc = served.body as unknown as OpenAPIObject;
  basePath = doc.servers?.[0]?.url ?? '';
  client = rawClient(stack.baseUrl, 4);

  const seeded = await seedTeam(stack.deps, { credits: 100_000 });
  const full = await addKey(stack.deps, seeded.teamId, { rateLimitPerMinute: 1_000_000 });
  team = { ...seeded, key: full.key, keyId: full.keyId };
  const workflowId = await createWorkflow(stack, team, pairSteps);
  const deferredWorkflow = await createWorkflow(stack, team, pairSteps, 'Deferred');
  inputWorkflow = await createWorkflow(stack, team, goodSteps(), 'Inputs');
  const started = await call(stack.baseUrl, `/workflows/${workflowId}/runs`, { key: team.key, method: 'POST' });
  const deferred = await call(stack.baseUrl, `/workflows/${deferredWorkflow}/runs`, {
    key: team.key,
    method: 'POST',
    body: { defer: true, maxMultiplier: 0.1 },
  });
  // Two of each, so each list has a second page and its cursor.
  const secondRun = await call(stack.baseUrl, `/workflows/${inputWorkflow}/runs`, {
    key: team.key,
    method: 'POST',
    body: { inputs: { topic: 'otters' } },
  });
  const secondDeferred = await call(stack.baseUrl, `/workflows/${inputWorkflow}/runs`, {
    key: team.key,
    method: 'POST',
    body: { defer: true, maxMultiplier: 0.1 },
  });
  expect([started.status, deferred.status, secondRun.status, secondDeferred.status]).toEqual([200, 202, 200, 202]);

  const other = await seedTeam(stack.deps, { credits: 100, key: { rateLimitPerMinute: 1_000_000 } });
  const otherWorkflow = await createWorkflow(stack, other, pairSteps);
  const readOnly = await addKey(stack.deps, team.teamId, { scopes: ['workflows:read'], rateLimitPerMinute: 1_000_000 });
  const oneWorkflow = await addKey(stack.deps, team.teamId, {
    workflowIds: [deferredWorkflow],
    rateLimitPerMinute: 1_000_000,
  });
  const revoked = await addKey(stack.deps, team.teamId, { rateLimitPerMinute: 1_000_000 });
  expect(await revokeApiKey(stack.deps, revoked.keyId)).toBe(true);
  const expired = await addKey(stack.deps, team.teamId, { expiresAt: '2020-01-01T00:00:00.000Z' });
  const file = await call(stack.baseUrl, '/files', {
    key: team.key,
    method: 'POST',
    body: { name: 'notes.txt', contentType: 'text/plain', size: 5 },
  });
  expect(file.status).toBe(201);
  // A batch of one run, so GetBatch and `GET /runs?batchId=` meet an id of the team's.
  const batch = await call(stack.baseUrl, '/runs/batch', {
    key: team.key,
    method: 'POST',
    body: { runs: [{ workflowId: await createWorkflow(stack, team, pairSteps, 'Batch') }] },
  });
  expect(batch.status).toBe(200);
  // A webhook endpoint (a public URL: nothing is POSTed), so its routes meet an id that exists.
  const endpoint = await call(stack.baseUrl, '/webhook-endpoints', {
    key: team.key,
    method: 'POST',
    body: { url: 'https://hooks.example.com/fuzz', events: ['run.completed'] },
  });
  expect(endpoint.status).toBe(201);
  // A bulk cancel (of a tag no run has), so GET /bulk-actions/{bulkActionId} meets an id that exists.
  const bulk = await call(stack.baseUrl, '/runs/cancel', {
    key: team.key,
    method: 'POST',
    body: { filter: { tag: 'fuzz-none' } },
  });
  expect(bulk.status).toBe(202);
  ids = [
    String(file.body.fileId),
    workflowId,
    deferredWorkflow,
    team.agentId,
    team.projectId,
    String(started.body.jobId),
    String(deferred.body.deferredJobId),
    otherWorkflow,
    other.agentId,
    '7d444840-9dc0-11d1-b245-5ffdce74fad2',
    String(endpoint.body.endpointId),
    String(batch.body.batchId),
    String(bulk.body.bulkActionId),
  ];
  auths = {
    'full key': `Bearer ${team.key}`,
    'no header': undefined,
    'empty header': '',
    'Bearer alone': 'Bearer',
    garbage: 'Bearer garbage',
    'Basic scheme': `Basic ${Buffer.from('a:b').toString('base64')}`,
    'lower-case bearer': `bearer ${team.key}`,
    'two keys': `Bearer ${team.key} ${team.key}`,
    'unknown well-formed key': `Bearer ${generateApiKey()}`,
    'huge header': `Bearer ${'k'.repeat(8000)}`,
    'another team': `Bearer ${other.key}`,
    'revoked key': `Bearer ${revoked.key}`,
    'expired key': `Bearer ${expired.key}`,
    'read-only scope': `Bearer ${readOnly.key}`,
    'one workflow': `Bearer ${oneWorkflow.key}`,
  };
  // Run tokens: one real (for a run of the team's), and what a page might send instead of one.
  const made = await call(stack.baseUrl, `/runs/${started.body.jobId}/tokens`, { key: team.key, method: 'POST' });
  expect(made.status).toBe(201);
  const token = String(made.body.token);
  const [head, payload, sig] = token.split('.') as [string, string, string];
  accessTokens = {
    'real token': encodeURIComponent(token),
    'altered signature': encodeURIComponent(`${head}.${payload}.${sig.slice(1)}A`),
    'payload of garbage': encodeURIComponent(`${head}.${Buffer.from('a b c 1').toString('base64url')}.${sig}`),
    'huge payload': encodeURIComponent(`${head}.${'A'.repeat(6000)}.${sig}`),
    empty: '',
    'an API key': encodeURIComponent(team.key),
    'two tokens': `${encodeURIComponent(token)}&access_token=${encodeURIComponent(token)}`,
    garbage: '%00%ED%A0%80',
    dots: '....',
  };
  // A real cursor of each list of the team that pages (any GET under no id whose document declares
  // `cursor`), so valid queries page. An endpoint's delivery log pages by a delivery's id: it has none here.
  const pagingLists = operations().filter(
    (o) => o.method === 'GET' && !o.template.includes('{') && o.params.some((p) => p.name === 'cursor'),
  );
  for (const op of pagingLists) {
    const page = await call(stack.baseUrl, `${op.template}?limit=1`, { key: team.key });
    expect(typeof page.body.nextCursor, `${op.template} pages`).toBe('string');
    realQueryValues.cursor = [...(realQueryValues.cursor ?? []), String(page.body.nextCursor)];
  }
  const { resources } = stack;
  const names = [
    resources.tableName,
    resources.bucket,
    resources.prefix,
    new URL(resources.dynamoDbEndpoint).host,
    new URL(resources.sqsS3Endpoint).host,
    ...[...Object.values(resources.queueUrls), resources.dlqUrl].map((url) => url.split('/').pop()),
  ].filter((name): name is string => Boolean(name));
  leaks = [
    // A stack frame, `at fn (file:1:2)`: no parenthesis inside, so a long answer is read in one pass
    // (`.*` twice made the served document's 200 KB a matter of seconds each).
    /at [^()\n]*\([^()\n]*:\d+:\d+\)/,
    /node:internal/,
    /\/functions\//,
    /\.ts:/,
    /\bundefined\b/,
    /\[object Object\]/,
    // AWS error names (an SDK error's `name`), and JavaScript's own errors.
    /\b(ConditionalCheckFailed|ValidationException|ResourceNotFound|Throttling|TransactionCanceled|TransactionConflict|ProvisionedThroughputExceeded|RequestLimitExceeded|ItemCollectionSizeLimitExceeded|SerializationException|InternalServerError|UnrecognizedClient|QueueDoesNotExist|InvalidParameterValue|MissingParameter|AccessDenied|NoSuchBucket|NoSuchKey|RangeError|TypeError|ReferenceError|Maximum call stack)\w*/,
    ...names.map((name) => new RegExp(name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))),
  ];
}, 120_000);

afterAll(async () => {
  client?.close();
  await stack?.close();
  const statuses = [...stats.byStatus].sort(([a], [b]) => a - b).map(([status, n]) => `${status}: ${n}`);
  console.info(
    `fuzz: ${stats.requests.toLocaleString('en')} requests over ${stats.operations.size} operations, ${stats.fiveHundreds} × 5xx (${statuses.join(', ')})`,
  );
});

describe('fuzz: every endpoint, from the served OpenAPI document', () => {
  it('the checks catch what they look for (so a pass means something)', () => {
    const op = operations().find((o) => o.id === 'GetRun') as Operation;
    const sent: Sent = { op, method: 'GET', path: `${basePath}/runs/${ids[4]}`, label: 'self-check' };
    const json = { 'content-type': 'application/json' };
    const answers: [RawResponse, RegExp][] = [
      [{ status: 500, headers: json, text: '{"error":"Server error: x"}' }, /status 500/],
      [{ status: 404, headers: json, text: '{"message":"Run not found"}' }, /not as documented/],
      [{ status: 404, headers: json, text: `{"error":"at get (/var/task/functions/x.ts:1:2)"}` }, /leaks/],
      [{ status: 404, headers: json, text: `{"error":"no ${stack.resources.tableName}"}` }, /leaks/],
      [{ status: 404, headers: json, text: '{"error":"ConditionalCheckFailedException"}' }, /leaks/],
      [{ status: 404, headers: json, text: '{"error":"got undefined"}' }, /leaks/],
      [{ status: 404, headers: { ...json, 'x-debug': '[object Object]' }, text: '{"error":"Run not found"}' }, /leaks/],
      [{ status: 404, headers: json, text: gatewayNotFound }, /a 4xx without \{ error: string \}/],
    ];
    for (const [answer, problem] of answers) expect(problemsOf(sent, answer).join('; '), answer.text).toMatch(problem);
    expect(problemsOf(sent, { status: 404, headers: json, text: '{"error":"Run not found"}' })).toEqual([]);
    expect(problemsOf({ ...sent, op: undefined }, { status: 404, headers: json, text: gatewayNotFound })).toEqual([]);
    expect(problemsOf({ ...sent, op: undefined }, { status: 405, headers: json, text: gatewayNotFound })).not.toEqual(
      [],
    );
    // The raw bodies sent where none is read are picked by label: a renamed one must not drop out unseen.
    expect(rawBodies().map(({ label }) => label)).toEqual(expect.arrayContaining(ignoredBodies));
    // The limits a schema states are passed by a mutation: a run start's tags and metadata.
    const runStart = operations().find((o) => o.id === 'RunWorkflow') as Operation;
    const labelled = { tags: ['a'], metadata: { k: 'v' } };
    const past = Array.from(
      { length: 8 },
      (_, at) => mutate(doc, runStart.bodySchema as SchemaObject, labelled, { kind: 'past a limit', at })?.label,
    );
    expect(past).toEqual(
      expect.arrayContaining([
        'tags past its limit',
        'tags.0 past its limit',
        'metadata past its limit',
        'metadata.k past its limit',
      ]),
    );
    // The valid run starts generated include a lifecycle events' choice, with a callbackUrl
    // (a run that sends them) and without (a 400 naming the field), and a redelivery names a delivery.
    const generated = fc.sample(schemaValue(doc, runStart.bodySchema as SchemaObject, { ids }), {
      seed,
      numRuns: 40,
    }) as Record<string, unknown>[];
    // They include a deadline and a deferred run's startBy (past, future or far ahead: a 422 or accepted).
    expect(generated.some((b) => typeof b.deadlineSeconds === 'number')).toBe(true);
    expect(generated.some((b) => typeof b.startBy === 'string' && b.defer === true)).toBe(true);
    const choosing = generated.filter((b) => Array.isArray(b.webhookEvents));
    expect(choosing.some((b) => b.callbackUrl !== undefined)).toBe(true);
    expect(choosing.some((b) => b.callbackUrl === undefined)).toBe(true);
    expect(operations().find((o) => o.id === 'RedeliverWebhook')?.bodySchema).toBeDefined();
  });

  it('every path × every method: a declared one reaches its handler, any other answers API Gateway’s 404', async () => {
    const ops = operations();
    expect(ops.length).toBeGreaterThanOrEqual(11);
    const requests: Sent[] = [];
    for (const template of Object.keys(doc.paths ?? {})) {
      for (const method of methods) {
        // A literal path (`/runs/batch`) another method does not declare is that method's route with a
        // parameter where the path has a word (`GET /runs/{jobId}`), as API Gateway picks routes.
        const routedBy = (o: Operation) => o.template === template || sameShape(o.template, template);
        const op =
          ops.find((o) => o.template === template && o.method === method) ??
          ops.find((o) => o.method === method && routedBy(o));
        const path = `${basePath}${template.replace(/\{\w+\}/g, () => encodeURIComponent(ids[0] as string))}`;
        // OPTIONS where a GET takes a run token: that GET's CORS preflight, no route of the document.
        const preflight = method === 'OPTIONS' && ops.some((o) => routedBy(o) && takesRunToken(o)) ? true : undefined;
        const documentedAs =
          op && op.template !== template ? `${basePath}${op.template.replace(/\{\w+\}/g, nilId)}` : undefined;
        requests.push({
          method,
          path,
          label: 'method',
          op,
          ...(preflight && { preflight }),
          ...(documentedAs && { documentedAs }),
          headers: { authorization: auths['full key'] as string },
        });
      }
    }
    // Paths beside the declared ones are not routes.
    for (const path of [
      '/',
      basePath,
      `${basePath}/`,
      `${basePath}/workflows/`,
      `${basePath}//workflows`,
      `${basePath}/Workflows`,
      `${basePath}/runs/`,
      `${basePath}/runs/${ids[4]}/cancel/x`,
      `${basePath}/nope`,
      '/workflows',
      `${basePath}/openapi.json/x`,
    ])
      requests.push({
        method: 'GET',
        path,
        label: 'no route',
        headers: { authorization: auths['full key'] as string },
      });
    await sendAll(requests);
    expectNoFailures();
  });

  it('requests generated from each operation’s schema, valid and broken, answer below 500 as documented, leaking nothing', async () => {
    const requests: Sent[] = [];
    const authNames = Object.keys(auths);
    const header = (name: string): Record<string, string> =>
      auths[name] === undefined ? {} : { authorization: auths[name] as string };
    for (const op of operations()) {
      const pools = { ids };
      const bodyArb = op.bodySchema ? schemaValue(doc, op.bodySchema, pools) : fc.constant(undefined);
      const json = { 'content-type': 'application/json' };
      // Valid: from the schema, with ids that exist, on the full key.
      // As many as there is something to vary: a body, else the ids in the path, else nothing.
      const numRuns = op.bodySchema ? 40 : op.params.some((p) => p.in === 'path') ? 12 : 4;
      const valid = fc.sample(fc.tuple(bodyArb, fc.nat(), queryArb(op)), { seed, numRuns });
      for (const [body, n, query] of valid) {
        requests.push({
          op,
          method: op.method,
          path: `${fill(op, (p) => validParam(p, n))}${query}`,
          label: 'valid',
          headers: { ...header('full key'), ...(body === undefined ? {} : json) },
          body: body === undefined ? undefined : serialize(body as Json),
        });
      }
      // Broken bodies: one mutation of a valid one each.
      if (op.bodySchema) {
        const schema = op.bodySchema;
        for (const [body, mutation, n] of fc.sample(fc.tuple(bodyArb, mutationArb, fc.nat()), {
          seed,
          numRuns: 120,
        })) {
          const broken = mutate(doc, schema, body as Json, mutation);
          if (!broken) continue;
          requests.push({
            op,
            method: op.method,
            path: fill(op, (p) => validParam(p, n)),
            label: broken.label,
            headers: { ...header('full key'), ...json },
            body: serialize(broken.body),
          });
        }
      }
      // Raw bodies, on every operation (a GET's body is ignored, never a 500).
      // All of them where a body is read; elsewhere (a body the handler ignores) a few kinds, none of megabytes.
      const raw = rawBodies().filter(({ label }) => op.bodySchema || ignoredBodies.includes(label));
      for (const { label, body } of raw) {
        requests.push({
          op,
          method: op.method,
          path: fill(op, (p) => validParam(p, 0)),
          label,
          headers: { ...header('full key'), ...json },
          body,
        });
      }
      // Wrong content types with a valid body.
      const [sampleBody] = fc.sample(bodyArb, { seed, numRuns: 1 });
      for (const type of contentTypes) {
        requests.push({
          op,
          method: op.method,
          path: fill(op, (p) => validParam(p, 1)),
          label: `content type ${type}`,
          headers: { ...header('full key'), ...(type ? { 'content-type': type } : {}) },
          body: serialize((sampleBody ?? { x: 1 }) as Json),
        });
      }
      // Every kind of caller.
      for (const [i, name] of authNames.entries()) {
        requests.push({
          op,
          method: op.method,
          path: fill(op, (p) => validParam(p, i)),
          label: `auth: ${name}`,
          headers: header(name),
        });
      }
      // Ids that are not uuids, or not ours.
      if (op.params.some((p) => p.in === 'path')) {
        for (const id of [...hostileIds, ...ids.map(encodeURIComponent)]) {
          requests.push({
            op,
            method: op.method,
            path: fill(op, () => id),
            label: `id ${id.slice(0, 40)}`,
            headers: header('full key'),
          });
        }
      }
      // Each declared query parameter with values of the wrong kind, hostile, or twice.
      for (const param of op.params.filter((p) => p.in === 'query')) {
        for (const value of badQueryValues) {
          requests.push({
            op,
            method: op.method,
            path: `${fill(op, (p) => validParam(p, 5))}?${param.name}=${value}`,
            label: `query ${param.name}=${value.slice(0, 30)}`,
            headers: header('full key'),
          });
        }
      }
      for (const query of oddQueries) {
        requests.push({
          op,
          method: op.method,
          path: `${fill(op, (p) => validParam(p, 2))}${query}`,
          label: `query ${query.slice(0, 40)}`,
          headers: header('full key'),
        });
      }
      // A run token in place of the key, where the operation takes one: with no key, and beside one.
      if (takesRunToken(op)) {
        for (const [name, value] of Object.entries(accessTokens)) {
          for (const n of [5, 0, 7]) {
            requests.push({
              op,
              method: op.method,
              path: `${fill(op, (p) => validParam(p, n))}?access_token=${value}`,
              label: `access_token: ${name}`,
              headers: n === 0 ? header('garbage') : {},
            });
          }
        }
      }
      for (const [name, value] of oddHeaders) {
        requests.push({
          op,
          method: op.method,
          path: fill(op, (p) => validParam(p, 4)),
          label: `header ${name}`,
          headers: { ...header('full key'), [name]: value },
        });
      }
      for (const prefer of preferValues) {
        requests.push({
          op,
          method: op.method,
          path: fill(op, (p) => validParam(p, 6)),
          label: `Prefer ${prefer.slice(0, 20)}`,
          headers: { ...header('full key'), prefer },
        });
      }
      for (const key of idempotencyKeys) {
        requests.push({
          op,
          method: op.method,
          path: fill(op, (p) => validParam(p, 3)),
          label: `Idempotency-Key ${key.slice(0, 10)}`,
          headers: { ...header('full key'), 'idempotency-key': key },
        });
      }
    }
    await sendAll(requests);
    expectNoFailures();
    // Its requests grow with the routes: about 15 s alone, 4,050 requests over 25 operations.
  }, 300_000);

  it('hostile values inside otherwise good bodies (stored or refused) answer below 500, leaking nothing, wedging no run', async () => {
    const ops = operations();
    const create = ops.find((o) => o.id === 'CreateWorkflow');
    const start = ops.find((o) => o.template === '/workflows/{id}/runs' && o.method === 'POST');
    const estimate = ops.find((o) => o.template === '/workflows/{id}/estimate' && o.method === 'POST');
    if (!create || !start || !estimate)
      throw new Error('the document lost POST /workflows, a run start or its estimate');
    const goodWorkflow: Json = { name: 'Good', agentId: team.agentId, steps: goodSteps() };
    const goodRun: Json = { inputs: { topic: 'otters' }, defer: true, maxMultiplier: 0.1, mode: 'draft' };
    const places: [Operation, Json, (string | number)[]][] = [
      [create, goodWorkflow, ['name']],
      [create, goodWorkflow, ['steps', 0, 'label']],
      [create, goodWorkflow, ['steps', 0, 'config', 'text']],
      [create, goodWorkflow, ['steps', 1, 'config', 'data']],
      [create, goodWorkflow, ['steps', 1, 'config', 'data', '__proto__']],
      [create, goodWorkflow, ['steps', 2, 'config', 'value']],
      [create, goodWorkflow, ['steps', 0, 'key']],
      [create, goodWorkflow, ['steps', 0, 'config', 'apiInputKey']],
      [create, goodWorkflow, ['steps', 3, 'inputs', 0]],
      // An estimate reads a start's body and runs its checks (at once, not deferred: the admission too).
      [estimate, { ...goodRun, defer: false }, ['inputs', 'topic']],
      [estimate, goodRun, ['maxMultiplier']],
      [start, goodRun, ['inputs', 'topic']],
      [start, goodRun, ['callbackSecret']],
      [start, goodRun, ['maxMultiplier']],
      // What a start does on a busy workflow, the latest a waiting run may start, and its deadline.
      [start, goodRun, ['onConflict']],
      [start, goodRun, ['startBy']],
      [start, goodRun, ['deadlineSeconds']],
    ];
    const values: Json[] = [
      ...hostileStrings,
      ...hostileKeys,
      ...edgeNumbers,
      deepMarker,
      JSON.parse('{"__proto__":{"polluted":true}}') as Json,
      { constructor: { prototype: { polluted: true } } },
    ];
    const requests: Sent[] = places.flatMap(([op, body, at]) =>
      values.map((value, i) => ({
        op,
        method: op.method,
        path:
          op === create
            ? `${basePath}/workflows`
            : `${basePath}/workflows/${inputWorkflow}/${op === estimate ? 'estimate' : 'runs'}`,
        label: `${at.join('.')} = hostile #${i}`,
        headers: { authorization: auths['full key'] as string, 'content-type': 'application/json' },
        body: serialize(withValue(body, at, value)),
      })),
    );
    // The good bodies themselves are accepted, so each answer above is the hostile value's.
    expect((await client.send({ ...requests[0], body: serialize(goodWorkflow) } as Sent)).status).toBe(201);
    const accepted = await client.send({ ...(requests.at(-1) as Sent), body: serialize(goodRun) });
    expect(accepted.status, accepted.text).toBe(202);
    await sendAll(requests);
    expectNoFailures();
    // A workflow whose step is keyed by a hostile key, if one is ever accepted, starts and runs: no 500,
    // and no step message refused (U+FFFE in a key was accepted, then its run never left `queued`).
    for (const key of hostileKeys) {
      const steps: Json[] = [
        { key, type: 'TextEntry', config: { text: 'x' } },
        { key: 'out', type: 'TextConsole', inputs: [key] },
      ];
      const created = await client.send({
        ...(requests[0] as Sent),
        body: serialize({ name: 'Keyed', agentId: team.agentId, steps }),
      });
      expect(created.status, `${JSON.stringify(key)}: ${created.text}`).toBeLessThan(500);
      if (created.status !== 201) continue;
      const { workflowId } = JSON.parse(created.text) as { workflowId: string };
      const started = await client.send({
        ...(requests.at(-1) as Sent),
        path: `${basePath}/workflows/${workflowId}/runs`,
        body: '{}',
      });
      expect(started.status, `${JSON.stringify(key)}: ${started.text}`).toBeLessThan(500);
    }
    expect(refusedMessages, 'SQS refused messages: their runs stay queued').toEqual([]);
    // The strings were stored as sent, and read back so (a lone surrogate as its JSON escape).
    const listed = await call(stack.baseUrl, '/workflows', { key: team.key });
    const names = (listed.body.workflows as { name: string }[]).map((w) => w.name);
    for (const name of ['\u0000', 'a\u0000b', '😀𝔘𐍈', '\ud800', 'x\udfff', '\u202eevil'])
      expect(names, JSON.stringify(name)).toContain(name);
  });
});

/** What the fuzz found, each pinned by the smallest request that showed it (all answered 500 before the fix). */
describe('fuzz findings, pinned', () => {
  const nested = (levels: number): string => `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;
  const post = (path: string, body: string) =>
    client.send({
      method: 'POST',
      path: `${basePath}${path}`,
      headers: { authorization: auths['full key'] as string, 'content-type': 'application/json' },
      body,
    });
  const jsonLoaderBody = (data: string, name = 'Deep') =>
    `{"name":"${name}","agentId":"${team.agentId}","steps":[{"key":"data","type":"JsonLoader","config":{"data":${data}}},{"key":"out","type":"JsonInspector","inputs":["data"]}]}`;

  it('a body nested deeper than 20 levels is a 400 (10,000 levels in a stored config was a 500); 20 levels is stored and runs', async () => {
    // body, steps, a step, config, then `data` and 15 levels inside it: 20.
    const deepest = await post('/workflows', jsonLoaderBody(nested(16)));
    expect(deepest.status, deepest.text).toBe(201);
    for (const levels of [17, 10_000]) {
      const refused = await post('/workflows', jsonLoaderBody(nested(levels)));
      expect([refused.status, JSON.parse(refused.text)]).toEqual([
        400,
        { error: 'Invalid request body: nested more than 20 levels deep' },
      ]);
    }
    // The deepest body a caller may send runs to its end: its data fits in the step's stored outputs too.
    const workers = await startWorkers(stack);
    try {
      const { workflowId } = JSON.parse(deepest.text) as { workflowId: string };
      const started = await post(`/workflows/${workflowId}/runs`, '{}');
      expect(started.status, started.text).toBe(200);
      const ended = await waitForRun(stack, team.key, String(JSON.parse(started.text).jobId));
      expect(ended.body.status, JSON.stringify(ended.body)).toBe('completed');
    } finally {
      await workers.stop();
    }
  });

  it('a __proto__ or constructor key anywhere in a body is a 400 naming it (stored in a config they were 500s)', async () => {
    const refused = await post('/workflows', jsonLoaderBody('{"__proto__":{"x":1}}', 'Proto'));
    expect([refused.status, JSON.parse(refused.text)]).toEqual([
      400,
      { error: 'Invalid request body: steps[0].config.data.__proto__: this key is not allowed' },
    ]);
    const onRun = await post(`/workflows/${ids[0]}/runs`, '{"inputs":{"__proto__":"x"}}');
    expect([onRun.status, JSON.parse(onRun.text)]).toEqual([
      400,
      { error: 'Invalid request body: inputs.__proto__: this key is not allowed' },
    ]);
    // `constructor` too (the SDK's marshalling reads `value.constructor.name` to tell a plain object from a class instance).
    for (const data of ['{"constructor":"x"}', '[{"a":{"constructor":{"prototype":1}}}]']) {
      const ctor = await post('/workflows', jsonLoaderBody(data, 'Ctor'));
      expect([ctor.status, JSON.parse(ctor.text).error]).toEqual([
        400,
        expect.stringMatching(/constructor: this key is not allowed$/),
      ]);
    }
    // Any other key is ordinary: `prototype`, `toString`, `hasOwnProperty` are stored as sent.
    const ordinary = await post(
      '/workflows',
      jsonLoaderBody('{"prototype":{"toString":1,"hasOwnProperty":[]}}', 'Plain'),
    );
    expect(ordinary.status, ordinary.text).toBe(201);
  });

  it('a path id too long for a DynamoDB key, or with a malformed escape, reads as not found (both were 500s)', async () => {
    for (const id of ['A'.repeat(4000), '%E0%A4%A', '%', '%ED%A0%80']) {
      for (const [method, path, error] of [
        ['GET', `/runs/${id}`, 'Run not found'],
        ['POST', `/runs/${id}/cancel`, 'Run not found'],
        ['GET', `/deferred-runs/${id}`, 'Deferred run not found'],
        ['DELETE', `/deferred-runs/${id}`, 'Deferred run not found'],
        ['POST', `/workflows/${id}/runs`, 'Workflow not found'],
        ['POST', `/agents/${id}/runs`, 'Agent not found'],
        ['GET', `/webhook-endpoints/${id}`, 'Webhook endpoint not found'],
        ['DELETE', `/webhook-endpoints/${id}`, 'Webhook endpoint not found'],
        ['POST', `/webhook-endpoints/${id}/test`, 'Webhook endpoint not found'],
        ['GET', `/bulk-actions/${id}`, 'Bulk action not found'],
      ] as const) {
        const answer = await client.send({
          method,
          path: `${basePath}${path}`,
          headers: { authorization: auths['full key'] as string },
        });
        expect([answer.status, answer.text], `${method} ${path.slice(0, 60)}`).toEqual([
          404,
          JSON.stringify({ error }),
        ]);
      }
    }
  });

  it('a missing field is named as required, never "received undefined"', async () => {
    const answer = await post('/workflows', `{"name":"n","agentId":"${team.agentId}","steps":[{"type":"TextEntry"}]}`);
    expect([answer.status, JSON.parse(answer.text)]).toEqual([
      400,
      { error: 'Invalid request body: steps[0].key: key is required' },
    ]);
    const config = await post(
      '/workflows',
      `{"name":"n","agentId":"${team.agentId}","steps":[{"key":"s","type":"ConditionalSwitch","config":{}}]}`,
    );
    expect(config.status).toBe(422);
    expect(JSON.parse(config.text).errors).toContainEqual({
      code: 'invalid_config',
      key: 's',
      path: 'config.operator',
      message: 'operator is required',
    });
  });

  it('an oversized body answers the documented 413 while Lambda can take it; past that, API Gateway’s own answer, never a handler’s 5xx', async () => {
    const padded = (size: number) => `{"name":"${'x'.repeat(size - 11)}"}`;
    const runStart = `/workflows/${ids[1]}/runs`;
    for (const [path, limit] of [
      ['/workflows', 256 * 1024],
      [runStart, 64 * 1024],
      ['/files', 4 * 1024],
    ] as const) {
      // Ours, as documented (docs/api.md, "Limits"): up to the largest event Lambda takes (6 MB).
      for (const size of [limit + 1, 1024 * 1024, 6 * 1024 * 1024 - 4096]) {
        const answer = await post(path, padded(size));
        expect([answer.status, JSON.parse(answer.text)], `${path} ${size}`).toEqual([
          413,
          { error: `Request body too large: at most ${limit} bytes` },
        ]);
      }
      // A body whose event Lambda refuses never reaches the function: API Gateway answers its failed
      // integration (no edge in front; docs/api.md says so). Over 10 MB, API Gateway's own 413.
      const refused = await post(path, padded(6 * 1024 * 1024 + 1));
      expect([refused.status, refused.text], path).toEqual([500, '{"message":"Internal Server Error"}']);
      const huge = await post(path, padded(10 * 1024 * 1024 + 1));
      expect([huge.status, huge.text], path).toEqual([413, gatewayTooLarge]);
    }
  }, 120_000);

  it('a read the database keeps refusing answers 503 with Retry-After on every keyed operation, as documented, never 500 or 401', async () => {
    // DynamoDB failing the key check on every try (its 5xx: the SDK's waits are short for it;
    // test/read-contention.int.test.ts covers each throttling answer).
    const { deps, state } = throttledDeps(
      stack,
      'InternalServerError',
      (operation, body) => operation === 'GetItem' && body.includes('"APIKEY#'),
    );
    const busy = await startSecondApi(deps);
    const busyClient = rawClient(busy.baseUrl, 4);
    try {
      const keyed = operations().filter(
        (op) => op.operation.security === undefined || op.operation.security.length > 0,
      );
      expect(keyed.length).toBeGreaterThan(10);
      for (const op of keyed) {
        const path = fill(op, (param) => validParam(param, 0));
        const answer = await busyClient.send({
          method: op.method,
          path,
          headers: { authorization: auths['full key'] as string, 'content-type': 'application/json' },
          body: op.bodySchema ? '{}' : undefined,
        });
        expect([answer.status, JSON.parse(answer.text)], `${op.method} ${path}`).toEqual([
          503,
          { error: 'Service busy; try again shortly' },
        ]);
        expect(answer.headers['retry-after'], op.id).toBe('1');
        const { errors } = validateResponse(doc, {
          method: op.method,
          path,
          status: answer.status,
          body: JSON.parse(answer.text),
          headers: answer.headers,
        });
        expect(errors, op.id).toEqual([]);
      }
      expect(state.sent).toBeGreaterThan(keyed.length);
    } finally {
      busyClient.close();
      await busy.close();
    }
  }, 240_000);

  it('the run event stream (its own transport) answers every caller and id as a keyed route, and what it streams leaks nothing', async () => {
    const op = operations().find((o) => o.id === 'GetRunEvents');
    if (!op) throw new Error('GetRunEvents is not in the document');
    // No worker runs here: the run is ended first, so its stream ends at once rather than at the cap.
    const cancelled = await post(`/runs/${ids[5]}/cancel`, '');
    expect([200, 409]).toContain(cancelled.status);
    const statuses = new Set<number>();
    for (const [label, authorization] of Object.entries(auths)) {
      for (const id of [...ids.map(encodeURIComponent), ...hostileIds.slice(0, 8)]) {
        const sent: Sent = {
          label,
          op,
          method: 'GET',
          path: `${basePath}/runs/${id}/events`,
          headers: {
            ...(authorization === undefined ? {} : { authorization }),
            'last-event-id': hostileIds[id.length % hostileIds.length] as string,
          },
        };
        const answer = await client.send(sent);
        statuses.add(answer.status);
        expect(problemsOf(sent, answer), `${label} ${id}`).toEqual([]);
        if (answer.status === 200) {
          // A whole stream: events with ids, ending with `done` (the run ended) or `retry:` (the cap).
          expect(answer.headers['content-type']).toBe('text/event-stream');
          expect(answer.text).toMatch(/(event: done\nid: [A-Za-z0-9_-]+\ndata: .*\n\n|retry: \d+\n\n)$/);
          for (const leak of leaks) expect(leak.exec(answer.text)?.[0], label).toBeUndefined();
        }
      }
    }
    expect([...statuses]).toEqual(expect.arrayContaining([200, 401, 403, 404]));
  }, 240_000);
});
