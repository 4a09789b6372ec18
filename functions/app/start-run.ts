import { RunStatus } from '../../platform/run-statuses.ts';
import type { OnConflict, RunRequest } from '../../schemas/run-request.ts';
import { runLabels } from '../../schemas/run-tags.ts';
import type { Deps } from '../deps.ts';
import { type AdmissionRefusal, busyFirst, refusalWithoutFacts, runRefusal } from '../domain/admission.ts';
import { rootNodeIds, topologicalOrder } from '../domain/canvas-order.ts';
import { toCredits } from '../domain/credits.ts';
import { startByLatest, startByProblem } from '../domain/deferred-run-lifetime.ts';
import {
  idempotencyKeyHash,
  type RequestTarget,
  rememberedUntil,
  replayOf,
  requestFingerprint,
} from '../domain/idempotency-key.ts';
import { keyMayUseWorkflow } from '../domain/key-workflows.ts';
import { eventfulSteps } from '../domain/lifecycle-webhooks.ts';
import { loadersWithoutValue } from '../domain/loader-inputs.ts';
import { spendMonth } from '../domain/monthly-cap.ts';
import type { RunEstimate } from '../domain/pricing.ts';
import { estimateOfSteps, type ResumePlan } from '../domain/resume.ts';
import { newStandardWebhookSecret } from '../domain/webhook.ts';
import { apiInputKeys, validateCanvas } from '../domain/workflow-graph.ts';
import { type QueueLane, queueCap, queueWaitSeconds } from '../domain/workflow-queue.ts';
import type { ServiceError } from '../errors/define.ts';
import {
  MonthlyCapUnverifiableError,
  ProviderNotAvailableError,
  RunInProgressError,
  RunRefusedError,
  RunValidationFailedError,
  StartByOutOfRangeError,
  UnknownInputKeysError,
  WorkflowNotPermittedError,
} from '../errors/table.ts';
import { type ApiIntegrationRefusal, checkApiIntegration } from '../nodes/providers/registry.ts';
import { logger } from '../observability/logger.ts';
import { countRunStarted } from '../observability/metrics.ts';
import { getConnections } from '../store/connections.ts';
import { createDeferredRun } from '../store/deferred-runs.ts';
import { findIdempotentAnswer, IdempotencyRaceError, type IdempotencyRecord } from '../store/idempotency.ts';
import type { ApiKeyItem } from '../store/items/api-keys.ts';
import type { InputFile } from '../store/items/runs.ts';
import {
  activeJobOf,
  assertQueueRoom,
  loadAdmissionFacts,
  loadAgentWorkflow,
  loadRunnableWorkflow,
  type NewRun,
  queueRun,
  RaceLostError,
  type RunnableWorkflow,
  readLock,
  type Standing,
  sendStepMessages,
  startNextQueued,
  startRun,
} from '../store/run/index.ts';
import { assertUnderStorageQuota } from '../store/stored-bytes.ts';
import { backoff, storageBusy, writeRetry } from '../store/write.ts';
import { cancelReplaced } from './cancel-run.ts';
import { startDeadlineTimer } from './run-deadline.ts';
import { type CheckedUpload, checkFileInputs, holdFileInputs, uploadsByKey } from './run-inputs.ts';
import { startEstimate, startNowMultiplier } from './start-estimate.ts';

/** The error that carries an admission refusal to the caller. */
const admissionError = (
  refusal: AdmissionRefusal,
  read: { cause?: unknown; balanceHundredths?: number } = {},
): ServiceError => {
  const { cause } = read;
  switch (refusal.kind) {
    case 'runInProgress':
      return new RunInProgressError(refusal.activeJobId);
    case 'refused':
      return new RunRefusedError(refusal.refusal, read.balanceHundredths ?? 0);
    case 'monthlyCapUnverifiable':
      return new MonthlyCapUnverifiableError(refusal.retryAfterSeconds, { cause });
  }
};

const providerNotAvailable = (barred: ApiIntegrationRefusal) =>
  new ProviderNotAvailableError(barred.nodeType, barred.providers, barred.level, barred.model);

/** An archived workflow cannot run: the start's validation 422, as for a workflow that fails validation. */
const archivedIssue = {
  code: 'workflow_archived',
  key: null,
  message: 'The workflow is archived: set its status to draft or active (PATCH /workflows/{id}) to run it',
} as const;

/**
 * The checks every start makes before money: the key may run it, the canvas is valid (its
 * `modelInput` against the models the stage runs), the inputs exist.
 */
export const checkRunnable = (
  key: ApiKeyItem,
  workflow: RunnableWorkflow,
  request: Pick<RunRequest, 'inputs'>,
  stage: Pick<Deps['providers'], 'modelDefaults'>,
) => {
  if (!keyMayUseWorkflow(key.workflowIds, workflow.workflowId)) {
    throw new WorkflowNotPermittedError(workflow.workflowId);
  }
  if (workflow.status === 'archived') throw new RunValidationFailedError([archivedIssue]);
  const issues = validateCanvas(workflow.canvas, stage.modelDefaults);
  if (issues.length > 0) throw new RunValidationFailedError(issues);
  const validKeys = apiInputKeys(workflow.canvas);
  const unknownKeys = Object.keys(request.inputs ?? {}).filter((k) => !validKeys.includes(k));
  if (unknownKeys.length > 0) throw new UnknownInputKeysError(unknownKeys, validKeys);
};

/**
 * A `startBy` in the past or past its bound (functions/domain/deferred-run-lifetime.ts) is a 422,
 * before anything is written. `withUploads`: a deferred run whose inputs name uploads (it copies
 * them only at its dispatch); a queued run copies them when it is accepted.
 */
export const checkStartBy = (deps: Deps, startBy: string | undefined, withUploads: boolean) => {
  if (startBy === undefined) return;
  const problem = startByProblem(startBy, deps.now(), withUploads);
  if (!problem) return;
  const latest = problem.kind === 'tooFar' ? problem.latest : startByLatest(deps.now(), withUploads);
  throw new StartByOutOfRangeError(startBy, latest);
};

/**
 * A start's checks before money (`checkRunnable`, then what its `inputs` name and the storage
 * quota), in the order a start makes them: the uploads its `inputs` name, checked, or the error a
 * start answers. Shared by the run starts and the estimate (functions/app/estimate-run.ts).
 */
export const checkStart = async (
  deps: Deps,
  key: ApiKeyItem,
  workflow: RunnableWorkflow,
  request: Pick<RunRequest, 'inputs' | 'startBy' | 'defer'>,
): Promise<CheckedUpload[]> => {
  checkRunnable(key, workflow, request, deps.providers);
  // A loader left with nothing to load would fail after the hold: refused first, nothing held.
  const unloaded = loadersWithoutValue(workflow.canvas, request.inputs ?? {});
  if (unloaded.length > 0) throw new RunValidationFailedError(unloaded);
  const uploads = await checkFileInputs(deps, key.teamId, workflow.canvas, request.inputs ?? {});
  checkStartBy(deps, request.startBy, request.defer === true && uploads.length > 0);
  // A team at its storage quota starts nothing that would store more (a run's outputs).
  await assertUnderStorageQuota(deps, key.teamId);
  return uploads;
};

/** A deferred start's last check (it holds nothing yet): its steps' providers, with the team's own keys. */
export const checkDeferredStart = async (deps: Deps, key: ApiKeyItem, workflow: RunnableWorkflow) => {
  const connections = new Set(Object.keys(await getConnections(deps, key.teamId)));
  const barred = checkApiIntegration(workflow.canvas, connections, deps.providers);
  if (barred) throw providerNotAvailable(barred);
};

/**
 * Admission on the facts as they are now (functions/domain/admission.ts, in the spec's order): the
 * providers of the steps it runs (`running`), then the 402 checks, a busy workflow answered before a
 * 402. Throws the refusal's error; else answers the facts the start's transaction is conditioned
 * on. Reads only: shared by `commitRun` and the estimate. `request`: where the start's own choices
 * about a busy workflow are read.
 */
export const admitRun = async (
  deps: Deps,
  input: {
    key: ApiKeyItem;
    workflow: RunnableWorkflow;
    request: RunRequest;
    running: Pick<RunnableWorkflow['canvas'], 'nodes'>;
    estimate: RunEstimate;
    now: Date;
  },
) => {
  const { key, workflow, now } = input;
  const monthlyCap = key.monthlyCapHundredths;
  let facts: Awaited<ReturnType<typeof loadAdmissionFacts>>;
  try {
    facts = await loadAdmissionFacts(deps, {
      teamId: key.teamId,
      projectId: workflow.projectId,
      keyId: key.keyId,
      month: spendMonth(now),
      monthlyCap,
    });
  } catch (error) {
    // A capped key is never started unmetered: refused rather than guess its spend.
    const refusal = refusalWithoutFacts(monthlyCap);
    if (!refusal) throw error;
    logger.warn('monthly cap could not be checked', { error: error as Error });
    throw admissionError(refusal, { cause: error });
  }
  const barred = checkApiIntegration(input.running, new Set(facts.connectionKeys), deps.providers);
  if (barred) throw providerNotAvailable(barred);
  const refusal = runRefusal(input.estimate, facts, now);
  // The lock is read only for a refusal: a busy workflow is answered before it, naming the run to wait for.
  if (refusal) {
    // A start that would wait is answered its 402 at once, as any other: the busy workflow is no refusal to it.
    const first = laneOf(input.request.onConflict)
      ? { kind: 'refused' as const, refusal }
      : busyFirst(refusal, await activeJobOf(deps, workflow.workflowId));
    throw admissionError(first, { balanceHundredths: facts.balance });
  }
  return facts;
};

/**
 * The workflow's run lock, read: the 409 naming the run in progress, as the start's transaction
 * would answer it. `request`: where the start's own choices about a busy workflow are read (one
 * place for the start and the estimate).
 */
export const refuseIfBusy = async (deps: Deps, input: { workflow: RunnableWorkflow; request: RunRequest }) => {
  // A start that queues or replaces meets a busy workflow by waiting, not by a refusal; one that
  // queues is refused only by a full queue.
  const lane = laneOf(input.request.onConflict);
  if (lane === 'queue') {
    const { workflowId } = input.workflow;
    await assertQueueRoom(deps, workflowId, await readLock(deps, workflowId));
  }
  if (lane) return;
  const active = await activeJobOf(deps, input.workflow.workflowId);
  if (active !== undefined) throw admissionError({ kind: 'runInProgress', activeJobId: active });
};

export interface CommitInput {
  /** Chosen by the caller when other items of the transaction name the run. */
  jobId?: string;
  key: ApiKeyItem;
  workflow: RunnableWorkflow;
  request: RunRequest;
  /** The price multiplier in force (1 for a run started now). */
  multiplier: number;
  /**
   * Builds the answer remembered for an Idempotency-Key (null when none was sent); `conflict` when
   * the run was queued behind the run in progress, or replaced it (`onConflict`).
   */
  idempotency: ((jobId: string, estimate: RunEstimate, conflict?: ConflictOutcome) => NewRun['idempotency']) | null;
  deferredJobId: string | null;
  extraItems?: NewRun['extraItems'];
  /**
   * The run's own copies of the uploads its `inputs` name: made by the callback once admitted and
   * before the commit (a refused start copies nothing), or given as they are.
   */
  inputFiles?: Record<string, InputFile> | ((jobId: string) => Promise<Record<string, InputFile>>);
  /** Set on a resume (functions/app/resume-run.ts): only the plan's steps are priced, checked and run. */
  resume?: RunResume;
  /** The batch that started it (POST /runs/batch), written on the run and beside it. */
  batchId?: string | undefined;
}

/** What `onConflict` made of a start that met a run in progress: it waits (`queue`), or it replaced that run. */
export type ConflictOutcome = { queued: Standing } | { replaced: string };

/** A committed start: its run, its estimate, and what `onConflict` did when the workflow was busy. */
export interface Committed {
  jobId: string;
  estimate: RunEstimate;
  conflict?: ConflictOutcome;
}

/** The fields an answer adds for `conflict`: the place of a waiting run, or the run replaced. */
export const conflictFields = (conflict: ConflictOutcome | undefined) =>
  conflict === undefined
    ? {}
    : 'replaced' in conflict
      ? { replaced: conflict.replaced }
      : { queuePosition: conflict.queued.queuePosition, queuedBehind: conflict.queued.queuedBehind };

/** Tries a start makes while the queue it would join keeps moving (each loses only to another start's progress). */
const queueMoves = 3 * queueCap;

/** What a start that meets a run in progress does: its lane in the queue, or undefined to be refused (409). */
const laneOf = (onConflict: OnConflict | undefined): QueueLane | undefined =>
  onConflict === 'queue' ? 'queue' : onConflict === 'replace' ? 'replace' : undefined;

/** What a resume adds to a start: the run it resumes, its plan, and the carried-over steps' writer. */
export interface RunResume {
  resumedFrom: string;
  plan: ResumePlan;
  /** Writes the carried-over steps under the new run: once admitted, before the commit (as `inputFiles`). */
  carry: (jobId: string) => Promise<void>;
}

/**
 * Estimates, admits (functions/domain/admission.ts, in the spec's order), then ONE transaction,
 * then the root steps to SQS. Shared by run starts and the deferred dispatcher.
 */
export const commitRun = async (deps: Deps, input: CommitInput): Promise<Committed> => {
  const { key, workflow, request } = input;
  // `queue` and `replace` meet a busy workflow by waiting (ahead of the queue, for `replace`).
  const lane = laneOf(request.onConflict);
  const jobId = input.jobId ?? deps.newId();
  const { resume } = input;
  const whole = startEstimate(deps, workflow, request, input.multiplier);
  // A resume holds, limits and checks the providers of only the steps it runs.
  const estimate = resume ? estimateOfSteps(whole, resume.plan.toRun) : whole;
  const running = resume
    ? { nodes: workflow.canvas.nodes.filter((n) => resume.plan.toRun.includes(n.id)) }
    : workflow.canvas;
  let carried = false;
  let timerSent = false;
  const now = deps.now();
  const month = spendMonth(now);
  const monthlyCap = key.monthlyCapHundredths;
  let inputFiles = typeof input.inputFiles === 'function' ? undefined : input.inputFiles;
  const holdFiles = typeof input.inputFiles === 'function' ? input.inputFiles : undefined;
  let conflict: ConflictOutcome | undefined;
  let busy = false;
  let moves = 0;
  for (let attempt = 0; ; ) {
    const facts = await admitRun(deps, { key, workflow, request, running, estimate, now });
    // After admission (a refused start copies nothing), before the commit (a committed run has its
    // copies); a copy whose transaction then fails is left to the retention's lifecycle rule. A busy
    // workflow, which the transaction would refuse, is refused before any copy is made (one read,
    // only when there are files to copy): a start repeated while its workflow runs stores nothing.
    if (holdFiles && !inputFiles) await refuseIfBusy(deps, { workflow, request });
    inputFiles ??= holdFiles ? await holdFiles(jobId) : {};
    if (resume && !carried) {
      await resume.carry(jobId);
      carried = true;
    }
    // Its deadline's timer, once, before the commit: a run with a deadline never lacks it.
    if (!timerSent) {
      await startDeadlineTimer(deps, { jobId, teamId: key.teamId }, request.deadlineSeconds);
      timerSent = true;
    }
    const run: NewRun = {
      jobId,
      teamId: key.teamId,
      keyId: key.keyId,
      workflow,
      mode: request.mode,
      inputs: request.inputs ?? {},
      inputFiles,
      callbackUrl: request.callbackUrl ?? null,
      callbackSecret: request.callbackSecret ?? null,
      estimate,
      month,
      monthlyCap,
      hardCap: facts.hardCap,
      idempotency: input.idempotency?.(jobId, estimate) ?? null,
      deferredJobId: input.deferredJobId,
      labels: runLabels(request),
      webhookEvents: request.webhookEvents,
      // The steps it runs, in the workflow's order: the first of them may give step events.
      eventSteps: eventfulSteps(
        request.webhookEvents,
        topologicalOrder(workflow.canvas).filter((id) => running.nodes.some((n) => n.id === id)),
      ),
      extraItems: input.extraItems,
      ...(resume && { resumed: { from: resume.resumedFrom, carried: resume.plan.carried } }),
      deadlineSeconds: request.deadlineSeconds,
      batchId: input.batchId,
    };
    try {
      if (!busy) {
        await startRun(deps, run);
        break;
      }
      const queued = await queueRun(
        deps,
        run,
        { lane: lane ?? 'queue', waitUntil: waitUntilOf(deps, request) },
        (standing, holder) => input.idempotency?.(jobId, estimate, outcomeOf(lane, standing, holder)) ?? null,
      );
      if (queued.kind === 'waits') {
        conflict = outcomeOf(lane, queued.standing, queued.holder);
        if (lane === 'replace' && queued.holder !== undefined) await cancelReplaced(deps, queued.holder);
        break;
      }
      // The workflow came free (a plain start again), or the queue moved since it was read.
      busy = false;
      if (++moves >= queueMoves) throw storageBusy('run queue', 'raceLost', moves, new Error('the queue kept moving'));
    } catch (error) {
      if (error instanceof RunInProgressError && lane && !busy) {
        busy = true;
        continue;
      }
      if (!(error instanceof RaceLostError)) throw error;
      // A cap moved between the read and the transaction: read again, after a backoff; 503 when it keeps moving.
      attempt++;
      if (attempt >= writeRetry.tries) throw storageBusy('run start', 'raceLost', attempt, error);
      await backoff(deps, attempt);
    }
  }
  countRunStarted();
  if (conflict !== undefined) {
    // Between two runs (a lock left free with runs waiting) nobody else may start the queue: this start does.
    await startQueueOnce(deps, workflow.workflowId);
    return { jobId, estimate, conflict };
  }
  try {
    await sendStepMessages(
      deps,
      { jobId, workflowId: workflow.workflowId, teamId: key.teamId },
      resume ? resume.plan.ready : rootNodeIds(workflow.canvas),
    );
  } catch (error) {
    // The run is committed; the dispatcher's sweep re-sends the root steps of runs left queued.
    logger.error('root steps not sent; the sweep will retry', { jobId, error: error as Error });
  }
  return { jobId, estimate };
};

/** The outcome a queued start answers: waiting in the queue, or (replace) the run it cancelled when there was one. */
const outcomeOf = (lane: QueueLane | undefined, standing: Standing, holder: string | undefined): ConflictOutcome =>
  lane === 'replace' && holder !== undefined ? { replaced: holder } : { queued: standing };

/** When a queued run stops waiting: its `startBy`, else `queueWaitSeconds` from now. */
const waitUntilOf = (deps: Deps, request: Pick<RunRequest, 'startBy'>) =>
  new Date(
    request.startBy !== undefined ? Date.parse(request.startBy) : deps.now().getTime() + queueWaitSeconds * 1000,
  ).toISOString();

/** `startNextQueued`, whose failure leaves the queue to the next run end or the dispatcher's tick. */
const startQueueOnce = async (deps: Deps, workflowId: string) => {
  try {
    await startNextQueued(deps, workflowId);
  } catch (error) {
    logger.warn('the queue was left to the sweep', { workflowId, error: error as Error });
  }
};

/** A run start as the HTTP edge read it (functions/http/run-start.ts). */
export interface RunStart {
  request: RunRequest;
  /** The Idempotency-Key header, when sent. */
  idempotencyKey: string | undefined;
  /** The route and its path parameters: the same key sent to another route or workflow is another request. */
  target: RequestTarget;
  /** Set for an item of a batch (functions/app/start-batch.ts): the run, or deferred run, carries it. */
  batchId?: string | undefined;
}

/**
 * The answer to a run start, also the one remembered for its Idempotency-Key: the run started, or
 * a deferred run created (`deferred`); the HTTP edge chooses the status from it.
 */
export interface RunStartAnswer {
  deferred: boolean;
  /** The run was accepted to wait behind the run in progress (`onConflict: "queue"`). */
  queued?: boolean;
  body: Record<string, unknown>;
}

/**
 * A remembered answer's body says which it was: only a deferred run's has `deferred: true`, only a
 * waiting run's a `queuePosition`.
 */
const answerOf = (body: unknown): RunStartAnswer => {
  const record = (body ?? {}) as Record<string, unknown>;
  return { deferred: record.deferred === true, queued: record.queuePosition !== undefined, body: record };
};

/** The answer to a start that committed a run: its fields, and what `onConflict` did (202 while it waits). */
export const committedAnswer = (
  body: Record<string, unknown>,
  conflict: ConflictOutcome | undefined,
): RunStartAnswer => {
  const fields = conflictFields(conflict);
  return { deferred: false, queued: 'queuePosition' in fields, body: { ...body, ...fields } };
};

/** Builds the record that remembers an answer for the request's Idempotency-Key (null when none was sent). */
export type RememberFor = (answer: RunStartAnswer) => IdempotencyRecord | null;

/**
 * The Idempotency-Key rule (functions/domain/idempotency-key.ts) around a run start or a resume:
 * the answer remembered for the same request, the 422 for another, else `answer` (which writes its
 * record, `rememberFor`, in its start's transaction); a request with the same key that committed
 * first is answered as it was.
 */
export const answerOnce = async (
  deps: Deps,
  key: ApiKeyItem,
  start: { idempotencyKey: string | undefined; target: RequestTarget; body: unknown },
  answer: (rememberFor: RememberFor) => Promise<RunStartAnswer>,
): Promise<RunStartAnswer> => {
  const { idempotencyKey } = start;
  const keyHash = idempotencyKey === undefined ? null : idempotencyKeyHash(idempotencyKey);
  const requestHash = requestFingerprint(start.target, start.body);
  const remembered = async (): Promise<RunStartAnswer | undefined> => {
    const previous = keyHash ? await findIdempotentAnswer(deps, key.keyId, keyHash) : undefined;
    return replayOf(
      previous && { requestHash: previous.requestHash, answer: answerOf(previous.response.body) },
      requestHash,
    );
  };
  const earlier = await remembered();
  if (earlier) return earlier;
  const rememberFor: RememberFor = (given) =>
    keyHash === null
      ? null
      : {
          keyHash,
          requestHash,
          response: { body: given.body },
          expiresAt: rememberedUntil(deps.now(), deps.retentionDays),
        };
  try {
    return await answer(rememberFor);
  } catch (error) {
    // Another request with the same Idempotency-Key committed first: answer as it did.
    if (error instanceof IdempotencyRaceError) {
      const first = await remembered();
      if (first) return first;
    }
    throw error;
  }
};

/**
 * A start that asked for `generateCallbackSecret` runs with a secret issued now, answered once (and
 * remembered with the answer for its Idempotency-Key, so a retry is told it again); never logged.
 */
export const withIssuedSecret = <
  TRequest extends { generateCallbackSecret?: boolean | undefined; callbackSecret?: string | undefined },
>(
  request: TRequest,
): { request: TRequest; issued: { callbackSecret?: string } } => {
  if (!request.generateCallbackSecret) return { request, issued: {} };
  const callbackSecret = newStandardWebhookSecret();
  return { request: { ...request, callbackSecret }, issued: { callbackSecret } };
};

/**
 * POST /workflows/{id}/runs and POST /agents/{id}/runs (spec 4.3, 4.4). `resolveWorkflow` finds
 * the workflow (directly, or an agent's) and throws the 404s. The Idempotency-Key rule is
 * functions/domain/idempotency-key.ts.
 */
const startRunFor = (
  deps: Deps,
  key: ApiKeyItem,
  start: RunStart,
  resolveWorkflow: () => Promise<RunnableWorkflow>,
): Promise<RunStartAnswer> => {
  return answerOnce(deps, key, { ...start, body: start.request }, async (rememberFor) => {
    const { request, issued } = withIssuedSecret(start.request);
    const workflow = await resolveWorkflow();
    const uploads = await checkStart(deps, key, workflow, request);
    if (request.defer) {
      await checkDeferredStart(deps, key, workflow);
      const deferredJobId = deps.newId();
      const answer = {
        deferred: true,
        body: { deferred: true, deferredJobId, workflowId: workflow.workflowId, ...issued },
      };
      // Nothing is copied while it waits: the run it becomes copies the uploads as checked now, at
      // dispatch (an upload's object outlives the longest wait), so a cancel or expiry leaves nothing.
      await createDeferredRun(deps, {
        deferredJobId,
        key,
        workflowId: workflow.workflowId,
        // Pinned to the version its inputs were checked against, whatever is made while it waits.
        request: { ...request, version: workflow.version },
        inputUploads: uploadsByKey(uploads),
        idempotency: rememberFor(answer),
        batchId: start.batchId,
      });
      return answer;
    }
    let answer: RunStartAnswer | undefined;
    await commitRun(deps, {
      key,
      workflow,
      request,
      multiplier: startNowMultiplier,
      deferredJobId: null,
      batchId: start.batchId,
      inputFiles: uploads.length > 0 ? (jobId) => holdFileInputs(deps, key.teamId, jobId, uploads) : {},
      idempotency: (jobId, estimate, conflict) => {
        answer = committedAnswer(
          {
            jobId,
            workflowId: workflow.workflowId,
            status: RunStatus.queued,
            estimatedCredits: toCredits(estimate.totalHundredths),
            stepsCount: workflow.canvas.nodes.length,
            ...issued,
          },
          conflict,
        );
        return rememberFor(answer);
      },
    });
    if (!answer) throw new Error('run committed without an answer');
    return answer;
  });
};

/** POST /workflows/{id}/runs (spec 4.3): runs the workflow `workflowId`. */
export const startWorkflowRun = (deps: Deps, key: ApiKeyItem, start: RunStart, workflowId: string) =>
  startRunFor(deps, key, start, () => loadRunnableWorkflow(deps, key.teamId, workflowId, start.request.version));

/** POST /agents/{id}/runs (spec 4.4): runs the agent's active workflow, else its newest. */
export const startAgentRun = (deps: Deps, key: ApiKeyItem, start: RunStart, agentId: string) =>
  startRunFor(deps, key, start, () => loadAgentWorkflow(deps, key.teamId, agentId, start.request.version));
