import { GetCommand, QueryCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Scope } from '../../lib/routes.ts';
import type { Deps } from '../deps.ts';
import { generateApiKey, hashApiKey, keyHint } from '../domain/api-key.ts';
import { apiKeyIdKey, apiKeyKey, teamKeysIndex, teamKeysPartition } from './keys.ts';

/** What the service knows about a key; never the secret itself. */
export interface ApiKeyRecord {
  keyId: string;
  teamId: string;
  /** Empty means all scopes (spec section 5). */
  scopes: Scope[];
  /** Empty means every workflow of the team. */
  workflowIds: string[];
  /** Monthly credit cap in hundredths, or null for none. */
  monthlyCapHundredths: number | null;
  expiresAt: string | null;
  revokedAt: string | null;
  /** Requests per minute, or null for the default. */
  rateLimitPerMinute: number | null;
  hint: string;
  createdAt: string;
}

const toRecord = (item: Record<string, unknown>): ApiKeyRecord => ({
  keyId: item.keyId as string,
  teamId: item.teamId as string,
  scopes: (item.scopes as Scope[] | undefined) ?? [],
  workflowIds: (item.workflowIds as string[] | undefined) ?? [],
  monthlyCapHundredths: (item.monthlyCapHundredths as number | undefined) ?? null,
  expiresAt: (item.expiresAt as string | undefined) ?? null,
  revokedAt: (item.revokedAt as string | undefined) ?? null,
  rateLimitPerMinute: (item.rateLimitPerMinute as number | undefined) ?? null,
  hint: item.hint as string,
  createdAt: item.createdAt as string,
});

/** Reads the key by the hash of its secret, strongly consistent so a revocation counts at once. */
export const findApiKeyByHash = async (deps: Deps, secretHash: string): Promise<ApiKeyRecord | undefined> => {
  const { Item } = await deps.ddb.send(
    new GetCommand({ TableName: deps.tableName, Key: apiKeyKey(secretHash), ConsistentRead: true }),
  );
  return Item ? toRecord(Item) : undefined;
};

export interface NewApiKey {
  teamId: string;
  scopes?: Scope[];
  workflowIds?: string[];
  monthlyCapHundredths?: number | null;
  expiresAt?: string | null;
  rateLimitPerMinute?: number | null;
}

/** Creates a key and returns its secret; the secret is never stored and cannot be shown again. */
export const createApiKey = async (deps: Deps, input: NewApiKey): Promise<{ keyId: string; key: string }> => {
  const key = generateApiKey();
  const secretHash = hashApiKey(key);
  const keyId = deps.newId();
  const item = {
    ...apiKeyKey(secretHash),
    ...teamKeysIndex(input.teamId, keyId),
    type: 'ApiKey',
    keyId,
    teamId: input.teamId,
    scopes: input.scopes ?? [],
    workflowIds: input.workflowIds ?? [],
    monthlyCapHundredths: input.monthlyCapHundredths ?? undefined,
    expiresAt: input.expiresAt ?? undefined,
    rateLimitPerMinute: input.rateLimitPerMinute ?? undefined,
    hint: keyHint(key),
    createdAt: deps.now().toISOString(),
  };
  await deps.ddb.send(
    new TransactWriteCommand({
      TransactItems: [
        { Put: { TableName: deps.tableName, Item: item, ConditionExpression: 'attribute_not_exists(PK)' } },
        {
          Put: {
            TableName: deps.tableName,
            Item: { ...apiKeyIdKey(keyId), type: 'ApiKeyId', secretHash, teamId: input.teamId },
            ConditionExpression: 'attribute_not_exists(PK)',
          },
        },
      ],
    }),
  );
  return { keyId, key };
};

/** Revokes by key id; returns false when no such key exists. Takes effect on the next request. */
export const revokeApiKey = async (deps: Deps, keyId: string): Promise<boolean> => {
  const { Item } = await deps.ddb.send(
    new GetCommand({ TableName: deps.tableName, Key: apiKeyIdKey(keyId), ConsistentRead: true }),
  );
  if (!Item) return false;
  await deps.ddb.send(
    new UpdateCommand({
      TableName: deps.tableName,
      Key: apiKeyKey(Item.secretHash as string),
      UpdateExpression: 'SET revokedAt = if_not_exists(revokedAt, :now)',
      ConditionExpression: 'attribute_exists(PK)',
      ExpressionAttributeValues: { ':now': deps.now().toISOString() },
    }),
  );
  return true;
};

/** Every key of a team, without secrets or hashes. */
export const listApiKeys = async (deps: Deps, teamId: string): Promise<ApiKeyRecord[]> => {
  const out: ApiKeyRecord[] = [];
  let cursor: Record<string, unknown> | undefined;
  do {
    const page = await deps.ddb.send(
      new QueryCommand({
        TableName: deps.tableName,
        IndexName: 'GSI1',
        KeyConditionExpression: 'GSI1PK = :pk',
        ExpressionAttributeValues: { ':pk': teamKeysPartition(teamId) },
        ExclusiveStartKey: cursor,
      }),
    );
    out.push(...(page.Items ?? []).map(toRecord));
    cursor = page.LastEvaluatedKey;
  } while (cursor);
  return out;
};

/** Reads a key by its public id (through the id pointer), e.g. for a deferred run's dispatch. */
export const findApiKeyById = async (deps: Deps, keyId: string): Promise<ApiKeyRecord | undefined> => {
  const { Item } = await deps.ddb.send(
    new GetCommand({ TableName: deps.tableName, Key: apiKeyIdKey(keyId), ConsistentRead: true }),
  );
  return Item ? findApiKeyByHash(deps, Item.secretHash as string) : undefined;
};
