/**
 * The one write helper (functions/store/write.ts), without an emulator: how it reads each answer
 * DynamoDB gives (a client whose `send` answers as told: the edge), the bound of its backoff, and
 * that no other module sends a conditional or transactional write itself.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it, vi } from 'vitest';
import type { Deps } from '../functions/deps.ts';
import { StorageBusyError } from '../functions/errors/table.ts';
import { logger } from '../functions/observability/logger.ts';
import { contentionOf } from '../functions/store/contention.ts';
import { backoffMs, conditionalWrite, transactWrite, type WriteDeps, writeRetry } from '../functions/store/write.ts';

const serviceError = (name: string, fields: Record<string, unknown> = {}) =>
  Object.assign(new Error(name), { name, $metadata: {}, ...fields });
const cancelled = (...codes: string[]) =>
  serviceError('TransactionCanceledException', { CancellationReasons: codes.map((Code) => ({ Code })) });

/** A client answering each call with the next of `answers` (an error is thrown), and the waits asked for. */
const scripted = (...answers: unknown[]) => {
  const calls: unknown[] = [];
  const waits: number[] = [];
  const ddb = {
    send: async (command: unknown) => {
      calls.push(command);
      const answer = answers.shift();
      if (answer instanceof Error) throw answer;
      return answer ?? {};
    },
  } as unknown as Deps['ddb'];
  const deps: WriteDeps = {
    ddb,
    sleep: async (ms) => {
      waits.push(ms);
    },
  };
  return { deps, calls, waits };
};

const update = () =>
  new UpdateCommand({
    TableName: 't',
    Key: { PK: 'a', SK: 'b' },
    UpdateExpression: 'SET x = :x',
    ConditionExpression: 'y',
  });

describe('contentionOf: what may be tried again', () => {
  it.each([
    ['TransactionConflictException', serviceError('TransactionConflictException'), 'transactionConflict'],
    ['a cancellation naming a conflict', cancelled('None', 'TransactionConflict'), 'transactionConflict'],
    [
      'a cancellation naming a conflict and a failed condition',
      cancelled('ConditionalCheckFailed', 'TransactionConflict'),
      'transactionConflict',
    ],
    ['ProvisionedThroughputExceededException', serviceError('ProvisionedThroughputExceededException'), 'throttled'],
    ['ThrottlingException', serviceError('ThrottlingException'), 'throttled'],
    ['RequestLimitExceeded', serviceError('RequestLimitExceeded'), 'throttled'],
    ['a cancellation naming throttling', cancelled('None', 'ThrottlingError'), 'throttled'],
    ['a cancellation naming provisioned throughput', cancelled('ProvisionedThroughputExceeded'), 'throttled'],
    ['a failed condition', serviceError('ConditionalCheckFailedException'), undefined],
    ['a cancellation for failed conditions', cancelled('ConditionalCheckFailed', 'None'), undefined],
    ['a validation error', serviceError('ValidationException'), undefined],
    ['a network failure', new TypeError('fetch failed'), undefined],
    ['not an error', 'ThrottlingException', undefined],
  ])('%s', (_name, error, contention) => {
    expect(contentionOf(error)).toBe(contention);
  });
});

describe('backoff', () => {
  it('waits at random up to 50, 100, 200 ms after tries 1, 2, 3 (full jitter)', () => {
    expect([1, 2, 3].map((attempt) => backoffMs(attempt, () => 0))).toEqual([0, 0, 0]);
    expect([1, 2, 3].map((attempt) => backoffMs(attempt, () => 0.999_999))).toEqual([49, 99, 199]);
    expect(writeRetry).toEqual({ tries: 4, baseMs: 50 });
  });
});

describe('conditionalWrite', () => {
  it('answers what DynamoDB returned, in one call', async () => {
    const { deps, calls, waits } = scripted({ Attributes: { x: 1 } });
    expect(await conditionalWrite(deps, update())).toEqual({ written: true, output: { Attributes: { x: 1 } } });
    expect([calls.length, waits]).toEqual([1, []]);
  });

  it('a failed condition is an answer, with the old item as attribute values, never tried again', async () => {
    const { deps, calls } = scripted(
      serviceError('ConditionalCheckFailedException', { Item: { status: { S: 'done' } } }),
    );
    expect(await conditionalWrite(deps, update())).toEqual({ written: false, oldItem: { status: { S: 'done' } } });
    expect(calls).toHaveLength(1);
  });

  it('contention is tried again after a backoff; a condition failing on a later try is still the answer', async () => {
    const { deps, calls, waits } = scripted(
      serviceError('ThrottlingException'),
      serviceError('TransactionConflictException'),
      serviceError('ConditionalCheckFailedException'),
    );
    expect(await conditionalWrite(deps, new PutCommand({ TableName: 't', Item: {} }))).toEqual({
      written: false,
      oldItem: undefined,
    });
    expect(calls).toHaveLength(3);
    expect(waits).toHaveLength(2);
  });

  it('contention on every try is a StorageBusyError carrying the last answer; anything else is thrown as it came', async () => {
    const last = serviceError('RequestLimitExceeded');
    const busy = scripted(
      serviceError('ThrottlingException'),
      serviceError('ThrottlingException'),
      serviceError('ThrottlingException'),
      last,
    );
    const warned = vi.spyOn(logger, 'warn');
    const error = await conditionalWrite(busy.deps, update()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StorageBusyError);
    expect(error).toMatchObject({ contention: 'throttled', tries: 4, retryAfterSeconds: 1, cause: last });
    // Logged with its cause where it is given up, since the HTTP edge does not log what it maps.
    expect(warned).toHaveBeenCalledWith('write met contention on every try', {
      write: 'UpdateItem',
      contention: 'throttled',
      tries: 4,
      error: last,
    });
    warned.mockRestore();
    expect([busy.calls.length, busy.waits.length]).toEqual([4, 3]);

    const once = scripted(serviceError('ThrottlingException'));
    await expect(conditionalWrite(once.deps, update(), { tries: 1 })).rejects.toBeInstanceOf(StorageBusyError);
    expect(once.calls).toHaveLength(1);

    const broken = serviceError('ValidationException');
    const other = scripted(broken);
    await expect(conditionalWrite(other.deps, update())).rejects.toBe(broken);
  });
});

describe('transactWrite', () => {
  const items = [{ ConditionCheck: { TableName: 't', Key: { PK: 'a', SK: 'b' }, ConditionExpression: 'x' } }];

  it('written in one call; failed conditions are an answer with their reasons', async () => {
    expect(await transactWrite(scripted({}).deps, items)).toEqual({ written: true });
    const refused = scripted(cancelled('None', 'ConditionalCheckFailed'));
    expect(await transactWrite(refused.deps, items)).toEqual({
      written: false,
      reasons: [{ Code: 'None' }, { Code: 'ConditionalCheckFailed' }],
    });
    expect(refused.calls).toHaveLength(1);
  });

  it('a conflict or throttling is tried again; on every try a StorageBusyError', async () => {
    const retried = scripted(
      cancelled('TransactionConflict', 'None'),
      serviceError('ProvisionedThroughputExceededException'),
      {},
    );
    expect(await transactWrite(retried.deps, items)).toEqual({ written: true });
    expect(retried.calls).toHaveLength(3);
    const busy = scripted(...Array.from({ length: 4 }, () => cancelled('None', 'TransactionConflict')));
    await expect(transactWrite(busy.deps, items)).rejects.toMatchObject({
      name: 'StorageBusyError',
      contention: 'transactionConflict',
    });
  });

  it('a cancellation for another reason (a validation error) is thrown as it came', async () => {
    const error = cancelled('ValidationError');
    await expect(transactWrite(scripted(error).deps, items)).rejects.toBe(error);
  });
});

describe('every conditional or transactional write goes through the helper', () => {
  const storeDir = join(import.meta.dirname, '../functions/store');
  const sources = readdirSync(storeDir)
    .filter((name) => name.endsWith('.ts'))
    .map((name) => ({ name, text: readFileSync(join(storeDir, name), 'utf8') }));
  /**
   * The helper itself, refusals.ts (which reads DynamoDB's refusals for it) and contention.ts (its
   * classification of load, shared with the reads); the rate counter decides contention by its own
   * rule (a throttled count answers the key 429, docs/api.md).
   */
  const exempt = new Set(['write.ts', 'refusals.ts', 'contention.ts', 'rate-counter.ts']);

  it('only write.ts sends a TransactWriteItems or reads a failed condition', () => {
    const offenders = sources
      .filter(({ name }) => !exempt.has(name))
      .filter(({ text }) =>
        /TransactWriteCommand\b|isConditionalCheckFailed|isTransactionCanceled|cancellationReasons|ConditionalCheckFailedException/.test(
          text,
        ),
      )
      .map(({ name }) => name);
    expect(offenders).toEqual([]);
  });

  it('a command with a ConditionExpression is sent by conditionalWrite, never by deps.ddb.send', () => {
    const offenders = sources
      .filter(({ name }) => !exempt.has(name))
      .flatMap(({ name, text }) =>
        [...text.matchAll(/deps\.ddb\.send\(\s*new (?:Put|Update|Delete)Command\(([\s\S]*?)\)\s*,?\s*\)/g)]
          .filter((m) => /ConditionExpression/.test(m[1] ?? ''))
          .map(() => name),
      );
    expect(offenders).toEqual([]);
    // And the helper is what sends them (conditionalUpdate builds an UpdateItem for it).
    expect(sources.filter(({ text }) => /conditional(?:Write|Update)\(/.test(text)).length).toBeGreaterThanOrEqual(8);
  });
});
