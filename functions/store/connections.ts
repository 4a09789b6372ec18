import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import * as v from 'valibot';
import type { Deps } from '../deps.ts';
import { type SecretResolver, SecretUnavailableError } from '../nodes/providers/secret-refs.ts';
import type { TeamConnection } from '../nodes/providers/types.ts';
import { parseProviderCredentials } from '../nodes/providers/types.ts';
import { ifNotExists, tableUpdate } from './item-update.ts';
import { parseItem } from './items/item.ts';
import { type ConnectionRef, storedTeam, TeamItemSchema } from './items/tenancy.ts';
import { teamKey } from './keys.ts';
import { TenancyNotFoundError } from './tenancy.ts';
import { conditionalUpdate } from './write.ts';

/**
 * A team's own keys for providers and integrations (spec: Team, Connections). Only a reference to
 * the secret is stored, never the secret: `secretsmanager:<name>` or `ssm:/<name>` under the
 * stage's connection prefix, or `env:NAME` (an environment variable, on the local default only):
 * see secret-refs.ts. The step executor resolves it when a step asks for the connection.
 */
const ConnectionsSchema = v.pick(TeamItemSchema, ['connections']);

export const getConnections = async (deps: Deps, teamId: string): Promise<Record<string, ConnectionRef>> => {
  const { Item } = await deps.ddb.send(
    new GetCommand({
      TableName: deps.tableName,
      Key: teamKey(teamId),
      ProjectionExpression: 'connections',
      ConsistentRead: true,
    }),
  );
  return Item ? parseItem(ConnectionsSchema, Item, teamKey(teamId)).connections : {};
};

/** Sets a team's connection `key` (TenancyNotFoundError when there is no such team). */
export const setConnection = async (deps: Deps, teamId: string, key: string, connection: ConnectionRef) => {
  const team = await conditionalUpdate(
    deps,
    storedTeam,
    teamKey(teamId),
    { set: { connections: ifNotExists({}) } },
    { ConditionExpression: 'attribute_exists(PK)' },
  );
  if (!team.written) throw new TenancyNotFoundError(`No team ${teamId}`);
  await deps.ddb.send(
    new UpdateCommand(
      tableUpdate(deps, storedTeam, teamKey(teamId), { setEntries: { connections: { [key]: connection } } }),
    ),
  );
};

/** Removes a team's connection `key`; false when the team has no connections. */
export const removeConnection = async (deps: Deps, teamId: string, key: string): Promise<boolean> => {
  const removed = await conditionalUpdate(
    deps,
    storedTeam,
    teamKey(teamId),
    { removeEntries: { connections: [key] } },
    { ConditionExpression: 'attribute_exists(connections)' },
  );
  return removed.written;
};

/**
 * The connection `key` with its secret read (cached by the store). The secret's text is the key
 * itself, or JSON `{"apiKey": "…", "baseUrl": "…"}` (the stored endpoint wins over `baseUrl`).
 * Undefined when the team has no such connection; SecretUnavailableError, naming the connection,
 * when its secret is refused or missing.
 */
export const resolveConnection = async (
  secrets: SecretResolver,
  key: string,
  ref: ConnectionRef | undefined,
): Promise<TeamConnection | undefined> => {
  if (!ref) return undefined;
  let text: string;
  try {
    text = await secrets.connectionSecret(ref.secretRef);
  } catch (error) {
    if (error instanceof SecretUnavailableError) {
      throw new SecretUnavailableError(`the team connection "${key}" could not be read: ${error.message}`);
    }
    throw error;
  }
  const credentials = parseProviderCredentials(text);
  const endpoint = ref.endpoint ?? credentials?.baseUrl;
  return { key, secret: credentials?.apiKey ?? text, ...(endpoint ? { endpoint } : {}) };
};
