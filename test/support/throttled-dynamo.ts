/**
 * A DynamoDB that throttles, for the read-contention tests: DynamoDB Local never throttles, so the
 * client's HTTP handler (the true edge: the SDK's own retries, deserializer and error classes all
 * run above it) answers the reads a rule picks with DynamoDB's own 400 ThrottlingException, or its
 * 500 InternalServerError (or a BatchGetItem's 200 with every key unprocessed), instead of sending
 * them on to the emulator.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { documentClient } from '../../functions/clients/dynamodb.ts';
import type { Deps } from '../../functions/deps.ts';
import { localAwsConfig } from '../../local/emulators.ts';
import { localDeps } from '../../local/local-deps.ts';
import type { TestStack } from './stack.ts';

/** The answers DynamoDB gives for load, as its JSON protocol spells them. */
export const dynamoFaults = {
  ThrottlingException: { status: 400, type: 'com.amazon.coral.availability#ThrottlingException' },
  ProvisionedThroughputExceededException: {
    status: 400,
    type: 'com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException',
  },
  RequestLimitExceeded: { status: 400, type: 'com.amazonaws.dynamodb.v20120810#RequestLimitExceeded' },
  InternalServerError: { status: 500, type: 'com.amazonaws.dynamodb.v20120810#InternalServerError' },
  /** Not an error: a BatchGetItem's 200 that processed none of its keys, as when each was throttled. */
  UnprocessedKeys: { status: 200, type: '' },
} as const;
export type DynamoFault = keyof typeof dynamoFaults;

/**
 * The tries the SDK makes of one DynamoDB request, the first included: its standard mode's default
 * for DynamoDB in the SDK version installed (4 since its 2026 retry defaults; 3 before).
 */
export const sdkTries = (): Promise<number> => new DynamoDBClient(localAwsConfig).config.maxAttempts();

/** Which requests to fail: the operation (`GetItem`, `Query`, ...) and the request's JSON body. */
export type FaultRule = (operation: string, body: string) => boolean;

type Handler = {
  handle: (request: { headers: Record<string, string>; body?: unknown }, options?: unknown) => Promise<unknown>;
};

/**
 * Deps on the stack's resources whose DynamoDB answers the first `times` requests `rule` picks
 * with `fault` (every one when `times` is unset); `fault.sent` counts them.
 */
export const throttledDeps = (
  stack: TestStack,
  fault: DynamoFault,
  rule: FaultRule,
  times = Number.POSITIVE_INFINITY,
) => {
  const config = { ...localAwsConfig, endpoint: stack.resources.dynamoDbEndpoint };
  const inner = new DynamoDBClient(config).config.requestHandler as unknown as Handler;
  const state = { sent: 0, left: times };
  const answer = dynamoFaults[fault];
  const requestHandler: Handler = {
    handle: async (request, options) => {
      const operation = (request.headers['x-amz-target'] ?? '').split('.')[1] ?? '';
      // The SDK hands the JSON body over as bytes.
      const body =
        typeof request.body === 'string'
          ? request.body
          : request.body instanceof Uint8Array
            ? Buffer.from(request.body).toString('utf8')
            : '';
      if (state.left > 0 && rule(operation, body)) {
        state.left--;
        state.sent++;
        const text = JSON.stringify(
          fault === 'UnprocessedKeys'
            ? { Responses: {}, UnprocessedKeys: (JSON.parse(body) as { RequestItems: unknown }).RequestItems }
            : { __type: answer.type, message: `${fault} (stand-in)` },
        );
        return {
          response: {
            statusCode: answer.status,
            reason: undefined,
            headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-requestid': `fault-${state.sent}` },
            body: Readable.from([Buffer.from(text)]),
          },
        };
      }
      return inner.handle(request, options);
    },
  };
  const client = new DynamoDBClient({ ...config, requestHandler: requestHandler as never });
  const deps: Deps = localDeps(stack.resources, { ddb: documentClient(client) });
  return { deps, state };
};

/**
 * The same stand-in as an HTTP proxy in front of DynamoDB Local, for processes this test does not
 * build the client of (the rehearsal's bundles): point their `AWS_ENDPOINT_URL_DYNAMODB` at `endpoint`.
 */
export const startThrottlingProxy = async (target: string, fault: DynamoFault, rule: FaultRule) => {
  const state = { sent: 0 };
  const answer = dynamoFaults[fault];
  const server = createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const operation = String(request.headers['x-amz-target'] ?? '').split('.')[1] ?? '';
    if (rule(operation, body.toString('utf8'))) {
      state.sent++;
      response.writeHead(answer.status, { 'content-type': 'application/x-amz-json-1.0' });
      response.end(JSON.stringify({ __type: answer.type, message: `${fault} (stand-in)` }));
      return;
    }
    const headers = Object.fromEntries(
      Object.entries(request.headers).filter(([name]) => !['host', 'connection', 'content-length'].includes(name)),
    ) as Record<string, string>;
    const forwarded = await fetch(`${target}${request.url ?? '/'}`, { method: request.method, headers, body });
    // fetch has decoded the body: its length and encoding headers no longer hold.
    const answered = [...forwarded.headers].filter(([name]) => !['content-length', 'content-encoding'].includes(name));
    response.writeHead(forwarded.status, Object.fromEntries(answered));
    response.end(Buffer.from(await forwarded.arrayBuffer()));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${address.port}`,
    state,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
};
