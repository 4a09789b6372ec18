/**
 * A team's stored bytes against its quota (functions/domain/stored-bytes.ts), in its
 * `STOREDBYTES#` item: bytes by the UTC day S3's lifecycle expires them, so an expiry needs no
 * write (a day that has begun counts nothing: readers sum the days after today), and their running
 * total (`heldBytes`), which a write that must fit the quota is conditional on and which counts an
 * expired day until such a write drops it. A write that must not be refused (a step's output, a
 * deletion) adds to its day and the total with no condition.
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../deps.ts';
import { defaultStorageQuotaBytes, expiredDays, heldBytes, type StorageUsage } from '../domain/stored-bytes.ts';
import { StorageQuotaReachedError } from '../errors/table.ts';
import { ifNotExists } from './item-update.ts';
import { parseItem } from './items/item.ts';
import { type StoredBytesItem, StoredBytesItemSchema, storedStoredBytes } from './items/tenancy.ts';
import { storedBytesKey } from './keys.ts';
import { backoff, conditionalUpdate, storageBusy, writeRetry } from './write.ts';

const readItem = async (deps: Deps, teamId: string): Promise<StoredBytesItem | undefined> => {
  const { Item } = await deps.ddb.send(
    new GetCommand({ TableName: deps.tableName, Key: storedBytesKey(teamId), ConsistentRead: true }),
  );
  return Item && parseItem(StoredBytesItemSchema, Item);
};

const usageOf = (deps: Deps, item: StoredBytesItem | undefined): StorageUsage => ({
  usedBytes: heldBytes(item?.byDay ?? {}, deps.now()),
  quotaBytes: item?.quotaBytes ?? defaultStorageQuotaBytes,
});

/** What the team holds now, and its quota. */
export const readStorageUsage = async (deps: Deps, teamId: string): Promise<StorageUsage> =>
  usageOf(deps, await readItem(deps, teamId));

/** Creates the team's item with no days, if it has none (an entry cannot be set in a map that is absent). */
const createItem = (deps: Deps, teamId: string) =>
  conditionalUpdate(
    deps,
    storedStoredBytes,
    storedBytesKey(teamId),
    { set: { byDay: ifNotExists({}) } },
    { ConditionExpression: 'attribute_not_exists(byDay)' },
  );

/** The StorageQuotaReachedError when the team holds its quota already: it may store nothing more. */
/** The quota's rule for a write that must fit: `bytes` more would take the team past its quota. */
const overQuota = (usage: StorageUsage, bytes: number): boolean => usage.usedBytes + bytes > usage.quotaBytes;

/** The StorageQuotaReachedError when `bytes` more would not fit now; a read: nothing is counted. */
export const assertRoomFor = async (deps: Deps, teamId: string, bytes: number): Promise<void> => {
  const usage = await readStorageUsage(deps, teamId);
  if (overQuota(usage, bytes)) throw new StorageQuotaReachedError(usage, bytes);
};

export const assertUnderStorageQuota = async (deps: Deps, teamId: string): Promise<void> => {
  const usage = await readStorageUsage(deps, teamId);
  if (usage.usedBytes >= usage.quotaBytes) throw new StorageQuotaReachedError(usage, 0);
};

/**
 * Counts `bytes` stored until `expiresOn`, only if the team then holds at most its quota: the
 * StorageQuotaReachedError when it would not. One conditional write on the running total
 * (`heldBytes`), so concurrent writes are serialised by DynamoDB, never refused for each other;
 * the days that have expired are dropped from the map and the total in the same write, each only
 * if it still holds what was read (a concurrent drop wins, and this one reads again).
 */
export const reserveStoredBytes = async (deps: Deps, teamId: string, bytes: number, expiresOn: string) => {
  for (let attempt = 1; ; attempt++) {
    const item = await readItem(deps, teamId);
    const usage = usageOf(deps, item);
    if (overQuota(usage, bytes)) throw new StorageQuotaReachedError(usage, bytes);
    if (!item) await createItem(deps, teamId);
    const byDay = item?.byDay ?? {};
    const expired = expiredDays(byDay, deps.now());
    const expiredBytes = expired.reduce((sum, day) => sum + (byDay[day] ?? 0), 0);
    const names: Record<string, string> = { '#heldBytes': 'heldBytes', '#byDay': 'byDay' };
    const values: Record<string, unknown> = { ':max': usage.quotaBytes - bytes + expiredBytes };
    const unchanged = expired.map((day, n) => {
      // The update names the entries it removes `#byDay_<n>` (item-update.ts); the condition reads the same.
      names[`#byDay_${n}`] = day;
      values[`:expired_${n}`] = byDay[day];
      return ` AND #byDay.#byDay_${n} = :expired_${n}`;
    });
    const written = await conditionalUpdate(
      deps,
      storedStoredBytes,
      storedBytesKey(teamId),
      {
        addEntries: { byDay: { [expiresOn]: bytes } },
        add: { heldBytes: bytes - expiredBytes },
        removeEntries: { byDay: expired },
      },
      {
        ConditionExpression: `(attribute_not_exists(#heldBytes) OR #heldBytes <= :max)${unchanged.join('')}`,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
      },
    );
    if (written.written) return;
    // Another write moved the total or dropped a day meanwhile: read again (a full quota is answered then).
    if (attempt >= writeRetry.tries) throw storageBusy('stored bytes', 'raceLost', attempt, undefined);
    await backoff(deps, attempt);
  }
};

/** Counts `bytes` stored (positive) or deleted (negative) until `expiresOn`, whatever the quota. */
export const countStoredBytes = async (deps: Deps, teamId: string, bytes: number, expiresOn: string) => {
  const add = () =>
    conditionalUpdate(
      deps,
      storedStoredBytes,
      storedBytesKey(teamId),
      { addEntries: { byDay: { [expiresOn]: bytes } }, add: { heldBytes: bytes } },
      { ConditionExpression: 'attribute_exists(byDay)' },
    );
  if ((await add()).written) return;
  await createItem(deps, teamId);
  await add();
};

/** Sets the team's quota (the operators' CLI); null goes back to the default. */
export const setStorageQuota = async (deps: Deps, teamId: string, quotaBytes: number | null) => {
  await createItem(deps, teamId);
  await conditionalUpdate(
    deps,
    storedStoredBytes,
    storedBytesKey(teamId),
    { set: { quotaBytes } },
    { ConditionExpression: 'attribute_exists(byDay)' },
  );
};
