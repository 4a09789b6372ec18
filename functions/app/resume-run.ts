import { RunStatus } from '../../platform/run-statuses.ts';
import type { ResumeRunRequest, RunRequest } from '../../schemas/run-request.ts';
import type { Deps } from '../deps.ts';
import { toCredits } from '../domain/credits.ts';
import type { RequestTarget } from '../domain/idempotency-key.ts';
import { keyMayUseWorkflow } from '../domain/key-workflows.ts';
import { isResumable, resumedInputs, resumePlan } from '../domain/resume.ts';
import { apiInputTargets } from '../domain/workflow-graph.ts';
import { RunNotFoundError, RunNotResumableError } from '../errors/table.ts';
import type { ApiKeyItem } from '../store/items/api-keys.ts';
import type { InputFile, RunItem, StepItem } from '../store/items/runs.ts';
import { loadRunnableWorkflow, putCarriedSteps, readRunPartition } from '../store/run/index.ts';
import { assertUnderStorageQuota } from '../store/stored-bytes.ts';
import { checkFileInputs, holdFileInputs } from './run-inputs.ts';
import {
  answerOnce,
  checkRunnable,
  checkStartBy,
  commitRun,
  committedAnswer,
  type RunStartAnswer,
  withIssuedSecret,
} from './start-run.ts';

/** A resume as the HTTP edge read it. */
export interface ResumeStart {
  request: ResumeRunRequest;
  idempotencyKey: string | undefined;
  target: RequestTarget;
}

/**
 * The original's own copies of its input files that the new run reads (keys of steps it runs, not
 * given again): shared, not copied. The original is within its retention (else it reads as missing),
 * and its files expire with it.
 */
const sharedInputFiles = (run: RunItem, keys: readonly string[]): Record<string, InputFile> =>
  Object.fromEntries(keys.flatMap((key) => (run.inputFiles[key] ? [[key, run.inputFiles[key]] as const] : [])));

/**
 * POST /runs/{jobId}/resume (our design): a new run of a `failed` or `stopped` run's
 * workflow that takes over the steps it completed (functions/domain/resume.ts) and runs the rest.
 * It is a run start in all else: the same admission, transaction and Idempotency-Key rule
 * (functions/app/start-run.ts). Another team's run, one past its retention, and one of a workflow
 * the key is limited away from read as missing (404). The original run is only read.
 */
export const resumeRun = (deps: Deps, key: ApiKeyItem, start: ResumeStart, jobId: string): Promise<RunStartAnswer> =>
  answerOnce(deps, key, { ...start, body: start.request }, async (rememberFor) => {
    const { request, issued } = withIssuedSecret(start.request);
    checkStartBy(deps, request.startBy, false);
    const { run, steps } = await readRunPartition(deps, jobId);
    if (!run || run.teamId !== key.teamId || !keyMayUseWorkflow(key.workflowIds, run.workflowId)) {
      throw new RunNotFoundError(jobId);
    }
    if (!isResumable(run.status)) {
      throw new RunNotResumableError(jobId, run.status);
    }
    // The version the failed run ran: the steps carried over are that version's.
    const workflow = await loadRunnableWorkflow(deps, key.teamId, run.workflowId, run.workflowVersion);
    const given = request.inputs ?? {};
    checkRunnable(key, workflow, { inputs: given }, deps.providers);
    const { canvas } = workflow;
    const byNode = new Map<string, StepItem>(steps.map((s) => [s.nodeId, s]));
    const plan = resumePlan(canvas, { doneSteps: run.doneSteps, steps: byNode });
    if (plan.toRun.length === 0) throw new Error(`run ${jobId} ended ${run.status} with every step counted`);
    const targets = apiInputTargets(canvas);
    const runs = (inputKey: string) => plan.toRun.includes(targets.get(inputKey) ?? '');
    // Only the values of steps that run are used, so only those are checked (a file's upload among them).
    const givenForRuns = Object.fromEntries(Object.entries(given).filter(([k]) => runs(k)));
    const uploads = await checkFileInputs(deps, key.teamId, canvas, givenForRuns);
    await assertUnderStorageQuota(deps, key.teamId);
    const keptFileKeys = Object.keys(run.inputFiles).filter((k) => runs(k) && !Object.hasOwn(givenForRuns, k));
    const resumed: RunRequest = {
      inputs: resumedInputs(canvas, run.inputs, given, plan.toRun),
      mode: run.mode,
      defer: false,
      maxMultiplier: 1,
      ...(request.callbackUrl !== undefined && { callbackUrl: request.callbackUrl }),
      ...(request.callbackSecret !== undefined && { callbackSecret: request.callbackSecret }),
      ...(request.webhookEvents !== undefined && { webhookEvents: request.webhookEvents }),
      // Its own deadline, from its start; the original's is not reused.
      ...(request.deadlineSeconds !== undefined && { deadlineSeconds: request.deadlineSeconds }),
      ...(request.onConflict !== undefined && { onConflict: request.onConflict }),
      ...(request.startBy !== undefined && { startBy: request.startBy }),
    };
    let answer: RunStartAnswer | undefined;
    await commitRun(deps, {
      key,
      workflow,
      request: resumed,
      multiplier: 1,
      deferredJobId: null,
      inputFiles: async (newJobId) => ({
        ...sharedInputFiles(run, keptFileKeys),
        ...(await holdFileInputs(deps, key.teamId, newJobId, uploads)),
      }),
      resume: {
        resumedFrom: jobId,
        plan,
        carry: async (newJobId) => {
          const carried = [];
          for (const nodeId of plan.carried) {
            const step = byNode.get(nodeId);
            if (!step) throw new Error(`carried step ${nodeId} of run ${jobId} has no item`);
            // Its files are the original's, shared: a resume stores no byte again.
            carried.push({ nodeId, outputs: step.outputs ?? {}, original: step });
          }
          await putCarriedSteps(deps, newJobId, jobId, carried);
        },
      },
      idempotency: (newJobId, estimate, conflict) => {
        answer = committedAnswer(
          {
            jobId: newJobId,
            workflowId: workflow.workflowId,
            status: RunStatus.queued,
            estimatedCredits: toCredits(estimate.totalHundredths),
            stepsCount: canvas.nodes.length,
            resumedFrom: jobId,
            carriedSteps: plan.carried,
            ...issued,
          },
          conflict,
        );
        return rememberFor(answer);
      },
    });
    if (!answer) throw new Error('run resumed without an answer');
    return answer;
  });
