/**
 * Helpers for the run tests: HTTP calls checked against the OpenAPI document, the steps queue read
 * with the SDK and fed to the real step-executor handler as SQS records, a deterministic node
 * executor (the provider edge), the team ledger and a run's partition, and deps whose clients
 * fail one AWS call (an SDK middleware), for the failure paths.
 */
import { Agent, request as httpRequest } from 'node:http';
import { DynamoDBClient, ProvisionedThroughputExceededException } from '@aws-sdk/client-dynamodb';
import { DeleteMessageBatchCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { expect } from 'vitest';
import { documentClient } from '../../functions/clients/dynamodb.ts';
import type { Deps } from '../../functions/deps.ts';
import { buildOpenApiDocument } from '../../functions/docs/openapi.ts';
import type { NodeExecutor } from '../../functions/nodes/executors/types.ts';
import { runPartition } from '../../functions/store/keys.ts';
import { queryAll } from '../../functions/store/query.ts';
import { balanceOf, getTeam, type TeamBalance } from '../../functions/store/tenancy.ts';
import { makeHandler as makeDispatcher } from '../../functions/workers/deferred-dispatcher.ts';
import { makeHandler } from '../../functions/workers/step-executor.ts';
import { makeHandler as makeWebhookHandler } from '../../functions/workers/webhook-delivery.ts';
import { type LocalApi, startLocalApi } from '../../local/api-gateway.ts';
import { localAwsConfig } from '../../local/emulators.ts';
import { startQueuePoller } from '../../local/event-source.ts';
import { invokedAs } from '../../local/invocation.ts';
import { localDeps } from '../../local/local-deps.ts';
import { type QueueDefinition, stepsQueue, webhooksQueue } from '../../platform/definitions.ts';
import { expectValidResponse } from './openapi-validator.ts';
import { recordOf } from './queue-contents.ts';
import { call, type TestStack, testRouteTimeoutMs } from './stack.ts';
import { receiverCa } from './webhook-receiver.ts';

export const doc = buildOpenApiDocument();

type CallOptions = { key?: string; body?: unknown; headers?: Record<string, string> };

/** One HTTP call to the local API; the answer (status, body, headers) must match the OpenAPI document. */
export const api = async (baseUrl: string, method: string, path: string, options: CallOptions = {}) => {
  const response = await call(baseUrl, path, { method, ...options });
  expectValidResponse(doc, {
    method,
    path,
    status: response.status,
    body: response.body === ('' as unknown) ? undefined : response.body,
    headers: response.headers,
  });
  return response;
};

/**
 * `count` POSTs sent at once from the client, at most `inFlight` of them open on the server at a
 * time (as that many Lambda instances would serve them): the local API runs every handler in this
 * one process over one DynamoDB Local, and a request it cannot finish in the Lambda's 10 seconds
 * answers 500. Each answer is checked against the OpenAPI document.
 */
export const concurrentPosts = async (
  baseUrl: string,
  path: string,
  key: string,
  count: number,
  inFlight = 25,
): Promise<{ status: number; body: Record<string, unknown> }[]> => {
  const agent = new Agent({ keepAlive: true, maxSockets: inFlight });
  const url = new URL(`${baseUrl}${path}`);
  const post = () =>
    new Promise<{ status: number; body: Record<string, unknown> }>((resolve, reject) => {
      const request = httpRequest(
        url,
        { method: 'POST', agent, headers: { authorization: `Bearer ${key}` } },
        (response) => {
          let text = '';
          response.setEncoding('utf8');
          response.on('data', (chunk: string) => {
            text += chunk;
          });
          response.on('end', () => resolve({ status: response.statusCode ?? 0, body: JSON.parse(text) }));
          response.on('error', reject);
        },
      );
      request.on('error', reject);
      request.end();
    });
  try {
    const answers = await Promise.all(Array.from({ length: count }, post));
    for (const answer of answers) expectValidResponse(doc, { method: 'POST', path, ...answer });
    return answers;
  } finally {
    agent.destroy();
  }
};

export const startRunCall = (
  baseUrl: string,
  key: string,
  workflowId: string,
  body?: unknown,
  headers?: Record<string, string>,
) => api(baseUrl, 'POST', `/workflows/${workflowId}/runs`, { key, body, headers });

export const getRunCall = (baseUrl: string, key: string, jobId: string) =>
  api(baseUrl, 'GET', `/runs/${jobId}`, { key });

/** Polls GET /runs/{jobId} (each answer checked against the document) until the run ends. */
export const waitForEnd = async (baseUrl: string, key: string, jobId: string, timeoutMs = 60_000) => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const response = await getRunCall(baseUrl, key, jobId);
    const status = response.body.status as string;
    if (['completed', 'failed', 'cancelled', 'stopped'].includes(status)) return response;
    if (Date.now() > deadline) throw new Error(`run ${jobId} still ${status}: ${JSON.stringify(response.body)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
};

export const cancelRunCall = (baseUrl: string, key: string, jobId: string) =>
  api(baseUrl, 'POST', `/runs/${jobId}/cancel`, { key });

/** Each of a workflow's `steps` as a run's body lists it, with its status (`statuses`, in order). */
export const stepStatuses = (steps: { key: string; type: string }[], statuses: string[]) =>
  steps.map((s, i) => ({ node_id: s.key, step_type: s.type, status: statuses[i] }));

/** The Run's `links` as GET /runs/{jobId} and a cancel answer them: where to follow it live. */
export const runLinks = (jobId: string) => ({
  events: expect.stringMatching(new RegExp(`^http://127\\.0\\.0\\.1:\\d+/api/v1/runs/${jobId}/events$`)),
});

/** A run's body (GET /runs/{jobId}, or a cancel's answer) while it has no output. */
export const runBody = (
  jobId: string,
  status: string,
  progress: number,
  steps: { key: string; type: string }[],
  statuses: string[],
) => ({
  jobId,
  status,
  progress,
  steps: stepStatuses(steps, statuses),
  output: [],
  links: runLinks(jobId),
  workflowVersion: 1,
});

/** TextEntry → PromptBuilder → LlmWorker → TextConsole: 1 + 1 + 200 + 1 hundredths in production. */
export const chainPrice = 203;

/** TextEntry → TextConsole: 1 + 1 hundredths. */
export const pairSteps = [
  { key: 'in', type: 'TextEntry', config: { text: 'hi' } },
  { key: 'out', type: 'TextConsole', inputs: ['in'] },
];
export const pairPrice = 2;

/**
 * A diamond with a join: `a` feeds `b` and `c` (a model step), both feed `d`, which feeds `e`.
 * 1 + 1 + 200 + 1 + 1 hundredths in production.
 */
export const diamondSteps = [
  { key: 'a', type: 'TextEntry', config: { text: 'otters', apiInputKey: 'topic' } },
  { key: 'b', type: 'PromptBuilder', inputs: ['a'] },
  { key: 'c', type: 'LlmWorker', inputs: ['a'] },
  { key: 'd', type: 'PromptBuilder', inputs: ['b', 'c'] },
  { key: 'e', type: 'TextConsole', inputs: ['d'] },
];
export const diamondPrices: Record<string, number> = { a: 1, b: 1, c: 200, d: 1, e: 1 };

/**
 * The provider edge: a node executor that answers at once and deterministically. Each step's
 * result names the step and the values that reached it, so a result shows what flowed along the
 * edges: `show(llm(prompt(badgers)))`.
 */
export const instantExecutor: NodeExecutor = async (context) => {
  const arrived = Object.values(context.inputs)
    .flat()
    .map((value) => String(value));
  const value = context.runInput ?? `${context.node.id}(${arrived.join(',')})`;
  const [first] = context.spec.outputs;
  return { outputs: first ? { [first.name]: value } : {} };
};
export const instantExecutorFor = () => instantExecutor;

/** The real step-executor handler over `deps`, with the instant executor unless told otherwise. */
export const stepHandler = (deps: Deps, executors: () => NodeExecutor = instantExecutorFor) =>
  invokedAs('StepExecutor', makeHandler({ ...deps, executors }, { stepTimeoutMs: 5_000 }));

/** The real step-executor handler with the node executors `deps` has (the real ones on a test stack). */
export const realStepHandler = (deps: Deps) => invokedAs('StepExecutor', makeHandler(deps, { stepTimeoutMs: 5_000 }));

export type StepHandler = ReturnType<typeof stepHandler>;

/** The real deferred-run dispatcher over `deps`, as one tick of its schedule runs it. */
export const dispatcherHandler = (deps: Deps) => invokedAs('DeferredDispatcher', makeDispatcher(deps));

/**
 * DynamoDB's answer when another transaction is writing an item of this one: the team item (every
 * charge of every run of the team writes it) is named as the conflict, else the first item.
 */
export const transactionConflict = (input: unknown): Error => {
  const items = ((input as { TransactItems?: unknown[] }).TransactItems ?? []) as unknown[];
  const team = items.findIndex((item) => /"TEAM#[^"#]*"/.test(JSON.stringify(item)));
  const conflict = team === -1 ? 0 : team;
  return Object.assign(new Error('Transaction cancelled, please refer cancellation reasons for specific reasons'), {
    name: 'TransactionCanceledException',
    $fault: 'client',
    $metadata: { httpStatusCode: 400 },
    CancellationReasons: items.map((_, index) =>
      index === conflict
        ? { Code: 'TransactionConflict', Message: 'Transaction is ongoing for the item' }
        : { Code: 'None' },
    ),
  });
};

export interface StepMessage {
  jobId: string;
  workflowId: string;
  nodeId: string;
}

let recordCounter = 0;

/** An SQS record as Lambda's event source mapping builds it, for a step message body. */
export const stepRecord = (message: StepMessage | string, receiveCount = 1): SQSRecord => {
  recordCounter += 1;
  const body = typeof message === 'string' ? message : JSON.stringify(message);
  return recordOf({ messageId: `m-${recordCounter}`, body }, receiveCount, 'steps');
};

/** Each message as the record of its first delivery. */
export const stepRecords = (messages: StepMessage[]) => messages.map((message) => stepRecord(message));

/** Runs the handler on records; returns the ids it reported failed (all of them when it threw). */
export const deliver = async (handler: StepHandler, records: SQSRecord[]): Promise<string[]> => {
  try {
    const result = (await handler({ Records: records } as SQSEvent)) as SQSBatchResponse;
    return result.batchItemFailures.map((f) => f.itemIdentifier);
  } catch {
    return records.map((r) => r.messageId);
  }
};

/** Every step message visible on the steps queue now, taken off the queue (received and deleted). */
export const takeStepMessages = async (deps: Deps): Promise<StepMessage[]> => {
  const taken: StepMessage[] = [];
  for (;;) {
    const { Messages = [] } = await deps.sqs.send(
      new ReceiveMessageCommand({ QueueUrl: deps.queueUrls.steps, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }),
    );
    if (Messages.length === 0) return taken;
    await deps.sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: deps.queueUrls.steps,
        Entries: Messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle ?? '' })),
      }),
    );
    taken.push(...Messages.map((m) => JSON.parse(m.Body ?? '{}') as StepMessage));
  }
};

/**
 * Plays the event source mapping by hand: takes the step messages off the queue and delivers
 * each once, until the queue stays empty. Returns every message delivered. With `dropPolls`, a
 * provider job's polls that came due are taken off and not delivered (a webhook ends those jobs).
 */
export const drainSteps = async (
  deps: Deps,
  handler: StepHandler,
  options: { dropPolls?: boolean } = {},
): Promise<StepMessage[]> => {
  const delivered: StepMessage[] = [];
  for (let round = 0; round < 100; round++) {
    const messages = (await takeStepMessages(deps)).filter(
      (m) => !(options.dropPolls && 'check' in m && m.check === 'poll'),
    );
    if (messages.length === 0) return delivered;
    for (const message of messages) {
      const failed = await deliver(handler, [stepRecord(message)]);
      expect(failed, `step ${message.nodeId} of ${message.jobId} failed`).toEqual([]);
      delivered.push(message);
    }
  }
  throw new Error('the steps queue never emptied');
};

export const ledgerOf = async (deps: Deps, teamId: string): Promise<TeamBalance> =>
  balanceOf(await getTeam(deps, teamId));

/** The team invariant: balance + held + charged = granted, nothing negative. */
export const expectBalanced = (ledger: TeamBalance) => {
  expect(ledger.balance + ledger.held + ledger.charged).toBe(ledger.granted);
  expect(ledger.balance).toBeGreaterThanOrEqual(0);
  expect(ledger.held).toBeGreaterThanOrEqual(0);
  expect(ledger.charged).toBeGreaterThanOrEqual(0);
};

/**
 * The run completed, each step completed and charged once at `prices`, the team's ledger balanced
 * and settled. Returns the run's parts for further checks.
 */
export const expectRunCompletedOnce = async (
  deps: Deps,
  teamId: string,
  jobId: string,
  prices: Record<string, number>,
) => {
  const parts = await runParts(deps, jobId);
  const { run, steps, charges } = parts;
  const total = Object.values(prices).reduce((a, b) => a + b, 0);
  expect(run).toMatchObject({ status: 'completed', heldHundredths: 0, chargedHundredths: total });
  expect(Object.fromEntries([...steps].map(([node, s]) => [node, s.status]))).toEqual(
    Object.fromEntries(Object.keys(prices).map((node) => [node, 'completed'])),
  );
  expect(Object.fromEntries([...charges].map(([node, c]) => [node, c.hundredths]))).toEqual(prices);
  const ledger = await ledgerOf(deps, teamId);
  expectBalanced(ledger);
  expect(ledger).toMatchObject({ held: 0, charged: total });
  return parts;
};

/**
 * A run's partition: the run item, its step items by node, and the charges: each completed step
 * carries the charge its completion counted on the run (its only record; there is no separate item).
 */
export const runParts = async (deps: Deps, jobId: string) => {
  // The items as stored, every attribute (the store's parsers keep only what the code reads).
  const items = await queryAll(
    deps,
    {
      KeyConditionExpression: 'PK = :pk',
      ExpressionAttributeValues: { ':pk': runPartition(jobId) },
      ConsistentRead: true,
    },
    (item) => item,
  );
  const run = items.find((i) => i.SK === 'RUN');
  const steps = new Map<string, Record<string, unknown>>();
  const charges = new Map<string, Record<string, unknown>>();
  for (const item of items) {
    const sk = String(item.SK);
    if (sk.startsWith('STEP#')) steps.set(sk.slice('STEP#'.length), item);
    if (sk.startsWith('STEP#') && item.status === 'completed')
      charges.set(sk.slice('STEP#'.length), { hundredths: item.chargeHundredths });
  }
  return { run, steps, charges };
};

export const sumCharges = (charges: Map<string, Record<string, unknown>>) =>
  [...charges.values()].reduce((sum, c) => sum + (c.hundredths as number), 0);

/** The error an AWS service answers with, as the SDK throws it. */
export const throttled = () =>
  new ProvisionedThroughputExceededException({
    message: 'Rate of requests exceeds the allowed throughput',
    $metadata: {},
  });

/** A document client of its own on the stack's DynamoDB Local, for deps whose calls a test intercepts. */
const stackDocumentClient = (stack: TestStack) =>
  documentClient(new DynamoDBClient({ ...localAwsConfig, endpoint: stack.resources.dynamoDbEndpoint }));

/**
 * Deps on the same resources whose clients fail one call: `failDynamo` decides from the command
 * name and input whether a DynamoDB call throws; `failSqs` the same for SQS.
 */
export const faultyDeps = (
  stack: TestStack,
  faults: {
    failDynamo?: (command: string, input: unknown) => boolean;
    failSqs?: (command: string, input: unknown) => boolean;
    /** What a failing DynamoDB call throws; a throttling error unless told. */
    error?: (input: unknown) => Error;
  },
  overrides: Partial<Deps> = {},
): Deps => {
  const ddb = stackDocumentClient(stack);
  const { failDynamo, failSqs } = faults;
  if (failDynamo) {
    ddb.middlewareStack.add(
      (next, context) => async (args) => {
        if (failDynamo(context.commandName ?? '', args.input)) throw (faults.error ?? throttled)(args.input);
        return next(args);
      },
      { step: 'initialize', name: 'testFault' },
    );
  }
  const sqs = new SQSClient({ ...localAwsConfig, endpoint: stack.resources.sqsS3Endpoint });
  if (failSqs) {
    sqs.middlewareStack.add(
      (next, context) => async (args) => {
        if (failSqs(context.commandName ?? '', args.input)) {
          throw Object.assign(new Error('Service unavailable'), { name: 'ServiceUnavailable', $metadata: {} });
        }
        return next(args);
      },
      { step: 'initialize', name: 'testFault' },
    );
  }
  return localDeps(stack.resources, { ...overrides, ddb, sqs });
};

/**
 * Deps on the same resources whose DynamoDB client runs `after` once a call has been answered (or
 * refused), before its caller sees the answer: a race played at an exact point of a use case.
 */
export const racingDeps = (stack: TestStack, after: (command: string, input: unknown) => Promise<void>): Deps => {
  const ddb = stackDocumentClient(stack);
  ddb.middlewareStack.add(
    (next, context) => async (args) => {
      try {
        return await next(args);
      } finally {
        await after(context.commandName ?? '', args.input);
      }
    },
    { step: 'initialize', name: 'testRace' },
  );
  return localDeps(stack.resources, { ddb });
};

/** A second local API (the same route table and handlers) over other deps. */
export const startSecondApi = async (deps: Deps): Promise<LocalApi> =>
  startLocalApi({ deps, port: 0, host: '127.0.0.1', timeoutMs: testRouteTimeoutMs });

/** Polls the stack's steps queue with the real step-executor handler, as the event source mapping does. */
export const startStepWorkers = (
  stack: TestStack,
  options: { executors?: () => NodeExecutor; definition?: QueueDefinition; deps?: Deps } = {},
) =>
  startQueuePoller({
    endpoint: stack.resources.sqsS3Endpoint,
    queueUrl: stack.resources.queueUrls.Steps,
    definition: options.definition ?? stepsQueue,
    handler: stepHandler(options.deps ?? stack.deps, options.executors) as never,
    waitSeconds: 1,
  });

/** The real webhook-delivery handler, allowed to call the loopback receiver (its certificate trusted). */
export const loopbackWebhookHandler = (deps: Deps) =>
  invokedAs('WebhookDelivery', makeWebhookHandler(deps, { fetchOptions: { allowLoopback: true, ca: receiverCa } }));

/** Polls the stack's webhooks queue with it, as the event source mapping does. */
export const startWebhookWorkers = (stack: TestStack) =>
  startQueuePoller({
    endpoint: stack.resources.sqsS3Endpoint,
    queueUrl: stack.resources.queueUrls.Webhooks,
    definition: webhooksQueue,
    handler: loopbackWebhookHandler(stack.deps) as never,
    waitSeconds: 1,
  });
