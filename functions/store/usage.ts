import { createHash } from 'node:crypto';
import { paginateQuery } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../deps.ts';
import { retentionExpiry } from '../domain/retention.ts';
import {
  cellNullModelRow,
  cellRow,
  maxUsageItems,
  modelRow,
  type UsageCell,
  type UsageDimension,
  type UsageModelRollup,
  type UsageRow,
  usageKeptDays,
} from '../domain/usage.ts';
import { InvalidQueryError } from '../errors/table.ts';
import { tableUpdate } from './item-update.ts';
import { parseItem, unexpired } from './items/item.ts';
import { storedUsageCell, storedUsageModel, UsageCellItemSchema, UsageModelItemSchema } from './items/usage.ts';
import { type UsagePart, usageKey, usagePartition } from './keys.ts';
import type { TransactItems } from './write.ts';

/**
 * A cell's sort key part: a digest of its four values (a tag may hold any character, `#` included),
 * 128 bits of SHA-256 in base64url; the values themselves are the item's attributes.
 */
const cellId = (cell: Pick<UsageCell, 'workflowId' | 'keyId' | 'tag' | 'projectId'>) =>
  createHash('sha256')
    .update(JSON.stringify([cell.workflowId, cell.keyId, cell.tag, cell.projectId]))
    .digest('base64url')
    .slice(0, 22);

/**
 * The updates that add one run's settlement to the team's usage rollups (functions/domain/usage.ts
 * `settlementUsage`): its cell, and one item per model that charged. For the settlement's own
 * transaction: they commit with the run's settlement or not at all, so a settlement refused
 * (already settled: its condition on the run item) adds nothing, and a redelivered step or a second
 * sweep never counts a run twice. One ADD per item, no condition: concurrent settlements of a team
 * add to the same item without refusing each other (a transaction conflict at worst, which the
 * write helper retries).
 */
export const usageRollupItems = (
  deps: Deps,
  teamId: string,
  day: string,
  usage: { cell: UsageCell; models: readonly UsageModelRollup[] },
): TransactItems => {
  const ttl = retentionExpiry(`${day}T00:00:00Z`, usageKeptDays);
  const { cell } = usage;
  return [
    {
      Update: tableUpdate(deps, storedUsageCell, usageKey(teamId, 'cell', day, cellId(cell)), {
        set: { workflowId: cell.workflowId, keyId: cell.keyId, tag: cell.tag, projectId: cell.projectId, ttl },
        add: {
          runs: cell.runs,
          steps: cell.steps,
          chargedHundredths: cell.chargedHundredths,
          refundedHundredths: cell.refundedHundredths,
          nullRuns: cell.nullRuns,
          nullSteps: cell.nullSteps,
          nullChargedHundredths: cell.nullChargedHundredths,
        },
      }),
    },
    ...usage.models.map((model) => ({
      Update: tableUpdate(deps, storedUsageModel, usageKey(teamId, 'model', day, model.model), {
        set: { model: model.model, ttl },
        add: { runs: model.runs, steps: model.steps, chargedHundredths: model.chargedHundredths },
      }),
    })),
  ];
};

/**
 * The rollup rows of a period's days for one grouping, by day (to be summed: `sumUsage`): every
 * grouping but `model` is the cells of the period, each under its value of the grouping (one Query
 * of the cell partition); `model` is the model items of the period and the cells' `null` part (one
 * Query of each). Never more than `maxUsageItems` items in all: a period holding more is refused
 * before anything is answered, since part of it would not sum to the bill.
 */
export const readUsageItems = async (
  deps: Deps,
  teamId: string,
  groupBy: UsageDimension,
  from: string,
  to: string,
  // The bound is the route's; a test passes a small one rather than write 20,000 items.
  maxItems = maxUsageItems,
): Promise<UsageRow[]> => {
  const rows: UsageRow[] = [];
  let items = 0;
  const now = deps.now();
  const each = async (part: UsagePart, read: (item: Record<string, unknown>, day: string) => void) => {
    const query = {
      TableName: deps.tableName,
      KeyConditionExpression: 'PK = :pk AND SK BETWEEN :from AND :to',
      // `$` sorts after `#`: every item of the last day is inside.
      ExpressionAttributeValues: { ':pk': usagePartition(teamId, part), ':from': `${from}#`, ':to': `${to}$` },
      ConsistentRead: true,
    };
    for await (const page of paginateQuery({ client: deps.ddb }, query)) {
      for (const item of page.Items ?? []) {
        if (!unexpired(item, now)) continue;
        if (++items > maxItems) {
          throw new InvalidQueryError(
            `the period holds more than ${maxItems} usage rollups (one per day and combination of workflow, key, first tag and project); ask a shorter period`,
          );
        }
        read(item, String(item.SK).slice(0, 10));
      }
    }
  };
  if (groupBy === 'model') {
    await each('model', (item) => rows.push(modelRow(parseItem(UsageModelItemSchema, item))));
    await each('cell', (item) => {
      const row = cellNullModelRow(parseItem(UsageCellItemSchema, item));
      if (row) rows.push(row);
    });
  } else {
    await each('cell', (item, day) => rows.push(cellRow(groupBy, day, parseItem(UsageCellItemSchema, item))));
  }
  return rows;
};
