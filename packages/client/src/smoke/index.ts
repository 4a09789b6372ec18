/**
 * The smoke run: the cheapest real work that proves a deployed stage, through its public API only
 * (`workflow-run smoke`, `npm run smoke`). Each check has its own deadline and reports one line:
 * pass, skip (the stage does not offer it) or fail with a named cause, and the credits it cost.
 */
import { createClient } from '../client.ts';
import { causeOfError } from './causes.ts';
import { eventsCheck, fileLinkCheck, hopsCheck, pythonCheck, uploadCheck, webhookCheck } from './checks.ts';
import {
  CheckFailure,
  type CheckOutcome,
  type CheckResult,
  type SmokeContext,
  uploadStore,
  type WorkflowHome,
  workflowStore,
} from './context.ts';
import { bedrockLifecycleReader, type GetLifecycleStatus, lifecycleCheck } from './lifecycle.ts';
import { modelCases, modelCheck, type SmokeModelType, smokeModelTypes } from './models.ts';

export { classifyStepError, foundationModelId, judgeLifecycle, type SmokeCause, smokeCauses } from './causes.ts';
export { hopCount, hopSteps } from './checks.ts';
export type { CheckResult, CheckStatus } from './context.ts';
export { modelSteps, smokeModelTypes } from './models.ts';

export interface SmokeOptions {
  baseUrl: string;
  apiKey: string;
  /** Where the smoke run's workflows go (found again by name on the next run). */
  home: WorkflowHome;
  /** The receiver of the signed webhook check; without it, that check is skipped. */
  webhook?: { url: string; secret: string };
  /** With a region, each Bedrock model that ran (and `bedrockModels`) gets a lifecycle check. */
  awsRegion?: string;
  bedrockModels?: readonly string[];
  /** Replaces the Bedrock control-plane read (tests). */
  getLifecycleStatus?: GetLifecycleStatus;
  /**
   * Where run event streams are served, when not at the Run's `links.events` (the rehearsal serves
   * the stream beside the API, while the template's stream address is not served).
   */
  streamBaseUrl?: string;
  /** Only these checks (names as printed: `upload`, `models`, `model LlmWorker`, `python`, ...). */
  only?: readonly string[];
  /** Every check's deadline, in seconds, instead of its own. */
  timeoutSeconds?: number;
  /** Model checks run at once (default 3). */
  concurrency?: number;
  /** The HTTP client (default: the global fetch). */
  fetch?: (request: Request) => Promise<Response>;
  signal?: AbortSignal;
  /** Called with each line as its check ends. */
  onResult?: (result: CheckResult) => void;
}

export interface SmokeReport {
  results: CheckResult[];
  ok: boolean;
  credits: number;
}

interface Check {
  name: string;
  deadlineSeconds: number;
  run: (ctx: SmokeContext) => Promise<CheckOutcome>;
}

const baseChecks: Check[] = [
  { name: 'upload', deadlineSeconds: 60, run: uploadCheck },
  { name: 'file link', deadlineSeconds: 120, run: fileLinkCheck },
  { name: 'events', deadlineSeconds: 120, run: eventsCheck },
  { name: 'python', deadlineSeconds: 120, run: pythonCheck },
  { name: 'hops', deadlineSeconds: 300, run: hopsCheck },
  // The first attempt is made within seconds of the run's end; a retry would be minutes away.
  { name: 'webhook', deadlineSeconds: 120, run: webhookCheck },
];

const modelChecks: Check[] = smokeModelTypes.map((type: SmokeModelType) => ({
  name: `model ${type}`,
  deadlineSeconds: modelCases[type].deadlineSeconds,
  run: (ctx) => modelCheck(ctx, type),
}));

/** Runs one check under its deadline; whatever it throws becomes its failed line, cause named. */
const runCheck = async (
  check: Check,
  shared: Omit<SmokeContext, 'signal'>,
  options: SmokeOptions,
): Promise<CheckResult> => {
  const began = performance.now();
  const deadline = AbortSignal.timeout((options.timeoutSeconds ?? check.deadlineSeconds) * 1000);
  const signal = options.signal ? AbortSignal.any([options.signal, deadline]) : deadline;
  const ms = () => Math.round(performance.now() - began);
  try {
    const outcome = await check.run({ ...shared, signal });
    return { name: check.name, ...outcome, ms: ms() };
  } catch (error) {
    if (error instanceof CheckFailure) {
      return {
        name: check.name,
        status: 'fail',
        cause: error.cause,
        detail: error.message,
        credits: error.credits,
        ms: ms(),
        ...(error.jobId ? { jobId: error.jobId } : {}),
      };
    }
    const timedOut = deadline.aborted && !options.signal?.aborted;
    return {
      name: check.name,
      status: 'fail',
      cause: timedOut ? 'timeout' : causeOfError(error),
      detail: timedOut
        ? `not done within its ${options.timeoutSeconds ?? check.deadlineSeconds} s deadline`
        : (error as Error).message,
      credits: 0,
      ms: ms(),
    };
  }
};

/** At most `limit` of `items` at once, results in the items' order. */
const pool = async <T, R>(items: readonly T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> => {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const at = next++;
      results[at] = await work(items[at] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
};

const selected = (check: Check, only: readonly string[] | undefined) =>
  !only?.length || only.includes(check.name) || (check.name.startsWith('model ') && only.includes('models'));

export const runSmoke = async (options: SmokeOptions): Promise<SmokeReport> => {
  const fetchImpl = options.fetch ?? ((request: Request) => fetch(request));
  const client = createClient({
    baseUrl: options.baseUrl,
    apiKey: options.apiKey,
    headers: { 'user-agent': 'workflow-run-smoke/1.0' },
    fetch: fetchImpl,
  });
  const shared: Omit<SmokeContext, 'signal'> = {
    client,
    fetch: (url, init) => fetchImpl(new Request(url, init)),
    workflowFor: workflowStore(client, options.home, options.signal),
    uploaded: uploadStore(client, options.signal),
    webhook: options.webhook,
    streamBaseUrl: options.streamBaseUrl,
  };
  const results: CheckResult[] = [];
  const report = (result: CheckResult) => {
    results.push(result);
    options.onResult?.(result);
    return result;
  };
  for (const check of baseChecks.filter((c) => selected(c, options.only))) {
    report(await runCheck(check, shared, options));
  }
  const models = modelChecks.filter((c) => selected(c, options.only));
  await pool(models, options.concurrency ?? 3, async (check) => report(await runCheck(check, shared, options)));

  if (options.awsRegion || options.getLifecycleStatus) {
    const ran = results.flatMap((r) => (r.ranOn?.provider === 'bedrock' ? [r.ranOn.model] : []));
    const ids = [...new Set([...ran, ...(options.bedrockModels ?? [])])];
    if (ids.length === 0) {
      report({ name: 'lifecycle', status: 'skip', detail: 'no Bedrock model ran or was named', credits: 0, ms: 0 });
    } else {
      const read = options.getLifecycleStatus ?? (await bedrockLifecycleReader(options.awsRegion as string));
      for (const id of ids) report(await lifecycleCheck(id, read));
    }
  }
  const credits = Math.round(results.reduce((sum, r) => sum + r.credits * 100, 0)) / 100;
  return { results, ok: results.every((r) => r.status !== 'fail'), credits };
};

const label = { pass: 'PASS', skip: 'SKIP', fail: 'FAIL' } as const;

/** One line per check: status, name, credits, time, then what was seen (a failure's cause first). */
export const formatResult = (r: CheckResult): string =>
  `${label[r.status]}  ${r.name.padEnd(26)} ${`${r.credits.toFixed(2)} credits`.padStart(14)}  ${`${(r.ms / 1000).toFixed(1)} s`.padStart(7)}  ` +
  `${r.cause ? `cause: ${r.cause}: ` : ''}${r.detail}${r.jobId && r.status === 'fail' ? ` (run ${r.jobId})` : ''}`;

export const formatSummary = (report: SmokeReport): string => {
  const count = (status: CheckResult['status']) => report.results.filter((r) => r.status === status).length;
  return (
    `smoke: ${report.ok ? 'PASSED' : 'FAILED'}: ${count('pass')} passed, ${count('skip')} skipped, ` +
    `${count('fail')} failed; ${report.credits.toFixed(2)} credits charged`
  );
};
