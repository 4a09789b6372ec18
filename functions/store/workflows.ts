import { GetCommand } from '@aws-sdk/lib-dynamodb';
import * as v from 'valibot';
import type { WorkflowStatus } from '../../schemas/workflow-words.ts';
import type { WorkflowStep } from '../../schemas/workflows.ts';
import type { Deps } from '../deps.ts';
import type { WorkflowSummaryRecord } from '../domain/workflow-list.ts';
import { AgentOrProjectNotFoundError, WorkflowTooLargeToStoreError } from '../errors/table.ts';
import type { Canvas } from '../nodes/catalogue/canvas.ts';
import { tableUpdate } from './item-update.ts';
import { itemVersion, parseItem, type StoredItem } from './items/item.ts';
import { AgentItemSchema, type IdEntrySchema, storedAgent } from './items/tenancy.ts';
import { type storedCanvas, storedWorkflow, WorkflowItemSchema } from './items/workflows.ts';
import { agentKey, canvasKey, idIndex, projectKey, teamPartition, workflowKey, workflowSkPrefix } from './keys.ts';
import { type NamedItems, namedTransactWrite } from './named-transaction.ts';
import { queryAll } from './query.ts';
import { agentItem } from './tenancy.ts';
import { versionItemThatFits } from './workflow-versions.ts';
import { conditionalUpdate, transactWrite } from './write.ts';

/** What the list reads of a summary (its projection). */
const ListedWorkflowSchema = v.pick(WorkflowItemSchema, ['workflowId', 'name', 'description', 'status', 'updatedAt']);

/** A summary as the list answers it, from the fields the list reads of its item. */
export const summaryRecordOf = (workflow: v.InferOutput<typeof ListedWorkflowSchema>): WorkflowSummaryRecord => ({
  id: workflow.workflowId,
  name: workflow.name,
  description: workflow.description,
  status: workflow.status,
  updated_at: workflow.updatedAt,
});

/** A summary item as the list answers it. */
const summaryOf = (item: Record<string, unknown>): WorkflowSummaryRecord =>
  summaryRecordOf(parseItem(ListedWorkflowSchema, item));

/**
 * Every workflow summary of a team in one strongly consistent Query of the team partition (a new
 * workflow shows at once), newest change first. The canvas lives elsewhere and is not read.
 */
export const listWorkflowSummaries = async (deps: Deps, teamId: string): Promise<WorkflowSummaryRecord[]> =>
  queryAll(
    deps,
    {
      KeyConditionExpression: 'PK = :pk AND begins_with(SK, :prefix)',
      ExpressionAttributeValues: { ':pk': teamPartition(teamId), ':prefix': workflowSkPrefix },
      ProjectionExpression: 'PK, SK, workflowId, #name, description, #status, updatedAt',
      ExpressionAttributeNames: { '#name': 'name', '#status': 'status' },
      ConsistentRead: true,
    },
    summaryOf,
  );

/** Operators set a workflow's status; returns false when the team has no such workflow. */
export const setWorkflowStatus = async (
  deps: Deps,
  teamId: string,
  workflowId: string,
  status: WorkflowStatus,
): Promise<boolean> => {
  const set = await conditionalUpdate(
    deps,
    storedWorkflow,
    workflowKey(teamId, workflowId),
    { set: { status, updatedAt: deps.now().toISOString() } },
    { ConditionExpression: 'attribute_exists(PK)' },
  );
  return set.written;
};

export interface NewWorkflowRecord {
  teamId: string;
  agentId: string;
  projectId: string;
  name: string;
  description: string | null;
  status: WorkflowStatus;
  /** The canvas graph runs execute; its shape is owned by the workflow domain. */
  canvas: Canvas;
  stepsCount: number;
  /** The steps that made it, kept with its version 1. */
  steps?: WorkflowStep[];
}

/** A workflow's summary, in the team partition, with its id-lookup entry. */
export const workflowSummaryItem = (workflowId: string, input: NewWorkflowRecord, now: string) =>
  ({
    ...workflowKey(input.teamId, workflowId),
    ...idIndex('WORKFLOW', workflowId),
    type: 'Workflow',
    workflowId,
    teamId: input.teamId,
    agentId: input.agentId,
    projectId: input.projectId,
    name: input.name,
    description: input.description ?? undefined,
    status: input.status,
    stepsCount: input.stepsCount,
    createdAt: now,
    updatedAt: now,
    version: 1,
    v: itemVersion,
  }) satisfies StoredItem<typeof storedWorkflow> & v.InferInput<typeof IdEntrySchema>;

/** A workflow's canvas, apart from its summary: large, and read only by runs. */
export const canvasItem = (workflowId: string, input: Pick<NewWorkflowRecord, 'teamId' | 'canvas'>) =>
  ({
    ...canvasKey(workflowId),
    type: 'Canvas',
    teamId: input.teamId,
    workflowId,
    canvas: input.canvas,
    version: 1,
    v: itemVersion,
  }) satisfies StoredItem<typeof storedCanvas>;

/** The items of a new workflow: its summary, its canvas and its version 1. */
const workflowItems = (workflowId: string, input: NewWorkflowRecord, now: string) => ({
  summary: workflowSummaryItem(workflowId, input, now),
  canvas: canvasItem(workflowId, input),
  version: versionItemThatFits({ ...input, workflowId, steps: input.steps }, 1, now),
});

/** The Puts of a workflow's items, each only where there is none yet. */
const workflowPuts = (deps: Deps, items: ReturnType<typeof workflowItems>) => ({
  summary: { Put: { TableName: deps.tableName, Item: items.summary, ConditionExpression: 'attribute_not_exists(PK)' } },
  canvas: { Put: { TableName: deps.tableName, Item: items.canvas, ConditionExpression: 'attribute_not_exists(PK)' } },
  version: { Put: { TableName: deps.tableName, Item: items.version, ConditionExpression: 'attribute_not_exists(PK)' } },
});

/** Stores a workflow atomically; the agent must exist in the team (else AgentOrProjectNotFoundError). */
export const putWorkflow = async (deps: Deps, input: NewWorkflowRecord): Promise<{ workflowId: string }> => {
  const workflowId = deps.newId();
  const stored = await namedTransactWrite(deps, {
    agent: {
      ConditionCheck: {
        TableName: deps.tableName,
        Key: agentKey(input.teamId, input.agentId),
        ConditionExpression: 'attribute_exists(PK)',
      },
    },
    ...workflowPuts(deps, workflowItems(workflowId, input, deps.now().toISOString())),
  });
  if (!stored.written && stored.refused('agent')) throw new AgentOrProjectNotFoundError();
  if (!stored.written) throw new Error(`workflow ${workflowId} exists already`);
  return { workflowId };
};

/**
 * Makes `workflowId` the agent's active workflow (spec 4.4): the agent points at it and its status
 * becomes `active`, in one transaction; both must belong to the team and the workflow to the
 * agent, else nothing changes and the answer is false.
 */
export const activateWorkflow = async (
  deps: Deps,
  teamId: string,
  agentId: string,
  workflowId: string,
): Promise<boolean> => {
  const now = deps.now().toISOString();
  const activated = await transactWrite(deps, [
    {
      Update: tableUpdate(
        deps,
        storedAgent,
        agentKey(teamId, agentId),
        { set: { activeWorkflowId: workflowId } },
        { ConditionExpression: 'attribute_exists(PK)' },
      ),
    },
    {
      Update: tableUpdate(
        deps,
        storedWorkflow,
        workflowKey(teamId, workflowId),
        { set: { status: 'active', updatedAt: now } },
        {
          ConditionExpression: 'attribute_exists(PK) AND agentId = :agent',
          ExpressionAttributeValues: { ':agent': agentId },
        },
      ),
    },
  ]);
  return activated.written;
};

/** DynamoDB's limit on one item, which the canvas item must fit. */
export const maxItemBytes = 400 * 1024;

/**
 * The size DynamoDB counts for a value, rounded up (AWS "Item sizes and formats"): strings and
 * names as UTF-8, a number as 1 byte per two significant digits plus 1, a list or map as 3 bytes
 * plus 1 per element plus its elements. `undefined` entries are left out, as the client does.
 */
const storedSize = (value: unknown): number => {
  if (typeof value === 'string') return Buffer.byteLength(value);
  if (typeof value === 'number') {
    const digits = String(Math.abs(value))
      .replace(/e.*$/i, '')
      .replace('.', '')
      .replace(/^0+|0+$/g, '');
    return Math.ceil(digits.length / 2) + 2;
  }
  if (value === null || typeof value === 'boolean') return 1;
  if (Array.isArray(value)) return value.reduce((sum: number, item) => sum + 1 + storedSize(item), 3);
  if (typeof value === 'object') {
    return Object.entries(value).reduce(
      (sum, [name, item]) => (item === undefined ? sum : sum + 1 + Buffer.byteLength(name) + storedSize(item)),
      3,
    );
  }
  return 0;
};

/** Size of a whole item: its attribute names and values. */
export const itemSize = (item: Record<string, unknown>): number =>
  Object.entries(item).reduce(
    (sum, [name, value]) => (value === undefined ? sum : sum + Buffer.byteLength(name) + storedSize(value)),
    0,
  );

/**
 * Creates a workflow for a team in ONE transaction: with `agentId`, into that agent (which must be
 * the team's); with `projectId`, into a new agent of that project. A missing or foreign agent or
 * project, or a failure, leaves nothing behind. Throws AgentOrProjectNotFoundError.
 */
export const createWorkflowForTeam = async (
  deps: Deps,
  input: { teamId: string; name: string; canvas: Canvas; stepsCount: number; steps?: WorkflowStep[] } & (
    | { agentId: string; projectId?: undefined; agentName?: undefined }
    | { agentId?: undefined; projectId: string; agentName: string }
  ),
): Promise<{ workflowId: string; agentId: string; projectId: string }> => {
  let agentId: string;
  let projectId: string;
  /** The agent the workflow goes into: an existing one (checked), or a new one in a project (checked). */
  let owner: NamedItems<'agent' | 'project' | 'newAgent'>;
  if (input.agentId !== undefined) {
    const { Item } = await deps.ddb.send(
      new GetCommand({ TableName: deps.tableName, Key: agentKey(input.teamId, input.agentId), ConsistentRead: true }),
    );
    if (!Item) throw new AgentOrProjectNotFoundError();
    agentId = input.agentId;
    projectId = parseItem(AgentItemSchema, Item).projectId;
    owner = {
      agent: {
        ConditionCheck: {
          TableName: deps.tableName,
          Key: agentKey(input.teamId, agentId),
          ConditionExpression: 'attribute_exists(PK)',
        },
      },
      project: undefined,
      newAgent: undefined,
    };
  } else {
    agentId = deps.newId();
    projectId = input.projectId;
    owner = {
      agent: undefined,
      project: {
        ConditionCheck: {
          TableName: deps.tableName,
          Key: projectKey(input.teamId, projectId),
          ConditionExpression: 'attribute_exists(PK)',
        },
      },
      newAgent: {
        Put: {
          TableName: deps.tableName,
          Item: agentItem(
            { teamId: input.teamId, projectId, agentId, name: input.agentName },
            deps.now().toISOString(),
          ),
          ConditionExpression: 'attribute_not_exists(PK)',
        },
      },
    };
  }
  const workflowId = deps.newId();
  const items = workflowItems(
    workflowId,
    {
      teamId: input.teamId,
      agentId,
      projectId,
      name: input.name,
      description: null,
      status: 'draft',
      canvas: input.canvas,
      stepsCount: input.stepsCount,
      ...(input.steps && { steps: input.steps }),
    },
    deps.now().toISOString(),
  );
  // A body within its limit can still describe a canvas too big for one item (many connections
  // or long keys); refused here rather than left to fail the write as a 500.
  const largest = Math.max(...Object.values(items).map(itemSize));
  if (largest > maxItemBytes) throw new WorkflowTooLargeToStoreError(largest, maxItemBytes);
  const created = await namedTransactWrite(deps, { ...owner, ...workflowPuts(deps, items) });
  if (!created.written && (created.refused('agent') || created.refused('project'))) {
    throw new AgentOrProjectNotFoundError();
  }
  // Another item's condition: a new id taken already (never expected of a uuid).
  if (!created.written) throw new Error(`workflow ${workflowId} or its agent exists already`);
  return { workflowId, agentId, projectId };
};
