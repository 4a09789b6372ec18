/**
 * A finished step's count on its run and what follows it: its successors sent (or the chain's
 * next step handed back to the step loop, functions/app/step/run-step.ts), or the run ended and
 * its webhook queued; a step that finished after its run ended retired. The decisions are the
 * plan's (functions/domain/step-plan.ts); this module writes them. It never runs a step itself.
 */

import { RunStatus } from '../../../platform/run-statuses.ts';
import type { Deps } from '../../deps.ts';
import { planCount, planRelease, planReleaseRead, type ReadPlan, releaseReadIds } from '../../domain/step-plan.ts';
import type { Canvas } from '../../nodes/catalogue/canvas.ts';
import type { ModelUse } from '../../nodes/executors/types.ts';
import { addCreditsCharged, countRunEnded, countStepCompleted } from '../../observability/metrics.ts';
import type { RunItem } from '../../store/items.ts';
import {
  countStep,
  endRun,
  queueWebhook,
  readRunAndSteps,
  retireLateStep,
  settleEndedRun,
} from '../../store/run/index.ts';
import { type StepMessage, sendSteps, stepMessage } from './step-messages.ts';

/**
 * A step that finished after its run ended takes nothing in (docs/decisions/runs.md, "A run that has
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
export const afterEnd = async (
  deps: Deps,
  message: StepMessage,
  run: RunItem,
  plan: Extract<ReadPlan, { kind: 'after-end' }>,
  model: ModelUse | undefined,
): Promise<undefined> => {
  if (plan.retire) await retireLate(deps, message, run, model);
  if (plan.settle) await settleEndedRun(deps, message.jobId);
};

const endCompleted = async (deps: Deps, run: RunItem) => {
  if (await endRun(deps, run, RunStatus.completed)) {
    countRunEnded(undefined);
    await queueWebhook(deps, run, RunStatus.completed);
  }
};

/** The successors sent from a read of their inputs (a join, or a redelivery); the run ended after its last count. */
const releaseAfterRead = async (deps: Deps, message: StepMessage) => {
  const read = await readRunAndSteps(deps, message, (c) => releaseReadIds(c, message.nodeId));
  if (!read) return;
  const plan = planReleaseRead(read.canvas, message.nodeId, read.run, read.steps);
  if (plan.send.length > 0) await sendSteps(deps, message, plan.send);
  if (plan.end) await endCompleted(deps, read.run);
};

/**
 * Counts a finished step on its run (once), ends the run after its last step, else releases its
 * successors. `finishedIn`: the canvas, when this delivery finished the step (its successors need
 * no read then). Returns the chain's next step's message when it is to run in this invocation.
 */
export const settleStep = async (
  deps: Deps,
  message: StepMessage,
  run: RunItem,
  outcome: {
    status: Parameters<typeof planCount>[1]['status'];
    chargeHundredths: number;
    model?: ModelUse | undefined;
  },
  finishedIn?: Canvas,
): Promise<StepMessage | undefined> => {
  const count = await countStep(deps, run, message.nodeId, outcome);
  const plan = planCount(count, outcome, finishedIn !== undefined);
  if (plan.retire) await retireLate(deps, message, run, outcome.model);
  if (plan.settle) await settleEndedRun(deps, message.jobId);
  if (plan.charged !== undefined) {
    countStepCompleted();
    addCreditsCharged(plan.charged);
  }
  if (plan.run === 'ended') {
    countRunEnded(undefined);
    await queueWebhook(deps, run, RunStatus.completed);
  }
  if (plan.run === 'end' && count.counted && !count.ended) await endCompleted(deps, count.run);
  if (plan.release === 'read') await releaseAfterRead(deps, message);
  if (plan.release !== 'finished' || !finishedIn) return undefined;
  const release = planRelease(finishedIn, message.nodeId);
  if (release.kind === 'inline') return stepMessage(message, release.nodeId);
  if (release.kind === 'send' && release.nodeIds.length > 0) await sendSteps(deps, message, release.nodeIds);
  if (release.kind === 'read') await releaseAfterRead(deps, message);
  return undefined;
};
