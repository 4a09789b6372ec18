/**
 * What a step delivery does, decided from what it read: the step path's rules as pure functions,
 * one per point where the delivery has learnt something (its read, its claim, its node's error,
 * its count on the run, the successors it read). The step executor (functions/app/step/) reads,
 * asks the plan, writes what the plan says, and runs the chain's next step as its loop's next turn.
 *
 * The exactly-once and money rules live here: a step is charged only by the count that counts it
 * (once, while its run is in progress); a step that finishes after its run ended is retired,
 * never charged; a node's execution is spent only when it ran and failed; successors are sent
 * only when every step they read from has finished, and a step with an item is not sent again,
 * but for a chain's finished next step (it may have run in a lost invocation without a message).
 */

import type { StoredRunStatus, StoredStepStatus } from '../../platform/run-statuses.ts';
import { chainSuccessor, predecessors, readySuccessors, type StepState, successors } from './run-graph.ts';
import {
  type CountedStepStatus,
  isCompleted,
  isDeadEnd,
  isDone,
  isInProgress,
  isUnsettled,
  releasesSuccessors,
} from './run-lifecycle.ts';
import { stepExecutionAttempts } from './step-attempts.ts';

/**
 * How many times recording a step's failure reads its run again when the write is refused because
 * the run's hold moved between the read and the write (a parallel step charged).
 */
export const failureRecordTries = 5;

/** Time a step needs after its node: recording its end, counting it, releasing what follows. */
export const settleMarginMs = 5_000;

/** What the plan reads of a run item. */
export interface RunFacts {
  status: StoredRunStatus;
  finalizedAt?: string | undefined;
  doneSteps: ReadonlySet<string>;
  stepsCompleted: number;
  stepsSkipped: number;
  stepsTotal: number;
}

/** What the plan reads of the step's own item, when it has one. */
export interface OwnStep {
  status: StoredStepStatus;
  chargeHundredths?: number | undefined;
}

/** What a delivery does with the step it read. */
export type ReadPlan =
  /** The run has ended: retire the step if it finished uncounted; settle the run if nothing holds it. */
  | { kind: 'after-end'; retire: boolean; settle: boolean }
  /** Finished by an earlier delivery that may have died before counting it or releasing its successors. */
  | { kind: 'count'; status: CountedStepStatus; chargeHundredths: number }
  /** Failed, or retired: nothing follows it. */
  | { kind: 'nothing' }
  | { kind: 'run' };

export const planRead = (run: RunFacts, nodeId: string, own: OwnStep | undefined): ReadPlan => {
  if (!isInProgress(run.status)) {
    return {
      kind: 'after-end',
      retire: isCompleted(own?.status) && !run.doneSteps.has(nodeId),
      settle: isUnsettled(run),
    };
  }
  if (own && releasesSuccessors(own.status)) {
    return { kind: 'count', status: own.status, chargeHundredths: own.chargeHundredths ?? 0 };
  }
  return isDeadEnd(own?.status) ? { kind: 'nothing' } : { kind: 'run' };
};

/** A model step's claim, as the store answers it. */
export type ClaimFacts =
  | { claimed: true; attempt: number; providerTries: number }
  | { claimed: false; waitsOnJob: boolean };

export type ClaimPlan =
  /** Not claimed (a duplicate holds it, or it finished); a job at a provider gets a poll in case its worker died before scheduling one. */
  | { kind: 'nothing'; poll: boolean }
  /** Each claim before this one (but a busy provider's retries) lost its worker mid-node: the step fails. */
  | { kind: 'fail'; lostWorkers: number }
  | { kind: 'run' };

export const planClaim = (claim: ClaimFacts): ClaimPlan => {
  if (!claim.claimed) return { kind: 'nothing', poll: claim.waitsOnJob };
  const lostWorkers = claim.attempt - 1 - claim.providerTries;
  return lostWorkers >= stepExecutionAttempts ? { kind: 'fail', lostWorkers } : { kind: 'run' };
};

/** What a node's throw was, as the step executor classifies it (in this order). */
export type NodeErrorKind =
  /** The node said the step failed (`StepFailedError`). */
  | 'step-failed'
  /** The step's deadline cut a synchronous call. */
  | 'deadline'
  /** A provider refused for now (429, 5xx, a timeout). */
  | 'busy-provider'
  /** A secret refused, missing or malformed: it stays so. */
  | 'secret'
  | 'unexpected';

export type NodeErrorPlan =
  | { kind: 'fail' }
  /** Tried again by a delayed message (`planDeadlineRetry`), never left to the queue's visibility timeout. */
  | { kind: 'retry-deadline' }
  /** A provider try counted on the claim; asked again after a backoff. */
  | { kind: 'retry-busy' }
  /** Run in its predecessor's invocation: not counted (it may have run short of time); its message is sent. */
  | { kind: 'to-queue' }
  /** A failed execution, counted on the step item (`planFailedExecution`). */
  | { kind: 'count-execution' };

export const planNodeError = (error: NodeErrorKind, step: { claimed: boolean; inline: boolean }): NodeErrorPlan => {
  if (error === 'step-failed' || error === 'secret') return { kind: 'fail' };
  if (error === 'deadline') return { kind: 'retry-deadline' };
  // Only a claimed (model) step counts provider tries; an unclaimed one's refusal is an execution that failed.
  if (error === 'busy-provider' && step.claimed) return { kind: 'retry-busy' };
  return step.inline ? { kind: 'to-queue' } : { kind: 'count-execution' };
};

/**
 * A failed execution of the step's node, `failed` the step's count of them after this one (null:
 * another delivery finished the step meanwhile, and counts it). Past `stepExecutionAttempts` the
 * step fails; else the queue redelivers the message, the claim given back so that delivery takes it.
 */
export type ExecutionPlan = { kind: 'nothing' } | { kind: 'fail' } | { kind: 'redeliver' };

export const planFailedExecution = (failed: number | null): ExecutionPlan => {
  if (failed === null) return { kind: 'nothing' };
  return failed >= stepExecutionAttempts ? { kind: 'fail' } : { kind: 'redeliver' };
};

/** A deadline that cut an unclaimed step's call: as a failed execution, but retried by a delayed message. */
export type DeadlineRetryPlan = { kind: 'nothing' } | { kind: 'fail' } | { kind: 'retry'; delaySeconds: number };

export const planDeadlineRetry = (failed: number | null, retryDelay: (tries: number) => number): DeadlineRetryPlan => {
  const plan = planFailedExecution(failed);
  if (plan.kind !== 'redeliver') return plan;
  return { kind: 'retry', delaySeconds: retryDelay(failed ?? 0) };
};

/**
 * A fresh read of the run item, before a step's failure is recorded or a claimed step calls its
 * provider (undefined: gone, expired): still going; or ended meanwhile, when the step's claim is
 * given up and the run settled if nothing else holds it.
 */
export type RereadPlan = { kind: 'gone' } | { kind: 'ended'; settle: boolean } | { kind: 'going' };

export const planReread = (run: Pick<RunFacts, 'status' | 'finalizedAt'> | undefined): RereadPlan => {
  if (!run) return { kind: 'gone' };
  return isInProgress(run.status) ? { kind: 'going' } : { kind: 'ended', settle: isUnsettled(run) };
};

/** A step's count on its run, as the store answers it. */
export type CountFacts =
  | { counted: true; ended: true }
  | { counted: true; ended: false; run: Pick<RunFacts, 'stepsCompleted' | 'stepsSkipped' | 'stepsTotal'> }
  | { counted: false; runEnded: boolean; alreadyCounted: boolean; unsettled: boolean };

export interface CountPlan {
  /** The charge this count moved from the run's hold (a completed step counted now), for the metrics. */
  charged: number | undefined;
  /** Finished after its run ended: never counted, so never charged, and its output is dropped. */
  retire: boolean;
  /** The ended run may have waited for this step: settle it if nothing else holds it. */
  settle: boolean;
  /** `ended`: the count's own transaction ended the run; `end`: every step is counted, end the run. */
  run: 'ended' | 'end' | 'going';
  /**
   * Which successors to send: `none`; `read`, from a read of their inputs (a redelivery, whose
   * successors may have been sent already); `finished`, this delivery finished the step.
   */
  release: 'none' | 'read' | 'finished';
}

export const planCount = (
  count: CountFacts,
  outcome: { status: CountedStepStatus; chargeHundredths: number },
  finishedHere: boolean,
): CountPlan => {
  const none = { charged: undefined, retire: false, settle: false, run: 'going', release: 'none' } as const;
  if (!count.counted) {
    if (count.runEnded) {
      return { ...none, retire: !count.alreadyCounted && isCompleted(outcome.status), settle: count.unsettled };
    }
    // Counted by an earlier delivery that may have crashed before releasing the successors.
    return { ...none, release: 'read' };
  }
  const charged = isCompleted(outcome.status) ? outcome.chargeHundredths : undefined;
  if (count.ended) return { ...none, charged, run: 'ended' };
  if (isDone(count.run)) return { ...none, charged, run: 'end' };
  return { ...none, charged, release: finishedHere ? 'finished' : 'read' };
};

/** Successors released without a read, by the delivery that finished the step. */
export type ReleasePlan =
  /** The chain's next step: run in this invocation when time allows (`planInline`), else sent. */
  | { kind: 'inline'; nodeId: string }
  | { kind: 'send'; nodeIds: string[] }
  /** A successor reads from another step too (a join): read their inputs first (`planReleaseRead`). */
  | { kind: 'read' };

/**
 * A successor reading from this step alone is ready without a read: no other delivery can have
 * released it, since this delivery finished the step.
 */
export const planRelease = (canvas: Parameters<typeof successors>[0], nodeId: string): ReleasePlan => {
  const next = successors(canvas, nodeId);
  if (!next.every((s) => predecessors(canvas, s).every((p) => p === nodeId))) return { kind: 'read' };
  const chained = chainSuccessor(canvas, nodeId);
  return chained === undefined ? { kind: 'send', nodeIds: next } : { kind: 'inline', nodeId: chained };
};

/**
 * Successors released from a read of their inputs: those ready and without a step item (one with
 * an item had its message), and the chain's next step when it has finished (it may have run in a
 * lost invocation: sent again, counted once, it checks its own successors). After the last count
 * (a redelivery after a crash before the run's end) the run ends here.
 */
export const planReleaseRead = (
  canvas: Parameters<typeof successors>[0],
  nodeId: string,
  run: RunFacts,
  steps: ReadonlyMap<string, StepState>,
): { send: string[]; end: boolean } => {
  if (!isInProgress(run.status)) return { send: [], end: false };
  const chained = chainSuccessor(canvas, nodeId);
  const chainedStatus = chained === undefined ? undefined : steps.get(chained)?.status;
  const send = readySuccessors(canvas, nodeId, steps).filter(
    (s) => !steps.has(s) || (s === chained && releasesSuccessors(chainedStatus)),
  );
  return { send, end: isDone(run) };
};

/** The step ids a release's read needs: each successor and every step it reads from. */
export const releaseReadIds = (canvas: Parameters<typeof successors>[0], nodeId: string) => [
  ...new Set(successors(canvas, nodeId).flatMap((s) => [s, ...predecessors(canvas, s)])),
];

/**
 * A chain's next step runs in this invocation only with a whole node timeout and the margin to
 * settle it left (`remainingMs` undefined: the worker does not know its time, so never); else its
 * message is sent.
 */
export const planInline = (remainingMs: number | undefined, stepTimeoutMs: number): 'run' | 'send' =>
  remainingMs === undefined || remainingMs < stepTimeoutMs + settleMarginMs ? 'send' : 'run';
