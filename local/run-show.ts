import type { Deps } from '../functions/deps.ts';
import { toCredits } from '../functions/domain/credits.ts';
import { runView } from '../functions/domain/run-view.ts';
import { canvasOf } from '../functions/store/canvases.ts';
import { readRunPartition } from '../functions/store/run/index.ts';
import { readRunDeliveries } from '../functions/store/webhook-deliveries.ts';
import { pythonRunner, workers } from '../lib/workers.ts';
import { functionLogGroupName, renderQuery, runTrailQuery, savedQueryNames } from '../platform/log-queries.ts';
import { routes } from '../platform/routes.ts';

/** Where the stage's log lines are: a deployed stage's API stack (its log groups), or the local stack (stdout). */
export type LogPlace = { kind: 'stage'; apiStackName: string } | { kind: 'local' } | { kind: 'unknown' };

/** The host of a callback URL: what `run show` prints of it (its path and query may carry a receiver's token). */
const hostOf = (url: string | undefined) => {
  if (!url) return null;
  try {
    return new URL(url).host;
  } catch {
    return 'unreadable';
  }
};

/** Where to read the run's log lines and the Logs Insights query to paste (its jobId filled in). */
export const runTrail = (jobId: string, place: LogPlace) => {
  const query = renderQuery(runTrailQuery(jobId));
  switch (place.kind) {
    case 'stage': {
      const ids = [...routes.map((r) => r.id), ...workers.map((w) => w.id), pythonRunner.id];
      return {
        query,
        logGroups: ids.map((id) => functionLogGroupName(place.apiStackName, id)),
        savedQuery: savedQueryNames(place.apiStackName).runTrail,
      };
    }
    case 'local':
      return { query, local: `npm start writes every function's lines to its output: grep '"jobId":"${jobId}"'` };
    default:
      return { query, logGroups: 'set SERVICE_STAGE (and STACK_PREFIX if not the default) to name the stage’s' };
  }
};

/**
 * `run show <jobId>`: the run, every one of its steps (`status` as the API shows it, `stored` as its item
 * holds it, null when it has none), its provider jobs, its webhook delivery and where its log
 * lines are, read from the table as they stand (strongly consistent reads). Never its inputs' values,
 * its callback's secret or its callback's path, nor a provider job's token hash. Undefined: no such run.
 */
export const showRun = async (deps: Deps, jobId: string, place: LogPlace) => {
  const [{ run, steps }, deliveries] = await Promise.all([
    readRunPartition(deps, jobId),
    readRunDeliveries(deps, jobId),
  ]);
  if (!run) return undefined;
  // Every step of the run, as GET /runs/{jobId} lists them (a step never taken, e.g. skipped, has no
  // item), with what its item holds when it has one.
  const view = runView(
    run,
    new Map(steps.map((step) => [step.nodeId, step])),
    await canvasOf(deps, run.workflowId, run.workflowVersion),
  );
  const itemOf = new Map(steps.map((step) => [step.nodeId, step]));
  return {
    run: {
      jobId: run.jobId,
      status: run.status,
      mode: run.mode,
      teamId: run.teamId,
      projectId: run.projectId,
      workflowId: run.workflowId,
      keyId: run.keyId,
      deferredJobId: run.deferredJobId ?? null,
      createdAt: run.createdAt,
      endedAt: run.endedAt ?? null,
      steps: { total: run.stepsTotal, completed: run.stepsCompleted, skipped: run.stepsSkipped },
      estimate: toCredits(run.estimateHundredths),
      held: toCredits(run.heldHundredths),
      charged: toCredits(run.chargedHundredths),
      inputKeys: Object.keys(run.inputs),
      callbackHost: hostOf(run.callbackUrl),
    },
    steps: view.steps.map((shown) => {
      const s = itemOf.get(shown.node_id);
      return {
        nodeId: shown.node_id,
        stepType: shown.step_type,
        status: shown.status,
        stored: s?.status ?? null,
        startedAt: s?.startedAt ?? null,
        error: s?.error ?? null,
        charged: toCredits(s?.chargeHundredths ?? 0),
        claims: s?.attempts ?? 0,
        failures: s?.failures ?? 0,
        providerTries: s?.providerTries ?? 0,
        leaseUntil: s?.leaseUntil ?? null,
        model: s?.model ?? null,
      };
    }),
    // The job each step waits on, then those a later claim superseded (the only ones a webhook may cancel).
    providerJobs: steps.flatMap((s) =>
      [
        ...(s.providerJob ? [{ job: s.providerJob, superseded: false }] : []),
        ...(s.supersededJobs ?? []).map((job) => ({ job, superseded: true })),
      ].map(({ job, superseded }) => ({
        nodeId: s.nodeId,
        provider: job.provider,
        model: job.model,
        credentials: job.credentials,
        providerJobId: job.id ?? null,
        claim: job.attempt,
        submittedAt: job.submittedAt ?? null,
        deadlineAt: job.deadlineAt,
        superseded,
      })),
    ),
    webhook: deliveries?.event
      ? {
          event: deliveries.event,
          state: deliveries.delivery?.state ?? 'not attempted',
          attempts: deliveries.delivery?.attempts ?? 0,
          nextAttemptAt: deliveries.delivery?.nextAttemptAt ?? null,
          log: deliveries.delivery?.attemptLog ?? [],
        }
      : null,
    logs: runTrail(jobId, place),
  };
};
