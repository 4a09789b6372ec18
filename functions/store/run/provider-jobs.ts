/**
 * A model step's job at an asynchronous provider, on its step item (`providerJob`), and the tries of
 * a busy provider (`providerTries`). Every write is conditioned on the claim that made it (status
 * `processing`, its `attempts`), so a delivery that lost its claim changes nothing.
 */
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import * as v from 'valibot';
import type { StepAttempt } from '../../../schemas/step-attempts.ts';
import type { Deps } from '../../deps.ts';
import { maxRetryDelaySeconds } from '../../domain/provider-jobs.ts';
import { parseItem } from '../items/item.ts';
import { type StepItem, StepItemSchema, storedStep } from '../items/runs.ts';
import { stepKey } from '../keys.ts';
import { sqsMessageBody, stepMessageGroup } from '../queues.ts';
import { conditionalUpdate } from '../write.ts';
import { claimCondition } from './lifecycle-conditions.ts';

type ProviderJob = NonNullable<StepItem['providerJob']>;

/** Time after a job's deadline its claim still holds: the poll at the deadline cancels it and ends the step. */
const leaseAfterDeadlineSeconds = 5 * 60;

/**
 * Before the submit: the job's intent (provider, model, the webhook token's hash, when, the
 * deadline, the earlier intents it supersedes). The claim keeps its short lease: a worker that dies
 * before the provider's answer is recorded is replaced just after the lease (its guard message,
 * provider-job.ts), and its replacement records the dead worker's submission as superseded
 * (`supersedeEarlierJob`), looks for the job it may have started, cancels it, and submits anew
 * under a new token. False: the claim is no longer this delivery's.
 */
export const recordJobIntent = async (
  deps: Deps,
  jobId: string,
  nodeId: string,
  intent: Omit<ProviderJob, 'id' | 'submittedAt'>,
): Promise<boolean> => {
  const written = await conditionalUpdate(
    deps,
    storedStep,
    stepKey(jobId, nodeId),
    { set: { providerJob: intent } },
    claimCondition(intent.attempt),
  );
  return written.written;
};

/**
 * The provider accepted the job: its id, once (the intent it answers must still be the step's), and
 * the claim's lease stretched past the job's deadline, so no other delivery takes the step over
 * while the provider works and an ended run keeps its hold until the job is cancelled. Written by
 * the submitting worker from the submit's answer, or by the provider's webhook under the intent's
 * token when that comes first (a fast job, or a worker that died before its record): the same id
 * twice is one record.
 */
export const recordJobSubmitted = async (
  deps: Deps,
  jobId: string,
  nodeId: string,
  job: Pick<ProviderJob, 'attempt' | 'tokenHash' | 'deadlineAt'> & { id: string },
): Promise<boolean> => {
  const lease = new Date(Date.parse(job.deadlineAt) + leaseAfterDeadlineSeconds * 1000).toISOString();
  const claim = claimCondition(job.attempt);
  const written = await conditionalUpdate(
    deps,
    storedStep,
    stepKey(jobId, nodeId),
    {
      set: { leaseUntil: lease },
      setEntries: { providerJob: { id: job.id, submittedAt: deps.now().toISOString() } },
    },
    {
      ConditionExpression: `${claim.ConditionExpression} AND providerJob.tokenHash = :hash AND (attribute_not_exists(providerJob.id) OR providerJob.id = :id)`,
      ExpressionAttributeNames: claim.ExpressionAttributeNames,
      ExpressionAttributeValues: { ...claim.ExpressionAttributeValues, ':hash': job.tokenHash, ':id': job.id },
    },
  );
  return written.written;
};

/**
 * A new claim took the step over from a claim whose worker was lost: that claim's job (submitted,
 * or only intended: a submit whose answer was never recorded) is no longer waited on. It moves to
 * the step's `supersededJobs`, the record that lets its provider's webhook stop it, and the step
 * waits on no job until this claim submits its own. Conditioned on this claim and on the job being
 * the one read with it. A delivery that dies before this write leaves the job where it was: the next
 * claim moves it.
 */
export const supersedeEarlierJob = async (
  deps: Deps,
  jobId: string,
  nodeId: string,
  attempt: number,
  step: Pick<StepItem, 'providerJob' | 'supersededJobs'>,
): Promise<void> => {
  const earlier = step.providerJob;
  if (!earlier || earlier.attempt >= attempt) return;
  const claim = claimCondition(attempt);
  await conditionalUpdate(
    deps,
    storedStep,
    stepKey(jobId, nodeId),
    { set: { supersededJobs: [...(step.supersededJobs ?? []), earlier] }, remove: ['providerJob'] },
    {
      ConditionExpression: `${claim.ConditionExpression} AND providerJob.tokenHash = :earlierHash`,
      ExpressionAttributeNames: claim.ExpressionAttributeNames,
      ExpressionAttributeValues: { ...claim.ExpressionAttributeValues, ':earlierHash': earlier.tokenHash },
    },
  );
};

/**
 * A superseded submission whose id was never recorded (its worker died between the submit and the
 * record) announced its job's end under its token while the step waits on a newer claim's job:
 * the announced job becomes the step's (under the current claim, with the announced id and the
 * lease past its deadline) and the newer job moves to `supersededJobs`, to be cancelled. The work
 * already done is used rather than done again. Conditioned on the claim and on the newer job being
 * the one read: a newer job recorded meanwhile keeps its place, and the newer submit whose intent
 * this replaces finds its record refused and cancels its own job. False: nothing was written.
 */
export const adoptSupersededJob = async (
  deps: Deps,
  jobId: string,
  nodeId: string,
  step: Pick<StepItem, 'providerJob' | 'supersededJobs'>,
  orphan: ProviderJob,
  id: string,
): Promise<boolean> => {
  const current = step.providerJob;
  if (!current) return false;
  const adopted: ProviderJob = {
    provider: orphan.provider,
    model: orphan.model,
    credentials: orphan.credentials,
    attempt: current.attempt,
    tokenHash: orphan.tokenHash,
    deadlineAt: orphan.deadlineAt,
    ...(orphan.intendedAt !== undefined && { intendedAt: orphan.intendedAt }),
    id,
    submittedAt: deps.now().toISOString(),
  };
  const superseded = [...(step.supersededJobs ?? []).filter((j) => j.tokenHash !== orphan.tokenHash), current];
  const lease = new Date(Date.parse(orphan.deadlineAt) + leaseAfterDeadlineSeconds * 1000).toISOString();
  const claim = claimCondition(current.attempt);
  const written = await conditionalUpdate(
    deps,
    storedStep,
    stepKey(jobId, nodeId),
    { set: { providerJob: adopted, supersededJobs: superseded, leaseUntil: lease } },
    {
      ConditionExpression: `${claim.ConditionExpression} AND providerJob.tokenHash = :currentHash`,
      ExpressionAttributeNames: claim.ExpressionAttributeNames,
      ExpressionAttributeValues: { ...claim.ExpressionAttributeValues, ':currentHash': current.tokenHash },
    },
  );
  return written.written;
};

const TriesSchema = v.required(v.pick(StepItemSchema, ['providerTries']));

/**
 * A busy provider's refusal, counted on the step, and the claim given back (its intent, if any,
 * dropped: a refused submit started nothing) so the delayed retry's delivery claims it at once.
 * Returns the tries so far, or null when the claim is no longer this delivery's.
 */
export const countProviderTry = async (
  deps: Deps,
  jobId: string,
  nodeId: string,
  attempt: number,
  /** The refused try's entry in the step's history, written in the same update. */
  refused?: StepAttempt,
): Promise<number | null> => {
  const counted = await conditionalUpdate(
    deps,
    storedStep,
    stepKey(jobId, nodeId),
    {
      set: { leaseUntil: new Date(0).toISOString() },
      add: { providerTries: 1 },
      remove: ['providerJob'],
      ...(refused !== undefined && { append: { attemptLog: [refused] } }),
    },
    claimCondition(attempt),
    { ReturnValues: 'UPDATED_NEW' },
  );
  return counted.written
    ? parseItem(TriesSchema, counted.output.Attributes ?? {}, stepKey(jobId, nodeId)).providerTries
    : null;
};

/**
 * Why a step message came: absent, the step is ready to run; `poll`, the step's job is due a look
 * (`poll` counts them, for the backoff); `webhook`, its provider announced the job's end.
 */
export type StepCheck = { check: 'poll'; poll: number } | { check: 'look' };

/** One step message, sent after `delaySeconds` (at most SQS's 900). */
export const sendDelayedStepMessage = async (
  deps: Deps,
  message: {
    jobId: string;
    workflowId: string;
    nodeId: string;
    teamId?: string;
    deferred?: number;
    /** A guard of claim `guard`'s submit (functions/app/provider-job.ts, `guardSubmit`). */
    guard?: number;
  } & Partial<StepCheck>,
  delaySeconds: number,
) => {
  await deps.sqs.send(
    new SendMessageCommand({
      QueueUrl: deps.queueUrls.steps,
      MessageBody: sqsMessageBody(message),
      ...stepMessageGroup(message.teamId),
      DelaySeconds: Math.max(0, Math.min(maxRetryDelaySeconds, Math.round(delaySeconds))),
    }),
  );
};
