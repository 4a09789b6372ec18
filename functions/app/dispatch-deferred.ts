import type { Deps } from '../deps.ts';
import { isKeyUsable } from '../domain/api-key.ts';
import { type DispatchObstacle, fateOf, hasExpired } from '../domain/deferred-run-lifetime.ts';
import { currentMultiplier } from '../domain/price-multiplier.ts';
import {
  CanvasNotFoundError,
  InputFileNotUsableError,
  MonthlyCapUnverifiableError,
  ProviderNotAvailableError,
  RunInProgressError,
  RunRefusedError,
  RunValidationFailedError,
  StorageQuotaReachedError,
  UnknownInputKeysError,
  WorkflowNotFoundError,
  WorkflowNotPermittedError,
} from '../errors/table.ts';
import { logger } from '../observability/logger.ts';
import { findApiKeyById } from '../store/api-keys.ts';
import {
  dispatchableDeferredRuns,
  expiredDeferredRuns,
  leaveWaiting,
  moveDeferredRun,
} from '../store/deferred-runs.ts';
import type { ApiKeyItem } from '../store/items/api-keys.ts';
import type { DeferredRunItem } from '../store/items/deferred-runs.ts';
import { getPriceSettings } from '../store/price-multiplier.ts';
import { ExtraConditionFailedError, loadRunnableWorkflow } from '../store/run/index.ts';
import { holdFileInputs, uploadsOf } from './run-inputs.ts';
import { checkRunnable, commitRun } from './start-run.ts';

export interface TickReport {
  multiplier: number;
  dispatched: { deferredJobId: string; jobId: string }[];
  expired: string[];
  cancelled: string[];
  keptWaiting: string[];
  /** Query pages read from the two waiting indexes (the cost of a tick). */
  queryPages: number;
}

type Outcome = { kind: 'dispatched'; jobId: string } | { kind: 'expired' | 'cancelled' | 'waiting' | 'gone' };

/** Tries to start one deferred run at the multiplier in force (never above its maxMultiplier). */
const dispatchOne = async (deps: Deps, deferred: DeferredRunItem, multiplier: number): Promise<Outcome> => {
  const now = deps.now();
  const key = await findApiKeyById(deps, deferred.keyId);
  if (!key || !isKeyUsable(key, now)) return { kind: fateOf('keyUnusable') };
  const usable: ApiKeyItem = key;
  try {
    const workflow = await loadRunnableWorkflow(deps, deferred.teamId, deferred.workflowId, deferred.request.version);
    checkRunnable(usable, workflow, deferred.request, deps.providers);
    const jobId = deps.newId();
    const started = await commitRun(deps, {
      jobId,
      key: usable,
      workflow,
      request: deferred.request,
      multiplier,
      idempotency: null,
      deferredJobId: deferred.deferredJobId,
      batchId: deferred.batchId,
      // The uploads its inputs named, copied now, once admitted (a deferred run stored before copies
      // were made at dispatch holds its copies already: the run keeps those).
      inputFiles: async (newJobId) => ({
        ...deferred.inputFiles,
        ...(await holdFileInputs(deps, deferred.teamId, newJobId, uploadsOf(deferred.inputUploads))),
      }),
      // The deferred run moves to `dispatched` in the same transaction as the start: at most once.
      extraItems: [{ Update: leaveWaiting(deps, deferred.deferredJobId, 'dispatched', { jobId }) }],
    });
    return { kind: 'dispatched', jobId: started.jobId };
  } catch (error) {
    return outcomeOfRefusal(error);
  }
};

/**
 * What a refused dispatch means for the deferred run: the refusal read as the lifetime rule's
 * obstacle, whose fate (wait, expire) `fateOf` decides. Anything else is a failure the tick logs
 * and retries.
 */
const outcomeOfRefusal = (error: unknown): Outcome => {
  if (error instanceof ExtraConditionFailedError) return { kind: 'gone' };
  const obstacle = obstacleOf(error);
  if (obstacle === undefined) throw error;
  return { kind: fateOf(obstacle) };
};

/** The obstacle a refused start names; undefined for a failure that is not a refusal. */
const obstacleOf = (error: unknown): DispatchObstacle | undefined => {
  if (error instanceof RunInProgressError) return 'runInProgress';
  if (error instanceof StorageQuotaReachedError) return 'storageQuota';
  // An upload gone or replaced since it was deferred: the run can no longer be what was asked.
  if (error instanceof InputFileNotUsableError) return 'notAllowed';
  if (error instanceof MonthlyCapUnverifiableError) return 'monthlyCapUnverifiable';
  if (error instanceof RunRefusedError) return error.refusal.kind;
  if (
    error instanceof WorkflowNotFoundError ||
    error instanceof CanvasNotFoundError ||
    error instanceof WorkflowNotPermittedError ||
    error instanceof RunValidationFailedError ||
    error instanceof UnknownInputKeysError ||
    error instanceof ProviderNotAvailableError
  ) {
    return 'notAllowed';
  }
  return undefined;
};

/**
 * One dispatcher tick (spec 3.2): expire waiting runs past 24 hours, then dispatch those whose
 * maxMultiplier is at least the current multiplier. Reads only the two sparse waiting indexes.
 */
export const dispatchDeferredRuns = async (deps: Deps): Promise<TickReport> => {
  const now = deps.now();
  const multiplier = currentMultiplier(await getPriceSettings(deps), now);
  const counter = { pages: 0 };
  const report: TickReport = { multiplier, dispatched: [], expired: [], cancelled: [], keptWaiting: [], queryPages: 0 };
  for (const deferred of await expiredDeferredRuns(deps, now, counter)) {
    if (await moveDeferredRun(deps, deferred.deferredJobId, 'expired')) report.expired.push(deferred.deferredJobId);
  }
  const expired = new Set(report.expired);
  for (const deferred of await dispatchableDeferredRuns(deps, multiplier, counter)) {
    if (expired.has(deferred.deferredJobId) || hasExpired(deferred.expiresAt, now)) continue;
    let outcome: Outcome;
    try {
      outcome = await dispatchOne(deps, deferred, multiplier);
    } catch (error) {
      // One bad deferred run must not block the others at every tick: log it, try it again next tick.
      logger.error('deferred run could not be dispatched', {
        deferredJobId: deferred.deferredJobId,
        error: error as Error,
      });
      report.keptWaiting.push(deferred.deferredJobId);
      continue;
    }
    if (outcome.kind === 'dispatched')
      report.dispatched.push({ deferredJobId: deferred.deferredJobId, jobId: outcome.jobId });
    else if (outcome.kind === 'waiting') report.keptWaiting.push(deferred.deferredJobId);
    else if (outcome.kind === 'expired' || outcome.kind === 'cancelled') {
      if (await moveDeferredRun(deps, deferred.deferredJobId, outcome.kind)) {
        (outcome.kind === 'expired' ? report.expired : report.cancelled).push(deferred.deferredJobId);
      }
    }
  }
  report.queryPages = counter.pages;
  return report;
};
