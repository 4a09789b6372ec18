/**
 * A team's usage rollups (USAGE#<team>#…). One family of the stored items: see item.ts for how
 * every item is read and written.
 */
import * as v from 'valibot';
import { counter, storedItem } from './item.ts';

/**
 * A team's usage cell (`USAGE#<team>#cell`, `<day>#<combination>`): what the runs settled that UTC
 * day with one workflow, key, first tag ('' for none) and project added (functions/store/usage.ts),
 * and the part of it the `model` grouping's `null` row holds. The day is the sort key's first 10
 * characters.
 */
export const UsageCellItemSchema = v.object({
  workflowId: v.string(),
  keyId: v.string(),
  tag: v.string(),
  projectId: v.string(),
  runs: counter,
  steps: counter,
  chargedHundredths: counter,
  refundedHundredths: counter,
  nullRuns: counter,
  nullSteps: counter,
  nullChargedHundredths: counter,
});
export const storedUsageCell = storedItem(UsageCellItemSchema);

/**
 * A team's usage rollup of one model that charged (`USAGE#<team>#model`, `<day>#<provider/model>`):
 * what the model steps of the runs settled that UTC day charged (functions/store/usage.ts).
 */
export const UsageModelItemSchema = v.object({
  model: v.string(),
  runs: counter,
  steps: counter,
  chargedHundredths: counter,
});
export const storedUsageModel = storedItem(UsageModelItemSchema);
