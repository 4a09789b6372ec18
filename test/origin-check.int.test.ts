/**
 * With the edge on, the stage's origins answer only what CloudFront sent them: the handlers
 * (a keyed route over an API Gateway event, the event stream over a function URL event, a public
 * route) refuse a request without the origin header or with another value as a path the API does
 * not have, and take the one with the secret's value; without the edge (no secret named) nothing
 * changes. The secret is read from the local secret store (Secrets Manager's protocol, signed
 * requests) as a deployed function reads it, its previous version accepted through a rotation.
 */
import './support/test-providers.ts';
import { randomUUID } from 'node:crypto';
import { PutSecretValueCommand } from '@aws-sdk/client-secrets-manager';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeHandler as getOpenApi } from '../functions/api/get-openapi.ts';
import { makeHandler as getRun } from '../functions/api/get-run.ts';
import { makeHandler as getRunEvents } from '../functions/api/get-run-events.ts';
import type { ResponseHead } from '../functions/http/event-stream.ts';
import { type OriginCheck, originCheckFromEnv } from '../functions/http/origin-check.ts';
import { invokedAs } from '../local/invocation.ts';
import { type SecretStoreEmulator, startSecretStore } from '../local/secret-store.ts';
import { envNames } from '../platform/definitions.ts';
import { originHeader } from '../platform/edge.ts';
import { basePath } from '../platform/routes.ts';
import { runEventsUrlEvent } from './support/function-url-event.ts';
import { type SeededTeam, seedUnthrottledTeam, stackPerFile } from './support/stack.ts';

const { stack } = stackPerFile();
let store: SecretStoreEmulator;
let team: SeededTeam;
const secretName = `WorkflowRunApi-test-${randomUUID().slice(0, 8)}-Api/origin-verify`;
const secretValue = 'a4Vq9ZkR2mT7xW1pL8sN3bC6dF0gH5jK';

beforeAll(async () => {
  store = await startSecretStore();
  store.secrets.set(secretName, secretValue);
  team = await seedUnthrottledTeam(stack.deps, 10);
});
afterAll(() => store.close());

/** The check a function the edge fronts builds from its environment, against the local store. */
const edgeCheck = (): OriginCheck =>
  originCheckFromEnv({
    [envNames.originSecret]: secretName,
    AWS_ENDPOINT_URL_SECRETS_MANAGER: store.endpoint,
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'test',
    AWS_SECRET_ACCESS_KEY: 'test',
  });

const lambdaContext = {
  functionName: 'GetRun',
  functionVersion: '$LATEST',
  invokedFunctionArn: 'arn:aws:lambda:us-east-1:000000000000:function:GetRun',
  memoryLimitInMB: '512',
  awsRequestId: 'req',
  logGroupName: '/aws/lambda/GetRun',
  logStreamName: 'stream',
  getRemainingTimeInMillis: () => 10_000,
  callbackWaitsForEmptyEventLoop: false,
  done: () => undefined,
  fail: () => undefined,
  succeed: () => undefined,
};

/** GET /runs/{jobId} as API Gateway hands it the function, on the origin's domain. */
const getRunEvent = (jobId: string, headers: Record<string, string>): APIGatewayProxyEventV2 => {
  const path = `${basePath}/runs/${jobId}`;
  return {
    version: '2.0',
    routeKey: `GET ${basePath}/runs/{jobId}`,
    rawPath: path,
    rawQueryString: '',
    headers,
    pathParameters: { jobId },
    isBase64Encoded: false,
    requestContext: {
      accountId: '000000000000',
      apiId: 'api',
      domainName: 'origin.api.example.com',
      domainPrefix: 'origin',
      http: { method: 'GET', path, protocol: 'HTTP/1.1', sourceIp: '127.0.0.1', userAgent: 'test' },
      requestId: randomUUID(),
      routeKey: `GET ${basePath}/runs/{jobId}`,
      stage: '$default',
      time: new Date().toUTCString(),
      timeEpoch: Date.now(),
    },
  };
};

type Result = { statusCode: number; body?: string; headers?: Record<string, unknown> };

const callGetRun = async (originCheck: OriginCheck | undefined, headers: Record<string, string>) => {
  const handler = invokedAs('GetRun', getRun({ ...stack.deps, ...(originCheck ? { originCheck } : {}) }));
  const result = (await handler(getRunEvent(randomUUID(), headers), lambdaContext as never)) as Result;
  return { status: result.statusCode, body: JSON.parse(result.body ?? '{}') as unknown };
};

const callStream = async (originCheck: OriginCheck | undefined, headers: Record<string, string>) => {
  let head: ResponseHead | undefined;
  let text = '';
  const handler = invokedAs('GetRunEvents', getRunEvents({ ...stack.deps, ...(originCheck ? { originCheck } : {}) }));
  await handler(runEventsUrlEvent(randomUUID(), headers), (opened) => {
    head = opened;
    return {
      write: (chunk) => {
        text += chunk;
      },
      end: () => undefined,
      closed: false,
    };
  });
  return { status: head?.statusCode, body: JSON.parse(text || '{}') as unknown };
};

const callOpenApi = async (originCheck: OriginCheck | undefined, headers: Record<string, string>) => {
  const result = (await getOpenApi({ originCheck })(getRunEvent(randomUUID(), headers))) as Result;
  return { status: result.statusCode, body: JSON.parse(result.body ?? '{}') as Record<string, unknown> };
};

const notFound = { message: 'Not Found' };
const runNotFound = { error: 'Run not found' };

describe('the origin check, with the edge on', () => {
  it('refuses a keyed route’s request without the header or with another value as a path the API lacks, and takes the right one', async () => {
    const check = edgeCheck();
    const auth = { authorization: `Bearer ${team.key}` };
    expect(await callGetRun(check, auth)).toEqual({ status: 404, body: notFound });
    expect(await callGetRun(check, { ...auth, [originHeader]: 'not-the-secret' })).toEqual({
      status: 404,
      body: notFound,
    });
    expect(await callGetRun(check, { ...auth, [originHeader]: `${secretValue}x` })).toEqual({
      status: 404,
      body: notFound,
    });
    // Through the edge: the route's own answer (the run does not exist).
    expect(await callGetRun(check, { ...auth, [originHeader]: secretValue })).toEqual({
      status: 404,
      body: runNotFound,
    });
    // Before the key: a request around the edge learns nothing of keys either.
    expect(await callGetRun(check, { authorization: 'Bearer wr_live_notakey' })).toEqual({
      status: 404,
      body: notFound,
    });
    expect((await callGetRun(check, { [originHeader]: secretValue })).status).toBe(401);
  });

  it('refuses the event stream’s function URL request without the header before the key, and takes the right one', async () => {
    const check = edgeCheck();
    const auth = { authorization: `Bearer ${team.key}` };
    expect(await callStream(check, auth)).toEqual({ status: 404, body: notFound });
    expect(await callStream(check, { ...auth, [originHeader]: 'wrong' })).toEqual({ status: 404, body: notFound });
    expect(await callStream(check, { ...auth, [originHeader]: secretValue })).toEqual({
      status: 404,
      body: runNotFound,
    });
  });

  it('refuses a public route’s request without the header, and serves the right one', async () => {
    const check = edgeCheck();
    expect(await callOpenApi(check, {})).toEqual({ status: 404, body: notFound });
    const served = await callOpenApi(check, { [originHeader]: secretValue });
    expect(served.status).toBe(200);
    expect(served.body.openapi).toMatch(/^3\./);
  });

  it('reads the secret once for many requests, and takes the previous value through a rotation', async () => {
    const rotating = `${secretName}-rotating`;
    store.secrets.set(rotating, 'first-value-1234567890');
    const check = originCheckFromEnv({
      [envNames.originSecret]: rotating,
      AWS_ENDPOINT_URL_SECRETS_MANAGER: store.endpoint,
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'test',
      AWS_SECRET_ACCESS_KEY: 'test',
    });
    const reads = () => store.requests.filter((r) => r.name === rotating && r.target.endsWith('GetSecretValue')).length;
    expect(await check({ [originHeader]: 'first-value-1234567890' })).toBe(true);
    expect(await check({ [originHeader]: 'first-value-1234567890' })).toBe(true);
    expect(await check({})).toBe(false);
    expect(reads()).toBe(2); // its current and previous versions, once
    await store
      .clients()
      .secretsManager.send(new PutSecretValueCommand({ SecretId: rotating, SecretString: 'second-value-0987654321' }));
    // A new container reads both: the edge still sending the old value, or already the new one.
    const fresh = originCheckFromEnv({
      [envNames.originSecret]: rotating,
      AWS_ENDPOINT_URL_SECRETS_MANAGER: store.endpoint,
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'test',
      AWS_SECRET_ACCESS_KEY: 'test',
    });
    expect(await fresh({ [originHeader]: 'first-value-1234567890' })).toBe(true);
    expect(await fresh({ [originHeader]: 'second-value-0987654321' })).toBe(true);
    expect(await fresh({ [originHeader]: 'third' })).toBe(false);
  });

  it('fails the request (a 500, never a pass) when the secret cannot be read', async () => {
    const missing = originCheckFromEnv({
      [envNames.originSecret]: `${secretName}-absent`,
      AWS_ENDPOINT_URL_SECRETS_MANAGER: store.endpoint,
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'test',
      AWS_SECRET_ACCESS_KEY: 'test',
    });
    const answer = await callGetRun(missing, { authorization: `Bearer ${team.key}`, [originHeader]: secretValue });
    expect(answer.status).toBe(500);
    expect(JSON.stringify(answer.body)).not.toContain(secretValue);
  });
});

describe('without the edge', () => {
  it('checks nothing: no secret is named, and every request is answered as before', async () => {
    expect(await originCheckFromEnv({})({})).toBe(true);
    const auth = { authorization: `Bearer ${team.key}` };
    expect(await callGetRun(undefined, auth)).toEqual({ status: 404, body: runNotFound });
    expect(await callStream(undefined, auth)).toEqual({ status: 404, body: runNotFound });
    expect((await callOpenApi(undefined, {})).status).toBe(200);
  });
});
