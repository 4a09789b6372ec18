import { randomBytes } from 'node:crypto';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../deps.ts';
import { itemVersion, parseItem, type StoredItem } from './items/item.ts';
import { ServerSecretItemSchema, type storedServerSecret } from './items/server-secrets.ts';
import { cursorSigningKey, fileLinkSigningKey, runTokenSigningKey } from './keys.ts';
import { conditionalWrite } from './write.ts';

/**
 * The service's own signing keys (list cursors, file links, run tokens): 32 random bytes each in an item of the
 * table, so they cost nothing while idle (a Secrets Manager secret would cost $0.40 a month), created
 * by the first use that needs one (a conditional put: of two containers racing, one wins and the
 * other reads the winner's) and cached for the container's life. Rotation: delete the item; the next
 * use creates a new key and everything signed with the old one stops opening (docs/decisions.md).
 */
export type ServerSecretName = 'cursor' | 'fileLink' | 'runToken';

const keyOf: Record<ServerSecretName, () => { PK: string; SK: string }> = {
  cursor: cursorSigningKey,
  fileLink: fileLinkSigningKey,
  runToken: runTokenSigningKey,
};

/** A secret's item: the key, base64. */
export const serverSecretItem = (name: ServerSecretName, secret: Buffer) =>
  ({ ...keyOf[name](), secret: secret.toString('base64'), v: itemVersion }) satisfies StoredItem<
    typeof storedServerSecret
  >;

/** Per secret and table: one read (or create) per container; a failed one is not kept. */
const cached = new Map<string, Promise<Buffer>>();

const readSecret = async (deps: Deps, name: ServerSecretName): Promise<Buffer | undefined> => {
  const { Item } = await deps.ddb.send(
    new GetCommand({ TableName: deps.tableName, Key: keyOf[name](), ConsistentRead: true }),
  );
  return Item && Buffer.from(parseItem(ServerSecretItemSchema, Item).secret, 'base64');
};

const readOrCreate = async (deps: Deps, name: ServerSecretName): Promise<Buffer> => {
  const stored = await readSecret(deps, name);
  if (stored) return stored;
  const created = randomBytes(32);
  const put = await conditionalWrite(
    deps,
    new PutCommand({
      TableName: deps.tableName,
      Item: serverSecretItem(name, created),
      ConditionExpression: 'attribute_not_exists(PK)',
    }),
  );
  if (put.written) return created;
  const raced = await readSecret(deps, name);
  if (!raced) throw new Error(`${name} secret missing after its create was refused`);
  return raced;
};

const remember = (at: string, secret: Promise<Buffer>): Promise<Buffer> => {
  cached.set(at, secret);
  secret.catch(() => cached.delete(at));
  return secret;
};

/** The secret that signs, created on its first use. */
export const signingSecret = (deps: Deps, name: ServerSecretName): Promise<Buffer> => {
  const at = `${name}:${deps.tableName}`;
  return cached.get(at) ?? remember(at, readOrCreate(deps, name));
};

/**
 * The secret that checks, never created: with none, nothing was ever signed, so nothing opens (a
 * checking function may only read the table). An absent one is not kept, so one made later is found.
 */
export const checkingSecret = async (deps: Deps, name: ServerSecretName): Promise<Buffer | undefined> => {
  const at = `${name}:${deps.tableName}`;
  const known = cached.get(at);
  if (known) return known;
  const stored = await readSecret(deps, name);
  return stored && remember(at, Promise.resolve(stored));
};
