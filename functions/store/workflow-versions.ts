/**
 * A workflow's versions. The latest version's canvas stays where runs have always read it (the
 * CANVAS item, one GetItem, now carrying its `version`); every version is also an item of its own
 * (VERSION#<n>, never changed once written), so a run pinned to an older version, and the version
 * reads, find it. A workflow stored before versions has neither number nor version items: it reads
 * as version 1 from its CANVAS item until its first update copies that to VERSION#1.
 */
import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { WorkflowStep } from '../../schemas/workflows.ts';
import type { Deps } from '../deps.ts';
import type { CursorPosition } from '../domain/cursor.ts';
import { WorkflowNotFoundError, WorkflowTooLargeToStoreError } from '../errors/table.ts';
import type { Canvas } from '../nodes/catalogue/canvas.ts';
import { tableUpdate } from './item-update.ts';
import { itemVersion, parseItem, type StoredItem } from './items/item.ts';
import {
  CanvasItemSchema,
  ListedWorkflowVersionSchema,
  type storedCanvas,
  storedWorkflow,
  type storedWorkflowVersion,
  type WorkflowItem,
  WorkflowItemSchema,
  type WorkflowVersionItem,
  WorkflowVersionItemSchema,
} from './items/workflows.ts';
import {
  canvasKey,
  workflowKey,
  workflowVersionKey,
  workflowVersionPartition,
  workflowVersionSkPrefix,
} from './keys.ts';
import { namedTransactWrite } from './named-transaction.ts';
import { itemSize, maxItemBytes } from './workflows.ts';
import { backoff, storageBusy } from './write.ts';

/** A version's content, as the create's rules made it. */
export interface VersionContent {
  teamId: string;
  workflowId: string;
  name: string;
  canvas: Canvas;
  steps: WorkflowStep[] | undefined;
  stepsCount: number;
}

/** The item of version `version` of a workflow. */
export const workflowVersionItem = (content: VersionContent, version: number, createdAt: string) =>
  ({
    ...workflowVersionKey(content.workflowId, version),
    type: 'WorkflowVersion',
    teamId: content.teamId,
    workflowId: content.workflowId,
    version,
    name: content.name,
    stepsCount: content.stepsCount,
    createdAt,
    canvas: content.canvas,
    ...(content.steps && { steps: content.steps }),
    v: itemVersion,
  }) satisfies StoredItem<typeof storedWorkflowVersion>;

/**
 * The version's item, its `steps` (the body that made it) left out when they and the canvas would
 * not fit one item together: the canvas is what a run of it needs, and a body near its 256 KiB limit
 * is stored twice otherwise. Such a version reads `steps: null`, as one made before versions kept them.
 */
export const versionItemThatFits = (content: VersionContent, version: number, createdAt: string) => {
  const whole = workflowVersionItem(content, version, createdAt);
  return itemSize(whole) <= maxItemBytes
    ? whole
    : workflowVersionItem({ ...content, steps: undefined }, version, createdAt);
};

/** A workflow's summary, read strongly; undefined when the team has no such workflow. */
export const readWorkflowSummary = async (
  deps: Deps,
  teamId: string,
  workflowId: string,
): Promise<WorkflowItem | undefined> => {
  const key = workflowKey(teamId, workflowId);
  const { Item } = await deps.ddb.send(new GetCommand({ TableName: deps.tableName, Key: key, ConsistentRead: true }));
  return Item && parseItem(WorkflowItemSchema, Item, key);
};

/** The CANVAS item (the latest version), strongly or eventually consistent. */
const readLatestCanvas = async (deps: Deps, workflowId: string, consistent: boolean) => {
  const { Item } = await deps.ddb.send(
    new GetCommand({ TableName: deps.tableName, Key: canvasKey(workflowId), ConsistentRead: consistent }),
  );
  return Item && parseItem(CanvasItemSchema, Item, canvasKey(workflowId));
};

/** Tries an update makes while other updates of the same workflow keep taking its number. */
const versionTries = 8;

/**
 * Makes version n+1 of a workflow from `content`, where n is the latest: ONE transaction that puts
 * the new version's item (only where none is), replaces the CANVAS item only if it is still version
 * n, and moves the summary to n+1. Two updates at once both read n; one writes, the other's
 * condition fails and it reads again: no version is lost and no number made twice. A workflow
 * stored before versions has its CANVAS copied to VERSION#1 in the same transaction. Throws
 * WorkflowNotFoundError when the summary is gone, StorageBusyError when other updates kept winning.
 */
export const putNextVersion = async (
  deps: Deps,
  content: VersionContent,
  summary: Pick<WorkflowItem, 'name' | 'createdAt'>,
): Promise<{ version: number; createdAt: string }> => {
  const { teamId, workflowId } = content;
  for (let attempt = 1; ; attempt++) {
    const { Item: raw } = await deps.ddb.send(
      new GetCommand({ TableName: deps.tableName, Key: canvasKey(workflowId), ConsistentRead: true }),
    );
    const latest = raw && parseItem(CanvasItemSchema, raw, canvasKey(workflowId));
    if (!latest || latest.teamId !== teamId) throw new WorkflowNotFoundError(workflowId);
    const unnumbered = raw?.version === undefined;
    const previous = latest.version;
    const version = previous + 1;
    const createdAt = deps.now().toISOString();
    const item = versionItemThatFits(content, version, createdAt);
    if (itemSize(item) > maxItemBytes) throw new WorkflowTooLargeToStoreError(itemSize(item), maxItemBytes);
    const canvas = {
      ...canvasKey(workflowId),
      type: 'Canvas',
      teamId,
      workflowId,
      canvas: content.canvas,
      version,
      v: itemVersion,
    } satisfies StoredItem<typeof storedCanvas>;
    const written = await namedTransactWrite(deps, {
      version: { Put: { TableName: deps.tableName, Item: item, ConditionExpression: 'attribute_not_exists(PK)' } },
      // Version 1 of a workflow stored before versions: its only copy is the CANVAS item being replaced.
      firstVersion: unnumbered
        ? {
            Put: {
              TableName: deps.tableName,
              Item: workflowVersionItem(
                {
                  ...content,
                  name: summary.name,
                  canvas: latest.canvas,
                  steps: undefined,
                  stepsCount: latest.canvas.nodes.length,
                },
                1,
                summary.createdAt,
              ),
              ConditionExpression: 'attribute_not_exists(PK)',
            },
          }
        : undefined,
      canvas: {
        Put: {
          TableName: deps.tableName,
          Item: canvas,
          ConditionExpression: unnumbered ? 'attribute_not_exists(version)' : 'version = :previous',
          ...(!unnumbered && { ExpressionAttributeValues: { ':previous': previous } }),
        },
      },
      summary: {
        Update: tableUpdate(
          deps,
          storedWorkflow,
          workflowKey(teamId, workflowId),
          { set: { version, name: content.name, stepsCount: content.stepsCount, updatedAt: createdAt } },
          { ConditionExpression: 'attribute_exists(PK)' },
        ),
      },
    });
    if (written.written) return { version, createdAt };
    if (written.refused('summary')) throw new WorkflowNotFoundError(workflowId);
    // Another update took this number first: read the latest again.
    if (attempt >= versionTries) throw storageBusy('workflow version', 'raceLost', attempt, new Error('taken'));
    await backoff(deps, attempt);
  }
};

/**
 * Version `version` of a workflow of the team; undefined when there is none. Version 1 of a
 * workflow stored before versions is its CANVAS item (no steps kept).
 */
export const readWorkflowVersion = async (
  deps: Deps,
  summary: Pick<WorkflowItem, 'workflowId' | 'name' | 'createdAt' | 'version'> & { teamId: string },
  version: number,
): Promise<WorkflowVersionItem | undefined> => {
  if (version > summary.version) return undefined;
  const key = workflowVersionKey(summary.workflowId, version);
  const { Item } = await deps.ddb.send(new GetCommand({ TableName: deps.tableName, Key: key, ConsistentRead: true }));
  if (Item) {
    const found = parseItem(WorkflowVersionItemSchema, Item, key);
    return found.teamId === summary.teamId ? found : undefined;
  }
  if (version !== 1) return undefined;
  const latest = await readLatestCanvas(deps, summary.workflowId, true);
  if (!latest || latest.teamId !== summary.teamId || latest.version !== 1) return undefined;
  return {
    teamId: summary.teamId,
    workflowId: summary.workflowId,
    version: 1,
    name: summary.name,
    stepsCount: latest.canvas.nodes.length,
    createdAt: summary.createdAt,
    canvas: latest.canvas,
    steps: undefined,
  };
};

/**
 * The canvas of version `version`, for a run pinned to it: the CANVAS item when it is that version
 * (one GetItem, as before versions), else that version's own item, read strongly (it was written in
 * the transaction that made it, or that moved the CANVAS item past it).
 */
export const readVersionCanvas = async (
  deps: Deps,
  workflowId: string,
  version: number,
): Promise<Canvas | undefined> => {
  const latest = await readLatestCanvas(deps, workflowId, false);
  if (latest?.version === version) return latest.canvas;
  const key = workflowVersionKey(workflowId, version);
  const { Item } = await deps.ddb.send(new GetCommand({ TableName: deps.tableName, Key: key, ConsistentRead: true }));
  if (Item) return parseItem(WorkflowVersionItemSchema, Item, key).canvas;
  // A stale read of an unnumbered workflow's version 1, or of a version just made: read strongly.
  const strong = await readLatestCanvas(deps, workflowId, true);
  return strong?.version === version ? strong.canvas : undefined;
};

/** One page of a workflow's versions, newest first, from `startKey`. */
export const queryWorkflowVersions = async (
  deps: Deps,
  workflowId: string,
  page: { limit: number; startKey: CursorPosition | null },
) => {
  const { Items = [], LastEvaluatedKey } = await deps.ddb.send(
    new QueryCommand({
      TableName: deps.tableName,
      KeyConditionExpression: 'PK = :pk AND begins_with(SK, :prefix)',
      ExpressionAttributeValues: { ':pk': workflowVersionPartition(workflowId), ':prefix': workflowVersionSkPrefix },
      ProjectionExpression: 'PK, SK, version, #name, stepsCount, createdAt',
      ExpressionAttributeNames: { '#name': 'name' },
      ScanIndexForward: false,
      ConsistentRead: true,
      Limit: page.limit,
      ...(page.startKey && { ExclusiveStartKey: page.startKey }),
    }),
  );
  return {
    versions: Items.map((item) => parseItem(ListedWorkflowVersionSchema, item)),
    lastKey: LastEvaluatedKey ? { PK: String(LastEvaluatedKey.PK), SK: String(LastEvaluatedKey.SK) } : null,
  };
};
