/**
 * A finished step's count on its run and what follows it: its successors sent (or the chain's
 * next step handed back to the step loop, functions/app/step/run-step.ts), or the run ended and
 * its webhook queued; a step that finished after its run ended retired. The decisions are the
 * plan's (functions/domain/step-plan.ts); this module writes them. It never runs a step itself.
 *
 * Carried counts: in an inline chain, a step whose next step runs in the same invocation leaves
 * its count to the next count the chain writes (`Carry`), so a 10-step chain writes its run item
 * once for the whole chain (with the last step, in the transaction that ends the run) instead of
 * once per step. The count waits only while the next node runs: one that is still running after
 * `startMarkDelayMs` writes the carried counts beside its start mark, and every way out of the
 * chain but a count (a message sent, a node's error, the chain's end) writes them first. Counted
 * together or not at all (one conditional update); refused together, one by one as ever. A failure
 * to write them fails the delivery, as a count's failure always did: its redelivery counts them.
 */

import { RunStatus, StepStatus } from '../../../platform/run-statuses.ts';
import type { Deps } from '../../deps.ts';
import { planCount, planRelease, planReleaseRead, type ReadPlan, releaseReadIds } from '../../domain/step-plan.ts';
import type { Canvas } from '../../nodes/catalogue/canvas.ts';
import type { ModelUse } from '../../nodes/executors/types.ts';
import { addCreditsCharged, countRunEnded, countStepCompleted } from '../../observability/metrics.ts';
import type { RunItem, StepItem } from '../../store/items/runs.ts';
import {
  countStep,
  endRun,
  queueWebhook,
  readRunAndSteps,
  retireLateStep,
  type StepCount,
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

/** A carried count: the step's count, and its model for a retire (a chain's first step may be a model step). */
export type CarriedCount = StepCount & { model?: ModelUse | undefined };

/**
 * The counts an inline chain carries to its next count, with the run and message they were finished
 * under; and `handedOn`, the item its last step wrote, which the next step reads from instead of
 * reading it again (functions/store/run/step-read.ts).
 */
export interface Carry {
  counts: CarriedCount[];
  run?: RunItem;
  message?: StepMessage;
  handedOn?: ReadonlyMap<string, StepItem>;
}

/** At most this many counts are carried: each is a term of the count's condition (4 KB at most). */
export const maxCarriedCounts = 25;

const counted = (c: { status: string; chargeHundredths: number }) => {
  if (c.status !== StepStatus.completed) return;
  countStepCompleted();
  addCreditsCharged(c.chargeHundredths);
};

/** A count refused (its run ended, or it was counted before): a step finished after its run ended is retired. */
const afterRefused = async (
  deps: Deps,
  message: StepMessage,
  run: RunItem,
  c: CarriedCount,
  count: Awaited<ReturnType<typeof countStep>>,
) => {
  const plan = planCount(count, c, true);
  if (plan.retire) await retireLate(deps, { ...message, nodeId: c.nodeId }, run, c.model);
  if (plan.settle) await settleEndedRun(deps, message.jobId);
  if (plan.charged !== undefined) counted(c);
};

/**
 * Counts carried steps one by one, as a redelivery would, after their joint count was refused (the
 * run ended meanwhile, or another delivery counted one). Their successors ran in the chain
 * already: nothing is released.
 */
const countOneByOne = async (deps: Deps, message: StepMessage, run: RunItem, counts: readonly CarriedCount[]) => {
  for (const c of counts) await afterRefused(deps, message, run, c, await countStep(deps, run, c.nodeId, c));
};

/**
 * Writes what `carry` holds: one conditional update for them all, or one by one when refused.
 * On a failure the counts stay carried and the error is thrown: a later count takes them, or the
 * delivery fails and its message's redelivery counts them (each step is found finished, uncounted).
 */
export const flushCarried = async (deps: Deps, carry: Carry) => {
  const counts = carry.counts.splice(0);
  const last = counts.at(-1);
  const { run, message } = carry;
  if (!last || !run || !message) return;
  try {
    const count = await countStep(deps, run, last.nodeId, last, counts.slice(0, -1));
    if (count.counted) counts.forEach(counted);
    else if (count.carriedRefused) await countOneByOne(deps, message, run, counts);
    else await afterRefused(deps, message, run, last, count);
  } catch (error) {
    carry.counts.unshift(...counts);
    throw error;
  }
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
  carry?: Carry,
): Promise<StepMessage | undefined> => {
  // The chain's next step runs in this invocation: this count waits for the chain's next (see Carry).
  const next = finishedIn && carry ? planRelease(finishedIn, message.nodeId) : undefined;
  if (carry && next?.kind === 'inline' && carry.counts.length < maxCarriedCounts) {
    carry.counts.push({ nodeId: message.nodeId, ...outcome });
    carry.run = run;
    carry.message = message;
    return stepMessage(message, next.nodeId);
  }
  const carried = carry?.counts.splice(0) ?? [];
  let count = await countStep(deps, run, message.nodeId, outcome, carried);
  if (count.counted) carried.forEach(counted);
  if (!count.counted && count.carriedRefused) {
    await countOneByOne(deps, message, run, carried);
    count = await countStep(deps, run, message.nodeId, outcome);
  }
  const plan = planCount(count, outcome, finishedIn !== undefined);
  if (plan.retire) await retireLate(deps, message, run, outcome.model);
  if (plan.settle) await settleEndedRun(deps, message.jobId);
  if (plan.charged !== undefined) counted({ status: StepStatus.completed, chargeHundredths: plan.charged });
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
