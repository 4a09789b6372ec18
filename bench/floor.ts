import { randomUUID } from 'node:crypto';
import { SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import {
  BatchGetCommand,
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../functions/deps.ts';

/**
 * The floor: the DynamoDB calls an authenticated GET /workflows makes, sent bare from this process
 * through a client built exactly like the server's (`localDeps`: DocumentClient over a
 * DynamoDBClient with the emulator endpoint and the SDK's default HTTP handler), with no HTTP
 * server, middy, auth logic or JSON in between.
 */
export const floorOperations = (deps: Deps, keys: { apiKeyPk: string; teamPk: string }) => {
  const getItem = () =>
    deps.ddb.send(
      new GetCommand({ TableName: deps.tableName, Key: { PK: keys.apiKeyPk, SK: 'APIKEY' }, ConsistentRead: true }),
    );
  const addToCounter = () =>
    deps.ddb.send(
      new UpdateCommand({
        TableName: deps.tableName,
        Key: { PK: 'BENCH#FLOOR', SK: 'COUNTER' },
        UpdateExpression: 'ADD #n :one',
        ExpressionAttributeNames: { '#n': 'n' },
        ExpressionAttributeValues: { ':one': 1 },
        ReturnValues: 'ALL_NEW',
      }),
    );
  const queryPartition = () =>
    deps.ddb.send(
      new QueryCommand({
        TableName: deps.tableName,
        KeyConditionExpression: 'PK = :pk AND begins_with(SK, :prefix)',
        ExpressionAttributeValues: { ':pk': keys.teamPk, ':prefix': 'WORKFLOW#' },
        ConsistentRead: true,
      }),
    );
  return {
    getItem,
    /** GetItem, UpdateItem ADD, Query: back to back, as the handler sends them. */
    threeCalls: async () => {
      await getItem();
      await addToCounter();
      await queryPartition();
    },
  };
};

export interface LoopResult {
  latencies: number[];
  errors: number;
  elapsedMs: number;
}

/**
 * Runs `operation` in `concurrency` independent loops for `durationMs` (each loop starts its next
 * operation as soon as the previous one ends, like an autocannon connection) and keeps every latency.
 */
export const runLoops = async (
  operation: () => Promise<unknown>,
  options: { concurrency: number; durationMs: number },
): Promise<LoopResult> => {
  const latencies: number[] = [];
  let errors = 0;
  const started = performance.now();
  const deadline = started + options.durationMs;
  const loop = async () => {
    while (performance.now() < deadline) {
      const t = performance.now();
      try {
        await operation();
        latencies.push(performance.now() - t);
      } catch {
        errors++;
      }
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, loop));
  return { latencies, errors, elapsedMs: performance.now() - started };
};

/** Runs `operation` `count` times one after the other and keeps every latency. */
export const runTimes = async (operation: () => Promise<unknown>, count: number): Promise<LoopResult> => {
  const latencies: number[] = [];
  let errors = 0;
  const started = performance.now();
  for (let i = 0; i < count; i++) {
    const t = performance.now();
    try {
      await operation();
      latencies.push(performance.now() - t);
    } catch {
      errors++;
    }
  }
  return { latencies, errors, elapsedMs: performance.now() - started };
};

type Key = { PK: string; SK: string };

/** Items only the floors touch, so they never meet the service's own items (ledger, locks). */
const floorTeam = { PK: 'BENCH#FLOOR#TEAM', SK: 'TEAM' };
const floorProject = { PK: 'BENCH#FLOOR#TEAM', SK: 'PROJECT' };
const floorRun = { PK: 'BENCH#FLOOR#RUN', SK: 'RUN' };

/** Creates the items the run floors update under their conditions (a balance, a project). */
export const seedRunFloorItems = async (deps: Deps) => {
  await deps.ddb.send(
    new PutCommand({ TableName: deps.tableName, Item: { ...floorTeam, balance: 1e12, held: 0, charged: 0 } }),
  );
  await deps.ddb.send(new PutCommand({ TableName: deps.tableName, Item: { ...floorProject, spentHundredths: 0 } }));
  await deps.ddb.send(
    new PutCommand({ TableName: deps.tableName, Item: { ...floorRun, stepsCompleted: 0, heldHundredths: 1e12 } }),
  );
};

/**
 * The floors of a run start and of one step's orchestration: the same number of bare calls of the
 * same kinds the service makes, through a client built like the service's, on items of the same
 * size (the BatchGets read the service's own items; writes go to fresh keys under `BENCH#FLOOR`).
 */
export const runFloorOperations = (
  deps: Deps,
  items: {
    /** The API key item's partition key (authentication GetItem). */
    apiKeyPk: string;
    /** What a start reads: the workflow summary and canvas, then team, project and key month. */
    workflowKeys: Key[];
    admissionKeys: Key[];
    /** What a step reads: the run and one step of it. */
    stepReadKeys: Key[];
    /** A queue only the floor sends to. */
    queueUrl: string;
    /** A run item as the start writes it (its size matters). */
    runItem: Record<string, unknown>;
  },
) => {
  const table = deps.tableName;
  const getItem = () =>
    deps.ddb.send(
      new GetCommand({ TableName: table, Key: { PK: items.apiKeyPk, SK: 'APIKEY' }, ConsistentRead: true }),
    );
  const addToCounter = () =>
    deps.ddb.send(
      new UpdateCommand({
        TableName: table,
        Key: { PK: 'BENCH#FLOOR', SK: 'COUNTER' },
        UpdateExpression: 'ADD #n :one',
        ExpressionAttributeNames: { '#n': 'n' },
        ExpressionAttributeValues: { ':one': 1 },
        ReturnValues: 'ALL_NEW',
      }),
    );
  const batchGet = (keys: Key[]) =>
    deps.ddb.send(new BatchGetCommand({ RequestItems: { [table]: { Keys: keys, ConsistentRead: true } } }));
  const sendOne = () =>
    deps.sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: items.queueUrl,
        Entries: [
          { Id: '0', MessageBody: JSON.stringify({ jobId: randomUUID(), workflowId: randomUUID(), nodeId: 's1' }) },
        ],
      }),
    );
  /** Like finishStepItem: the step item written once, when the step finishes (an unclaimed step). */
  const finishStep = (stepKey: Key) =>
    deps.ddb.send(
      new UpdateCommand({
        TableName: table,
        Key: stepKey,
        UpdateExpression:
          'SET #status = :done, endedAt = :now, nodeId = :node, chargeHundredths = :one, outputs = :outputs, model = :null, licence = :null REMOVE leaseUntil',
        ConditionExpression: 'attribute_not_exists(PK)',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: {
          ':done': 'completed',
          ':now': new Date().toISOString(),
          ':node': 's1',
          ':one': 1,
          ':outputs': { text: 'x' },
          ':null': null,
        },
      }),
    );
  /** Like countStep: the run's counters, guarded by its set of counted steps, ALL_NEW. */
  const countOnRun = (runPk: string) =>
    deps.ddb.send(
      new UpdateCommand({
        TableName: table,
        Key: { PK: runPk, SK: 'RUN' },
        UpdateExpression:
          'SET #status = :processing ADD stepsCompleted :one, chargedHundredths :one, heldHundredths :minus, doneSteps :nodes',
        ConditionExpression: 'attribute_not_exists(doneSteps) OR NOT contains(doneSteps, :node)',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: {
          ':processing': 'processing',
          ':one': 1,
          ':minus': -1,
          ':node': 's1',
          ':nodes': new Set(['s1']),
        },
        ReturnValues: 'ALL_NEW',
      }),
    );
  /** Like countStep for the last step: the run counted and ended, the lock freed, the team settled (nothing left to release). */
  const endTransaction = (runPk: string) =>
    deps.ddb.send(
      new TransactWriteCommand({
        TransactItems: [
          {
            Update: {
              TableName: table,
              Key: { PK: runPk, SK: 'RUN' },
              UpdateExpression: 'SET #status = :done, endedAt = :now, finalizedAt = :now, heldHundredths = :zero',
              ConditionExpression: 'attribute_not_exists(finalizedAt)',
              ExpressionAttributeNames: { '#status': 'status' },
              ExpressionAttributeValues: { ':done': 'completed', ':now': new Date().toISOString(), ':zero': 0 },
            },
          },
          {
            Delete: {
              TableName: table,
              Key: { PK: `${runPk}#LOCK`, SK: 'LOCK' },
              ConditionExpression: 'attribute_not_exists(PK) OR jobId = :job',
              ExpressionAttributeValues: { ':job': runPk },
            },
          },
          {
            Update: {
              TableName: table,
              Key: floorTeam,
              UpdateExpression: 'ADD held :minus, charged :one',
              ExpressionAttributeValues: { ':one': 1, ':minus': -1 },
            },
          },
        ],
      }),
    );
  /** Like startRun: lock, team hold, project spend, key month, the run item. */
  const startTransaction = () => {
    const runPk = `BENCH#FLOOR#${randomUUID()}`;
    return deps.ddb.send(
      new TransactWriteCommand({
        TransactItems: [
          {
            Put: {
              TableName: table,
              Item: { PK: `${runPk}#LOCK`, SK: 'LOCK', jobId: runPk, since: new Date().toISOString() },
              ConditionExpression: 'attribute_not_exists(PK)',
            },
          },
          {
            Update: {
              TableName: table,
              Key: floorTeam,
              UpdateExpression: 'ADD balance :minus, held :total',
              ConditionExpression: 'balance >= :total',
              ExpressionAttributeValues: { ':total': 10, ':minus': -10 },
            },
          },
          {
            Update: {
              TableName: table,
              Key: floorProject,
              UpdateExpression: 'ADD spentHundredths :total',
              ConditionExpression: 'attribute_exists(PK) AND attribute_not_exists(hardCapHundredths)',
              ExpressionAttributeValues: { ':total': 10 },
            },
          },
          {
            Update: {
              TableName: table,
              Key: { PK: 'BENCH#FLOOR#KEYSPEND', SK: 'MONTH' },
              UpdateExpression: 'ADD spentHundredths :total',
              ExpressionAttributeValues: { ':total': 10 },
            },
          },
          {
            Put: {
              TableName: table,
              Item: { ...items.runItem, PK: runPk, SK: 'RUN' },
              ConditionExpression: 'attribute_not_exists(PK)',
            },
          },
        ],
      }),
    );
  };
  const stepItems = () => {
    const runPk = `BENCH#FLOOR#${randomUUID()}`;
    return { runPk, stepKey: { PK: runPk, SK: 'STEP#s1' } };
  };
  return {
    /** GetItem, UpdateItem ADD, BatchGetItem ×2, TransactWriteItems of 5 items, SendMessageBatch. */
    start: async () => {
      await getItem();
      await addToCounter();
      await batchGet(items.workflowKeys);
      await batchGet(items.admissionKeys);
      await startTransaction();
      await sendOne();
    },
    /** BatchGetItem, UpdateItem (the step), UpdateItem (the run), SendMessageBatch. */
    step: async () => {
      const { runPk, stepKey } = stepItems();
      await batchGet(items.stepReadKeys);
      await finishStep(stepKey);
      await countOnRun(runPk);
      await sendOne();
    },
    /** The last step: BatchGetItem, UpdateItem (the step), then the run's end (a TransactWriteItems of 3 items). */
    lastStep: async () => {
      const { runPk, stepKey } = stepItems();
      await batchGet(items.stepReadKeys);
      await finishStep(stepKey);
      await endTransaction(runPk);
    },
  };
};
