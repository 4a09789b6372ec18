import type { UsageView } from '../../schemas/usage.ts';
import type { Deps } from '../deps.ts';
import { toCredits } from '../domain/credits.ts';
import { parseUsageQuery, sumUsage, usageCsv } from '../domain/usage.ts';
import { UsageNotPermittedError } from '../errors/table.ts';
import type { ApiKeyItem } from '../store/items/api-keys.ts';
import { readUsageItems } from '../store/usage.ts';

/** The answer: the JSON view, or the same rows as CSV. */
export type UsageAnswer = { format: 'json'; view: UsageView } | { format: 'csv'; csv: string; filename: string };

/**
 * GET /usage (our design): the team's rollups of one grouping over the period, summed per group
 * (functions/domain/usage.ts). A key limited to certain workflows is refused: the usage is the team's.
 */
export const readUsage = async (
  deps: Deps,
  key: Pick<ApiKeyItem, 'teamId' | 'workflowIds'>,
  query: Record<string, string | undefined> | undefined,
): Promise<UsageAnswer> => {
  if (key.workflowIds.length > 0) throw new UsageNotPermittedError();
  const asked = parseUsageQuery(query ?? {});
  const rows = sumUsage(await readUsageItems(deps, key.teamId, asked.groupBy, asked.from, asked.to));
  if (asked.format === 'csv') {
    return { format: 'csv', csv: usageCsv(rows), filename: `usage-${asked.groupBy}-${asked.from}-${asked.to}.csv` };
  }
  const total = (pick: (row: (typeof rows)[number]) => number) =>
    toCredits(rows.reduce((sum, row) => sum + pick(row), 0));
  return {
    format: 'json',
    view: {
      from: asked.from,
      to: asked.to,
      groupBy: asked.groupBy,
      rows: rows.map((row) => ({
        group: row.group === '' ? null : row.group,
        runs: row.runs,
        steps: row.steps,
        chargedCredits: toCredits(row.chargedHundredths),
        refundedCredits: toCredits(row.refundedHundredths),
      })),
      chargedCredits: total((row) => row.chargedHundredths),
      refundedCredits: total((row) => row.refundedHundredths),
    },
  };
};
