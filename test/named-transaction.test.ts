/**
 * A cancelled transaction's reasons are read by name: an item inserted in the middle of the start
 * transaction shifts every position after it, and each refusal still reads as the same error.
 * DynamoDB is stood in for by a client that refuses the item a case names, wherever it sits.
 */
import { TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import type { Deps } from '../functions/deps.ts';
import { RunInProgressError, RunRefusedError } from '../functions/errors/table.ts';
import { IdempotencyRaceError } from '../functions/store/idempotency.ts';
import {
  inOrder,
  type NamedItems,
  namedTransactWrite,
  type TransactItem,
} from '../functions/store/named-transaction.ts';
import {
  ExtraConditionFailedError,
  type NewRun,
  RaceLostError,
  type StartItemName,
  startRefusal,
  startRunItems,
} from '../functions/store/run/index.ts';

/** A client that cancels every transaction, failing the condition of the items `fails` picks. */
const refusingClient = (fails: (item: TransactItem) => boolean) => ({
  send: async (command: unknown) => {
    if (!(command instanceof TransactWriteCommand)) throw new Error('only transactions here');
    const items = command.input.TransactItems ?? [];
    throw Object.assign(new Error('Transaction cancelled'), {
      name: 'TransactionCanceledException',
      CancellationReasons: items.map((item) =>
        fails(item)
          ? {
              Code: 'ConditionalCheckFailed',
              Item: item.Put?.Item?.type === 'WorkflowLock' ? { jobId: { S: 'holder' } } : undefined,
            }
          : { Code: 'None' },
      ),
    });
  },
});

const deps = (fails: (item: TransactItem) => boolean) =>
  ({
    tableName: 'table',
    now: () => new Date('2026-01-01T00:00:00Z'),
    sleep: async () => {},
    ddb: refusingClient(fails),
  }) as unknown as Deps;

const run: NewRun = {
  jobId: 'job-1',
  teamId: 'team-1',
  keyId: 'key-1',
  workflow: {
    workflowId: 'wf-1',
    agentId: 'agent-1',
    projectId: 'project-1',
    version: 1,
    status: null,
    canvas: { nodes: [], edges: [] },
  },
  mode: 'production',
  inputs: {},
  callbackUrl: null,
  callbackSecret: null,
  estimate: { steps: [{ nodeId: 'n1', type: 'TextInput', hundredths: 100 }], totalHundredths: 100, multiplier: 1 },
  month: '2026-01',
  monthlyCap: 500,
  hardCap: 1000,
  idempotency: { keyHash: 'hash', requestHash: 'request', response: { body: { deferred: true } }, expiresAt: 1 },
  deferredJobId: null,
  extraItems: [
    {
      ConditionCheck: { TableName: 'table', Key: { PK: 'DEFERRED#d', SK: 'DEFERRED' }, ConditionExpression: '#s = :w' },
    },
  ],
};

/** The start's items with a probe inserted after the lock: every later item moves one place on. */
const withProbe = (items: NamedItems<StartItemName>) => {
  const probe: TransactItem = {
    ConditionCheck: {
      TableName: 'table',
      Key: { PK: 'PROBE', SK: 'PROBE' },
      ConditionExpression: 'attribute_not_exists(PK)',
    },
  };
  const [first, ...rest] = inOrder(items);
  if (!first) throw new Error('no items');
  return Object.fromEntries([
    [first.name, first.item],
    ['probe', probe],
    ...rest.map((e) => [e.name, e.item]),
  ]) as NamedItems<StartItemName>; // the reader never asks for 'probe'
};

/** Each item a refusal may name, how to pick it out of the transaction, and the error it reads as. */
const cases: [StartItemName, (item: TransactItem) => boolean, (error: unknown) => boolean][] = [
  ['lock', (i) => i.Put?.Item?.type === 'WorkflowLock', (e) => e instanceof RunInProgressError],
  ['balance', (i) => i.Update?.UpdateExpression?.includes('balance') === true, (e) => e instanceof RunRefusedError],
  [
    'projectSpend',
    (i) => i.Update?.ConditionExpression?.includes('hardCapHundredths') === true,
    (e) => e instanceof RaceLostError,
  ],
  [
    'keyMonth',
    (i) => i.Update?.Key?.PK?.toString().startsWith('KEYSPEND#') === true,
    (e) => e instanceof RaceLostError,
  ],
  ['idempotency', (i) => i.Put?.Item?.requestHash === 'request', (e) => e instanceof IdempotencyRaceError],
  ['extra:0', (i) => i.ConditionCheck?.Key?.PK === 'DEFERRED#d', (e) => e instanceof ExtraConditionFailedError],
];

describe('the start transaction read by name', () => {
  it.each(cases)('a refused %s reads the same with an item inserted before it', async (name, pick, isError) => {
    for (const insert of [false, true]) {
      const items = startRunItems(deps(pick), run);
      const result = await namedTransactWrite(deps(pick), insert ? withProbe(items) : items);
      if (result.written) throw new Error('expected a refusal');
      expect(result.refusedNames).toEqual([name]);
      expect(isError(startRefusal(run, result)), `${name}, probe inserted: ${insert}`).toBe(true);
    }
  });

  it('names the lock holder from the refused lock item', async () => {
    const pick = (i: TransactItem) => i.Put?.Item?.type === 'WorkflowLock';
    const result = await namedTransactWrite(deps(pick), withProbe(startRunItems(deps(pick), run)));
    if (result.written) throw new Error('expected a refusal');
    const error = startRefusal(run, result);
    expect(error).toBeInstanceOf(RunInProgressError);
    expect(JSON.stringify(error)).toContain('holder');
  });
});
