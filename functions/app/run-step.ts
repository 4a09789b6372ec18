import type { Deps } from '../deps.ts';
import { type FailureReason, failureReasonOf } from '../domain/failure-reasons.ts';
import { fileUrlSeconds } from '../domain/file-link-lifetime.ts';
import { stampLicenceModel } from '../domain/licence.ts';
import { listedModelPrice, stepCharge } from '../domain/pricing.ts';
import { firstPollSeconds, retryDelaySeconds } from '../domain/provider-jobs.ts';
import { chainSuccessor, planStep, predecessors, readySuccessors, successors } from '../domain/run-graph.ts';
import {
  type CountedStepStatus,
  isCompleted,
  isDeadEnd,
  isDone,
  isInProgress,
  RunStatus,
  releasesSuccessors,
  StepStatus,
} from '../domain/run-lifecycle.ts';
import { executionsFailedError, StepTimeoutError, stepExecutionAttempts } from '../domain/step-attempts.ts';
import type { CanvasNode } from '../domain/workflow-graph.ts';
import { apiInputTargets, type Canvas } from '../domain/workflow-graph.ts';
import { getNodeSpec } from '../nodes/catalogue/index.ts';
import type { NodeSpec } from '../nodes/catalogue/node-spec.ts';
import type { ModelUse, StepContext, StoredFile } from '../nodes/executors/types.ts';
import { type NodeExecutor, StepFailedError } from '../nodes/executors/types.ts';
import { ProviderError } from '../nodes/providers/types.ts';
import { logger, withRecordKeys } from '../observability/logger.ts';
import { addCreditsCharged, countRunEnded, countStepCompleted, countStepFailed } from '../observability/metrics.ts';
import { getConnections, resolveConnection } from '../store/connections.ts';
import { presignTeamFile, putRunFile, readTeamFile } from '../store/files.ts';
import type { ConnectionRef, RunItem, StepItem } from '../store/items.ts';
import {
  type Attempt,
  abandonStep,
  claimStep,
  countFailedExecution,
  countStep,
  endRun,
  failStep,
  finishStepItem,
  isUnsettled,
  queueWebhook,
  readRunAndSteps,
  readRunItem,
  releaseStep,
  retireLateStep,
  sendStepMessages,
  settleEndedRun,
} from '../store/run/index.ts';
import { sendDelayedStepMessage } from '../store/run/provider-jobs.ts';
import { SecretUnavailableError } from '../store/secret-refs.ts';
import {
  cancelQuietly,
  guardSubmit,
  type JobStepMessage,
  jobOutputs,
  jobProviderOf,
  lookAtJob,
  retryBusyProvider,
  submitJob,
} from './provider-job.ts';
import { runMarkingStart } from './step-start-mark.ts';
import { withTeamSlot } from './team-slots.ts';

/**
 * One step of a run (the step executor's work, one SQS message per ready step). Read the run, the
 * step and the results it needs (one BatchGet); claim it if it is a model step; run the node; record
 * its end on the step item once; count it on the run once (moving its charge from the run's hold);
 * then release the successors that became ready, or, after the last step, end the run and queue its
 * webhook. Every stage is idempotent, so a redelivered or duplicated message never charges twice.
 *
 * A chain's next step (`chainSuccessor`: the only successor, reading from this step alone, not a
 * model step) runs in the same invocation when the worker has time left for a whole node timeout
 * and the step's end (`runInline`), saving its message's send, receive and delete and an
 * invocation. Its message is sent instead when time is short, or when running it here failed.
 */

/**
 * A step message: the step `nodeId` of run `jobId` of workflow `workflowId` is ready; or, with
 * `check`, its provider's job is due a look (functions/app/provider-job.ts).
 */
export type StepMessage = JobStepMessage;

const isGoing = (run: RunItem) => isInProgress(run.status);

/**
 * The messages of steps that follow `message`'s, in its run's team's group; a message from before
 * messages named their team gets it from its run's read (`ofTeam`).
 */
const sendSteps = (deps: Deps, message: StepMessage, nodeIds: readonly string[]) =>
  sendStepMessages(deps, { jobId: message.jobId, workflowId: message.workflowId, teamId: message.teamId }, nodeIds);
const ofTeam = (message: StepMessage, run: RunItem): StepMessage => ({ ...message, teamId: run.teamId });

/**
 * After a step finished: send the successors that became ready. `justFinished` is set by the
 * delivery that finished the step: a successor reading from this step alone is then ready without
 * a read (no other delivery can have released it), and a chain's next step runs here if time
 * allows. Otherwise (a join, or a redelivery) read the successors' inputs; a successor with a step
 * item has had its message already, except a chain's next step, which may have run in this
 * message's invocation: finished, it is sent again (counted once, it checks its own successors).
 * A redelivery after a crash between the last count and the run's end ends the run here.
 */
const releaseSuccessors = async (deps: Deps, message: StepMessage, options: RunStepOptions, justFinished?: Canvas) => {
  if (justFinished) {
    const next = successors(justFinished, message.nodeId);
    if (next.every((s) => predecessors(justFinished, s).every((p) => p === message.nodeId))) {
      const chained = chainSuccessor(justFinished, message.nodeId);
      // The next step's own message: never the look that ended a job (its `check` would make it one).
      if (chained !== undefined) {
        const next: StepMessage = { jobId: message.jobId, workflowId: message.workflowId, nodeId: chained };
        return runInline(deps, { ...next, ...(message.teamId !== undefined && { teamId: message.teamId }) }, options);
      }
      if (next.length > 0) await sendSteps(deps, message, next);
      return;
    }
  }
  const read = await readRunAndSteps(deps, message, (c) => [
    ...new Set(successors(c, message.nodeId).flatMap((s) => [s, ...predecessors(c, s)])),
  ]);
  if (!read || !isGoing(read.run)) return;
  const { run, canvas, steps } = read;
  const chained = chainSuccessor(canvas, message.nodeId);
  const chainedStatus = chained === undefined ? undefined : steps.get(chained)?.status;
  const ready = readySuccessors(canvas, message.nodeId, steps).filter(
    (s) => !steps.has(s) || (s === chained && releasesSuccessors(chainedStatus)),
  );
  if (ready.length > 0) await sendSteps(deps, message, ready);
  if (isDone(run)) await endCompleted(deps, run);
};

/** Time a step needs after its node: recording its end, counting it, releasing what follows. */
export const settleMarginMs = 5_000;

/**
 * Runs a chain's next step in this invocation when at least a whole node timeout and the margin to
 * settle it are left, else sends its message. Run here, a node that throws is not counted as one
 * of the step's executions (it may have run short of time): the step's message is sent, and that
 * delivery runs it as usual; so is any other failure. Every stage of a step is idempotent, so a
 * step that had got as far as its count before failing is not charged twice.
 */
const runInline = async (deps: Deps, message: StepMessage, options: RunStepOptions) => {
  const remaining = options.remainingMs?.();
  if (remaining === undefined || remaining < options.stepTimeoutMs + settleMarginMs) {
    return sendSteps(deps, message, [message.nodeId]);
  }
  try {
    // Its lines carry its own nodeId, not its predecessor's.
    await withRecordKeys({ nodeId: message.nodeId }, () => runStep(deps, message, { ...options, inline: true }));
  } catch (error) {
    logger.warn("step run in its predecessor's invocation failed; sent to the queue", {
      nodeId: message.nodeId,
      error,
    });
    await sendSteps(deps, message, [message.nodeId]);
  }
};

/**
 * A step that finished after its run ended takes nothing in (docs/decisions.md, "A run that has
 * ended takes nothing more in"): its provider job is cancelled (a seam: nothing to cancel yet),
 * and its item becomes `unknown`, its output dropped, never charged.
 */
const retireLate = async (deps: Deps, message: StepMessage, run: RunItem, model: ModelUse | undefined) => {
  await deps.cancelProviderJob?.({ jobId: message.jobId, nodeId: message.nodeId, model });
  await retireLateStep(deps, run, message.nodeId);
};

/**
 * A message of a run that has ended: nothing of it runs, counts or is published any more. A step
 * that finished but was never counted (its worker found the run ended, or died first) is retired;
 * a run left unsettled (a model step was in flight at its end) is settled if nothing holds it now.
 */
const afterEnd = async (deps: Deps, message: StepMessage, run: RunItem, own: StepItem | undefined) => {
  if (isCompleted(own?.status) && !run.doneSteps.has(message.nodeId)) {
    await retireLate(deps, message, run, own.model ?? undefined);
  }
  if (isUnsettled(run)) await settleEndedRun(deps, message.jobId);
};

const endCompleted = async (deps: Deps, run: RunItem) => {
  if (await endRun(deps, run, RunStatus.completed)) {
    countRunEnded(undefined);
    await queueWebhook(deps, run, RunStatus.completed);
  }
};

/** Counts a finished step on its run (once), ends the run after its last step, else releases successors. */
const settleStep = async (
  deps: Deps,
  message: StepMessage,
  options: RunStepOptions,
  run: RunItem,
  outcome: { status: CountedStepStatus; chargeHundredths: number; model?: ModelUse | undefined },
  justFinished?: Canvas,
) => {
  const result = await countStep(deps, run, message.nodeId, outcome);
  if (!result.counted) {
    if (result.runEnded) {
      // Finished after its run ended: never counted, so never charged, and its output is dropped.
      if (!result.alreadyCounted && isCompleted(outcome.status)) await retireLate(deps, message, run, outcome.model);
      // This step may have been what the ended run waited for.
      if (result.unsettled) await settleEndedRun(deps, message.jobId);
      return;
    }
    // Counted by an earlier delivery that may have crashed before releasing the successors.
    return releaseSuccessors(deps, message, options);
  }
  if (isCompleted(outcome.status)) {
    countStepCompleted();
    addCreditsCharged(outcome.chargeHundredths);
  }
  if (result.ended) {
    countRunEnded(undefined);
    return queueWebhook(deps, run, RunStatus.completed);
  }
  if (isDone(result.run)) return endCompleted(deps, result.run);
  await releaseSuccessors(deps, message, options, justFinished);
};

/** The ends run-step gives a provider's job (functions/app/provider-job.ts). */
const jobEnds = (deps: Deps, message: StepMessage) => ({
  fail: (attempt: number, error: string, reason: FailureReason) =>
    endWithFailure(deps, message, attempt, error, reason),
});

/**
 * Fails the step for good and, in the same transaction, its run; both counted under `reason`.
 * `chargeHundredths`: what the step is charged all the same (a job that ran to its end).
 */
const endWithFailure = async (
  deps: Deps,
  message: StepMessage,
  attempt: Attempt,
  error: string,
  reason: FailureReason,
  chargeHundredths = 0,
) => {
  // The hold may move between read and write (a parallel step charged): re-read and retry.
  for (let i = 0; i < 5; i++) {
    const run = (await readRunAndSteps(deps, message, () => []))?.run;
    if (!run) return; // gone (expired): nothing left to record
    if (!isGoing(run)) {
      await abandonStep(deps, run, message.nodeId, attempt);
      if (isUnsettled(run)) await settleEndedRun(deps, message.jobId);
      return;
    }
    if (await failStep(deps, run, message.nodeId, attempt, error, chargeHundredths)) {
      countStepFailed(reason);
      addCreditsCharged(chargeHundredths);
      countRunEnded(reason);
      // The run's trail and the failed-runs-by-reason query (lib/log-queries.ts) read this line.
      logger.warn('run failed', { nodeId: message.nodeId, reason, error });
      await queueWebhook(deps, run, RunStatus.failed);
      return;
    }
  }
  throw new Error(`Could not record the failure of step ${message.nodeId}`);
};

/**
 * A step whose deadline cut its node's synchronous call: tried again by a delayed message after a
 * jittered backoff, never left to the queue's visibility timeout (a redelivery minutes later, its
 * claim read as a lost worker). A model step counts it as one of its provider's tries (its claim
 * given back, `retryBusyProvider`); a step that is not claimed (PythonSandbox) as a failed execution
 * of its node. Past either bound the step fails as a `timeout`. Nothing is charged until a delivery
 * finishes the step, once (`finishStepItem` is conditioned on the claim, or on no end yet).
 */
const retryTimedOut = async (
  deps: Deps,
  message: StepMessage,
  run: RunItem,
  { attempt, nodeType }: { attempt: Attempt; nodeType: string },
  timeoutMs: number,
) => {
  const error = new StepTimeoutError(timeoutMs);
  logger.warn('step deadline cut its call; step tried again later', { nodeId: message.nodeId, timeoutMs });
  if (attempt !== null) return retryBusyProvider(deps, message, attempt, error, nodeType, jobEnds(deps, message));
  const failed = await countFailedExecution(deps, run, message.nodeId);
  if (failed === null) return; // another delivery finished the step meanwhile; it counts it
  if (failed >= stepExecutionAttempts)
    return endWithFailure(
      deps,
      message,
      attempt,
      `${nodeType}: ${error.message} (after ${failed} tries)`,
      failureReasonOf(error),
    );
  const retry = { jobId: message.jobId, workflowId: message.workflowId, nodeId: message.nodeId };
  await sendDelayedStepMessage(
    deps,
    { ...retry, ...(message.teamId !== undefined && { teamId: message.teamId }) },
    retryDelaySeconds(failed, undefined, Math.random()),
  );
};

/** What a node executor (or a job's outcome) is handed: the step, its inputs, and the run's files and keys. */
const stepContext = (
  deps: Deps,
  run: RunItem,
  node: CanvasNode,
  spec: NodeSpec,
  parts: { inputs: Record<string, unknown[]>; runInput: string | undefined; runFile?: StoredFile; timeoutMs: number },
) => {
  const { teamId, jobId } = run;
  let connections: Record<string, ConnectionRef> | undefined;
  const context: StepContext = {
    jobId,
    teamId,
    node,
    spec,
    mode: run.mode,
    inputs: parts.inputs,
    runInput: parts.runInput,
    ...(parts.runFile && { runFile: parts.runFile }),
    storeFile: (file) => putRunFile(deps, { teamId, jobId, nodeId: node.id }, file),
    readFile: (file) => readTeamFile(deps, teamId, file),
    fileUrl: (file) => presignTeamFile(deps, teamId, file.key, fileUrlSeconds, file.contentType),
    connection: async (key) => {
      connections ??= await getConnections(deps, teamId);
      return resolveConnection(deps.secrets, key, connections[key]);
    },
    signal: AbortSignal.timeout(parts.timeoutMs),
  };
  return context;
};

/**
 * A look at a step's job at its provider (a poll, or its webhook's news): nothing when the step no
 * longer waits on that job; cancelled at the provider when the run has ended; else the provider's
 * state applied once, through the same end as any model step (its count, its charge, its successors).
 */
const checkJob = async (deps: Deps, look: StepMessage, options: RunStepOptions) => {
  // Past the look, the step ends as any step does: by its own message, whose successors are steps, not looks.
  const asRead: StepMessage = { jobId: look.jobId, workflowId: look.workflowId, nodeId: look.nodeId };
  const read = await readRunAndSteps(deps, asRead, () => [asRead.nodeId]);
  if (!read) return;
  const { run, canvas } = read;
  const message = ofTeam(asRead, run);
  const step = read.stepItem(message.nodeId);
  const job = step?.providerJob;
  if (step?.status !== StepStatus.processing || job?.id === undefined || step.attempts !== job.attempt) return;
  const recorded = { ...job, id: job.id };
  const node = canvas.nodes.find((n) => n.id === message.nodeId);
  const spec = node ? getNodeSpec(node.type) : undefined;
  if (!node || !spec) throw new Error(`Node ${message.nodeId} is not in the canvas`);
  const context = stepContext(deps, run, node, spec, { inputs: {}, runInput: undefined, timeoutMs: 120_000 });
  const provider = await jobProviderOf(
    deps,
    recorded,
    () => context.connection?.(job.provider) ?? Promise.resolve(undefined),
  );
  if (!provider)
    return endWithFailure(
      deps,
      message,
      job.attempt,
      `${node.type}: provider ${job.provider} is not configured`,
      'configuration',
    );
  if (!isGoing(run)) {
    // The run ended (cancelled, or another step failed): the job is stopped and never counted.
    await cancelQuietly(provider, recorded);
    await abandonStep(deps, run, message.nodeId, job.attempt);
    // The step's claim was what held the ended run: settling reads its claims again, once.
    if (isUnsettled(run)) await settleEndedRun(deps, message.jobId);
    return;
  }
  const verdict = await lookAtJob(deps, look, recorded, provider, node.type);
  if (verdict.kind === 'wait') return;
  if (verdict.kind === 'failed') return endWithFailure(deps, message, job.attempt, verdict.error, verdict.reason);
  const made = await jobOutputs(deps, context, verdict.output, verdict.usage);
  const model = { provider: job.provider, model: job.model };
  const listed = listedModelPrice(node, spec, deps.providers);
  // Measured from what the provider made and reports, as a synchronous step's work is; an unusable
  // answer has no measure, so it is charged its price.
  const work = 'error' in made ? undefined : made.work;
  const chargeHundredths = stepCharge(run, { nodeId: node.id, spec, work, listed }, StepStatus.completed);
  // The provider's output could not be made into the step's (a missing file, a wrong type): the job
  // ran to its end and the stage pays for it, so the step fails charged its price, never free.
  if ('error' in made) return endWithFailure(deps, message, job.attempt, made.error, 'code', chargeHundredths);
  const licence = stampLicenceModel({ nodeId: node.id, ...model, stampedAt: deps.now() });
  const end = { status: StepStatus.completed, outputs: made.outputs, model, licence, chargeHundredths };
  // False: a duplicate look (a webhook and a poll together) finished it first; that one counts it.
  if (!(await finishStepItem(deps, run, node.id, job.attempt, end))) return;
  await settleStep(deps, message, options, run, { status: StepStatus.completed, chargeHundredths, model }, canvas);
};

/** How a step runs; the worker sets them from its queue's definition and its invocation. */
export interface RunStepOptions {
  /** Milliseconds a node may run before it is aborted. */
  stepTimeoutMs: number;
  /**
   * Milliseconds left in the invocation (its Lambda context), when the worker knows them: a chain's
   * next step may then run in the same invocation (`runInline`). Unset: every step goes through the queue.
   */
  remainingMs?: () => number;
  /** Set on a step run in its predecessor's invocation: a node that throws goes to the queue uncounted. */
  inline?: boolean;
}

/** What a worker's invocation knows of its time: its Lambda context. */
export interface TimeLeft {
  getRemainingTimeInMillis(): number;
}

/**
 * `options` for a step of an invocation given `context`: the time left counts down from the
 * context's at this call. Without a context (a test driving the handler by hand) no step runs inline.
 */
export const withTimeLeft = (options: RunStepOptions, context?: TimeLeft): RunStepOptions => {
  if (!context || options.remainingMs) return options;
  const deadline = Date.now() + context.getRemainingTimeInMillis();
  return { ...options, remainingMs: () => deadline - Date.now() };
};

/**
 * Runs one step message; throws to have SQS redeliver it after an unexpected failure of its node,
 * until the step's own count of failed executions reaches `stepExecutionAttempts`.
 */
export const runStep = async (deps: Deps, message: StepMessage, options: RunStepOptions) => {
  if (message.check) return checkJob(deps, message, options);
  // A guard of a submit runs no step: it reads the step and at most sends its message (no slot taken).
  if (message.guard !== undefined) return guardSubmit(deps, { ...message, guard: message.guard });
  // A step run in its predecessor's invocation runs under that step's slot.
  if (options.inline) return runReadyStep(deps, message, options);
  return withTeamSlot(deps, message, () => runReadyStep(deps, message, options));
};

/** Runs one step message (not a look at a provider's job). */
const runReadyStep = async (deps: Deps, received: StepMessage, options: RunStepOptions) => {
  const read = await readRunAndSteps(deps, received, (c) => [received.nodeId, ...predecessors(c, received.nodeId)]);
  // The run is gone (expired, or deleted after its retention): a late message has nothing to do.
  if (!read) return;
  const { run, canvas, steps, stepItem } = read;
  // What this step sends (its successors, its retries) goes in its run's team's group.
  const message: StepMessage = { ...ofTeam(received, run), deferred: undefined };
  const own = stepItem(message.nodeId);
  steps.delete(message.nodeId);
  if (!isGoing(run)) return afterEnd(deps, message, run, own);
  if (releasesSuccessors(own?.status)) {
    // Finished by an earlier delivery that may have crashed before counting it or releasing its successors.
    return settleStep(deps, message, options, run, { status: own.status, chargeHundredths: own.chargeHundredths });
  }
  if (isDeadEnd(own?.status)) return;
  const node = canvas.nodes.find((n) => n.id === message.nodeId);
  const spec = node ? getNodeSpec(node.type) : undefined;
  if (!node || !spec) throw new Error(`Node ${message.nodeId} is not in the canvas`);
  // Only a model step is claimed: its lease keeps a duplicate message from paying a provider twice.
  let attempt: Attempt = null;
  let previousJob: StepItem['providerJob'];
  if (spec.model) {
    const claim = await claimStep(deps, run, message.nodeId);
    if (!claim.claimed) {
      // Its job is at a provider: a delivery that died after recording it may not have scheduled its poll.
      if (claim.waitsOnJob)
        await sendDelayedStepMessage(deps, { ...message, check: 'poll', poll: 0 }, firstPollSeconds);
      return; // leased by another delivery (a duplicate), or finished meanwhile
    }
    attempt = claim.attempt;
    previousJob = claim.previousJob;
    // Each claim before this one (but those of a busy provider's retries) lost its worker while the
    // node ran: stop taking the step over.
    const lostWorkers = attempt - 1 - claim.providerTries;
    if (lostWorkers >= stepExecutionAttempts) {
      // Each lost worker died mid-node (a crash, or the function's own timeout): ours to look at.
      return endWithFailure(deps, message, attempt, executionsFailedError(lostWorkers), 'code');
    }
    // The run may have ended between its read and this claim. An ended run is settled only after
    // its end was written, from a read of its claims: either that read sees this claim (and the
    // run keeps its lock and hold until it settles), or this read sees the end and no provider
    // is called. One strongly consistent read per model step, no write.
    const now = await readRunItem(deps, message.jobId);
    if (!now || !isGoing(now)) {
      await abandonStep(deps, run, message.nodeId, attempt);
      if (now && isUnsettled(now)) await settleEndedRun(deps, message.jobId);
      return;
    }
  }
  const plan = planStep(canvas, message.nodeId, steps);
  if (!plan.run) {
    if (await finishStepItem(deps, run, node.id, attempt, { status: StepStatus.skipped }))
      await settleStep(deps, message, options, run, { status: StepStatus.skipped, chargeHundredths: 0 }, canvas);
    return;
  }
  const inputKey = [...apiInputTargets(canvas)].find(([, target]) => target === node.id)?.[0];
  // Own keys only: an apiInputKey such as `toString` the run did not set must not read Object.prototype's.
  const runInput = inputKey !== undefined && Object.hasOwn(run.inputs, inputKey) ? run.inputs[inputKey] : undefined;
  const runFile =
    inputKey !== undefined && Object.hasOwn(run.inputFiles, inputKey) ? run.inputFiles[inputKey] : undefined;
  let outcome: Awaited<ReturnType<NodeExecutor>>;
  const context = stepContext(deps, run, node, spec, {
    inputs: plan.inputs,
    runInput,
    runFile,
    timeoutMs: options.stepTimeoutMs,
  });
  try {
    outcome = await runMarkingStart(deps, run, node.id, attempt, () => deps.executors(node.type)(context));
  } catch (error) {
    if (error instanceof StepFailedError)
      return endWithFailure(deps, message, attempt, error.message, failureReasonOf(error));
    // The step's deadline cut a synchronous call (a model's, the Python runner's): tried again later.
    if (context.signal.aborted) {
      return retryTimedOut(deps, message, run, { attempt, nodeType: node.type }, options.stepTimeoutMs);
    }
    // A busy provider (429, 5xx, a timeout): asked again after a backoff, never counted as a lost worker.
    if (error instanceof ProviderError && error.retryable && attempt !== null) {
      return retryBusyProvider(deps, message, attempt, error, node.type, jobEnds(deps, message));
    }
    // A secret that is refused, missing or malformed stays so: the step fails now, naming which.
    if (error instanceof SecretUnavailableError) {
      return endWithFailure(deps, message, attempt, `${node.type}: ${error.message}`, failureReasonOf(error));
    }
    // Run in its predecessor's invocation: not counted; `runInline` sends its message instead.
    if (options.inline) throw error;
    // A failed execution, counted on the step item (a model step's claim counts it already), so a
    // message SQS handed back without running the node (a throttle) spends nothing.
    const failed = attempt ?? (await countFailedExecution(deps, run, message.nodeId));
    if (failed === null) return; // another delivery finished the step meanwhile; it counts it
    if (failed >= stepExecutionAttempts) {
      // The run fails visibly and the message is done: the DLQ is for messages we cannot process.
      logger.error('step failed on its last execution', { nodeId: message.nodeId, failed, error });
      // The last execution's error says why: a node that kept timing out, or code that kept throwing.
      return endWithFailure(deps, message, attempt, executionsFailedError(failed), failureReasonOf(error));
    }
    // SQS redelivers the message: let that delivery take the step, not drop it as a duplicate.
    await releaseStep(deps, message.jobId, message.nodeId, attempt);
    throw error;
  }
  if (outcome.job) {
    if (attempt === null) throw new Error(`Step ${node.id} submits a job without a claim`);
    const { job } = outcome;
    const connection = job.credentials === 'team' ? await context.connection?.(job.provider) : undefined;
    return submitJob(
      deps,
      message,
      attempt,
      job,
      { kind: job.credentials, connection },
      node.type,
      jobEnds(deps, message),
      previousJob,
    );
  }
  const listed = listedModelPrice(node, spec, deps.providers);
  const chargeHundredths = stepCharge(run, { nodeId: node.id, spec, work: outcome.work, listed }, StepStatus.completed);
  const licence = outcome.model
    ? stampLicenceModel({ nodeId: node.id, ...outcome.model, stampedAt: deps.now() })
    : undefined;
  const end = {
    status: StepStatus.completed,
    outputs: outcome.outputs,
    model: outcome.model,
    licence,
    chargeHundredths,
  };
  // False: another delivery finished the step first (a duplicate message); that one counts it.
  if (!(await finishStepItem(deps, run, node.id, attempt, end))) return;
  await settleStep(
    deps,
    message,
    options,
    run,
    { status: StepStatus.completed, chargeHundredths, model: outcome.model },
    canvas,
  );
};
