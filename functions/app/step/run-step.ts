/**
 * One step of a run (the step executor's work, one SQS message per ready step). Read the run, the
 * step and the results it needs (one BatchGet); claim it if it is a model step; run the node; record
 * its end on the step item once; count it on the run once (moving its charge from the run's hold);
 * then release the successors that became ready, or, after the last step, end the run and queue its
 * webhook. Every stage is idempotent, so a redelivered or duplicated message never charges twice.
 * What each stage decides is the step plan's (functions/domain/step-plan.ts).
 *
 * A chain's next step (`chainSuccessor`: the only successor, reading from this step alone, not a
 * model step) runs in the same invocation, as the step loop's next turn, when the worker has time
 * left for a whole node timeout and the step's end (`planInline`), saving its message's send,
 * receive and delete and an invocation. Its message is sent instead when time is short, or when
 * running it here failed.
 */

import { StepStatus } from '../../../platform/run-statuses.ts';
import type { Deps } from '../../deps.ts';
import { stampLicenceModel } from '../../domain/licence.ts';
import { listedModelPrice, stepCharge } from '../../domain/pricing.ts';
import { firstPollSeconds } from '../../domain/provider-jobs.ts';
import { planStep, predecessors } from '../../domain/run-graph.ts';
import { executionsFailedError } from '../../domain/step-attempts.ts';
import { completedAttempt, completedEntry, stepLogs } from '../../domain/step-history.ts';
import { planClaim, planInline, planRead, planRelease, planReread } from '../../domain/step-plan.ts';
import { apiInputTargets } from '../../domain/workflow-graph.ts';
import type { NodeExecutor } from '../../nodes/executors/types.ts';
import { logger, withRecordKeys } from '../../observability/logger.ts';
import type { StepItem } from '../../store/items/runs.ts';
import {
  type Attempt,
  abandonStep,
  claimStep,
  finishStepItem,
  readRunAndSteps,
  readRunItem,
  settleEndedRun,
} from '../../store/run/index.ts';
import { sendDelayedStepMessage } from '../../store/run/provider-jobs.ts';
import { guardSubmit, submitJob } from '../provider-job.ts';
import { withTeamSlot } from '../team-slots.ts';
import { checkJob } from './check-job.ts';
import { endWithFailure, jobEnds } from './fail-step.ts';
import { afterNodeError } from './node-error.ts';
import { afterEnd, type Carry, flushCarried, settleStep } from './settle-step.ts';
import { nodeOf, plannedModel, stepContext } from './step-context.ts';
import { ofTeam, type RunStepOptions, type StepMessage, sendSteps } from './step-messages.ts';
import { runMarkingStart } from './step-start-mark.ts';

/**
 * Runs a message's step, then the chain's steps it hands on to, one turn each, while the
 * invocation has time for a whole one (else the next step's message is sent). Run here, a node
 * that throws is not counted as one of the step's executions (it may have run short of time): its
 * message is sent, and that delivery runs it as usual; so is any other failure. Every stage of a
 * step is idempotent, so a step that had got as far as its count before failing is not charged twice.
 */
const runChain = async (
  deps: Deps,
  options: RunStepOptions,
  first: (carry: Carry | undefined) => Promise<StepMessage | undefined>,
) => {
  // The counts of the chain's steps wait for the chain's next count (settle-step.ts, "Carried counts"),
  // when its steps may run here at all.
  const carry: Carry | undefined = options.remainingMs ? { counts: [] } : undefined;
  const flush = () => (carry ? flushCarried(deps, carry) : undefined);
  let next = await first(carry);
  while (next !== undefined) {
    const message = next;
    if (planInline(options.remainingMs?.(), options.stepTimeoutMs) === 'send') {
      await flush();
      return sendSteps(deps, message, [message.nodeId]);
    }
    try {
      // Its lines carry its own nodeId, not its predecessor's.
      next = await withRecordKeys({ nodeId: message.nodeId }, () =>
        runReadyStep(deps, message, { ...options, inline: true }, carry),
      );
    } catch (error) {
      logger.warn("step run in its predecessor's invocation failed; sent to the queue", {
        nodeId: message.nodeId,
        error,
      });
      await flush();
      return sendSteps(deps, message, [message.nodeId]);
    }
  }
  // The chain ended without a count that took what it carried (a step found done, its run ended).
  await flush();
};

/**
 * Runs one step message; throws to have SQS redeliver it after an unexpected failure of its node,
 * until the step's own count of failed executions reaches `stepExecutionAttempts`.
 */
export const runStep = async (deps: Deps, message: StepMessage, options: RunStepOptions) => {
  if (message.check) return runChain(deps, options, () => checkJob(deps, message));
  // A guard of a submit runs no step: it reads the step and at most sends its message (no slot taken).
  if (message.guard !== undefined) return guardSubmit(deps, { ...message, guard: message.guard });
  // The chain's steps run in this invocation under the first step's slot.
  return withTeamSlot(deps, message, () =>
    runChain(deps, options, (carry) => runReadyStep(deps, message, options, carry)),
  );
};

/** A step run in its predecessor's invocation that another delivery had finished. */
class StepTakenError extends Error {
  constructor(nodeId: string) {
    super(`step ${nodeId} was found finished by another delivery`);
  }
}

/**
 * Runs one step message (not a look at a provider's job). Returns the chain's next step's message
 * when it is to run in this invocation.
 */
const runReadyStep = async (
  deps: Deps,
  received: StepMessage,
  options: RunStepOptions,
  carry?: Carry,
): Promise<StepMessage | undefined> => {
  // A chain's step takes its predecessor's item as that turn wrote it (once: it is this turn's alone).
  const handedOn = options.inline ? carry?.handedOn : undefined;
  if (carry) carry.handedOn = undefined;
  const read = await readRunAndSteps(
    deps,
    received,
    (c) => [received.nodeId, ...predecessors(c, received.nodeId)],
    handedOn,
  );
  // The run is gone (expired, or deleted after its retention): a late message has nothing to do.
  if (!read) return;
  const { run, canvas, steps, stepItem } = read;
  // What this step sends (its successors, its retries) goes in its run's team's group.
  const message: StepMessage = { ...ofTeam(received, run), deferred: undefined };
  const own = stepItem(message.nodeId);
  steps.delete(message.nodeId);
  const readPlan = planRead(run, message.nodeId, own);
  if (readPlan.kind === 'after-end') return afterEnd(deps, message, run, readPlan, own?.model ?? undefined);
  // The stored step's model: a recount keeps its charge under its model in the usage rollups.
  if (readPlan.kind === 'count') return settleStep(deps, message, run, { ...readPlan, model: own?.model ?? undefined });
  if (readPlan.kind === 'nothing') return;
  const { node, spec } = nodeOf(canvas, message.nodeId);
  // Only a model step is claimed: its lease keeps a duplicate message from paying a provider twice.
  let attempt: Attempt = null;
  let previousJob: StepItem['providerJob'];
  let providerTries: number | undefined;
  if (spec.model) {
    const claim = await claimStep(deps, run, message.nodeId);
    const claimPlan = planClaim(claim);
    if (claimPlan.kind === 'nothing') {
      // Its job is at a provider: a delivery that died after recording it may not have scheduled its poll.
      if (claimPlan.poll) await sendDelayedStepMessage(deps, { ...message, check: 'poll', poll: 0 }, firstPollSeconds);
      return; // leased by another delivery (a duplicate), or finished meanwhile
    }
    if (!claim.claimed) return;
    attempt = claim.attempt;
    previousJob = claim.previousJob;
    providerTries = claim.providerTries;
    // Each lost worker died mid-node (a crash, or the function's own timeout): ours to look at.
    if (claimPlan.kind === 'fail')
      return endWithFailure(deps, message, attempt, executionsFailedError(claimPlan.lostWorkers), 'code');
    // The run may have ended between its read and this claim. An ended run is settled only after
    // its end was written, from a read of its claims: either that read sees this claim (and the
    // run keeps its lock and hold until it settles), or this read sees the end and no provider
    // is called. One strongly consistent read per model step, no write.
    const now = await readRunItem(deps, message.jobId);
    const reread = planReread(now);
    if (reread.kind !== 'going') {
      await abandonStep(deps, run, message.nodeId, attempt);
      if (reread.kind === 'ended' && reread.settle) await settleEndedRun(deps, message.jobId);
      return;
    }
  }
  const plan = planStep(canvas, message.nodeId, spec, steps);
  // Its item comes back from its finish when the chain's next step is to read it (no read unit more).
  const finish = async (end: Parameters<typeof finishStepItem>[4]) => {
    const handsOn = carry !== undefined && planRelease(canvas, node.id).kind === 'inline';
    const finished = await finishStepItem(deps, run, node.id, attempt, end, { returnItem: handsOn });
    // Found finished by another delivery; run here, its read may have been stale: its message is
    // sent (runChain), and that delivery's strongly consistent read counts it if it is not yet.
    if (!finished && options.inline) throw new StepTakenError(node.id);
    if (finished && carry && finished.item) carry.handedOn = new Map([[node.id, finished.item]]);
    return finished !== false;
  };
  if (!plan.run) {
    if (await finish({ status: StepStatus.skipped }))
      return settleStep(deps, message, run, { status: StepStatus.skipped, chargeHundredths: 0 }, canvas, carry);
    return;
  }
  const inputKey = [...apiInputTargets(canvas)].find(([, target]) => target === node.id)?.[0];
  // Own keys only: an apiInputKey such as `toString` the run did not set must not read Object.prototype's.
  const runInput = inputKey !== undefined && Object.hasOwn(run.inputs, inputKey) ? run.inputs[inputKey] : undefined;
  const runFile =
    inputKey !== undefined && Object.hasOwn(run.inputFiles, inputKey) ? run.inputFiles[inputKey] : undefined;
  const timeoutMs = options.stepTimeoutMs;
  const context = stepContext(deps, run, node, spec, { inputs: plan.inputs, runInput, runFile, timeoutMs });
  // What the step's history says of this attempt (functions/domain/step-history.ts).
  const startedAt = deps.now().toISOString();
  const facts = { startedAt, at: plannedModel(node, spec), providerTries, failures: own?.failures };
  let outcome: Awaited<ReturnType<NodeExecutor>>;
  try {
    outcome = await runMarkingStart(
      deps,
      run,
      node.id,
      attempt,
      () => deps.executors(node.type)(context),
      carry && (() => flushCarried(deps, carry)),
    );
  } catch (error) {
    // What the chain carried is counted before this step's failure or retry is (the run may end here).
    if (carry) await flushCarried(deps, carry);
    return afterNodeError(deps, error, {
      message,
      run,
      nodeType: node.type,
      attempt,
      facts,
      signal: context.signal,
      timeoutMs,
      inline: options.inline === true,
    });
  }
  if (outcome.job) {
    if (attempt === null) throw new Error(`Step ${node.id} submits a job without a claim`);
    const { job } = outcome;
    const connection = job.credentials === 'team' ? await context.connection?.(job.provider) : undefined;
    const credentials = { kind: job.credentials, connection };
    const ends = jobEnds(deps, message, { ...facts, at: { provider: job.provider, model: job.model } });
    return void (await submitJob(deps, message, attempt, job, credentials, node.type, ends, previousJob));
  }
  const listed = listedModelPrice(node, spec, deps.providers);
  const chargeHundredths = stepCharge(run, { nodeId: node.id, spec, work: outcome.work, listed }, StepStatus.completed);
  const { model } = outcome;
  const licence = model ? stampLicenceModel({ nodeId: node.id, ...model, stampedAt: deps.now() }) : undefined;
  const history = {
    attempt: completedEntry(own?.attemptLog, () =>
      completedAttempt({ startedAt, endedAt: deps.now().toISOString() }, chargeHundredths, model ?? {}),
    ),
    logs: stepLogs(outcome.logs ?? {}),
  };
  const end = { status: StepStatus.completed, outputs: outcome.outputs, model, licence, chargeHundredths, ...history };
  // False: another delivery finished the step first (a duplicate message); that one counts it.
  if (!(await finish(end))) return;
  return settleStep(deps, message, run, { status: StepStatus.completed, chargeHundredths, model }, canvas, carry);
};
