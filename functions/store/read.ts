/**
 * Every DynamoDB read (GetItem, Query, Scan, BatchGetItem, TransactGetItems) is classified once,
 * on the client itself (`classifyReads`, added by `documentClient` in functions/clients/dynamodb.ts),
 * so no call site can forget it:
 *
 * - the SDK's own retries come first: its standard mode tries a read 3 times in all, with jittered
 *   exponential backoff, on throttling and on DynamoDB's 5xx. We add no tries of our own: a read
 *   has nothing to re-decide, and more waiting would only hold the caller's request open longer;
 * - when those run out on contention (`contentionOf`: throttling, a transaction conflict) or on
 *   DynamoDB failing (`InternalServerError`, `ServiceUnavailable`), the read throws the same
 *   StorageBusyError a write does after its tries (503 with `Retry-After` at the HTTP edge, a failed
 *   record the queue redelivers in a worker), logged with its cause;
 * - anything else (a validation error, a missing table) is thrown as it came: a defect, not load.
 *
 * Writes are not touched here: functions/store/write.ts classifies and retries them, and a write's
 * 5xx is not safe to call "nothing was written".
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { StorageBusyError, type StorageContention } from '../errors/table.ts';
import { logger } from '../observability/logger.ts';
import { contentionOf } from './contention.ts';

/** The commands that only read, as the SDK names them. */
const readCommands = new Set([
  'GetItemCommand',
  'QueryCommand',
  'ScanCommand',
  'BatchGetItemCommand',
  'TransactGetItemsCommand',
]);

/** Names of DynamoDB failing on its side: a read of it may be tried again. */
const unavailableNames = new Set(['InternalServerError', 'ServiceUnavailable']);

/** Why a read failed for load, if it did: then trying it again later is safe. */
export const readContentionOf = (error: unknown): StorageContention | undefined => {
  const contention = contentionOf(error);
  if (contention) return contention;
  return error instanceof Error && unavailableNames.has(error.name) ? 'unavailable' : undefined;
};

/** The tries the SDK made, as it records them on the error it throws. */
const attemptsOf = (error: unknown): number => {
  const attempts = (error as { $metadata?: { attempts?: number } }).$metadata?.attempts;
  return typeof attempts === 'number' && attempts > 0 ? attempts : 1;
};

/**
 * Adds the read classification to `ddb`, outermost, so it sees what is left once the SDK's retries
 * are spent. Idempotent per client.
 */
export const classifyReads = (ddb: DynamoDBDocumentClient): DynamoDBDocumentClient => {
  const name = 'classifyReadContention';
  ddb.middlewareStack.remove(name);
  ddb.middlewareStack.add(
    (next, context) => async (args) => {
      try {
        return await next(args);
      } catch (error) {
        const command = context.commandName ?? '';
        const contention = readCommands.has(command) ? readContentionOf(error) : undefined;
        if (!contention) throw error;
        const tries = attemptsOf(error);
        // Logged here with its cause: the HTTP edge does not log what it maps.
        logger.warn('read met contention on every try', { read: command, contention, tries, error: error as Error });
        throw new StorageBusyError(contention, tries, { cause: error });
      }
    },
    { step: 'initialize', name, priority: 'high' },
  );
  return ddb;
};
