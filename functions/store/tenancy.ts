import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import type * as v from 'valibot';
import type { Deps } from '../deps.ts';
import { ServiceError } from '../errors/define.ts';
import { itemVersion, parseItem, type StoredItem } from './items/item.ts';
import {
  IdEntrySchema,
  type storedAgent,
  type storedProject,
  storedTeam,
  type TeamItem,
  TeamItemSchema,
} from './items/tenancy.ts';
import { agentKey, idIndex, projectKey, teamKey } from './keys.ts';
import { conditionalUpdate, transactWrite } from './write.ts';

/**
 * Teams, projects and agents: the tenancy the API keys belong to. Operators manage them with the
 * admin CLI (the "app" side of the spec). Every id also has a GSI1 entry `<KIND>#<id>` so the CLI
 * can find an item's team from its id alone.
 */

/** A team or project an operator named does not exist (or a withdrawal would go below 0); `message` says which. */
export class TenancyNotFoundError extends ServiceError {
  override readonly name = 'TenancyNotFoundError';
}

/**
 * The team of a project, agent or workflow found by its id alone (operators' CLI); undefined when
 * there is none. One Query of one page: an id has one entry.
 */
export const findTeamIdById = async (
  deps: Deps,
  kind: 'PROJECT' | 'AGENT' | 'WORKFLOW',
  id: string,
): Promise<string | undefined> => {
  const { Items } = await deps.ddb.send(
    new QueryCommand({
      TableName: deps.tableName,
      IndexName: 'GSI1',
      KeyConditionExpression: 'GSI1PK = :pk AND GSI1SK = :sk',
      ExpressionAttributeValues: { ':pk': idIndex(kind, id).GSI1PK, ':sk': kind },
    }),
  );
  const item = Items?.[0];
  return item && parseItem(IdEntrySchema, item).teamId;
};

/** All amounts in hundredths of a credit. Invariant: balance + held + charged = granted. */
export type TeamBalance = Pick<TeamItem, 'balance' | 'held' | 'charged' | 'granted'>;

export interface NewTeam {
  name: string;
  creditsHundredths: number;
  perStepLimitHundredths: number | null;
}

/** A new team's item: its grant is all balance, nothing held or charged yet. */
export const teamItem = (teamId: string, input: NewTeam, createdAt: string) =>
  ({
    ...teamKey(teamId),
    type: 'Team',
    teamId,
    name: input.name,
    balance: input.creditsHundredths,
    held: 0,
    charged: 0,
    granted: input.creditsHundredths,
    perStepLimitHundredths: input.perStepLimitHundredths ?? undefined,
    createdAt,
    v: itemVersion,
  }) satisfies StoredItem<typeof storedTeam>;

export const createTeam = async (deps: Deps, input: NewTeam): Promise<{ teamId: string }> => {
  const teamId = deps.newId();
  const created = await transactWrite(deps, [
    {
      Put: {
        TableName: deps.tableName,
        Item: teamItem(teamId, input, deps.now().toISOString()),
        ConditionExpression: 'attribute_not_exists(PK)',
      },
    },
  ]);
  if (!created.written) throw new Error(`team ${teamId} exists already`);
  return { teamId };
};

export const getTeam = async (deps: Deps, teamId: string): Promise<TeamItem | undefined> => {
  const { Item } = await deps.ddb.send(
    new GetCommand({ TableName: deps.tableName, Key: teamKey(teamId), ConsistentRead: true }),
  );
  return Item && parseItem(TeamItemSchema, Item);
};

/** Grants (or, negative, withdraws) credits; a withdrawal can never take the balance below zero. */
export const addCredits = async (deps: Deps, teamId: string, hundredths: number): Promise<TeamBalance> => {
  const added = await conditionalUpdate(
    deps,
    storedTeam,
    teamKey(teamId),
    { add: { balance: hundredths, granted: hundredths } },
    {
      ConditionExpression: 'attribute_exists(PK) AND balance >= :floor',
      ExpressionAttributeValues: { ':floor': Math.max(0, -hundredths) },
    },
    { ReturnValues: 'ALL_NEW' },
  );
  if (!added.written) throw new TenancyNotFoundError(`No team ${teamId}, or too few credits to withdraw`);
  return balanceOf(parseItem(TeamItemSchema, added.output.Attributes ?? {}));
};

/** The ledger of a team item; a missing team holds nothing. */
export const balanceOf = (team: TeamItem | undefined): TeamBalance => ({
  balance: team?.balance ?? 0,
  held: team?.held ?? 0,
  charged: team?.charged ?? 0,
  granted: team?.granted ?? 0,
});

export const setPerStepLimit = async (deps: Deps, teamId: string, hundredths: number | null) => {
  const set = await conditionalUpdate(
    deps,
    storedTeam,
    teamKey(teamId),
    hundredths === null ? { remove: ['perStepLimitHundredths'] } : { set: { perStepLimitHundredths: hundredths } },
    { ConditionExpression: 'attribute_exists(PK)' },
  );
  if (!set.written) throw new TenancyNotFoundError(`No team ${teamId}`);
};

/** A transaction's check that the item at `key` (a team, a project) exists. */
const mustExist = (deps: Deps, key: Record<string, string>) => ({
  ConditionCheck: { TableName: deps.tableName, Key: key, ConditionExpression: 'attribute_exists(PK)' },
});

export const createProject = async (
  deps: Deps,
  input: { teamId: string; name: string; hardCapHundredths: number | null },
): Promise<{ projectId: string }> => {
  const projectId = deps.newId();
  const created = await transactWrite(deps, [
    mustExist(deps, teamKey(input.teamId)),
    {
      Put: {
        TableName: deps.tableName,
        Item: projectItem({ ...input, projectId }, deps.now().toISOString()),
      },
    },
  ]);
  if (!created.written) throw new TenancyNotFoundError(`No team ${input.teamId}`);
  return { projectId };
};

/** A new project's item: nothing spent yet, its hard cap if it has one. */
export const projectItem = (
  input: { teamId: string; projectId: string; name: string; hardCapHundredths: number | null },
  createdAt: string,
) =>
  ({
    ...projectKey(input.teamId, input.projectId),
    ...idIndex('PROJECT', input.projectId),
    type: 'Project',
    projectId: input.projectId,
    teamId: input.teamId,
    name: input.name,
    hardCapHundredths: input.hardCapHundredths ?? undefined,
    spentHundredths: 0,
    createdAt,
    v: itemVersion,
  }) satisfies StoredItem<typeof storedProject> & v.InferInput<typeof IdEntrySchema>;

/** Creates an agent in a project of `teamId`; the project must exist in that team. */
export const createAgent = async (
  deps: Deps,
  input: { teamId: string; projectId: string; name: string },
): Promise<{ agentId: string }> => {
  const agentId = deps.newId();
  const created = await transactWrite(deps, [
    mustExist(deps, projectKey(input.teamId, input.projectId)),
    { Put: { TableName: deps.tableName, Item: agentItem({ ...input, agentId }, deps.now().toISOString()) } },
  ]);
  if (!created.written) throw new TenancyNotFoundError(`No project ${input.projectId}`);
  return { agentId };
};

/** The agent item, shared by the CLI and by workflow creation with `projectId` (one shape). */
export const agentItem = (
  input: { teamId: string; projectId: string; agentId: string; name: string },
  createdAt: string,
) =>
  ({
    ...agentKey(input.teamId, input.agentId),
    ...idIndex('AGENT', input.agentId),
    type: 'Agent',
    agentId: input.agentId,
    projectId: input.projectId,
    teamId: input.teamId,
    name: input.name,
    createdAt,
    v: itemVersion,
  }) satisfies StoredItem<typeof storedAgent> & v.InferInput<typeof IdEntrySchema>;
