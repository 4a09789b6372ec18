import { randomBytes } from 'node:crypto';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../deps.ts';
import { FileLinkKeyItemSchema, parseItem, type StoredItem, type storedFileLinkKey } from './items.ts';
import { fileLinkSigningKey } from './keys.ts';
import { conditionalWrite } from './write.ts';

/**
 * The key that signs file links (functions/domain/file-links.ts): a server secret in the table, so
 * it costs nothing while idle (a Secrets Manager secret would cost $0.40 a month), cached for the
 * container's life. Rotation: delete the item; the next link made creates a new key, and every
 * link outstanding stops opening (docs/decisions.md).
 */
const cached = new Map<string, Promise<Buffer>>();

/** The key's item: the key, base64. */
export const fileLinkKeyItem = (key: Buffer) =>
  ({ ...fileLinkSigningKey(), secret: key.toString('base64') }) satisfies StoredItem<typeof storedFileLinkKey>;

const readKey = async (deps: Deps): Promise<Buffer | undefined> => {
  const { Item } = await deps.ddb.send(
    new GetCommand({ TableName: deps.tableName, Key: fileLinkSigningKey(), ConsistentRead: true }),
  );
  return Item && Buffer.from(parseItem(FileLinkKeyItemSchema, Item).secret, 'base64');
};

/**
 * The first link ever made creates the key (32 random bytes; a conditional put, so of two
 * containers racing to create it, one wins and the other reads the winner's).
 */
const readOrCreateKey = async (deps: Deps): Promise<Buffer> => {
  const stored = await readKey(deps);
  if (stored) return stored;
  const created = randomBytes(32);
  const put = await conditionalWrite(
    deps,
    new PutCommand({
      TableName: deps.tableName,
      Item: fileLinkKeyItem(created),
      ConditionExpression: 'attribute_not_exists(PK)',
    }),
  );
  if (put.written) return created;
  const raced = await readKey(deps);
  if (!raced) throw new Error('file link key missing after its create was refused');
  return raced;
};

const remember = (deps: Deps, key: Promise<Buffer>): Promise<Buffer> => {
  cached.set(deps.tableName, key);
  // A failed read is not kept: the next request tries again.
  key.catch(() => cached.delete(deps.tableName));
  return key;
};

/** The key that signs links, created on first use (what makes links: the run's readers). */
export const fileLinkSigningSecret = (deps: Deps): Promise<Buffer> =>
  cached.get(deps.tableName) ?? remember(deps, readOrCreateKey(deps));

/**
 * The key that checks links, never created: with no key, no link was ever made, so none opens.
 * (The link's function may only read the table.) An absent key is not kept, so one made later is found.
 */
export const fileLinkCheckingSecret = async (deps: Deps): Promise<Buffer | undefined> => {
  const known = cached.get(deps.tableName);
  if (known) return known;
  const stored = await readKey(deps);
  return stored && remember(deps, Promise.resolve(stored));
};
