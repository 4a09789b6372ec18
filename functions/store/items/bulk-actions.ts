/**
 * Bulk actions (BULK#<bulkActionId>) and their targets. One family of the stored items: see item.ts
 * for how every item is read and written.
 */
import * as v from 'valibot';
import { BulkCancelFilterFieldsSchema, bulkActionStatuses } from '../../../schemas/bulk-actions.ts';
import { counter, storedItem } from './item.ts';

/**
 * A bulk cancel (functions/app/bulk-cancel.ts): what it cancels (`jobIds`, or `filter` within the
 * key's `workflowIds`), its counts and `page`, the pages done so far: a page's counts are added by
 * the one conditional update that moves `page` on, so a page delivered twice counts nothing twice
 * and one chain of pages runs.
 */
export const BulkActionItemSchema = v.object({
  bulkActionId: v.string(),
  teamId: v.string(),
  keyId: v.string(),
  action: v.picklist(['cancel']),
  status: v.picklist(bulkActionStatuses),
  jobIds: v.optional(v.array(v.string())),
  filter: v.optional(BulkCancelFilterFieldsSchema),
  /** The workflows the key that asked is limited to (empty: all of them). */
  workflowIds: v.array(v.string()),
  matched: counter,
  cancelled: counter,
  skipped: counter,
  failed: counter,
  page: counter,
  /** Where the page after `page` starts (JSON: its phase and start key), kept to send it again. */
  next: v.optional(v.string()),
  createdAt: v.string(),
  finishedAt: v.optional(v.string()),
  ttl: v.number(),
});
export type BulkActionItem = v.InferOutput<typeof BulkActionItemSchema>;
export const storedBulkAction = storedItem(BulkActionItemSchema);

/** The outcomes a target of a bulk action is counted under; `pending` while its cancel is under way. */
export const bulkOutcomes = ['cancelled', 'skipped', 'failed'] as const;
export type BulkOutcome = (typeof bulkOutcomes)[number];

/** One run (or deferred run) a bulk action took up (`BULK#<id>`, `TARGET#<kind>#<id>`), and what became of it. */
export const BulkTargetItemSchema = v.object({
  outcome: v.picklist(['pending', ...bulkOutcomes]),
  /** When it was first taken up: a target that had ended before is not this action's doing. */
  takenAt: v.string(),
  /** While `pending`: the lease of the delivery cancelling it (ISO 8601). */
  until: v.optional(v.string()),
  ttl: v.number(),
});
export type BulkTargetItem = v.InferOutput<typeof BulkTargetItemSchema>;
export const storedBulkTarget = storedItem(BulkTargetItemSchema);
