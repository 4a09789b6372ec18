import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../deps.ts';
import type { PriceSettings } from '../domain/price-multiplier.ts';
import { tableUpdate } from './item-update.ts';
import { parseItem } from './items/item.ts';
import { PriceItemSchema, storedPrice } from './items/price.ts';
import { priceKey } from './keys.ts';

export const getPriceSettings = async (deps: Deps): Promise<PriceSettings> => {
  const { Item } = await deps.ddb.send(
    new GetCommand({ TableName: deps.tableName, Key: priceKey(), ConsistentRead: true }),
  );
  // No item: neither a live multiplier nor a schedule was ever set.
  return parseItem(PriceItemSchema, Item ?? {});
};

/** Sets the live multiplier (null clears it so the schedule applies). */
export const setLiveMultiplier = async (deps: Deps, multiplier: number | null) => {
  await deps.ddb.send(
    new UpdateCommand(
      tableUpdate(
        deps,
        storedPrice,
        priceKey(),
        multiplier === null ? { remove: ['multiplier'] } : { set: { multiplier } },
      ),
    ),
  );
};

export const setHourlySchedule = async (deps: Deps, hourly: number[]) => {
  await deps.ddb.send(new UpdateCommand(tableUpdate(deps, storedPrice, priceKey(), { set: { hourly } })));
};
