import { paginateQuery } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../deps.ts';
import { retentionExpiry } from '../domain/retention.ts';
import { maxUsageItems, type UsageDimension, type UsageRollup, type UsageRow, usageKeptDays } from '../domain/usage.ts';
import { InvalidQueryError } from '../errors/table.ts';
import { tableUpdate } from './item-update.ts';
import { parseItem, storedUsageRollup, UsageRollupItemSchema, unexpired } from './items.ts';
import { usageKey, usagePartition } from './keys.ts';
import type { TransactItems } from './write.ts';

/**
 * The updates that add one run's settlement to the team's usage rollups (functions/domain/usage.ts
 * `usageRollups`), for the settlement's own transaction: they commit with the run's settlement or
 * not at all, so a settlement refused (already settled: its condition on the run item) adds nothing,
 * and a redelivered step or a second sweep never counts a run twice. One ADD per item, no condition:
 * concurrent settlements of a team add to the same row without refusing each other (a transaction
 * conflict at worst, which the write helper retries).
 */
export const usageRollupItems = (
  deps: Deps,
  teamId: string,
  day: string,
  rollups: readonly UsageRollup[],
): TransactItems =>
  rollups.map((rollup) => ({
    Update: tableUpdate(deps, storedUsageRollup, usageKey(teamId, rollup.dimension, day, rollup.group), {
      set: { group: rollup.group, day, ttl: retentionExpiry(`${day}T00:00:00Z`, usageKeptDays) },
      add: {
        runs: rollup.runs,
        steps: rollup.steps,
        chargedHundredths: rollup.chargedHundredths,
        refundedHundredths: rollup.refundedHundredths,
      },
    }),
  }));

/**
 * The rollup items of one grouping from `from` to `to` (UTC days, both included): one Query of the
 * grouping's partition, page after page (1 MB each), never more than `maxUsageItems` items: a period
 * holding more is refused before anything is answered, since part of it would not sum to the bill.
 */
export const readUsageItems = async (
  deps: Deps,
  teamId: string,
  groupBy: UsageDimension,
  from: string,
  to: string,
): Promise<UsageRow[]> => {
  const rows: UsageRow[] = [];
  const now = deps.now();
  const query = {
    TableName: deps.tableName,
    KeyConditionExpression: 'PK = :pk AND SK BETWEEN :from AND :to',
    // `$` sorts after `#`: every group of the last day is inside.
    ExpressionAttributeValues: { ':pk': usagePartition(teamId, groupBy), ':from': `${from}#`, ':to': `${to}$` },
    ConsistentRead: true,
  };
  for await (const page of paginateQuery({ client: deps.ddb }, query)) {
    for (const item of page.Items ?? []) {
      if (!unexpired(item, now)) continue;
      if (rows.length >= maxUsageItems) {
        throw new InvalidQueryError(
          `the period holds more than ${maxUsageItems} rows of ${groupBy} by day; ask a shorter period`,
        );
      }
      rows.push(parseItem(UsageRollupItemSchema, item));
    }
  }
  return rows;
};
