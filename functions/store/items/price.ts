/**
 * The operator-set price multiplier. One family of the stored items: see item.ts for how every item
 * is read and written.
 */
import * as v from 'valibot';
import { storedItem } from './item.ts';

/** The operator-set live multiplier and hourly schedule; null when unset. */
export const PriceItemSchema = v.object({
  multiplier: v.nullish(v.number(), null),
  hourly: v.nullish(v.array(v.number()), null),
});
export const storedPrice = storedItem(PriceItemSchema);
