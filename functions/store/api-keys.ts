import { GetCommand } from '@aws-sdk/lib-dynamodb';
import type { Scope } from '../../platform/routes.ts';
import type { Deps } from '../deps.ts';
import { generateApiKey, hashApiKey, keyHint } from '../domain/api-key.ts';
import { ifNotExists } from './item-update.ts';
import {
  ApiKeyIdItemSchema,
  type ApiKeyItem,
  ApiKeyItemSchema,
  storedApiKey,
  type storedApiKeyId,
} from './items/api-keys.ts';
import { itemVersion, parseItem, type StoredItem } from './items/item.ts';
import { apiKeyIdKey, apiKeyKey, teamKeysIndex, teamKeysPartition } from './keys.ts';
import { queryAll } from './query.ts';
import { conditionalUpdate, transactWrite } from './write.ts';

/** Reads the key by the hash of its secret, strongly consistent so a revocation counts at once. */
export const findApiKeyByHash = async (deps: Deps, secretHash: string): Promise<ApiKeyItem | undefined> => {
  const { Item } = await deps.ddb.send(
    new GetCommand({ TableName: deps.tableName, Key: apiKeyKey(secretHash), ConsistentRead: true }),
  );
  return Item && parseItem(ApiKeyItemSchema, Item);
};

/** The hash a key's item is stored under, read through the pointer from its public id. */
const secretHashOf = async (deps: Deps, keyId: string): Promise<string | undefined> => {
  const { Item } = await deps.ddb.send(
    new GetCommand({ TableName: deps.tableName, Key: apiKeyIdKey(keyId), ConsistentRead: true }),
  );
  return Item && parseItem(ApiKeyIdItemSchema, Item).secretHash;
};

export interface NewApiKey {
  teamId: string;
  scopes?: Scope[];
  workflowIds?: string[];
  monthlyCapHundredths?: number | null;
  expiresAt?: string | null;
  rateLimitPerMinute?: number | null;
}

/** The item of a new key, stored under the hash of its secret, which it never holds. */
export const apiKeyItem = (
  input: NewApiKey,
  created: { keyId: string; secretHash: string; hint: string; createdAt: string },
) =>
  ({
    ...apiKeyKey(created.secretHash),
    ...teamKeysIndex(input.teamId, created.keyId),
    type: 'ApiKey',
    keyId: created.keyId,
    teamId: input.teamId,
    scopes: input.scopes ?? [],
    workflowIds: input.workflowIds ?? [],
    monthlyCapHundredths: input.monthlyCapHundredths ?? undefined,
    expiresAt: input.expiresAt ?? undefined,
    rateLimitPerMinute: input.rateLimitPerMinute ?? undefined,
    hint: created.hint,
    createdAt: created.createdAt,
    v: itemVersion,
  }) satisfies StoredItem<typeof storedApiKey>;

/** The pointer from a key's public id to the hash its item is stored under (and its team, for operators). */
export const apiKeyIdItem = (keyId: string, secretHash: string, teamId: string) =>
  ({
    ...apiKeyIdKey(keyId),
    type: 'ApiKeyId',
    secretHash,
    teamId,
    v: itemVersion,
  }) satisfies StoredItem<typeof storedApiKeyId>;

/** Creates a key and returns its secret; the secret is never stored and cannot be shown again. */
export const createApiKey = async (deps: Deps, input: NewApiKey): Promise<{ keyId: string; key: string }> => {
  const key = generateApiKey();
  const secretHash = hashApiKey(key);
  const keyId = deps.newId();
  const item = apiKeyItem(input, { keyId, secretHash, hint: keyHint(key), createdAt: deps.now().toISOString() });
  const created = await transactWrite(deps, [
    { Put: { TableName: deps.tableName, Item: item, ConditionExpression: 'attribute_not_exists(PK)' } },
    {
      Put: {
        TableName: deps.tableName,
        Item: apiKeyIdItem(keyId, secretHash, input.teamId),
        ConditionExpression: 'attribute_not_exists(PK)',
      },
    },
  ]);
  if (!created.written) throw new Error(`key ${keyId} exists already`);
  return { keyId, key };
};

/** Revokes by key id; returns false when no such key exists. Takes effect on the next request. */
export const revokeApiKey = async (deps: Deps, keyId: string): Promise<boolean> => {
  const secretHash = await secretHashOf(deps, keyId);
  if (!secretHash) return false;
  const revoked = await conditionalUpdate(
    deps,
    storedApiKey,
    apiKeyKey(secretHash),
    { set: { revokedAt: ifNotExists(deps.now().toISOString()) } },
    { ConditionExpression: 'attribute_exists(PK)' },
  );
  return revoked.written;
};

/** Every key of a team, without secrets or hashes. */
export const listApiKeys = async (deps: Deps, teamId: string): Promise<ApiKeyItem[]> =>
  queryAll(
    deps,
    {
      IndexName: 'GSI1',
      KeyConditionExpression: 'GSI1PK = :pk',
      ExpressionAttributeValues: { ':pk': teamKeysPartition(teamId) },
    },
    (item) => parseItem(ApiKeyItemSchema, item),
  );

/** Reads a key by its public id (through the id pointer), e.g. for a deferred run's dispatch. */
export const findApiKeyById = async (deps: Deps, keyId: string): Promise<ApiKeyItem | undefined> => {
  const secretHash = await secretHashOf(deps, keyId);
  return secretHash ? findApiKeyByHash(deps, secretHash) : undefined;
};
