import { GetCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
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
