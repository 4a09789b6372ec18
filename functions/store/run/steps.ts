import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import * as v from 'valibot';
import { RunStatus, StepStatus, type StoredStepStatus } from '../../../platform/run-statuses.ts';
import type { LicenceModel } from '../../../schemas/run-words.ts';
import type { StepAttempt, StepLogs } from '../../../schemas/step-attempts.ts';
import type { Deps } from '../../deps.ts';
import { notifiesStepEnd } from '../../domain/lifecycle-webhooks.ts';
import { runItemExpiry } from '../../domain/retention.ts';
import { type CountedStepStatus, isCompleted, isInProgress, isLastCount } from '../../domain/run-lifecycle.ts';
import { modelChargeEntry } from '../../domain/usage.ts';
import type { ModelUse } from '../../nodes/executors/types.ts';
import { ifNotExists, tableUpdate } from '../item-update.ts';
import { parseItem } from '../items/item.ts';
import { type RunItem, RunItemSchema, type StepItem, StepItemSchema, storedRun, storedStep } from '../items/runs.ts';
import { runKey, stepKey } from '../keys.ts';
import { StringSetAttributeSchema, stringAttribute } from '../refusals.ts';
import { conditionalUpdate, conditionalWrite, transactWrite } from '../write.ts';
import {
  closeRunUpdate,
  endRun,
  inProgressCondition,
  inProgressValues,
  notCountedCondition,
  settleJustEnded,
} from './ledger.ts';
import { claimCondition, statusValues } from './lifecycle-conditions.ts';
import { supersedeEarlierJob } from './provider-jobs.ts';

/**
 * The run a step item belongs to: the item is keyed by its job and kept as long as it, the stage's
 * retention from the run's start (`ttl`, written with each write that already happens).
 */
export type StepRun = Pick<RunItem, 'jobId' | 'createdAt'> & Partial<Pick<RunItem, 'webhookEvents' | 'eventSteps'>>;

const stepTtl = (deps: Deps, run: StepRun) => runItemExpiry(run.createdAt, deps.now(), deps.retentionDays);

/** How long a claimed step belongs to its worker; shorter than the queue's visibility timeout. */
export const stepLeaseSeconds = 120;

/**
 * The claim a delivery holds on a step: its attempt number, or null for a step that is not claimed.
 * Only model steps are claimed (a lease keeps a duplicate message from paying a provider twice);
 * a cheap step's item is written once, when it finishes, by whichever delivery finishes it first
 * (and before that only if its node failed, `countFailedExecution`, or is still running after a
 * moment, `markStepStarted`).
 */
export type Attempt = number | null;

/**
 * A claim, with the tries of a busy provider so far (each retry is a claim too, not a failed
 * execution); or a refusal, saying whether the step already waits on a provider's job.
 */
export type ClaimResult =
  | { claimed: true; attempt: number; providerTries: number; previousJob: StepItem['providerJob'] }
  | { claimed: false; status: StoredStepStatus | 'ended'; waitsOnJob: boolean };

const ClaimedStepSchema = v.object({
  ...v.required(v.pick(StepItemSchema, ['attempts'])).entries,
  ...v.pick(StepItemSchema, ['providerJob', 'supersededJobs']).entries,
  providerTries: v.optional(v.number(), 0),
  providerJob: StepItemSchema.entries.providerJob,
});
/** The step a refused claim returns (its old image, as attribute values). */
const RefusedStepSchema = v.object({
  status: v.optional(stringAttribute(StepItemSchema.entries.status)),
  providerJob: v.optional(v.object({ M: v.object({ id: v.optional(v.unknown()) }) })),
});

/**
 * Claims a step for this worker: created as `processing` if absent, or taken over when the
 * previous worker's lease ran out (it crashed). A step already finished, or leased by another
 * worker (a duplicate message), is not claimed.
 */
export const claimStep = async (deps: Deps, run: StepRun, nodeId: string): Promise<ClaimResult> => {
  const now = deps.now();
  const { jobId } = run;
  const claim = await conditionalUpdate(
    deps,
    storedStep,
    stepKey(jobId, nodeId),
    {
      set: {
        status: StepStatus.processing,
        leaseUntil: new Date(now.getTime() + stepLeaseSeconds * 1000).toISOString(),
        startedAt: ifNotExists(now.toISOString()),
        nodeId,
        ttl: stepTtl(deps, run),
      },
      add: { attempts: 1 },
    },
    {
      ConditionExpression: 'attribute_not_exists(PK) OR (#status = :processing AND leaseUntil < :now)',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: { ...statusValues(StepStatus.processing), ':now': now.toISOString() },
    },
    { ReturnValues: 'ALL_NEW', ReturnValuesOnConditionCheckFailure: 'ALL_OLD' },
  );
  if (claim.written) {
    const claimed = parseItem(ClaimedStepSchema, claim.output.Attributes ?? {});
    // The job an earlier claim left, as the claim read it: one never recorded may be an orphan.
    const previousJob = claimed.providerJob;
    // Taken over: the lost claim's job, if it had one, is recorded as superseded before any new submit.
    await supersedeEarlierJob(deps, jobId, nodeId, claimed.attempts, claimed);
    return { claimed: true, attempt: claimed.attempts, providerTries: claimed.providerTries, previousJob };
  }
  const refused = claim.oldItem && parseItem(RefusedStepSchema, claim.oldItem, stepKey(jobId, nodeId));
  return {
    claimed: false,
    status: refused?.status?.S ?? StepStatus.processing,
    waitsOnJob: refused?.providerJob?.M.id !== undefined,
  };
};

/** What a finished step's item records beside its status. */
type StepEnd = (
  | {
      status: typeof StepStatus.completed;
      outputs: Record<string, unknown>;
      model: ModelUse | undefined;
      licence: LicenceModel | undefined;
      chargeHundredths: number;
    }
  | { status: typeof StepStatus.skipped }
  /** A failed step is charged nothing, unless a provider's job ran to its end for it (`chargeHundredths`). */
  | { status: typeof StepStatus.failed; error: string; chargeHundredths?: number }
) &
  StepEndHistory;

/**
 * What a step's end adds to its history (functions/domain/step-history.ts), in the write it makes
 * anyway: the attempt that ended it (none when an earlier write recorded it), and its logs.
 */
export interface StepEndHistory {
  attempt?: StepAttempt | undefined;
  logs?: StepLogs | undefined;
}

/**
 * An unclaimed step not finished yet: no item, or only the count of its failed executions
 * (`processing`, with `failures` and no `attempts`: never claimed).
 */
const unclaimedCondition = {
  ConditionExpression: 'attribute_not_exists(PK) OR (#status = :processing AND attribute_not_exists(attempts))',
  ExpressionAttributeNames: { '#status': 'status' },
  ExpressionAttributeValues: statusValues(StepStatus.processing),
};

/** The step item's end, written only by the delivery holding the claim (or, unclaimed, only once). */
const stepEndUpdate = (deps: Deps, run: StepRun, nodeId: string, attempt: Attempt, end: StepEnd) =>
  tableUpdate(
    deps,
    storedStep,
    stepKey(run.jobId, nodeId),
    {
      set: {
        status: end.status,
        endedAt: deps.now().toISOString(),
        nodeId,
        chargeHundredths: end.status === StepStatus.skipped ? 0 : (end.chargeHundredths ?? 0),
        ttl: stepTtl(deps, run),
        ...(end.status === StepStatus.completed
          ? { outputs: end.outputs, model: end.model ?? null, licence: end.licence ?? null }
          : {}),
        ...(end.status === StepStatus.failed ? { error: end.error } : {}),
        // The lifecycle webhooks' mark, in the write the step's end makes anyway: no call more.
        ...(notifiesStepEnd(run, nodeId, end.status) && { notify: true as const }),
        ...(end.logs !== undefined && { logs: end.logs }),
      },
      // Its history, in the same write: no call more.
      ...(end.attempt !== undefined && { append: { attemptLog: [end.attempt] } }),
      remove: ['leaseUntil'],
    },
    attempt === null ? unclaimedCondition : claimCondition(attempt),
  );

/**
 * Records a step's end on its item, once. False when another delivery finished it first (or took
 * the claim over): that delivery counts it on the run. `returnItem`: the item as written comes back
 * from the same write (no read unit), for the chain's next step, which reads from it alone.
 */
export const finishStepItem = async (
  deps: Deps,
  run: StepRun,
  nodeId: string,
  attempt: Attempt,
  end: StepEnd,
  options: { returnItem?: boolean } = {},
): Promise<false | { item?: StepItem }> => {
  const update = stepEndUpdate(deps, run, nodeId, attempt, end);
  const result = await conditionalWrite(
    deps,
    new UpdateCommand(options.returnItem ? { ...update, ReturnValues: 'ALL_NEW' } : update),
  );
  if (!result.written) return false;
  const written = result.output.Attributes;
  return { item: written && parseItem(StepItemSchema, written, stepKey(run.jobId, nodeId)) };
};

export type CountResult =
  /** Counted, and the count also ended the run. */
  | { counted: true; ended: true }
  /** Counted; `run` is the run item after the count (the caller ends the run if it is done). */
  | { counted: true; ended: false; run: RunItem }
  /**
   * Counted before (a redelivery), or the run had ended: nothing changed. `unsettled`: the run ended
   * but is not finalized yet (a model step of it was in flight at its end).
   */
  | { counted: false; runEnded: boolean; alreadyCounted: boolean; unsettled: boolean; carriedRefused?: true };

/** The run a refused count returns (its old image, as attribute values): whether it ended, and what it counted. */
const RefusedCountSchema = v.object({
  status: v.optional(stringAttribute(RunItemSchema.entries.status)),
  doneSteps: v.optional(StringSetAttributeSchema),
  finalizedAt: v.optional(stringAttribute(RunItemSchema.entries.finalizedAt.wrapped)),
});

/** A finished step's count on its run: the step, how it ended, and what it charges. */
export interface StepCount {
  nodeId: string;
  status: CountedStepStatus;
  chargeHundredths: number;
  /** A model step's provider and model: its charge is kept by model for the usage rollups. */
  model?: ModelUse | undefined;
}

/**
 * Counts a finished step on its run, exactly once (the run's `doneSteps` set remembers it): a
 * completed step moves its charge from the run's hold to its charges. `carried`: steps an inline
 * chain finished before this one whose counts waited for this one (functions/app/step/carried-counts.ts),
 * counted in the same write, all or none. When every other step had finished at `run`'s read, the
 * count is made by the transaction that ends the run; otherwise it is one conditional update, and
 * the caller ends the run if the returned counters say it is done.
 */
export const countStep = async (
  deps: Deps,
  run: RunItem,
  nodeId: string,
  outcome: Omit<StepCount, 'nodeId'>,
  carried: readonly StepCount[] = [],
): Promise<CountResult> => {
  const counts = [...carried, { nodeId, ...outcome }];
  const chargeOf = (c: StepCount) => (isCompleted(c.status) ? c.chargeHundredths : 0);
  const charge = counts.reduce((sum, c) => sum + chargeOf(c), 0);
  const completed = counts.filter((c) => isCompleted(c.status)).length;
  const skipped = counts.length - completed;
  const nodeIds = counts.map((c) => c.nodeId);
  const modelCharges = counts.flatMap((c) =>
    c.model && chargeOf(c) > 0 ? [modelChargeEntry(c.nodeId, c.model, chargeOf(c))] : [],
  );
  // This step is the run's last when the carried ones and every other step had finished.
  if (isLastCount({ ...run, stepsCompleted: run.stepsCompleted + carried.length }, outcome.status)) {
    const last = {
      nodeIds,
      completed,
      chargeHundredths: charge,
      completedBefore: run.stepsCompleted,
      skippedBefore: run.stepsSkipped,
      modelCharges,
    };
    if (await endRun(deps, run, RunStatus.completed, last)) return { counted: true, ended: true };
    // The run moved since the read (a parallel step, a cancel): count it the general way.
  }
  const notCounted = notCountedCondition(nodeIds);
  const count = await conditionalUpdate(
    deps,
    storedRun,
    runKey(run.jobId),
    {
      set: { status: RunStatus.processing },
      add: {
        ...(completed > 0 && { stepsCompleted: completed }),
        ...(skipped > 0 && { stepsSkipped: skipped }),
        chargedHundredths: charge,
        heldHundredths: -charge,
        doneSteps: new Set(nodeIds),
        ...(modelCharges.length > 0 && { modelCharges: new Set(modelCharges) }),
      },
      remove: ['GSI1PK', 'GSI1SK'],
    },
    {
      ConditionExpression: `${inProgressCondition} AND ${notCounted.expression} AND heldHundredths >= :charge`,
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: { ...inProgressValues, ...notCounted.values, ':charge': charge },
    },
    { ReturnValues: 'ALL_NEW', ReturnValuesOnConditionCheckFailure: 'ALL_OLD' },
  );
  if (count.written)
    return { counted: true, ended: false, run: parseItem(RunItemSchema, count.output.Attributes ?? {}) };
  const old = parseItem(RefusedCountSchema, count.oldItem ?? {}, runKey(run.jobId));
  const runEnded = !isInProgress(old.status?.S);
  const alreadyCounted = old.doneSteps?.SS.includes(nodeId) ?? false;
  // Carried counts refused together: the caller counts them one by one (one may have been counted meanwhile).
  if (carried.length > 0) return { counted: false, runEnded, alreadyCounted, unsettled: false, carriedRefused: true };
  if (!runEnded && !alreadyCounted) {
    throw new Error(`Run ${run.jobId} holds less than step ${nodeId}'s charge of ${charge}`);
  }
  return { counted: false, runEnded, alreadyCounted, unsettled: runEnded && old.finalizedAt === undefined };
};

/**
 * A step that finished after its run ended takes nothing in: its item becomes `unknown`, without
 * its outputs, model or licence (files it stored are then named nowhere, so never signed), and with
 * no charge (the run, which had ended, never counted it). Only a finished step the run never
 * counted is retired (the caller checked the run's `doneSteps`); a step already retired or
 * finished otherwise is left as it is.
 */
export const retireLateStep = async (deps: Deps, run: StepRun, nodeId: string) => {
  await conditionalUpdate(
    deps,
    storedStep,
    stepKey(run.jobId, nodeId),
    {
      set: { status: StepStatus.unknown, chargeHundredths: 0, ttl: stepTtl(deps, run) },
      remove: ['outputs', 'model', 'licence', 'leaseUntil'],
    },
    {
      ConditionExpression: '#status = :completed',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: statusValues(StepStatus.completed),
    },
  );
};

/**
 * Fails a step and, in the same transaction, ends the run as `failed` (the run's hold must still be
 * the one read; otherwise re-read and retry); then settles it (its unspent hold released exactly
 * once, its lock freed) unless another model step of it is in flight, whose end settles it.
 * `chargeHundredths`: what the failed step is charged, moved from the run's hold in the same
 * transaction (a provider's job that ran to its end with an answer that cannot be used); the
 * step's claim makes it once.
 */
export const failStep = async (
  deps: Deps,
  run: RunItem,
  nodeId: string,
  attempt: Attempt,
  message: string,
  chargeHundredths = 0,
  history: StepEndHistory = {},
): Promise<boolean> => {
  const end = { status: StepStatus.failed, error: message, chargeHundredths, ...history };
  const failed = await transactWrite(deps, [
    { Update: stepEndUpdate(deps, run, nodeId, attempt, end) },
    { Update: closeRunUpdate(deps, run, RunStatus.failed, chargeHundredths) },
  ]);
  if (failed.written) await settleJustEnded(deps, run.jobId);
  return failed.written;
};

/** Marks a claimed step skipped after its run ended, so it does not read as in flight. */
export const abandonStep = async (deps: Deps, run: StepRun, nodeId: string, attempt: Attempt) => {
  // An unclaimed step has no item until it finishes; a run's end shows it skipped without one.
  if (attempt === null) return;
  await finishStepItem(deps, run, nodeId, attempt, { status: StepStatus.skipped });
};

/**
 * Gives a claimed step back after an unexpected error (its node threw), so the message's next
 * delivery takes it over at once instead of being dropped as a duplicate until the lease runs out.
 */
export const releaseStep = async (
  deps: Deps,
  jobId: string,
  nodeId: string,
  attempt: Attempt,
  /** The failed execution's entry in the step's history, written in the same update. */
  failed?: StepAttempt,
) => {
  if (attempt === null) return;
  // Refused: the step is no longer this delivery's (finished, or taken over); nothing to give back.
  await conditionalUpdate(
    deps,
    storedStep,
    stepKey(jobId, nodeId),
    {
      set: { leaseUntil: new Date(0).toISOString() },
      ...(failed !== undefined && { append: { attemptLog: [failed] } }),
    },
    claimCondition(attempt),
  );
};

const FailuresSchema = v.required(v.pick(StepItemSchema, ['failures']));

/**
 * Counts a failed execution of an unclaimed step's node on its item (`processing`, `failures`),
 * so that only executions spend the step's attempts, never SQS receives. Returns the count, or
 * null when another delivery finished the step meanwhile. Written only on this failure path: a
 * step that succeeds first time still writes its item once.
 */
export const countFailedExecution = async (
  deps: Deps,
  run: StepRun,
  nodeId: string,
  /** The failed execution's entry in the step's history, written in the same update. */
  failed?: StepAttempt,
): Promise<number | null> => {
  const counted = await conditionalUpdate(
    deps,
    storedStep,
    stepKey(run.jobId, nodeId),
    {
      set: { status: StepStatus.processing, nodeId, ttl: stepTtl(deps, run) },
      add: { failures: 1 },
      ...(failed !== undefined && { append: { attemptLog: [failed] } }),
    },
    unclaimedCondition,
    { ReturnValues: 'UPDATED_NEW' },
  );
  return counted.written
    ? parseItem(FailuresSchema, counted.output.Attributes ?? {}, stepKey(run.jobId, nodeId)).failures
    : null;
};

/**
 * Writes an unclaimed step's item as `processing` when it has none yet, so a caller sees a node
 * that takes more than a moment running, not `queued` (model steps read so from their claim). No
 * `attempts`: it claims nothing, and the step's end and failure counts take it over as they take
 * an absent item. False when the item exists already (a failure counted, or the step finished).
 */
export const markStepStarted = async (deps: Deps, run: StepRun, nodeId: string): Promise<boolean> => {
  const now = deps.now().toISOString();
  const marked = await conditionalUpdate(
    deps,
    storedStep,
    stepKey(run.jobId, nodeId),
    { set: { status: StepStatus.processing, startedAt: now, nodeId, ttl: stepTtl(deps, run) } },
    { ConditionExpression: 'attribute_not_exists(PK)' },
  );
  return marked.written;
};
