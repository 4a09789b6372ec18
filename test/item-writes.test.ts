/**
 * Writes typed by their reads: every write names only attributes its item's one schema reads
 * (functions/store/items/), the attributes the item declares written only, or the table's own,
 * each with the type the schema reads.
 *
 * - At compile time: each `@ts-expect-error` line below is a write that must not compile. `tsc`
 *   (npm test's typecheck, `npx tsc --noEmit -p .`) fails if one of them stops being an error.
 * - At run time: `itemUpdate` refuses an attribute its item does not have even past a cast; every
 *   UpdateExpression of the store is built by it; and the store's writers, run against a table kept
 *   in memory that applies their puts and updates (conditions are not evaluated), leave only items
 *   that parse with their schema and hold no attribute their item does not declare.
 * Pure: no emulator.
 */

import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import {
  BatchGetCommand,
  DeleteCommand,
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import * as v from 'valibot';
import { describe, expect, it } from 'vitest';
import type { Deps } from '../functions/deps.ts';
import { createApiKey, revokeApiKey } from '../functions/store/api-keys.ts';
import {
  advanceBulkPage,
  finishBulkAction,
  putBulkAction,
  settleTarget,
  takeUpTarget,
} from '../functions/store/bulk-actions.ts';
import { removeConnection, setConnection } from '../functions/store/connections.ts';
import {
  cancelWaitingDeferredRun,
  createDeferredRun,
  leaveWaiting,
  moveDeferredRun,
} from '../functions/store/deferred-runs.ts';
import { ifNotExists, itemUpdate, UnknownItemAttributeError } from '../functions/store/item-update.ts';
import { storedApiKey, storedApiKeyId } from '../functions/store/items/api-keys.ts';
import { storedBulkAction, storedBulkTarget } from '../functions/store/items/bulk-actions.ts';
import { storedDeferredRun } from '../functions/store/items/deferred-runs.ts';
import { storedDelivery, storedStepEventCount } from '../functions/store/items/deliveries.ts';
import { storedIdempotency } from '../functions/store/items/idempotency.ts';
import * as items from '../functions/store/items/index.ts';
import {
  type ItemDefinition,
  isItemAttribute,
  itemVersion,
  parseItem,
  type StoredItem,
} from '../functions/store/items/item.ts';
import { storedPrice } from '../functions/store/items/price.ts';
import { RunItemSchema, storedRun, storedRunBatch, storedRunTag, storedStep } from '../functions/store/items/runs.ts';
import { storedServerSecret } from '../functions/store/items/server-secrets.ts';
import {
  storedAgent,
  storedKeyMonth,
  storedProject,
  storedStoredBytes,
  storedStreamSlots,
  storedTeam,
  storedTeamSteps,
} from '../functions/store/items/tenancy.ts';
import { storedUpload } from '../functions/store/items/uploads.ts';
import { storedUsageCell, storedUsageModel } from '../functions/store/items/usage.ts';
import {
  storedEndpointDelivery,
  storedEndpointSlots,
  storedWebhookEndpoint,
} from '../functions/store/items/webhook-endpoints.ts';
import { storedWorkflowLock, storedWorkflowQueueEntry } from '../functions/store/items/workflow-locks.ts';
import { storedCanvas, storedWorkflow, storedWorkflowVersion } from '../functions/store/items/workflows.ts';
import { runKey, teamKey } from '../functions/store/keys.ts';
import { openLifecycleDelivery, reopenableDelivery } from '../functions/store/lifecycle-webhook-deliveries.ts';
import { setHourlySchedule, setLiveMultiplier } from '../functions/store/price-multiplier.ts';
import {
  cancelWaitingRun,
  claimStep,
  closeRun,
  countFailedExecution,
  countStep,
  countSweepRefusal,
  endRun,
  failStep,
  finishStepItem,
  markStepStarted,
  type NewRun,
  queueRun,
  readRunItem,
  releaseStep,
  retireLateStep,
  runItem,
  startRun,
} from '../functions/store/run/index.ts';
import { cursorSigningSecret } from '../functions/store/run-list.ts';
import { signingSecret } from '../functions/store/server-secrets.ts';
import {
  countStoredBytes,
  readStorageUsage,
  reserveStoredBytes,
  setStorageQuota,
} from '../functions/store/stored-bytes.ts';
import { releaseStreamSlot, takeStreamSlot } from '../functions/store/stream-slots.ts';
import { releaseTeamSlot, takeTeamSlot } from '../functions/store/team-steps.ts';
import { addCredits, createAgent, createProject, createTeam, setPerStepLimit } from '../functions/store/tenancy.ts';
import { newUploadItem, putUpload, settleUploadItem } from '../functions/store/uploads.ts';
import {
  markRedeliveryPending,
  recordWebhookAttempt,
  unmarkRedelivery,
} from '../functions/store/webhook-deliveries.ts';
import {
  abandonEndpointDelivery,
  markEndpointAttemptSending,
  markEndpointRedelivery,
  openEndpointDelivery,
  putEndpoint,
  readEndpoint,
  readEndpointDelivery,
  recordEndpointAttempt,
  recordEndpointStreak,
  rotateEndpointSecret,
  unmarkEndpointRedelivery,
  updateEndpoint,
} from '../functions/store/webhook-endpoints.ts';
import { putNextVersion } from '../functions/store/workflow-versions.ts';
import { activateWorkflow, createWorkflowForTeam, setWorkflowStatus } from '../functions/store/workflows.ts';
import { RunStatus, StepStatus } from '../platform/run-statuses.ts';

const at = '2026-05-06T07:08:09.000Z';

describe('a write that its item does not allow does not compile', () => {
  // Each body is compiled by tsc and never run: the lines under `@ts-expect-error` must be errors.
  const compiled = (check: () => unknown) => check;

  it('an update names only its item’s attributes, each of the type its schema reads', () => {
    compiled(() => [
      // @ts-expect-error a misspelt attribute
      itemUpdate(storedRun, { set: { heldHundreths: 0 } }),
      // @ts-expect-error a value of another type than the schema reads
      itemUpdate(storedRun, { set: { heldHundredths: '0' } }),
      // @ts-expect-error a status the run never stores (`claimed` is only how a queued run reads)
      itemUpdate(storedRun, { set: { status: 'claimed' } }),
      // @ts-expect-error an attribute of another item (the run's hold on a step)
      itemUpdate(storedStep, { set: { heldHundredths: 0 } }),
      // @ts-expect-error ADD to a string
      itemUpdate(storedRun, { add: { status: 1 } }),
      // @ts-expect-error ADD a string to a set of strings
      itemUpdate(storedRun, { add: { doneSteps: 'a' } }),
      // @ts-expect-error REMOVE an attribute the schema requires
      itemUpdate(storedRun, { remove: ['jobId'] }),
      // @ts-expect-error if_not_exists with a value of another type
      itemUpdate(storedStep, { set: { startedAt: ifNotExists(3) } }),
      // @ts-expect-error a map entry of another shape than the map's
      itemUpdate(storedTeam, { setEntries: { connections: { own: { secret: 'x' } } } }),
      // @ts-expect-error entries of an attribute that is not a map
      itemUpdate(storedTeam, { removeEntries: { balance: ['x'] } }),
    ]);
  });

  it('what does compile: the schema’s attributes, the declared written-only ones, the table’s own', () => {
    compiled(() => [
      itemUpdate(storedRun, {
        set: { status: RunStatus.processing },
        add: { stepsCompleted: 1, doneSteps: new Set(['a']) },
      }),
      itemUpdate(storedStep, { set: { endedAt: at, ttl: 1, startedAt: ifNotExists(at) }, remove: ['leaseUntil'] }),
      itemUpdate(storedDeferredRun, { remove: ['GSI2PK', 'GSI2SK'] }),
      itemUpdate(storedTeam, { setEntries: { connections: { own: { secretRef: 'env:KEY' } } } }),
    ]);
  });

  it('a Put’s item satisfies the input of its schema', () => {
    const run = runItem(newRun('00000000-0000-4000-8000-000000000001'), at);
    compiled(() => [
      // @ts-expect-error a misspelt attribute beside the rest of the run
      { ...run, stepsTotl: 1 } satisfies StoredItem<typeof storedRun>,
      // @ts-expect-error a value of another type
      { ...run, estimateHundredths: '3' } satisfies StoredItem<typeof storedRun>,
      // @ts-expect-error a required attribute missing (its hold)
      { ...run, heldHundredths: undefined } satisfies StoredItem<typeof storedRun>,
      { ...run, type: 'Run' } satisfies StoredItem<typeof storedRun>,
    ]);
  });
});

describe('itemUpdate', () => {
  it('names every attribute, gives each value a placeholder of its own, and merges the condition', () => {
    expect(
      itemUpdate(
        storedStep,
        {
          set: { status: StepStatus.processing, startedAt: ifNotExists(at), error: undefined },
          add: { attempts: 1 },
          remove: ['leaseUntil'],
        },
        {
          ConditionExpression: '#status = :processing',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: { ':processing': 'processing' },
        },
      ),
    ).toEqual({
      UpdateExpression:
        'SET #status = :set_status, #startedAt = if_not_exists(#startedAt, :set_startedAt), #v = :set_v ADD #attempts :add_attempts REMOVE #leaseUntil',
      ConditionExpression: '#status = :processing',
      ExpressionAttributeNames: {
        '#status': 'status',
        '#startedAt': 'startedAt',
        '#attempts': 'attempts',
        '#leaseUntil': 'leaseUntil',
        '#v': 'v',
      },
      ExpressionAttributeValues: {
        ':set_status': 'processing',
        ':set_startedAt': at,
        ':set_v': itemVersion,
        ':add_attempts': 1,
        ':processing': 'processing',
      },
    });
  });

  it('sets and removes a map’s entries by key; every update also writes the shape version v', () => {
    expect(itemUpdate(storedTeam, { setEntries: { connections: { 'open ai': { secretRef: 'env:K' } } } })).toEqual({
      UpdateExpression: 'SET #connections.#connections_0 = :connections_0, #v = :set_v',
      ExpressionAttributeNames: { '#connections': 'connections', '#connections_0': 'open ai', '#v': 'v' },
      ExpressionAttributeValues: { ':connections_0': { secretRef: 'env:K' }, ':set_v': itemVersion },
    });
    expect(itemUpdate(storedTeam, { removeEntries: { connections: ['open ai'] } })).toEqual({
      UpdateExpression: 'SET #v = :set_v REMOVE #connections.#connections_0',
      ExpressionAttributeNames: { '#connections': 'connections', '#connections_0': 'open ai', '#v': 'v' },
      ExpressionAttributeValues: { ':set_v': itemVersion },
    });
  });

  it('refuses, past any cast, an attribute its item neither reads nor declares', () => {
    const misspelt = { set: { heldHundreths: 0 } } as unknown as Parameters<typeof itemUpdate<typeof storedRun>>[1];
    expect(() => itemUpdate(storedRun, misspelt)).toThrow(UnknownItemAttributeError);
    expect(() => itemUpdate(storedRun, misspelt)).toThrow('heldHundreths');
    const foreign = { add: { failures: 1 } } as unknown as Parameters<typeof itemUpdate<typeof storedRun>>[1];
    expect(() => itemUpdate(storedRun, foreign)).toThrow(UnknownItemAttributeError);
  });

  it('refuses a placeholder the update and its condition would give two meanings, and an empty update', () => {
    expect(() =>
      itemUpdate(
        storedRun,
        { set: { heldHundredths: 0 } },
        { ConditionExpression: '#heldHundredths > :zero', ExpressionAttributeNames: { '#heldHundredths': 'held' } },
      ),
    ).toThrow('two meanings');
    expect(() => itemUpdate(storedRun, {})).toThrow('writes nothing');
  });
});

describe('every write goes through the item’s schema', () => {
  const root = new URL('..', import.meta.url).pathname;
  const storeFiles = (readdirSync(join(root, 'functions'), { recursive: true }) as string[])
    .filter((file) => file.endsWith('.ts'))
    .map((file) => relative(root, join(root, 'functions', file)));

  // The rate counter's attributes are its buckets (`c<n>`, `l<n>`), named by time: its own rule reads them.
  it('no UpdateExpression is written by hand in functions/ but the rate counter’s', () => {
    const byHand = storeFiles.filter(
      (file) =>
        /UpdateExpression:/.test(readFileSync(join(root, file), 'utf8')) &&
        !['functions/store/item-update.ts', 'functions/store/rate-counter.ts'].includes(file),
    );
    expect(storeFiles.length).toBeGreaterThan(50);
    expect(byHand).toEqual([]);
  });

  it('each item’s written-only attributes are ones its schema does not read', () => {
    for (const item of Object.values(definitions)) {
      expect(item.writtenOnly.filter((attribute) => Object.hasOwn(item.schema.entries, attribute))).toEqual([]);
    }
  });
});

// The writers, against a table in memory

/** Every stored item by its key (`SK` alone, or `PK` prefix and `SK` prefix), the rate counter aside. */
const definitions = {
  run: storedRun,
  step: storedStep,
  delivery: storedDelivery,
  deferredRun: storedDeferredRun,
  team: storedTeam,
  project: storedProject,
  agent: storedAgent,
  workflow: storedWorkflow,
  canvas: storedCanvas,
  workflowVersion: storedWorkflowVersion,
  apiKey: storedApiKey,
  apiKeyId: storedApiKeyId,
  workflowLock: storedWorkflowLock,
  workflowQueueEntry: storedWorkflowQueueEntry,
  keyMonth: storedKeyMonth,
  idempotency: storedIdempotency,
  price: storedPrice,
  cursorKey: storedServerSecret,
  fileLinkKey: storedServerSecret,
  runTokenKey: storedServerSecret,
  upload: storedUpload,
  runTag: storedRunTag,
  runBatch: storedRunBatch,
  stepEventCount: storedStepEventCount,
  storedBytes: storedStoredBytes,
  teamSteps: storedTeamSteps,
  streamSlots: storedStreamSlots,
  webhookEndpoint: storedWebhookEndpoint,
  endpointSlots: storedEndpointSlots,
  endpointDelivery: storedEndpointDelivery,
  usageCell: storedUsageCell,
  usageModel: storedUsageModel,
  bulkAction: storedBulkAction,
  bulkTarget: storedBulkTarget,
} satisfies Record<string, ItemDefinition>;

const kindOf = ({ PK, SK }: { PK: string; SK: string }): keyof typeof definitions => {
  const bySk: [RegExp, keyof typeof definitions][] = [
    [/^RUN$/, 'run'],
    [/^STEP#/, 'step'],
    [/^WEBHOOK#/, 'delivery'],
    [/^STEPEVENTS$/, 'stepEventCount'],
    [/^DEFERRED$/, 'deferredRun'],
    [/^TEAM$/, 'team'],
    [/^PROJECT#/, 'project'],
    [/^AGENT#/, 'agent'],
    [/^WORKFLOW#/, 'workflow'],
    [/^CANVAS$/, 'canvas'],
    [/^VERSION#/, 'workflowVersion'],
    [/^APIKEY$/, 'apiKey'],
    [/^APIKEYID$/, 'apiKeyId'],
    [/^LOCK$/, 'workflowLock'],
    [/^IDEM$/, 'idempotency'],
    [/^PRICE$/, 'price'],
    [/^CURSORKEY$/, 'cursorKey'],
    [/^FILELINKKEY$/, 'fileLinkKey'],
    [/^RUNTOKENKEY$/, 'runTokenKey'],
    [/^FILE#/, 'upload'],
    [/^WHENDPOINT#/, 'webhookEndpoint'],
    [/^WHSLOTS$/, 'endpointSlots'],
    [/^DELIVERY#/, 'endpointDelivery'],
    [/^BULK$/, 'bulkAction'],
    [/^TARGET#/, 'bulkTarget'],
  ];
  if (PK.startsWith('KEYSPEND#')) return 'keyMonth';
  if (PK.startsWith('STOREDBYTES#')) return 'storedBytes';
  if (PK.startsWith('TEAMSTEPS#')) return 'teamSteps';
  if (PK.startsWith('STREAMS#')) return 'streamSlots';
  if (PK.startsWith('RUNTAG#')) return 'runTag';
  if (PK.startsWith('RUNBATCH#')) return 'runBatch';
  if (PK.startsWith('WFQUEUE#')) return 'workflowQueueEntry';
  if (PK.startsWith('USAGE#')) return PK.endsWith('#model') ? 'usageModel' : 'usageCell';
  const kind = bySk.find(([pattern]) => pattern.test(SK))?.[1];
  if (!kind) throw new Error(`no item is stored at ${PK}|${SK}`);
  return kind;
};

type Item = Record<string, unknown>;

/** The clauses `itemUpdate` writes, applied: SET (with if_not_exists and map entries), ADD, REMOVE. */
const applyUpdate = (
  stored: Item,
  update: {
    UpdateExpression?: string;
    ExpressionAttributeNames?: Record<string, string>;
    ExpressionAttributeValues?: Record<string, unknown>;
  },
): Item => {
  const item = structuredClone(stored);
  const name = (placeholder: string) => update.ExpressionAttributeNames?.[placeholder] ?? placeholder;
  const value = (placeholder: string) => update.ExpressionAttributeValues?.[placeholder];
  const path = (text: string) => text.split('.').map(name);
  const clauses = (update.UpdateExpression ?? '').split(/ (?=ADD |REMOVE )/);
  for (const clause of clauses) {
    const [verb = '', ...rest] = clause.split(' ');
    const parts = rest.join(' ').split(/, (?![^(]*\))/);
    for (const part of parts) {
      if (verb === 'SET') {
        const [target = '', expression = ''] = part.split(' = ');
        const [attribute = '', entry] = path(target);
        const kept = /^if_not_exists\(\S+, (:\w+)\)$/.exec(expression);
        // A map entry added to (`addEntries`): `if_not_exists(path, :zero) + :n`.
        const summed = /^if_not_exists\(\S+, (:\w+)\) \+ (:\w+)$/.exec(expression);
        const current = entry === undefined ? item[attribute] : (item[attribute] as Item | undefined)?.[entry];
        const written = summed
          ? ((current ?? value(summed[1] ?? '')) as number) + (value(summed[2] ?? '') as number)
          : kept
            ? (item[attribute] ?? value(kept[1] ?? ''))
            : value(expression);
        if (entry === undefined) item[attribute] = written;
        else {
          // An entry of an absent map: DynamoDB refuses it and the writer creates the map first (a
          // lease's take); this table refuses nothing, so the map is made here, as the writer leaves it.
          item[attribute] ??= {};
          (item[attribute] as Item)[entry] = written;
        }
      } else if (verb === 'ADD') {
        const [target = '', placeholder = ''] = part.split(' ');
        const attribute = name(target);
        const added = value(placeholder);
        item[attribute] =
          added instanceof Set
            ? new Set([...((item[attribute] as Set<string> | undefined) ?? []), ...added])
            : ((item[attribute] as number | undefined) ?? 0) + (added as number);
      } else if (verb === 'REMOVE') {
        const [attribute = '', entry] = path(part);
        if (entry === undefined) delete item[attribute];
        else delete (item[attribute] as Item | undefined)?.[entry];
      } else throw new Error(`not an itemUpdate clause: ${clause}`);
    }
  }
  return item;
};

/** A DynamoDB stand-in that keeps items in memory: every write succeeds, whatever its condition. */
const memoryTable = () => {
  const items = new Map<string, Item>();
  const at = (key: Record<string, unknown>) => `${key.PK}|${key.SK}`;
  const update = (input: { Key?: Record<string, unknown> } & Parameters<typeof applyUpdate>[1]) => {
    const key = input.Key ?? {};
    const next = applyUpdate(items.get(at(key)) ?? { ...key }, input);
    items.set(at(key), next);
    return next;
  };
  const send = async (command: unknown): Promise<unknown> => {
    if (command instanceof PutCommand) {
      items.set(at(command.input.Item ?? {}), structuredClone(command.input.Item ?? {}));
      return {};
    }
    if (command instanceof UpdateCommand) return { Attributes: update(command.input) };
    if (command instanceof DeleteCommand) {
      items.delete(at(command.input.Key ?? {}));
      return {};
    }
    if (command instanceof TransactWriteCommand) {
      for (const item of command.input.TransactItems ?? []) {
        if (item.Put) items.set(at(item.Put.Item ?? {}), structuredClone(item.Put.Item ?? {}));
        if (item.Update) update(item.Update);
        if (item.Delete) items.delete(at(item.Delete.Key ?? {}));
      }
      return {};
    }
    if (command instanceof GetCommand) return { Item: items.get(at(command.input.Key ?? {})) };
    if (command instanceof BatchGetCommand) {
      const request = Object.entries(command.input.RequestItems ?? {})[0];
      const found = (request?.[1].Keys ?? []).flatMap((key) => items.get(at(key)) ?? []);
      return { Responses: { [request?.[0] ?? '']: found } };
    }
    if (command instanceof QueryCommand) {
      const pk = command.input.ExpressionAttributeValues?.[':pk'];
      return { Items: [...items.values()].filter((item) => item.PK === pk && command.input.IndexName === undefined) };
    }
    throw new Error(`the memory table does not take ${(command as object).constructor.name}`);
  };
  return { items, send };
};

const ids = {
  job: '5a000000-0000-4000-8000-000000000001',
  workflow: '5a000000-0000-4000-8000-000000000002',
  deferred: '5a000000-0000-4000-8000-000000000003',
  queued: '5a000000-0000-4000-8000-000000000004',
  cancelledInQueue: '5a000000-0000-4000-8000-000000000005',
  settled: '5a000000-0000-4000-8000-000000000006',
  settledWorkflow: '5a000000-0000-4000-8000-000000000007',
};

function newRun(jobId: string): NewRun {
  return {
    jobId,
    teamId: 'team-1',
    keyId: 'key-1',
    workflow: {
      workflowId: ids.workflow,
      agentId: 'agent-1',
      projectId: 'project-1',
      version: 1,
      status: null,
      canvas: { nodes: [], edges: [] },
    },
    mode: 'production',
    inputs: { topic: 'owls' },
    callbackUrl: 'https://example.com/hook',
    callbackSecret: 'shh',
    estimate: {
      steps: [
        { nodeId: 'a', type: 'TextGen', hundredths: 3 },
        { nodeId: 'b', type: 'TextGen', hundredths: 4 },
        { nodeId: 'c', type: 'TextGen', hundredths: 5 },
      ],
      totalHundredths: 12,
      multiplier: 1,
    },
    month: '2026-05',
    monthlyCap: 1000,
    hardCap: 5000,
    idempotency: { keyHash: 'k', requestHash: 'r', response: { body: { jobId } }, expiresAt: 1_900_000_000 },
    deferredJobId: null,
    labels: { metadata: { order: 'A-1' }, tags: ['vip', 'order:A-1'] },
    batchId: '00000000-0000-4000-8000-0000000000b1',
  };
}

describe('what the store’s writers leave in the table', () => {
  it('knows every stored item functions/store/items/ declares, so the run below must leave one of each', () => {
    // Every `storedX` definition (an object), not the helper that builds them (`storedItem`).
    const declared = Object.entries(items).filter(
      ([name, item]) => /^stored[A-Z]/.test(name) && typeof item === 'object',
    );
    const known = new Set<unknown>(Object.values(definitions));
    expect(declared.filter(([, item]) => !known.has(item)).map(([name]) => name)).toEqual([]);
  });

  it('every item parses with its schema, holds only attributes its item declares, and carries the current v', async () => {
    const table = memoryTable();
    let next = 0;
    const deps = {
      ddb: { send: table.send },
      tableName: 'table',
      now: () => new Date(at),
      newId: () => `5b000000-0000-4000-8000-${String(++next).padStart(12, '0')}`,
      sleep: async () => {},
      retentionDays: 30,
    } as unknown as Deps;

    // Tenancy, keys, workflows, prices, the cursor key, the file links' key.
    const { teamId } = await createTeam(deps, { name: 'T', creditsHundredths: 900, perStepLimitHundredths: 50 });
    await addCredits(deps, teamId, 100);
    await setPerStepLimit(deps, teamId, null);
    await setConnection(deps, teamId, 'own', { secretRef: 'env:OWN_KEY', endpoint: 'https://models.example' });
    await setConnection(deps, teamId, 'spare', { secretRef: 'env:SPARE_KEY' });
    await removeConnection(deps, teamId, 'spare');
    const { projectId } = await createProject(deps, { teamId, name: 'P', hardCapHundredths: 5000 });
    const { agentId } = await createAgent(deps, { teamId, projectId, name: 'A' });
    const { keyId } = await createApiKey(deps, { teamId, scopes: ['runs:read'], monthlyCapHundredths: 1000 });
    await revokeApiKey(deps, keyId);
    const canvas = { nodes: [], edges: [] };
    const { workflowId } = await createWorkflowForTeam(deps, { teamId, name: 'W', canvas, stepsCount: 0, agentId });
    await putNextVersion(
      deps,
      { teamId, workflowId, name: 'W2', canvas, steps: [{ key: 'a', type: 'TextEntry' }], stepsCount: 1 },
      { name: 'W', createdAt: deps.now().toISOString() },
    );
    await setWorkflowStatus(deps, teamId, workflowId, 'archived');
    await activateWorkflow(deps, teamId, agentId, workflowId);
    await setLiveMultiplier(deps, 0.8);
    await setLiveMultiplier(deps, null);
    await setHourlySchedule(
      deps,
      Array.from({ length: 24 }, () => 1),
    );
    await cursorSigningSecret(deps);
    await signingSecret(deps, 'fileLink');
    await signingSecret(deps, 'runToken');

    // A run: started, its steps claimed, failed, released, finished, counted, retired; its end.
    // Its start chose lifecycle events: the run item and its steps' ends carry the marks.
    await startRun(deps, {
      ...newRun(ids.job),
      webhookEvents: ['run.started', 'step.completed', 'step.failed'],
      eventSteps: ['a', 'b', 'c'],
    });
    const run = { ...(await readRunItem(deps, ids.job)) } as NonNullable<Awaited<ReturnType<typeof readRunItem>>>;
    expect(run.jobId).toBe(ids.job);
    // Two runs queued behind it (each waiting, with its queue entry, counted on the lock); one cancelled.
    for (const jobId of [ids.queued, ids.cancelledInQueue]) {
      expect((await queueRun(deps, newRun(jobId), { lane: 'queue', waitUntil: at }, () => null)).kind).toBe('waits');
    }
    const inQueue = await readRunItem(deps, ids.cancelledInQueue);
    expect(inQueue && (await cancelWaitingRun(deps, inQueue))).toBe(true);
    const claim = await claimStep(deps, run, 'a');
    if (!claim.claimed) throw new Error('the memory table takes every claim');
    await releaseStep(deps, ids.job, 'a', claim.attempt);
    await finishStepItem(deps, run, 'a', claim.attempt, {
      status: StepStatus.completed,
      outputs: { text: 'hi' },
      model: { provider: 'sandbox', model: 'sandbox-text-1' },
      licence: undefined,
      chargeHundredths: 3,
    });
    await countStep(deps, run, 'a', { status: StepStatus.completed, chargeHundredths: 3 });
    expect(await markStepStarted(deps, run, 'b')).toBe(true);
    await countFailedExecution(deps, run, 'b');
    await finishStepItem(deps, run, 'b', null, { status: StepStatus.skipped });
    await countSweepRefusal(deps, ids.job);
    await failStep(deps, run, 'c', null, 'the node failed');
    await retireLateStep(deps, run, 'a');
    await closeRun(deps, run, RunStatus.cancelled);
    // A run of another workflow ended by its last count, a model step's: its settlement adds to the usage rollups.
    const second = newRun(ids.settled);
    await startRun(deps, { ...second, workflow: { ...second.workflow, workflowId: ids.settledWorkflow } });
    const settling = await readRunItem(deps, ids.settled);
    const modelStep = { status: StepStatus.completed, chargeHundredths: 3, model: { provider: 'sandbox', model: 'm' } };
    expect(settling && (await countStep(deps, settling, 'a', modelStep))).toMatchObject({ counted: true });
    const counted = await readRunItem(deps, ids.settled);
    expect(counted && (await endRun(deps, counted, RunStatus.completed))).toBe(true);
    // The marks were written (the lifecycle events' filters read them; the checks below hold them declared).
    expect(table.items.get(`${runKey(ids.job).PK}|STEP#a`)?.notify).toBe(true);
    expect(table.items.get(`${runKey(ids.job).PK}|RUN`)?.notifyStart).toBe(true);

    // A webhook delivery: attempted, failed, marked for redelivery and unmarked; a second event's, created by the mark.
    const entry = { attempt: 1, at, host: 'example.com', statusCode: 500, durationMs: 12, nextAttemptAt: at };
    await recordWebhookAttempt(deps, ids.job, 'run.cancelled', {
      messageId: 'm1',
      entry,
      log: [],
      state: 'pending',
      expiresAt: 1_900_000_000,
    });
    const last = { ...entry, attempt: 2, nextAttemptAt: undefined };
    await recordWebhookAttempt(deps, ids.job, 'run.cancelled', {
      messageId: 'm2',
      entry: last,
      log: [entry],
      state: 'failed',
      expiresAt: 1_900_000_000,
    });
    await markRedeliveryPending(deps, ids.job, 'run.cancelled', {
      attempts: 2,
      exists: true,
      expiresAt: 1_900_000_000,
    });
    await unmarkRedelivery(deps, ids.job, 'run.cancelled', { requestedAt: at, previousState: 'failed' });
    await markRedeliveryPending(deps, ids.job, 'run.completed', { attempts: 0, exists: false, expiresAt: 1 });
    // Lifecycle events: a run event's delivery opened; step events' with the run's count, one taken back.
    await openLifecycleDelivery(deps, ids.job, { event: 'run.started' }, 1_900_000_000);
    await openLifecycleDelivery(deps, ids.job, { event: 'step.completed', nodeId: 'a' }, 1_900_000_000);
    await openLifecycleDelivery(deps, ids.job, { event: 'step.failed', nodeId: 'c' }, 1_900_000_000);
    await reopenableDelivery(deps, ids.job, { event: 'step.failed', nodeId: 'c' });

    // A team's webhook endpoint: created, changed, disabled and enabled, its secret rotated, its
    // failure streak started and then disabling it; one delivery opened, attempted, redelivered.
    const endpointId = '5a000000-0000-4000-8000-00000000000e';
    await putEndpoint(
      deps,
      {
        endpointId,
        teamId,
        url: 'https://hooks.example/x',
        events: ['run.completed'],
        workflowIds: [workflowId],
        tags: ['vip'],
        description: 'billing',
        secret: 'whsec_AAAA',
        disabled: false,
        createdAt: at,
        updatedAt: at,
      },
      20,
    );
    await updateEndpoint(deps, teamId, endpointId, { events: ['run.failed'], disabled: true });
    await updateEndpoint(deps, teamId, endpointId, { disabled: false });
    const endpoint = await readEndpoint(deps, teamId, endpointId);
    if (!endpoint) throw new Error('endpoint not written');
    await rotateEndpointSecret(deps, endpoint, 'whsec_BBBB', at);
    await recordEndpointStreak(deps, endpoint, 'started', at);
    await recordEndpointStreak(deps, { ...endpoint, failingSince: at }, 'disable', at);
    const deliveryId = '0190a000-0000-7000-8000-000000000001';
    await openEndpointDelivery(deps, {
      deliveryId,
      endpointId,
      teamId,
      event: 'run.completed',
      jobId: ids.job,
      createdAt: at,
      expiresAt: 1_900_000_000,
    });
    const opened = await readEndpointDelivery(deps, endpointId, deliveryId);
    if (!opened) throw new Error('delivery not written');
    await markEndpointAttemptSending(deps, opened, { attempt: 1, at });
    const endpointEntry = { attempt: 1, at, host: 'hooks.example', statusCode: 500, durationMs: 3, nextAttemptAt: at };
    await recordEndpointAttempt(deps, opened, { messageId: 'm-1', entry: endpointEntry, state: 'failed' });
    await markEndpointRedelivery(deps, { ...opened, attempts: 1, state: 'failed' });
    await unmarkEndpointRedelivery(deps, { ...opened, attempts: 1, state: 'failed' });
    await abandonEndpointDelivery(deps, { ...opened, attempts: 1 });
    await openEndpointDelivery(deps, {
      deliveryId: '0190a000-0000-7000-8000-000000000002',
      endpointId,
      teamId,
      event: 'ping',
      createdAt: at,
      single: true,
      expiresAt: 1_900_000_000,
    });

    // Deferred runs: one dispatched (by the start's transaction), one expired, one cancelled.
    const key = {
      keyId,
      teamId,
      scopes: [],
      workflowIds: [],
      monthlyCapHundredths: null,
      expiresAt: null,
      revokedAt: null,
      rateLimitPerMinute: null,
      hint: 'wra_…abcd',
      createdAt: at,
    };
    const request = { mode: 'production' as const, defer: true, maxMultiplier: 0.5, inputs: {} };
    for (const n of [1, 2, 3]) {
      const deferredJobId = `${ids.deferred.slice(0, -1)}${n}`;
      await createDeferredRun(deps, { deferredJobId, key, workflowId, request, idempotency: null });
    }
    const dispatchedJob = '5a000000-0000-4000-8000-000000000009';
    await startRun(deps, {
      ...newRun(dispatchedJob),
      idempotency: null,
      deferredJobId: `${ids.deferred.slice(0, -1)}1`,
      extraItems: [
        { Update: leaveWaiting(deps, `${ids.deferred.slice(0, -1)}1`, 'dispatched', { jobId: dispatchedJob }) },
      ],
    });
    await moveDeferredRun(deps, `${ids.deferred.slice(0, -1)}2`, 'expired');
    await cancelWaitingDeferredRun(deps, `${ids.deferred.slice(0, -1)}3`);

    // Uploaded files: declared, then one settled ready (an image, its dimensions), one rejected.
    for (const [fileId, settlement] of [
      ['file_1', { state: 'ready', etag: '"abc"', width: 4, height: 3 }],
      ['file_2', { state: 'rejected', reason: 'content is image/png, not the declared audio/wav' }],
    ] as const) {
      const file = {
        fileId,
        name: 'cat.png',
        contentType: 'image/png',
        size: 100,
        createdAt: at,
        uploadExpiresAt: at,
        expiresAt: at,
      } as const;
      await putUpload(deps, newUploadItem(file, { teamId, keyId }));
      expect(await settleUploadItem(deps, teamId, fileId, settlement)).toMatchObject({ fileId, ...settlement });
    }

    // A team's stored bytes: a quota-checked write, an unconditional one, a deletion, an operator's quota.
    await reserveStoredBytes(deps, teamId, 100, '2099-01-01');
    await countStoredBytes(deps, teamId, 50, '2099-01-02');
    await countStoredBytes(deps, teamId, -50, '2099-01-02');
    await setStorageQuota(deps, teamId, 1000);
    expect(await readStorageUsage(deps, teamId)).toEqual({ usedBytes: 100, quotaBytes: 1000 });

    // The leases: a team's steps in flight, a key's and a run's open streams (each taken, one given back).
    expect(await takeTeamSlot(deps, teamId, 'a', 'lease-a', 5)).toBe(true);
    expect(await takeTeamSlot(deps, teamId, 'b', 'lease-b', 5)).toBe(true);
    await releaseTeamSlot(deps, teamId, 'b', 'lease-b');
    const lease = { text: 'lease-s', until: new Date(Date.parse(at) + 60_000) };
    expect((await takeStreamSlot(deps, { keyId }, 's1', lease, 5)).taken).toBe(true);
    expect((await takeStreamSlot(deps, { jobId: ids.job }, 's1', lease, 5)).taken).toBe(true);
    await releaseStreamSlot(deps, { keyId }, 's1', lease.text);

    // A bulk cancel: written, a run taken up and settled, a deferred run taken up, its page moved on
    // with the counts, and its last page finishing it.
    const bulkActionId = '5b000000-0000-4000-8000-00000000000f';
    await putBulkAction(deps, {
      bulkActionId,
      teamId,
      keyId,
      action: 'cancel',
      status: 'running',
      filter: { tag: 'vip', status: ['queued'] },
      workflowIds: [],
      matched: 0,
      cancelled: 0,
      skipped: 0,
      failed: 0,
      page: 0,
      createdAt: at,
      ttl: 1_900_000_000,
    });
    const until = new Date(Date.parse(at) + 60_000).toISOString();
    // (The memory table evaluates no condition: what each answers is test/bulk-cancel.int.test.ts's.)
    await takeUpTarget(deps, bulkActionId, `RUN#${ids.job}`, 1_900_000_000, until);
    await settleTarget(deps, bulkActionId, `RUN#${ids.job}`, 'cancelled');
    await takeUpTarget(deps, bulkActionId, `DEFERRED#${ids.job}`, 1_900_000_000, until);
    const pageCounts = { matched: 1, cancelled: 1, skipped: 0, failed: 0 };
    await advanceBulkPage(deps, bulkActionId, 0, pageCounts, '{"phase":"runs","startKey":null}');
    await finishBulkAction(deps, bulkActionId, 1, { ...pageCounts, cancelled: 0, skipped: 1 });

    const kinds = new Set<string>();
    const unknown: string[] = [];
    const unversioned: string[] = [];
    for (const item of table.items.values()) {
      const kind = kindOf(item as { PK: string; SK: string });
      kinds.add(kind);
      if (item.v !== itemVersion) unversioned.push(`${kind}: v ${String(item.v)}`);
      const definition: ItemDefinition = definitions[kind];
      parseItem(definition.schema, item);
      for (const attribute of Object.keys(item)) {
        if (!isItemAttribute(definition, attribute)) unknown.push(`${kind}: ${attribute}`);
      }
    }
    expect(unknown).toEqual([]);
    // Written by a Put (`StoredItem` requires it) or an update (`itemUpdate` sets it).
    expect(unversioned).toEqual([]);
    expect([...kinds].sort()).toEqual(Object.keys(definitions).sort());

    // And the run's end as the writers left it, read as every reader reads it.
    const ended = parseItem(RunItemSchema, table.items.get(`${runKey(ids.job).PK}|RUN`) ?? {});
    expect(ended).toMatchObject({ status: RunStatus.cancelled, endedAt: at, sweepRefusals: 1 });
    expect(ended.doneSteps).toEqual(new Set(['a']));
    expect(table.items.get(`${teamKey(teamId).PK}|TEAM`)?.connections).toEqual({
      own: { secretRef: 'env:OWN_KEY', endpoint: 'https://models.example' },
    });
    expect(v.is(v.object({ attempts: v.literal(1) }), table.items.get(`${runKey(ids.job).PK}|STEP#a`))).toBe(true);
  });
});
