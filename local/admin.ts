import { existsSync, readFileSync, statSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { Deps } from '../functions/deps.ts';
import { toCredits, toHundredths } from '../functions/domain/credits.ts';
import { currentMultiplier, isValidMultiplier, parseSchedule } from '../functions/domain/price-multiplier.ts';
import { StorageBusyError } from '../functions/errors/table.ts';
import { connectionRefProblem } from '../functions/nodes/providers/secret-refs.ts';
import { createApiKey, listApiKeys, revokeApiKey } from '../functions/store/api-keys.ts';
import { getConnections, removeConnection, setConnection } from '../functions/store/connections.ts';
import { listWaitingDeferredRuns } from '../functions/store/deferred-runs.ts';
import type { TeamItem } from '../functions/store/items/tenancy.ts';
import { getPriceSettings, setHourlySchedule, setLiveMultiplier } from '../functions/store/price-multiplier.ts';
import { readStorageUsage, setStorageQuota } from '../functions/store/stored-bytes.ts';
import {
  addCredits,
  balanceOf,
  createAgent,
  createProject,
  createTeam,
  findTeamIdById,
  getTeam,
  TenancyNotFoundError,
} from '../functions/store/tenancy.ts';
import { activateWorkflow, setWorkflowStatus } from '../functions/store/workflows.ts';
import { allScopes, type Scope } from '../platform/routes.ts';
import { type LogPlace, showRun } from './run-show.ts';

/**
 * The operators' CLI: the "app" side of the spec that the API does not cover (teams, credits,
 * projects, agents, keys, prices). `runAdmin` is pure over its deps so tests drive it in-process;
 * `local/admin-main.ts` wires it to the local stack or to deployed tables.
 */

export const usage = `Usage: npm run admin -- <command> [flags] [--json]

  team create --name N [--credits C] [--per-step-limit L]      → { teamId }
  credits add --team T --amount C                              → new balance (withdraw with --amount=-C)
  credits show --team T                                        → balance, held, charged, granted
  project create --team T --name N [--hard-cap C]              → { projectId }
  agent create --project P --name N                            → { agentId }
  agent activate --agent A --workflow W
  workflow status --workflow W --status draft|active|archived
  key create --team T [--scopes a,b] [--workflows w1,w2] [--monthly-cap C]
             [--expires-at ISO] [--rate-limit N]               → { keyId, key } (the key is shown only here)
  key revoke --key K
  key list --team T
  price set --multiplier M          (M > 0; "none" clears it so the schedule applies)
  price schedule --file F           (JSON: {"hours": {"0-6": 0.5, "7-22": 1, "23": 0.7}}, UTC hours)
  price show
  connection set --team T --key K --secret-ref REF [--endpoint URL]
                                    the team's own key for a provider or integration, by reference:
                                    secretsmanager:<name> or ssm:/<name> under the stage's connection
                                    prefix (workflow-run-api/<stage>/connections/), or env:NAME locally
  connection remove --team T --key K
  connection list --team T
  storage show --team T             the bytes the team holds (uploads, input copies, outputs) and its quota
  storage quota --team T --bytes B  sets the team's storage quota in bytes ("default" goes back to the default)
  dispatch                          run one deferred-run dispatcher tick now; prints what it moved
  deferred list --team T            waiting deferred runs with their multiplier and expiry
  run show <jobId>                  the run, its steps, provider jobs and webhook delivery, and the
                                    Logs Insights query of its trail with the stage's log groups
  events tail [--follow] [--type T1,T2] [--lines N]
                                    the last N (20) operator events of the local stack
                                    (.local/events.jsonl), one a line; --follow waits for more;
                                    --type keeps those detail-types (e.g. "Run Finished")

Amounts are credits (1 credit = $0.01) with at most two decimals. Scopes: ${allScopes.join(', ')}.`;

class UsageError extends Error {
  override readonly name = 'UsageError';
}

export interface AdminResult {
  exitCode: number;
  output: string;
}

const flagOptions = {
  help: { type: 'boolean', short: 'h' },
  json: { type: 'boolean' },
  name: { type: 'string' },
  credits: { type: 'string' },
  'per-step-limit': { type: 'string' },
  team: { type: 'string' },
  amount: { type: 'string' },
  project: { type: 'string' },
  'hard-cap': { type: 'string' },
  agent: { type: 'string' },
  workflow: { type: 'string' },
  status: { type: 'string' },
  scopes: { type: 'string' },
  workflows: { type: 'string' },
  'monthly-cap': { type: 'string' },
  'expires-at': { type: 'string' },
  'rate-limit': { type: 'string' },
  key: { type: 'string' },
  multiplier: { type: 'string' },
  file: { type: 'string' },
  'secret-ref': { type: 'string' },
  endpoint: { type: 'string' },
  bytes: { type: 'string' },
} as const;

type Flags = { [K in keyof typeof flagOptions]?: (typeof flagOptions)[K]['type'] extends 'boolean' ? boolean : string };

const required = (flags: Flags, name: keyof Flags): string => {
  const value = flags[name];
  if (typeof value !== 'string' || value === '') throw new UsageError(`--${name} is required`);
  return value;
};

const credits = (value: string, flag: string): number => {
  try {
    const hundredths = toHundredths(value);
    if (hundredths < 0) throw new RangeError('negative');
    return hundredths;
  } catch {
    throw new UsageError(`--${flag} must be a non-negative credit amount with at most two decimals`);
  }
};

const optionalCredits = (flags: Flags, name: 'credits' | 'per-step-limit' | 'hard-cap' | 'monthly-cap') =>
  flags[name] === undefined ? null : credits(flags[name], name);

const list = (value: string | undefined): string[] =>
  value
    ? value
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean)
    : [];

const teamOf = async (deps: Deps, kind: 'PROJECT' | 'AGENT' | 'WORKFLOW', id: string): Promise<string> => {
  const teamId = await findTeamIdById(deps, kind, id);
  if (!teamId) throw new UsageError(`No ${kind.toLowerCase()} ${id}`);
  return teamId;
};

const balanceView = (team: TeamItem) => {
  const b = balanceOf(team);
  return {
    balance: toCredits(b.balance),
    held: toCredits(b.held),
    charged: toCredits(b.charged),
    granted: toCredits(b.granted),
  };
};

/** Whether `argv` asks for the usage (`--help`, `-h`, `help`): answered without a table. */
export const asksForHelp = (argv: readonly string[]) =>
  argv[0] === 'help' || argv.some((arg) => arg === '--help' || arg === '-h');

/** Runs one command; returns what to print and the exit code instead of exiting. `logs`: where the stage's log lines are (`run show`). */
export const runAdmin = async (argv: string[], deps: Deps, options: { logs?: LogPlace } = {}): Promise<AdminResult> => {
  if (asksForHelp(argv)) return { exitCode: 0, output: usage };
  let flags: Flags;
  let positionals: string[];
  try {
    const parsed = parseArgs({ args: argv, options: flagOptions, allowPositionals: true, strict: true });
    flags = parsed.values as Flags;
    positionals = parsed.positionals;
  } catch (error) {
    return { exitCode: 2, output: `${(error as Error).message}\n\n${usage}` };
  }
  const command = positionals.join(' ');
  try {
    const result =
      positionals[0] === 'run' && positionals[1] === 'show'
        ? await runShow(positionals.slice(2), deps, options.logs ?? { kind: 'unknown' })
        : await dispatch(command, flags, deps);
    const output = flags.json
      ? JSON.stringify(result, null, 2)
      : Object.entries(result)
          .map(([k, v]) => `${k}: ${typeof v === 'object' ? JSON.stringify(v) : String(v)}`)
          .join('\n');
    return { exitCode: 0, output };
  } catch (error) {
    if (error instanceof UsageError) return { exitCode: 2, output: `${error.message}\n\n${usage}` };
    if (error instanceof TenancyNotFoundError || error instanceof RunNotFoundError)
      return { exitCode: 1, output: error.message };
    // Contention on every try (functions/store/write.ts): the write did not happen; run it again.
    if (error instanceof StorageBusyError)
      return { exitCode: 1, output: `DynamoDB is busy (${error.contention}); nothing was written, try again` };
    throw error;
  }
};

class RunNotFoundError extends Error {
  override readonly name = 'RunNotFoundError';
}

const runShow = async (args: string[], deps: Deps, logs: LogPlace) => {
  const [jobId, ...extra] = args;
  if (!jobId || extra.length > 0) throw new UsageError('run show takes one jobId');
  const shown = await showRun(deps, jobId, logs);
  if (!shown) throw new RunNotFoundError(`No run ${jobId} (or it expired)`);
  return shown;
};

const dispatch = async (command: string, flags: Flags, deps: Deps): Promise<Record<string, unknown>> => {
  switch (command) {
    case 'team create':
      return createTeam(deps, {
        name: required(flags, 'name'),
        creditsHundredths: optionalCredits(flags, 'credits') ?? 0,
        perStepLimitHundredths: optionalCredits(flags, 'per-step-limit'),
      });
    case 'credits add': {
      const amount = toHundredthsSigned(required(flags, 'amount'));
      const b = await addCredits(deps, required(flags, 'team'), amount);
      return { balance: toCredits(b.balance) };
    }
    case 'credits show': {
      const team = await getTeam(deps, required(flags, 'team'));
      if (!team) return notFound('team', flags.team);
      return balanceView(team);
    }
    case 'project create':
      return createProject(deps, {
        teamId: required(flags, 'team'),
        name: required(flags, 'name'),
        hardCapHundredths: optionalCredits(flags, 'hard-cap'),
      });
    case 'agent create': {
      const projectId = required(flags, 'project');
      return createAgent(deps, {
        teamId: await teamOf(deps, 'PROJECT', projectId),
        projectId,
        name: required(flags, 'name'),
      });
    }
    case 'agent activate': {
      const agentId = required(flags, 'agent');
      const teamId = await teamOf(deps, 'AGENT', agentId);
      const workflowId = required(flags, 'workflow');
      if (!(await activateWorkflow(deps, teamId, agentId, workflowId))) {
        throw new UsageError(`Workflow ${workflowId} does not belong to agent ${agentId}`);
      }
      return { agentId, activeWorkflowId: workflowId };
    }
    case 'workflow status': {
      const status = required(flags, 'status');
      if (status !== 'draft' && status !== 'active' && status !== 'archived') {
        throw new UsageError('--status must be draft, active or archived');
      }
      const workflowId = required(flags, 'workflow');
      await setWorkflowStatus(deps, await teamOf(deps, 'WORKFLOW', workflowId), workflowId, status);
      return { workflowId, status };
    }
    case 'key create': {
      const scopes = list(flags.scopes);
      const unknown = scopes.filter((s) => !allScopes.includes(s as Scope));
      if (unknown.length) throw new UsageError(`Unknown scope(s): ${unknown.join(', ')}`);
      const expiresAt = flags['expires-at'];
      if (expiresAt !== undefined && Number.isNaN(Date.parse(expiresAt)))
        throw new UsageError('--expires-at must be an ISO date-time');
      const rate = flags['rate-limit'];
      if (rate !== undefined && !/^[1-9]\d*$/.test(rate))
        throw new UsageError('--rate-limit must be a positive integer');
      const teamId = required(flags, 'team');
      if (!(await getTeam(deps, teamId))) return notFound('team', teamId);
      return createApiKey(deps, {
        teamId,
        scopes: scopes as Scope[],
        workflowIds: list(flags.workflows),
        monthlyCapHundredths: optionalCredits(flags, 'monthly-cap'),
        expiresAt: expiresAt === undefined ? null : new Date(expiresAt).toISOString(),
        rateLimitPerMinute: rate === undefined ? null : Number(rate),
      });
    }
    case 'key revoke': {
      const keyId = required(flags, 'key');
      if (!(await revokeApiKey(deps, keyId))) return notFound('key', keyId);
      return { keyId, revoked: true };
    }
    case 'key list': {
      const keys = await listApiKeys(deps, required(flags, 'team'));
      return {
        keys: keys.map((k) => ({
          keyId: k.keyId,
          hint: k.hint,
          scopes: k.scopes.length ? k.scopes : 'all',
          workflows: k.workflowIds.length ? k.workflowIds : 'all',
          monthlyCap: k.monthlyCapHundredths === null ? null : toCredits(k.monthlyCapHundredths),
          rateLimitPerMinute: k.rateLimitPerMinute,
          expiresAt: k.expiresAt,
          revokedAt: k.revokedAt,
          createdAt: k.createdAt,
        })),
      };
    }
    case 'price set': {
      const raw = required(flags, 'multiplier');
      const multiplier = raw === 'none' ? null : Number(raw);
      if (multiplier !== null && !isValidMultiplier(multiplier)) {
        throw new UsageError('--multiplier must be a number above 0 and at most 10, with up to 4 decimals');
      }
      await setLiveMultiplier(deps, multiplier);
      return priceView(deps);
    }
    case 'price schedule': {
      let hourly: number[];
      try {
        hourly = parseSchedule(readFileSync(required(flags, 'file'), 'utf8'));
      } catch (error) {
        throw new UsageError(`Bad schedule file: ${(error as Error).message}`);
      }
      await setHourlySchedule(deps, hourly);
      return priceView(deps);
    }
    case 'price show':
      return priceView(deps);
    case 'connection set': {
      const teamId = required(flags, 'team');
      const secretRef = required(flags, 'secret-ref');
      const problem = connectionRefProblem(secretRef, deps.secrets.policy);
      if (problem) throw new UsageError(`--secret-ref: ${problem}`);
      if (!(await getTeam(deps, teamId))) return notFound('team', teamId);
      const key = required(flags, 'key');
      await setConnection(deps, teamId, key, { secretRef, ...(flags.endpoint ? { endpoint: flags.endpoint } : {}) });
      return { teamId, key, secretRef };
    }
    case 'connection remove': {
      const teamId = required(flags, 'team');
      const key = required(flags, 'key');
      if (!(await removeConnection(deps, teamId, key))) return notFound('connection', key);
      return { teamId, key, removed: true };
    }
    case 'connection list':
      return { connections: await getConnections(deps, required(flags, 'team')) };
    case 'storage show': {
      const teamId = required(flags, 'team');
      if (!(await getTeam(deps, teamId))) return notFound('team', teamId);
      return { teamId, ...(await readStorageUsage(deps, teamId)) };
    }
    case 'storage quota': {
      const teamId = required(flags, 'team');
      const raw = required(flags, 'bytes');
      const quotaBytes = raw === 'default' ? null : Number(raw);
      if (quotaBytes !== null && !(Number.isInteger(quotaBytes) && quotaBytes >= 0)) {
        throw new UsageError('--bytes: a whole number of bytes, or "default"');
      }
      if (!(await getTeam(deps, teamId))) return notFound('team', teamId);
      await setStorageQuota(deps, teamId, quotaBytes);
      return { teamId, ...(await readStorageUsage(deps, teamId)) };
    }
    case 'dispatch': {
      const { makeHandler } = await import('../functions/workers/deferred-dispatcher.ts');
      const { invokedAs } = await import('./invocation.ts');
      return invokedAs('DeferredDispatcher', makeHandler(deps))();
    }
    case 'deferred list': {
      const waiting = await listWaitingDeferredRuns(deps, required(flags, 'team'));
      return {
        waiting: waiting.map((d) => ({
          deferredJobId: d.deferredJobId,
          workflowId: d.workflowId,
          maxMultiplier: d.maxMultiplier,
          createdAt: d.createdAt,
          expiresAt: d.expiresAt,
        })),
      };
    }
    default:
      throw new UsageError(command ? `Unknown command: ${command}` : 'No command given');
  }
};

const toHundredthsSigned = (value: string): number => {
  try {
    return toHundredths(value);
  } catch {
    throw new UsageError('--amount must be a credit amount with at most two decimals');
  }
};

const notFound = (kind: string, id: string | undefined): never => {
  throw new UsageError(`No ${kind} ${id}`);
};

const priceView = async (deps: Deps) => {
  const settings = await getPriceSettings(deps);
  return { current: currentMultiplier(settings, deps.now()), live: settings.multiplier, hourly: settings.hourly };
};

/** One operator event as a line: its time, detail-type, event id, then the rest of its detail. */
const eventLine = (event: Record<string, unknown>) => {
  const { eventId, version: _version, ...rest } = (event.detail ?? {}) as Record<string, unknown>;
  const fields = Object.entries(rest)
    .filter(([, value]) => value !== null)
    .map(([key, value]) => `${key}=${typeof value === 'object' ? JSON.stringify(value) : String(value)}`);
  return [event.time, event['detail-type'], eventId, ...fields].join('  ');
};

/**
 * `events tail`: the operator events the local EventBridge wrote to `file` (one JSON line each),
 * the last `--lines` (20) of them, `--type` keeping only those detail-types; with `--follow`, then
 * each new one as it comes until `signal` aborts. `--json` prints each event's JSON line as written.
 * Answers the exit code (2 for a usage mistake).
 */
export const runEventsTail = async (
  argv: string[],
  options: { file: string; write: (line: string) => void; signal?: AbortSignal; pollMs?: number },
): Promise<number> => {
  let flags: { follow?: boolean; type?: string; lines?: string; json?: boolean };
  try {
    const parsed = parseArgs({
      args: argv,
      options: {
        follow: { type: 'boolean' },
        type: { type: 'string' },
        lines: { type: 'string' },
        json: { type: 'boolean' },
      },
      allowPositionals: true,
      strict: true,
    });
    if (parsed.positionals.join(' ') !== 'events tail') throw new UsageError('Unknown command');
    flags = parsed.values;
  } catch (error) {
    options.write(`${(error as Error).message}\n\n${usage}`);
    return 2;
  }
  const count = Number(flags.lines ?? 20);
  if (!Number.isInteger(count) || count < 0) {
    options.write(`--lines must be a whole number\n\n${usage}`);
    return 2;
  }
  const types = new Set(list(flags.type));
  const print = (text: string) => {
    const lines = text.split('\n').filter((line) => line.trim() !== '');
    const kept = lines.filter((line) => {
      if (types.size === 0) return true;
      try {
        return types.has(String((JSON.parse(line) as Record<string, unknown>)['detail-type']));
      } catch {
        return false;
      }
    });
    return kept.map((line) => (flags.json ? line : eventLine(JSON.parse(line) as Record<string, unknown>)));
  };
  let read = 0;
  /** The whole lines added to the file since the last read (a line still being written waits). */
  const readNew = (): string => {
    const size = existsSync(options.file) ? statSync(options.file).size : 0;
    if (size < read) read = 0; // The file was replaced (npm start -- --reset): read it from its start.
    if (size === read) return '';
    const added = readFileSync(options.file).subarray(read, size);
    const complete = added.lastIndexOf(0x0a) + 1;
    read += complete;
    return added.subarray(0, complete).toString('utf8');
  };
  const last = print(readNew());
  for (const line of count === 0 ? [] : last.slice(-count)) options.write(line);
  while (flags.follow && !options.signal?.aborted) {
    await new Promise((resolve) => setTimeout(resolve, options.pollMs ?? 250));
    for (const line of print(readNew())) options.write(line);
  }
  return 0;
};
