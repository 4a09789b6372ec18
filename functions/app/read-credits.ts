import type { CreditsView } from '../../schemas/credits.ts';
import type { Deps } from '../deps.ts';
import { toCredits } from '../domain/credits.ts';
import { nextSpendMonthStart, spendMonth } from '../domain/monthly-cap.ts';
import { readCreditFacts } from '../store/credits.ts';
import type { ApiKeyItem } from '../store/items/api-keys.ts';

const creditsOrNull = (hundredths: number | null): number | null =>
  hundredths === null ? null : toCredits(hundredths);

/** GET /credits (our design): what a run start is checked against, as this key sees it, in credits. */
export const readCredits = async (deps: Deps, key: ApiKeyItem): Promise<CreditsView> => {
  const now = deps.now();
  const facts = await readCreditFacts(deps, key.teamId, key.keyId, spendMonth(now));
  const cap = key.monthlyCapHundredths;
  return {
    balance: toCredits(facts.balance),
    held: toCredits(facts.held),
    perStepLimit: creditsOrNull(facts.perStepLimit),
    key: {
      monthlyCreditCap: creditsOrNull(cap),
      spentThisMonth: toCredits(facts.spentThisMonth),
      remainingThisMonth: cap === null ? null : toCredits(Math.max(0, cap - facts.spentThisMonth)),
      resetsAt: nextSpendMonthStart(now).toISOString(),
    },
    projects: facts.projects.map((p) => ({
      projectId: p.projectId,
      hardCap: creditsOrNull(p.hardCap),
      spent: toCredits(p.spent),
    })),
  };
};
