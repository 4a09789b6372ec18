import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../deps.ts';
import type { ModelUse } from '../domain/executors/types.ts';
import type { LicenceModel } from '../domain/licence.ts';
import { chargeKey, runKey, stepKey, teamKey } from './keys.ts';
import { conditionFailed, endRunItems, endRunSideItems, type RunLedgerState, transactWrite } from './run-ledger.ts';

/** How long a claimed step belongs to its worker; shorter than the queue's visibility timeout. */
export const stepLeaseSeconds = 120;

export type ClaimResult =
  | { claimed: true; attempt: number }
  | { claimed: false; status: 'completed' | 'skipped' | 'failed' | 'processing' | 'ended' };

/**
 * Claims a step for this worker: created as `processing` if absent, or taken over when the
 * previous worker's lease ran out (it crashed). A step already finished, or leased by another
 * worker (a duplicate message), is not claimed.
 */
export const claimStep = async (deps: Deps, jobId: string, nodeId: string): Promise<ClaimResult> => {
  const now = deps.now();
  try {
    const { Attributes } = await deps.ddb.send(
      new UpdateCommand({
        TableName: deps.tableName,
        Key: stepKey(jobId, nodeId),
        UpdateExpression:
          'SET #status = :processing, leaseUntil = :lease, startedAt = if_not_exists(startedAt, :now), nodeId = :node ADD attempts :one',
        ConditionExpression: 'attribute_not_exists(PK) OR (#status = :processing AND leaseUntil < :now)',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: {
          ':processing': 'processing',
          ':lease': new Date(now.getTime() + stepLeaseSeconds * 1000).toISOString(),
          ':now': now.toISOString(),
          ':node': nodeId,
          ':one': 1,
        },
        ReturnValues: 'ALL_NEW',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
    return { claimed: true, attempt: Attributes?.attempts as number };
  } catch (error) {
    if ((error as Error).name !== 'ConditionalCheckFailedException') throw error;
    const item = (error as { Item?: Record<string, { S?: string }> }).Item;
    const status = item?.status?.S ?? 'processing';
    return { claimed: false, status: status as 'completed' | 'skipped' | 'failed' | 'processing' };
  }
};

const stepDone = (
  deps: Deps,
  jobId: string,
  nodeId: string,
  attempt: number,
  set: string,
  values: Record<string, unknown>,
  names: Record<string, string> = {},
) => ({
  Update: {
    TableName: deps.tableName,
    Key: stepKey(jobId, nodeId),
    UpdateExpression: `SET #status = :status, endedAt = :now, ${set} REMOVE leaseUntil`,
    ConditionExpression: '#status = :processing AND attempts = :attempt',
    ExpressionAttributeNames: { '#status': 'status', ...names },
    ExpressionAttributeValues: {
      ':processing': 'processing',
      ':attempt': attempt,
      ':now': deps.now().toISOString(),
      ...values,
    },
  },
});

const runStillGoing = '#status IN (:queued, :processing)';

/**
 * Completes a step and charges it, atomically: the step item, a charge item created only if
 * absent, the run's counters (moving the charge from its hold), and the team's held → charged.
 * Nothing is charged once the run has ended. Returns false when it lost a race (already done).
 */
export const completeStep = async (
  deps: Deps,
  input: {
    run: RunLedgerState;
    nodeId: string;
    attempt: number;
    outputs: Record<string, unknown>;
    model: ModelUse | undefined;
    licence: LicenceModel | undefined;
    chargeHundredths: number;
    /**
     * Set when every other step had finished at the read: the run then ends in this same
     * transaction (one write fewer for the last step), on condition that its counters and hold
     * are still the ones read.
     */
    last?: { completedBefore: number; skippedBefore: number };
  },
): Promise<boolean> => {
  const { run, nodeId, attempt } = input;
  const charge = input.chargeHundredths;
  const release = run.heldHundredths - charge;
  const now = deps.now().toISOString();
  const runUpdate = input.last
    ? {
        Update: {
          TableName: deps.tableName,
          Key: runKey(run.jobId),
          UpdateExpression:
            'SET #status = :completed, endedAt = :now, finalizedAt = :now, heldHundredths = :zero ADD stepsCompleted :one, chargedHundredths :charge REMOVE GSI1PK, GSI1SK',
          ConditionExpression: `${runStillGoing} AND heldHundredths = :held AND stepsCompleted = :done AND (attribute_not_exists(stepsSkipped) OR stepsSkipped = :skipped) AND attribute_not_exists(finalizedAt)`,
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: {
            ':queued': 'queued',
            ':processing': 'processing',
            ':completed': 'completed',
            ':now': now,
            ':zero': 0,
            ':one': 1,
            ':charge': charge,
            ':held': run.heldHundredths,
            ':done': input.last.completedBefore,
            ':skipped': input.last.skippedBefore,
          },
        },
      }
    : {
        Update: {
          TableName: deps.tableName,
          Key: runKey(run.jobId),
          UpdateExpression:
            'SET #status = :processing ADD stepsCompleted :one, chargedHundredths :charge, heldHundredths :minus REMOVE GSI1PK, GSI1SK',
          ConditionExpression: `${runStillGoing} AND heldHundredths >= :charge`,
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: {
            ':queued': 'queued',
            ':processing': 'processing',
            ':one': 1,
            ':charge': charge,
            ':minus': -charge,
          },
        },
      };
  // The last step charges and releases the rest of the hold in one update of the team item.
  const teamUpdate = {
    Update: {
      TableName: deps.tableName,
      Key: teamKey(run.teamId),
      UpdateExpression: input.last
        ? 'ADD held :minusHeld, charged :charge, balance :release'
        : 'ADD held :minus, charged :charge',
      ExpressionAttributeValues: input.last
        ? { ':charge': charge, ':minusHeld': -run.heldHundredths, ':release': release }
        : { ':charge': charge, ':minus': -charge },
    },
  };
  try {
    await transactWrite(deps, [
      stepDone(
        deps,
        run.jobId,
        nodeId,
        attempt,
        'outputs = :outputs, chargeHundredths = :charge, model = :model, licence = :licence',
        {
          ':status': 'completed',
          ':outputs': input.outputs,
          ':charge': charge,
          ':model': input.model ?? null,
          ':licence': input.licence ?? null,
        },
      ),
      {
        Put: {
          TableName: deps.tableName,
          Item: {
            ...chargeKey(run.jobId, nodeId),
            type: 'Charge',
            teamId: run.teamId,
            hundredths: charge,
            at: deps.now().toISOString(),
          },
          ConditionExpression: 'attribute_not_exists(PK)',
        },
      },
      runUpdate,
      teamUpdate,
      ...(input.last ? endRunSideItems(deps, run, release) : []),
    ]);
    return true;
  } catch (error) {
    if (conditionFailed(error)) return false;
    throw error;
  }
};

/** Marks a step skipped (nothing reached it) and counts it on the run. */
export const skipStep = async (deps: Deps, run: RunLedgerState, nodeId: string, attempt: number): Promise<boolean> => {
  try {
    await transactWrite(deps, [
      stepDone(deps, run.jobId, nodeId, attempt, 'chargeHundredths = :zero', { ':status': 'skipped', ':zero': 0 }),
      {
        Update: {
          TableName: deps.tableName,
          Key: runKey(run.jobId),
          UpdateExpression: 'SET #status = :processing ADD stepsSkipped :one REMOVE GSI1PK, GSI1SK',
          ConditionExpression: runStillGoing,
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: { ':queued': 'queued', ':processing': 'processing', ':one': 1 },
        },
      },
    ]);
    return true;
  } catch (error) {
    if (conditionFailed(error)) return false;
    throw error;
  }
};

/**
 * Fails a step and, in the same transaction, ends the run as `failed`: its unspent hold is
 * released exactly once (the run's hold must still be the one read; otherwise re-read and retry).
 */
export const failStep = async (
  deps: Deps,
  run: RunLedgerState,
  nodeId: string,
  attempt: number,
  message: string,
): Promise<boolean> => {
  try {
    await transactWrite(deps, [
      stepDone(
        deps,
        run.jobId,
        nodeId,
        attempt,
        '#error = :error, chargeHundredths = :zero',
        { ':status': 'failed', ':error': message, ':zero': 0 },
        { '#error': 'error' },
      ),
      ...endRunItems(deps, run, 'failed'),
    ]);
    return true;
  } catch (error) {
    if (conditionFailed(error)) return false;
    throw error;
  }
};

/** Marks a claimed step skipped after its run ended, so it does not read as in flight. */
export const abandonStep = async (deps: Deps, jobId: string, nodeId: string, attempt: number) => {
  try {
    await transactWrite(deps, [
      stepDone(deps, jobId, nodeId, attempt, 'chargeHundredths = :zero', { ':status': 'skipped', ':zero': 0 }),
    ]);
  } catch (error) {
    if (!conditionFailed(error)) throw error;
  }
};

/**
 * Gives a claimed step back after an unexpected error (its node threw), so the message's next
 * delivery takes it over at once instead of being dropped as a duplicate until the lease runs out.
 */
export const releaseStep = async (deps: Deps, jobId: string, nodeId: string, attempt: number) => {
  try {
    await deps.ddb.send(
      new UpdateCommand({
        TableName: deps.tableName,
        Key: stepKey(jobId, nodeId),
        UpdateExpression: 'SET leaseUntil = :released',
        ConditionExpression: '#status = :processing AND attempts = :attempt',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: {
          ':released': new Date(0).toISOString(),
          ':processing': 'processing',
          ':attempt': attempt,
        },
      }),
    );
  } catch (error) {
    if ((error as Error).name !== 'ConditionalCheckFailedException') throw error;
  }
};
