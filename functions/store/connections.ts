import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import * as v from 'valibot';
import type { Deps } from '../deps.ts';
import type { TeamConnection } from '../nodes/executors/types.ts';
import { type ConnectionRef, parseItem, TeamItemSchema } from './items.ts';
import { teamKey } from './keys.ts';

/**
 * A team's own keys for providers and integrations (spec: Team, Connections). Only a reference to
 * the secret is stored, never the secret: `env:NAME` (an environment variable of the function,
 * which is how local development and a deployment's own secret injection supply it).
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

export const isValidSecretRef = (ref: string) => /^env:[A-Za-z_][A-Za-z0-9_]*$/.test(ref);

export const setConnection = async (deps: Deps, teamId: string, key: string, connection: ConnectionRef) => {
  await deps.ddb.send(
    new UpdateCommand({
      TableName: deps.tableName,
      Key: teamKey(teamId),
      UpdateExpression: 'SET connections = if_not_exists(connections, :empty)',
      ConditionExpression: 'attribute_exists(PK)',
      ExpressionAttributeValues: { ':empty': {} },
    }),
  );
  await deps.ddb.send(
    new UpdateCommand({
      TableName: deps.tableName,
      Key: teamKey(teamId),
      UpdateExpression: 'SET connections.#key = :connection',
      ExpressionAttributeNames: { '#key': key },
      ExpressionAttributeValues: { ':connection': connection },
    }),
  );
};

export const removeConnection = async (deps: Deps, teamId: string, key: string) => {
  await deps.ddb.send(
    new UpdateCommand({
      TableName: deps.tableName,
      Key: teamKey(teamId),
      UpdateExpression: 'REMOVE connections.#key',
      ConditionExpression: 'attribute_exists(connections)',
      ExpressionAttributeNames: { '#key': key },
    }),
  );
};

/** Resolves a reference to the secret it names; undefined when it cannot be resolved here. */
export const resolveConnection = (
  key: string,
  ref: ConnectionRef | undefined,
  env: Readonly<Record<string, string | undefined>>,
): TeamConnection | undefined => {
  if (!ref || !isValidSecretRef(ref.secretRef)) return undefined;
  const secret = env[ref.secretRef.slice('env:'.length)];
  return secret ? { key, secret, ...(ref.endpoint ? { endpoint: ref.endpoint } : {}) } : undefined;
};
