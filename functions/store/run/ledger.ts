import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { type EndStatus, inProgressStatuses } from '../../../platform/run-statuses.ts';
import type { EndReason } from '../../../schemas/run-words.ts';
import type { Deps } from '../../deps.ts';
import { runItemExpiry } from '../../domain/retention.ts';
import { holdsEndedRun, isEndStatus, runTransitions } from '../../domain/run-lifecycle.ts';
import { settlementUsage, usageDay } from '../../domain/usage.ts';
import { logger } from '../../observability/logger.ts';
import { tableUpdate } from '../item-update.ts';
import { storedRun } from '../items/runs.ts';
import { storedKeyMonth, storedProject, storedTeam } from '../items/tenancy.ts';
import { storedWorkflowLock } from '../items/workflow-locks.ts';
import { keyMonthKey, projectKey, queuedRunIndex, runKey, teamKey, workflowLockKey } from '../keys.ts';
import { usageRollupItems } from '../usage.ts';
import { conditionalWrite, type TransactItems, transactWrite } from '../write.ts';
import { fromCondition, statusValues } from './lifecycle-conditions.ts';
import { readLock, startNextQueued } from './queue.ts';
import { readRunPartition } from './runs.ts';

/** The run item fields the ledger needs (a RunItem has them all). */
export interface RunLedgerState {
  jobId: string;
  teamId: string;
  keyId: string;
  workflowId: string;
  projectId: string;
  spendMonth: string;
  /** The run's start: its items are kept the stage's retention from it (functions/domain/retention.ts). */
  createdAt: string;
  /** The whole hold taken at the start; the team's `held` carries it until the run ends. */
  estimateHundredths: number;
  /** What is still held for the run's unfinished steps. */
  heldHundredths: number;
  callbackUrl?: string;
  /** For the usage rollups its settlement adds to (functions/domain/usage.ts): absent counts as none. */
  tags?: readonly string[] | undefined;
  stepsCompleted?: number;
  modelCharges?: ReadonlySet<string> | undefined;
}

/**
 * The team item's one update at a run's end. Steps charge the run item only (the team item is not
 * written per step: one write fewer per step and no hot item per team); the team's `held` carries
 * the whole estimate until here, then moves to `charged` (what the steps charged) and back to
 * `balance` (the rest). `balance` is exact all along: a step's charge never changes it. A run that
 * held nothing has nothing to settle.
 */
const settleTeamItems = (deps: Deps, run: RunLedgerState, release: number): TransactItems =>
  run.estimateHundredths === 0
    ? []
    : [
        {
          Update: tableUpdate(deps, storedTeam, teamKey(run.teamId), {
            add: { balance: release, held: -run.estimateHundredths, charged: run.estimateHundredths - release },
          }),
        },
      ];

/**
 * The team's usage rollups (functions/store/usage.ts) of the run settled here, in the settlement's
 * transaction beside the team item: its charge counts in them exactly when it reaches the team's
 * `charged`, and never twice (the run item's condition refuses a second settlement, and the rollups
 * with it). `last`: the last count made by the same transaction.
 */
const usageItems = (deps: Deps, run: RunLedgerState, release: number, last?: LastCount): TransactItems => {
  const day = usageDay(deps.now());
  const settled = {
    workflowId: run.workflowId,
    keyId: run.keyId,
    projectId: run.projectId,
    tags: run.tags,
    steps: (run.stepsCompleted ?? 0) + (last?.completed ?? 0),
    chargedHundredths: run.estimateHundredths - release,
    refundedHundredths: release,
    modelCharges: [...(run.modelCharges ?? []), ...(last?.modelCharges ?? [])],
  };
  return usageRollupItems(deps, run.teamId, day, settlementUsage(settled));
};

/** The run is still in progress: the `from` of a step's count, a run's end and its close; with `inProgressValues`. */
export const inProgressCondition = fromCondition(runTransitions.countStep);
export const inProgressValues = statusValues(...inProgressStatuses);

/**
 * Steps are counted on their run once: the run's `doneSteps` set names the steps counted, and names
 * none of `nodeIds` yet (`:node0`, `:node1`... in the values).
 */
export const notCountedCondition = (nodeIds: readonly string[]) => ({
  expression: `(attribute_not_exists(doneSteps) OR NOT (${nodeIds.map((_, i) => `contains(doneSteps, :node${i})`).join(' OR ')}))`,
  values: Object.fromEntries(nodeIds.map((id, i) => [`:node${i}`, id])),
});

/**
 * The run is where `move` starts (in progress), not finalized, and still holds what `run` read: no charge
 * slipped in since.
 */
const heldCondition = (move: 'end' | 'close', run: RunLedgerState) => ({
  ConditionExpression: `${fromCondition(runTransitions[move])} AND heldHundredths = :held AND attribute_not_exists(finalizedAt)`,
  ExpressionAttributeNames: { '#status': 'status' },
  ExpressionAttributeValues: { ':held': run.heldHundredths, ...inProgressValues },
});

/**
 * What a run's end writes on it, whether it finalizes the run or only closes it: its status, when,
 * and what it charged in all (its estimate less `release`), written once for the run list's index
 * (GSI5), which does not hold the per-step chargedHundredths.
 */
const endedRun = (run: RunLedgerState, status: EndStatus, now: string, release: number) => ({
  status,
  endedAt: now,
  finalChargedHundredths: run.estimateHundredths - release,
});

/**
 * The last step's count, made by the transaction that ends its run, with the counts an inline
 * chain carried to it (functions/app/step/carried-counts.ts): valid only while every other step is
 * finished, as at the read (`completedBefore`, `skippedBefore`).
 */
export interface LastCount {
  /** The steps counted, the run's last among them; none counted yet. */
  nodeIds: readonly string[];
  /** Of them, how many completed (the others were skipped), and what they charge in all. */
  completed: number;
  chargeHundredths: number;
  completedBefore: number;
  skippedBefore: number;
  /** Its charged model steps' entries (functions/domain/usage.ts `modelChargeEntry`), added to the run's. */
  modelCharges?: readonly string[];
}

/**
 * The items that end a run, exactly once: set its final status (only while it is in progress,
 * only if its hold is still the one read, so no charge slips in between), settle the team item,
 * take the released amount back off the project's and key's spend, and free the workflow's run
 * lock. With `last`, the same update counts the last step and charges it (one write fewer). The
 * same update gives the run item its `ttl` (its start plus the retention): a run expires only once
 * it has ended, so one in progress keeps its lock and hold where a cancel can release them.
 */
export const endRunItems = (
  deps: Deps,
  run: RunLedgerState,
  status: EndStatus,
  last?: LastCount,
  handover = false,
): TransactItems => {
  const charge = last?.chargeHundredths ?? 0;
  const release = run.heldHundredths - charge;
  const now = deps.now().toISOString();
  const held = heldCondition('end', run);
  const notCounted = last && notCountedCondition(last.nodeIds);
  const condition = last
    ? {
        ...held,
        ConditionExpression: `${held.ConditionExpression} AND ${notCounted?.expression} AND stepsCompleted = :done AND (attribute_not_exists(stepsSkipped) OR stepsSkipped = :skipped)`,
        ExpressionAttributeValues: {
          ...held.ExpressionAttributeValues,
          ...notCounted?.values,
          ':done': last.completedBefore,
          ':skipped': last.skippedBefore,
        },
      }
    : held;
  const skipped = last ? last.nodeIds.length - last.completed : 0;
  return [
    {
      Update: tableUpdate(
        deps,
        storedRun,
        runKey(run.jobId),
        {
          set: {
            ...endedRun(run, status, now, release),
            finalizedAt: now,
            heldHundredths: 0,
            ttl: runItemExpiry(run.createdAt, deps.now(), deps.retentionDays),
          },
          ...(last
            ? {
                add: {
                  stepsCompleted: last.completed,
                  ...(skipped > 0 && { stepsSkipped: skipped }),
                  chargedHundredths: charge,
                  doneSteps: new Set(last.nodeIds),
                  ...(last.modelCharges?.length && { modelCharges: new Set(last.modelCharges) }),
                },
              }
            : {}),
          remove: ['GSI1PK', 'GSI1SK'],
        },
        condition,
      ),
    },
    ...settleTeamItems(deps, run, release),
    ...endRunSideItems(deps, run, release, handover),
    ...usageItems(deps, run, release, last),
  ];
};

/**
 * What every run end does beside the run and team items: free the workflow's run lock and take the
 * released hold back off the project's spend and the key's month. The lock is deleted only while
 * no run waits behind it; with `handover` (runs wait: functions/domain/workflow-queue.ts) it loses
 * its holder and keeps its count, for the first waiting run to take (`startNextQueued`).
 */
const endRunSideItems = (deps: Deps, run: RunLedgerState, release: number, handover = false): TransactItems => [
  handover
    ? {
        Update: tableUpdate(
          deps,
          storedWorkflowLock,
          workflowLockKey(run.workflowId),
          { remove: ['jobId', 'since'] },
          { ConditionExpression: 'jobId = :job', ExpressionAttributeValues: { ':job': run.jobId } },
        ),
      }
    : {
        Delete: {
          TableName: deps.tableName,
          Key: workflowLockKey(run.workflowId),
          ConditionExpression:
            'attribute_not_exists(PK) OR (jobId = :job AND (attribute_not_exists(waiting) OR waiting = :none))',
          ExpressionAttributeValues: { ':job': run.jobId, ':none': 0 },
        },
      },
  ...(release > 0
    ? [
        {
          Update: tableUpdate(deps, storedProject, projectKey(run.teamId, run.projectId), {
            add: { spentHundredths: -release },
          }),
        },
        {
          Update: tableUpdate(deps, storedKeyMonth, keyMonthKey(run.keyId, run.spendMonth), {
            add: { spentHundredths: -release },
          }),
        },
      ]
    : []),
];

/**
 * The run item's update that ends a run whose steps may still be in flight (a cancel, a failure),
 * without finalizing it: its status becomes `status`, so nothing is counted, charged or published
 * on it any more (every count is conditional on an in-progress run), and what it charged is final
 * (`finalChargedHundredths`). The hold, the team's settlement and the workflow's lock stay until
 * `settleEndedRun` finds no model step in flight. It enters the sweep's index (GSI1, from its end),
 * so a run whose in-flight step's worker died is settled by the dispatcher's next sweep. `charge`:
 * what the failing step is charged (see `failStep`), taken off the hold in the same update.
 */
export const closeRunUpdate = (
  deps: Deps,
  run: RunLedgerState,
  status: EndStatus,
  charge = 0,
  endReason?: EndReason,
) => {
  const now = deps.now().toISOString();
  const sweep = queuedRunIndex(run.jobId, now);
  return tableUpdate(
    deps,
    storedRun,
    runKey(run.jobId),
    {
      set: {
        ...endedRun(run, status, now, run.heldHundredths - charge),
        GSI1PK: sweep.GSI1PK,
        GSI1SK: sweep.GSI1SK,
        ...(endReason !== undefined && { endReason }),
      },
      // A failed step charged at the end (a provider's job that ran to its end): moved off the hold.
      ...(charge > 0 && { add: { chargedHundredths: charge, heldHundredths: -charge } }),
    },
    heldCondition('close', run),
  );
};

/**
 * Ends a run as `status` (see `closeRunUpdate`), with `endReason` when its status alone does not
 * say why, then settles it unless a model step is in flight; false when it had already ended or its
 * hold moved since the read (a step charged): re-read.
 */
export const closeRun = async (
  deps: Deps,
  run: RunLedgerState,
  status: EndStatus,
  endReason?: EndReason,
): Promise<boolean> => {
  const update = closeRunUpdate(deps, run, status, 0, endReason);
  if (!(await conditionalWrite(deps, new UpdateCommand(update))).written) return false;
  await settleJustEnded(deps, run.jobId);
  return true;
};

/**
 * `settleEndedRun` right after the run's end was written, by the writer of that end: a failure
 * here must not undo what the caller does next (answer the cancel, queue the webhook). The run has
 * ended all the same, and its entry in the sweep's index gets it settled on a later tick.
 */
export const settleJustEnded = async (deps: Deps, jobId: string) => {
  try {
    await settleEndedRun(deps, jobId);
  } catch (error) {
    logger.warn('an ended run was left to the sweep to settle', { jobId, error });
  }
};

/**
 * The items that finalize an ended run, once: release its hold (frozen since its end), settle the
 * team, give the release back to the project's and key's spend, free the workflow's lock, and give
 * the run item its `ttl`.
 */
const settleRunItems = (deps: Deps, run: RunLedgerState & { status: EndStatus }, handover = false): TransactItems => [
  {
    Update: tableUpdate(
      deps,
      storedRun,
      runKey(run.jobId),
      {
        set: {
          finalizedAt: deps.now().toISOString(),
          heldHundredths: 0,
          ttl: runItemExpiry(run.createdAt, deps.now(), deps.retentionDays),
        },
        remove: ['GSI1PK', 'GSI1SK'],
      },
      {
        ConditionExpression: '#status = :status AND heldHundredths = :held AND attribute_not_exists(finalizedAt)',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: { ':status': run.status, ':held': run.heldHundredths },
      },
    ),
  },
  ...settleTeamItems(deps, run, run.heldHundredths),
  ...endRunSideItems(deps, run, run.heldHundredths, handover),
  ...usageItems(deps, run, run.heldHundredths),
];

/** How often a refused end or settlement reads the lock again and takes the transaction it calls for. */
const lockRaceTries = 3;

/**
 * A run's end or settlement whose transaction was refused: when the reason is runs waiting behind
 * it (its lock counts them), the same transaction again handing the lock over (`items(true)`), then
 * the first waiting run started at once. The count may move between the refusal and the read (the
 * last waiting run cancelled, another queued): the lock is read again and the transaction it now
 * calls for tried, a few times, so a race with a waiting run never leaves the run unsettled. Read
 * only after a refusal, so a run nobody waits for pays nothing for the queue. True when written.
 */
const endHandingOver = async (
  deps: Deps,
  run: Pick<RunLedgerState, 'jobId' | 'workflowId'>,
  items: (handover: boolean) => TransactItems,
): Promise<boolean> => {
  for (let attempt = 1; attempt <= lockRaceTries; attempt++) {
    const lock = await readLock(deps, run.workflowId);
    // Not this run's lock (any more): the refusal was the run's own conditions, or another writer's.
    if (lock?.jobId !== run.jobId) return false;
    if (lock.waiting <= 0) {
      // Nobody waits now (the last waiting run was cancelled since the refusal): the plain end again.
      if ((await transactWrite(deps, items(false))).written) return true;
      continue;
    }
    if (!(await transactWrite(deps, items(true))).written) continue;
    try {
      await startNextQueued(deps, run.workflowId);
    } catch (error) {
      // The run has ended all the same; the dispatcher's tick starts the queue.
      logger.warn('the next queued run was left to the sweep', { jobId: run.jobId, error: error as Error });
    }
    return true;
  }
  return false;
};

/**
 * Finalizes an ended run (`settleRunItems`) when none of its steps holds it (a live claim,
 * `holdsEndedRun`). Called after every change that can end the last claim of an ended run: its end
 * itself, a late step's end, a claim given up, and any later message of the run (the sweep sends
 * one for a run left unsettled), so the last of them settles it; the transaction's condition makes
 * that exactly once. True when this call settled it.
 */
export const settleEndedRun = async (deps: Deps, jobId: string): Promise<boolean> => {
  const { run, steps } = await readRunPartition(deps, jobId);
  if (!run || !isEndStatus(run.status) || run.finalizedAt !== undefined) return false;
  const now = deps.now();
  if (steps.some((step) => holdsEndedRun(step, now))) return false;
  const ended = { ...run, status: run.status };
  if ((await transactWrite(deps, settleRunItems(deps, ended))).written) return true;
  return endHandingOver(deps, run, (handover) => settleRunItems(deps, ended, handover));
};

/**
 * Ends a run in one transaction (counting its last step too, with `last`); false when it had
 * already ended, or moved since the read (its hold, its counters): re-read.
 */
export const endRun = async (deps: Deps, run: RunLedgerState, status: EndStatus, last?: LastCount) =>
  (await transactWrite(deps, endRunItems(deps, run, status, last))).written ||
  endHandingOver(deps, run, (handover) => endRunItems(deps, run, status, last, handover));
