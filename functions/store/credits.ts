import type { Deps } from '../deps.ts';
import { batchGet, itemFor } from './batch.ts';
import { parseItem } from './items/item.ts';
import { KeyMonthItemSchema, ProjectItemSchema, TeamItemSchema } from './items/tenancy.ts';
import { keyMonthKey, teamKey } from './keys.ts';
import { queryAll } from './query.ts';

const projectPrefix = 'PROJECT#';

/** The numbers a run start's admission reads, in hundredths, for GET /credits: one BatchGet and one Query. */
export interface CreditFacts {
  balance: number;
  held: number;
  perStepLimit: number | null;
  spentThisMonth: number;
  projects: { projectId: string; hardCap: number | null; spent: number }[];
}

/** The team's money, this key's spend in `month` (YYYY-MM) and every project's cap; a missing item reads as empty. */
export const readCreditFacts = async (
  deps: Deps,
  teamId: string,
  keyId: string,
  month: string,
): Promise<CreditFacts> => {
  const teamAt = teamKey(teamId);
  const monthAt = keyMonthKey(keyId, month);
  const [items, projects] = await Promise.all([
    batchGet(deps, [teamAt, monthAt]),
    queryAll(
      deps,
      {
        KeyConditionExpression: 'PK = :pk AND begins_with(SK, :projects)',
        ExpressionAttributeValues: { ':pk': teamAt.PK, ':projects': projectPrefix },
      },
      (item) => ({ projectId: String(item.SK).slice(projectPrefix.length), ...parseItem(ProjectItemSchema, item) }),
    ),
  ]);
  const team = itemFor(items, teamAt, TeamItemSchema) ?? parseItem(TeamItemSchema, {});
  const spent = itemFor(items, monthAt, KeyMonthItemSchema) ?? parseItem(KeyMonthItemSchema, {});
  return {
    balance: team.balance,
    held: team.held,
    perStepLimit: team.perStepLimitHundredths,
    spentThisMonth: spent.spentHundredths,
    projects: projects.map((p) => ({ projectId: p.projectId, hardCap: p.hardCapHundredths, spent: p.spentHundredths })),
  };
};
