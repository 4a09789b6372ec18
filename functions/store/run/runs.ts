import { SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import { GetCommand, type TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import * as v from 'valibot';
import { RunStatus } from '../../../platform/run-statuses.ts';
import type { RunLabels } from '../../../schemas/run-tags.ts';
import type { RunMode } from '../../../schemas/run-words.ts';
import type { LifecycleEvent } from '../../../schemas/webhook-events.ts';
import type { Deps } from '../../deps.ts';
import type { AdmissionFacts } from '../../domain/admission.ts';
import { notifiesStart } from '../../domain/lifecycle-webhooks.ts';
import { monthlyRoom } from '../../domain/monthly-cap.ts';
import type { RunEstimate } from '../../domain/pricing.ts';
import { deadlineAt } from '../../domain/run-deadline.ts';
import { workflowLock } from '../../domain/workflow-lock.ts';
import { ServiceError } from '../../errors/define.ts';
import { RunInProgressError, RunRefusedError } from '../../errors/table.ts';
import { batchGet, itemFor } from '../batch.ts';
import { IdempotencyRaceError, type IdempotencyRecord, idempotencyPut } from '../idempotency.ts';
import { tableUpdate } from '../item-update.ts';
import { itemVersion, parseItem, type StoredItem, unexpired } from '../items/item.ts';
import {
  type InputFile,
  type RunItem,
  RunItemSchema,
  type StepItem,
  StepItemSchema,
  type storedRun,
} from '../items/runs.ts';
import {
  KeyMonthItemSchema,
  ProjectItemSchema,
  storedKeyMonth,
  storedProject,
  storedTeam,
  TeamItemSchema,
} from '../items/tenancy.ts';
import { type storedWorkflowLock, WorkflowLockItemSchema } from '../items/workflow-locks.ts';
import {
  keyMonthKey,
  projectKey,
  queuedRunIndex,
  runKey,
  runListIndex,
  runPartition,
  stepSkPrefix,
  teamKey,
  workflowLockKey,
} from '../keys.ts';
import { type NamedItems, type NamedTransactResult, namedTransactWrite } from '../named-transaction.ts';
import { queryAll } from '../query.ts';
import { MessagesRefusedError, sqsMessageBody, stepMessageGroup } from '../queues.ts';
import { stringAttribute } from '../refusals.ts';
import { firstInQueue } from './queue.ts';
import { runBatchPut, runTagPuts } from './run-tags.ts';
import type { RunnableWorkflow } from './workflow-loads.ts';

/** Team balance and per-step limit, project cap and spend, key month spend: one BatchGet. */
export const loadAdmissionFacts = async (
  deps: Deps,
  input: { teamId: string; projectId: string; keyId: string; month: string; monthlyCap: number | null },
): Promise<AdmissionFacts & { hardCap: number | null; connectionKeys: string[] }> => {
  const teamAt = teamKey(input.teamId);
  const projectAt = projectKey(input.teamId, input.projectId);
  const monthAt = keyMonthKey(input.keyId, input.month);
  const items = await batchGet(deps, [teamAt, projectAt, monthAt]);
  // A missing item reads as an empty one: no balance, no cap, nothing spent yet.
  const team = itemFor(items, teamAt, TeamItemSchema) ?? parseItem(TeamItemSchema, {});
  const project = itemFor(items, projectAt, ProjectItemSchema) ?? parseItem(ProjectItemSchema, {});
  const month = itemFor(items, monthAt, KeyMonthItemSchema) ?? parseItem(KeyMonthItemSchema, {});
  return {
    perStepLimit: team.perStepLimitHundredths,
    project: { hardCap: project.hardCapHundredths, spent: project.spentHundredths },
    key: { monthlyCap: input.monthlyCap, spentThisMonth: month.spentHundredths },
    balance: team.balance,
    hardCap: project.hardCapHundredths,
    connectionKeys: Object.keys(team.connections),
  };
};

export interface NewRun {
  jobId: string;
  teamId: string;
  keyId: string;
  workflow: RunnableWorkflow;
  mode: RunMode;
  inputs: Record<string, string>;
  /** The run's own copies of the uploads its `inputs` named, by key; none when absent. */
  inputFiles?: Record<string, InputFile>;
  callbackUrl: string | null;
  callbackSecret: string | null;
  estimate: RunEstimate;
  month: string;
  monthlyCap: number | null;
  hardCap: number | null;
  /** Remembered answer for an Idempotency-Key, written in the same transaction. */
  idempotency: IdempotencyRecord | null;
  /** Set when a deferred run became this run. */
  deferredJobId: string | null;
  /** The caller's own pairs and tags (schemas/run-tags.ts); each absent when none were given. */
  labels?: RunLabels;
  /** The lifecycle events the start chose (schemas/webhook-events.ts); absent when none. */
  webhookEvents?: readonly LifecycleEvent[] | undefined;
  /** The steps whose ends may give step events (functions/domain/lifecycle-webhooks.ts `eventfulSteps`). */
  eventSteps?: readonly string[] | undefined;
  /** More items for the same transaction (a deferred run's move to `dispatched`); appended last. */
  extraItems?: NonNullable<TransactWriteCommandInput['TransactItems']>;
  /**
   * Set on a resume: the run it resumes, and the steps taken over from it, whose items are written
   * before the start (functions/store/run/carried-steps.ts) and which the run counts as done.
   */
  resumed?: { from: string; carried: readonly string[] };
  /** Its deadline, counted from its start (functions/domain/run-deadline.ts); absent without one. */
  deadlineSeconds?: number | undefined;
  /** The batch that started it (POST /runs/batch); absent otherwise. */
  batchId?: string | undefined;
}

/**
 * The run item a start writes: queued, its whole estimate held, in the sparse index of queued runs
 * and in its team's run list (GSI5).
 */
export const runItem = (run: NewRun, createdAt: string) =>
  ({
    ...runKey(run.jobId),
    ...queuedRunIndex(run.jobId, createdAt),
    ...runListIndex(run.teamId, createdAt, run.jobId),
    type: 'Run',
    jobId: run.jobId,
    teamId: run.teamId,
    keyId: run.keyId,
    workflowId: run.workflow.workflowId,
    workflowVersion: run.workflow.version,
    agentId: run.workflow.agentId,
    projectId: run.workflow.projectId,
    status: RunStatus.queued,
    mode: run.mode,
    inputs: run.inputs,
    ...(run.inputFiles && Object.keys(run.inputFiles).length > 0 ? { inputFiles: run.inputFiles } : {}),
    callbackUrl: run.callbackUrl ?? undefined,
    callbackSecret: run.callbackSecret ?? undefined,
    deferredJobId: run.deferredJobId ?? undefined,
    ...run.labels,
    ...(run.webhookEvents && {
      webhookEvents: [...run.webhookEvents],
      ...(run.eventSteps && { eventSteps: [...run.eventSteps] }),
      // The lifecycle webhooks' stream filter passes the insert of a run marked so, and no other.
      ...(notifiesStart(run.webhookEvents) && { notifyStart: true }),
    }),
    resumedFrom: run.resumed?.from,
    ...(run.batchId !== undefined && { batchId: run.batchId }),
    ...(run.deadlineSeconds !== undefined && {
      deadlineAt: deadlineAt(new Date(createdAt), run.deadlineSeconds).toISOString(),
    }),
    estimateHundredths: run.estimate.totalHundredths,
    heldHundredths: run.estimate.totalHundredths,
    chargedHundredths: 0,
    stepEstimates: Object.fromEntries(run.estimate.steps.map((s) => [s.nodeId, s.hundredths])),
    priceMultiplier: run.estimate.multiplier,
    // A resume's estimate has only the steps it runs: those carried over are counted done already.
    stepsTotal: run.estimate.steps.length + (run.resumed?.carried.length ?? 0),
    stepsCompleted: run.resumed?.carried.length ?? 0,
    ...(run.resumed && run.resumed.carried.length > 0 ? { doneSteps: new Set(run.resumed.carried) } : {}),
    spendMonth: run.month,
    createdAt,
    v: itemVersion,
  }) satisfies StoredItem<typeof storedRun>;

/** What a run's tag and batch entries name of it. */
const runIds = (run: NewRun) => ({ teamId: run.teamId, jobId: run.jobId, workflowId: run.workflow.workflowId });

/** The start transaction's items, by name (`startRunItems`); a deferred run's move is one of the extra items. */
export type StartItemName =
  | 'lock'
  | 'balance'
  | 'projectSpend'
  | 'keyMonth'
  | 'run'
  | 'idempotency'
  | 'batch'
  | `tag:${number}`
  | `extra:${number}`;

/**
 * The start transaction's named items: take the workflow's run lock, hold the estimate from the
 * team balance, add it to the project's spend and the key's month, write the run, remember the
 * answer for its Idempotency-Key, put the run's tag entries, and the caller's extra items (last).
 */
export const startRunItems = (deps: Deps, run: NewRun): NamedItems<StartItemName> => {
  const now = deps.now().toISOString();
  const total = run.estimate.totalHundredths;
  const items: NamedItems<StartItemName> = {
    lock: {
      Put: {
        TableName: deps.tableName,
        Item: {
          ...workflowLockKey(run.workflow.workflowId),
          ...workflowLock(run.jobId, now),
          v: itemVersion,
        } satisfies StoredItem<typeof storedWorkflowLock>,
        // Free: no lock item, or one that outlived its holder with no run waiting (functions/domain/workflow-queue.ts).
        ConditionExpression:
          'attribute_not_exists(PK) OR (attribute_not_exists(jobId) AND (attribute_not_exists(waiting) OR waiting = :none))',
        ExpressionAttributeValues: { ':none': 0 },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    },
    balance: {
      Update: {
        ...tableUpdate(
          deps,
          storedTeam,
          teamKey(run.teamId),
          { add: { balance: -total, held: total } },
          { ConditionExpression: 'balance >= :total', ExpressionAttributeValues: { ':total': total } },
        ),
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    },
    projectSpend: {
      Update: {
        ...tableUpdate(
          deps,
          storedProject,
          projectKey(run.teamId, run.workflow.projectId),
          { add: { spentHundredths: total } },
          run.hardCap === null
            ? { ConditionExpression: 'attribute_exists(PK) AND attribute_not_exists(hardCapHundredths)' }
            : {
                ConditionExpression: 'attribute_exists(PK) AND hardCapHundredths = :cap AND spentHundredths <= :room',
                ExpressionAttributeValues: { ':cap': run.hardCap, ':room': run.hardCap - total },
              },
        ),
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    },
    keyMonth: {
      Update:
        run.monthlyCap === null
          ? tableUpdate(deps, storedKeyMonth, keyMonthKey(run.keyId, run.month), { add: { spentHundredths: total } })
          : {
              ...tableUpdate(
                deps,
                storedKeyMonth,
                keyMonthKey(run.keyId, run.month),
                { add: { spentHundredths: total } },
                {
                  ConditionExpression: 'attribute_not_exists(spentHundredths) OR spentHundredths <= :room',
                  ExpressionAttributeValues: { ':room': monthlyRoom(run.monthlyCap, total) },
                },
              ),
              ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const,
            },
    },
    run: {
      Put: { TableName: deps.tableName, Item: runItem(run, now), ConditionExpression: 'attribute_not_exists(PK)' },
    },
    idempotency: run.idempotency ? idempotencyPut(deps, run.keyId, run.idempotency) : undefined,
    batch: run.batchId === undefined ? undefined : runBatchPut(deps, { ...runIds(run), batchId: run.batchId }, now),
  };
  runTagPuts(deps, { ...runIds(run), tags: run.labels?.tags ?? [] }, now).forEach((item, index) => {
    items[`tag:${index}`] = item;
  });
  (run.extraItems ?? []).forEach((item, index) => {
    items[`extra:${index}`] = item;
  });
  return items;
};

/**
 * What a refused start means, read by name: the same Idempotency-Key committed first, then the run
 * in progress before insufficient credits (as the admission orders them), then a cap that moved.
 */
export const startRefusal = (run: NewRun, refusal: Extract<NamedTransactResult<StartItemName>, { written: false }>) => {
  const { refused } = refusal;
  // A request with the same Idempotency-Key committed first (and so holds the lock): answer as it did.
  if (refused('idempotency')) return new IdempotencyRaceError();
  if (refused('lock')) {
    // Between two runs (the lock outlived its holder, runs waiting) the holder is read by the caller.
    return new RunInProgressError(lockHolder(run.workflow.workflowId, refusal.reason('lock')?.Item) ?? '');
  }
  if (refused('balance')) {
    // The team item as it stood when the condition failed (ALL_OLD), so the 402 tells the balance it met.
    const old = refusal.reason('balance')?.Item as { balance?: { N?: string } } | undefined;
    return new RunRefusedError(
      { kind: 'insufficientCredits', requiredHundredths: run.estimate.totalHundredths },
      Number(old?.balance?.N ?? 0),
    );
  }
  if (refused('projectSpend') || refused('keyMonth')) return new RaceLostError();
  if (refusal.refusedNames.some((name) => name.startsWith('extra:'))) return new ExtraConditionFailedError();
  return new Error(`run ${run.jobId}: its start was refused by the condition of ${refusal.refusedNames.join(', ')}`);
};

/**
 * Starts a run in ONE transaction (`startRunItems`). Every condition re-checks what the caller
 * read, so a race is refused with the same errors (`startRefusal`).
 */
export const startRun = async (deps: Deps, run: NewRun): Promise<void> => {
  // Contention is retried by transactWrite (a StorageBusyError when it lasts): a refusal is failed conditions only.
  const result = await namedTransactWrite(deps, startRunItems(deps, run));
  if (!result.written) {
    const refusal = startRefusal(run, result);
    if (refusal instanceof RunInProgressError && refusal.activeJobId === '') {
      throw new RunInProgressError((await activeJobOf(deps, run.workflow.workflowId)) ?? '');
    }
    throw refusal;
  }
};

const RefusedLockSchema = v.object({ jobId: v.optional(stringAttribute(v.string())) });

/** The run named by the lock item a refused start returned (its old image, as attribute values); none between two runs. */
const lockHolder = (workflowId: string, item: Record<string, unknown> | undefined): string | undefined =>
  parseItem(RefusedLockSchema, item ?? {}, workflowLockKey(workflowId)).jobId?.S;

/** A cap changed between the read and the transaction: the caller re-reads and decides again. */
export class RaceLostError extends ServiceError {
  override readonly name = 'RaceLostError';
  constructor(options?: { cause?: unknown }) {
    super('a cap changed before the start transaction', options);
  }
}

/** A condition of `extraItems` failed (e.g. the deferred run is no longer waiting). */
export class ExtraConditionFailedError extends ServiceError {
  override readonly name = 'ExtraConditionFailedError';
  constructor(options?: { cause?: unknown }) {
    super('a condition of the extra items failed', options);
  }
}

/**
 * The job holding a workflow's run lock, if a run of it is in progress; between two runs (runs
 * waiting, the lock not handed over yet) the first waiting run, which is about to start.
 */
export const activeJobOf = async (deps: Deps, workflowId: string): Promise<string | undefined> => {
  const { Item } = await deps.ddb.send(
    new GetCommand({ TableName: deps.tableName, Key: workflowLockKey(workflowId), ConsistentRead: true }),
  );
  if (!Item) return undefined;
  const lock = parseItem(WorkflowLockItemSchema, Item);
  if (lock.jobId !== undefined || lock.waiting <= 0) return lock.jobId;
  return firstInQueue(deps, workflowId);
};

/** One message per ready step, in its team's group (`stepMessageGroup`); SQS batches of ten. */
export const sendStepMessages = async (
  deps: Deps,
  run: { jobId: string; workflowId: string; teamId: string | undefined },
  nodeIds: readonly string[],
) => {
  const { jobId, workflowId, teamId } = run;
  for (let i = 0; i < nodeIds.length; i += 10) {
    const chunk = nodeIds.slice(i, i + 10);
    const { Failed } = await deps.sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: deps.queueUrls.steps,
        Entries: chunk.map((nodeId, index) => ({
          Id: String(index),
          MessageBody: sqsMessageBody({ jobId, workflowId, nodeId, ...(teamId !== undefined && { teamId }) }),
          ...stepMessageGroup(teamId),
        })),
      }),
    );
    if (!Failed || Failed.length === 0) continue;
    const refused = Failed.filter((f) => f.SenderFault);
    if (refused.length > 0)
      throw new MessagesRefusedError(refused.map((f) => f.Code ?? 'unknown' /* lifecycle-ok: an SQS error code */));
    throw new Error(`SQS failed ${Failed.length} step message(s)`);
  }
};

/** The run item alone, strongly consistent; undefined when there is none or it expired. */
export const readRunItem = async (deps: Deps, jobId: string): Promise<RunItem | undefined> => {
  const { Item } = await deps.ddb.send(
    new GetCommand({ TableName: deps.tableName, Key: runKey(jobId), ConsistentRead: true }),
  );
  const item = unexpired(Item, deps.now());
  return item && parseItem(RunItemSchema, item);
};

/** A run's partition as read: the run item (undefined when there is none or it expired) and its step items. */
export interface RunPartition {
  run: RunItem | undefined;
  steps: StepItem[];
}

/**
 * The run and its step items, in one strongly consistent Query of the run's partition (its other
 * items, the webhook deliveries, are left out).
 */
export const readRunPartition = async (deps: Deps, jobId: string): Promise<RunPartition> => {
  const partition: RunPartition = { run: undefined, steps: [] };
  await queryAll(
    deps,
    {
      KeyConditionExpression: 'PK = :pk',
      ExpressionAttributeValues: { ':pk': runPartition(jobId) },
      ConsistentRead: true,
    },
    (item) => {
      if (item.SK === 'RUN') partition.run = parseItem(RunItemSchema, item);
      else if (typeof item.SK === 'string' && item.SK.startsWith(stepSkPrefix))
        partition.steps.push(parseItem(StepItemSchema, item));
    },
  );
  return partition;
};
