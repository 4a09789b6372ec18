/**
 * Pinned stages: what a stage is deployed with lives in the repository, in cdk.json's
 * `context.stages.<stage>` block, so the deploy command carries no configuration of its own.
 * On prod the pin is required and final:
 * - every key of `requiredPins.prod` must be in the block, or synthesis fails naming what is missing;
 * - a `-c key=value` (or a top-level context value) that differs from a pinned value fails synthesis:
 *   a change to prod's configuration is a reviewed commit to cdk.json, never a flag on one shell's
 *   command line. Keys the block leaves out (`dashboard`, `tracing`, ...) may still be set with `-c`.
 * - the CDK CLI's account (`CDK_DEFAULT_ACCOUNT`, from the shell's credentials) must be the pinned
 *   one when it is known; offline (no credentials) the pinned account is used as is.
 * dev pins nothing by default and keeps `-c` overrides, so CI and `npm start` synthesize it offline.
 */

import type { StageName } from './stages.ts';

/** The keys a stage block may pin that the stage config reads beside `contextKeys` (lib/stages.ts). */
export const pinKeys = {
  /** The 12-digit AWS account both stacks deploy to. */
  account: 'account',
  /** The region both stacks deploy to, e.g. `eu-west-1`. */
  region: 'region',
  /** Whole US dollars a month: the stage's AWS Budgets budget (lib/budget.ts). */
  monthlyBudgetUsd: 'monthlyBudgetUsd',
} as const;

/**
 * What each stage must pin in its cdk.json block. `providers`, `modelDefaults` and `alarmEmail` are
 * `contextKeys` of lib/stages.ts; `domain` is the custom domain object the edge reads. An empty
 * `modelDefaults` (`{}`) is a pin: the catalogue's defaults, chosen on purpose.
 */
export const requiredPins: Readonly<Record<StageName, readonly string[]>> = {
  dev: [],
  prod: ['account', 'region', 'providers', 'modelDefaults', 'alarmEmail', 'domain', 'monthlyBudgetUsd'],
};

/** A stage's budget when its block pins none (dev only: prod must pin one). */
export const defaultMonthlyBudgetUsd = 25;

const accountPattern = /^\d{12}$/;
const regionPattern = /^[a-z]{2}(-[a-z]+)+-\d$/;

const isMissing = (value: unknown) =>
  value === undefined || value === null || (typeof value === 'string' && value.trim() === '');

/** A command-line value (always text) and a pinned one (text, number or object) that say the same. */
const sameValue = (given: unknown, pinned: unknown): boolean => {
  if (given === pinned) return true;
  if (typeof pinned === 'object' && pinned !== null) {
    if (typeof given === 'string') {
      try {
        return JSON.stringify(JSON.parse(given)) === JSON.stringify(pinned);
      } catch {
        return false;
      }
    }
    return JSON.stringify(given) === JSON.stringify(pinned);
  }
  return String(given) === String(pinned);
};

export interface PinnedEnvironment {
  /** Account and region of both stacks; both undefined offline on a stage that pins neither. */
  env: { account?: string; region?: string };
  monthlyBudgetUsd: number;
}

/**
 * Checks a stage's pins against its block, the rest of the app's context and the CLI's environment,
 * and gives the stacks' environment and the budget. Throws with every problem named at once.
 */
export const checkPins = (
  stage: StageName,
  stored: Readonly<Record<string, unknown>> | undefined,
  appContext: (key: string) => unknown,
  environment: NodeJS.ProcessEnv,
): PinnedEnvironment => {
  const block = stored ?? {};
  const where = `cdk.json context.stages.${stage}`;
  const problems: string[] = [];

  const missing = requiredPins[stage].filter((key) => isMissing(block[key]));
  if (missing.length > 0) {
    problems.push(
      `stage ${stage} must pin ${missing.join(', ')} in ${where} (docs/deploy.md, "The prod stage"); ` +
        'a deploy without them would drop providers, alarm actions, the domain or the budget',
    );
  }
  // prod's pins are final: what the block holds, the command line cannot change.
  if (requiredPins[stage].length > 0) {
    for (const [key, pinned] of Object.entries(block)) {
      const given = appContext(key);
      if (given !== undefined && !sameValue(given, pinned)) {
        problems.push(
          `stage ${stage} pins ${key} in ${where}; -c ${key}=${JSON.stringify(given)} would change it: ` +
            `change ${where}.${key} in a reviewed commit instead`,
        );
      }
    }
  }

  const value = (key: string) => appContext(key) ?? block[key];
  const account = value(pinKeys.account);
  const region = value(pinKeys.region);
  if (!isMissing(account) && (typeof account !== 'string' || !accountPattern.test(account))) {
    problems.push(`${where}.account must be a 12-digit AWS account id, got ${JSON.stringify(account)}`);
  }
  if (!isMissing(region) && (typeof region !== 'string' || !regionPattern.test(region))) {
    problems.push(`${where}.region must be an AWS region such as eu-west-1, got ${JSON.stringify(region)}`);
  }
  const shellAccount = environment.CDK_DEFAULT_ACCOUNT;
  if (typeof account === 'string' && shellAccount && shellAccount !== account) {
    problems.push(
      `the shell's credentials are for account ${shellAccount} (CDK_DEFAULT_ACCOUNT), but stage ${stage} ` +
        `is pinned to account ${account} in ${where}: use the credentials of account ${account}`,
    );
  }

  const budget = value(pinKeys.monthlyBudgetUsd);
  const monthlyBudgetUsd = isMissing(budget) ? defaultMonthlyBudgetUsd : Number(budget);
  if (!Number.isInteger(monthlyBudgetUsd) || monthlyBudgetUsd < 1) {
    problems.push(`${where}.monthlyBudgetUsd must be a whole number of US dollars, got ${JSON.stringify(budget)}`);
  }

  if (problems.length > 0) throw new Error(problems.join('\n'));
  return {
    // A pinned account and region win over the shell's; a stage that pins neither keeps the CLI's
    // (both undefined offline: environment-agnostic stacks).
    env: {
      account: typeof account === 'string' && account !== '' ? account : environment.CDK_DEFAULT_ACCOUNT,
      region: typeof region === 'string' && region !== '' ? region : environment.CDK_DEFAULT_REGION,
    },
    monthlyBudgetUsd,
  };
};
