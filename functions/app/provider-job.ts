/**
 * A model step whose work is a job at an asynchronous provider (Replicate, fal): long work that
 * holds no Lambda. The step's delivery submits the job and ends; the job's end arrives by the
 * provider's signed webhook (`functions/app/provider-webhook.ts` sends a `webhook` check) or by
 * polling (`poll` checks, delayed step messages from 5 s to 2 minutes), whichever comes first, and
 * is applied once: the step item's end is conditioned on the claim that submitted the job, and the
 * run counts a step once. Rules (deadlines, backoff, tokens): functions/domain/provider-jobs.ts.
 *
 * The crash between the submit and recording the job's id: the claim keeps its short lease until
 * the id is recorded, and the intent (written before the submit) sends a guard message due just
 * after that lease. A guard that finds the intent still unrecorded sends the step's message: its
 * new claim records the dead one's submission as superseded (`supersededJobs`), looks for the job
 * that intent may have started (by its webhook's token, created while its worker lived), cancels
 * it, and only then submits anew under a new token. The dead worker's own message, back after the
 * queue's visibility timeout, finds the step taken. A job not found (a provider with no way to list
 * jobs, fal) is found when it announces its end with the old token: provider-webhook.ts records it
 * (before the takeover) or adopts it and cancels the newer job (after); without a webhook it runs to
 * its end, at the stage's cost, never counted or charged.
 */

import * as v from 'valibot';
import type { FailureReason } from '../../platform/alarm-rules.ts';
import { stepsQueue } from '../../platform/definitions.ts';
import { basePath, routeById } from '../../platform/routes.ts';
import type { Deps } from '../deps.ts';
import { failureReasonOf } from '../domain/failure-reasons.ts';
import {
  guardDelaySeconds,
  guardVerdict,
  jobDeadline,
  jobTimedOutMessage,
  maxProviderTries,
  newWebhookToken,
  pollDelaySeconds,
  stepRetryDelaySeconds,
  supersededIntents,
  type UnrecordedIntent,
  webhookTokenHash,
  webhookTokenMatches,
} from '../domain/provider-jobs.ts';
import { type AttemptWhere, failedAttempt, retryWait } from '../domain/step-history.ts';
import type { ModelWork } from '../nodes/executors/model-work.ts';
import type { JobRequest, ProviderJobs } from '../nodes/executors/types.ts';
import { type StepContext, StepFailedError } from '../nodes/executors/types.ts';
import {
  type JobProvider,
  type JobState,
  type JobUsage,
  ProviderError,
  type TeamConnection,
} from '../nodes/providers/types.ts';
import { logger } from '../observability/logger.ts';
import type { StepItem } from '../store/items/runs.ts';
import {
  countProviderTry,
  recordJobIntent,
  recordJobSubmitted,
  sendDelayedStepMessage,
} from '../store/run/provider-jobs.ts';
import { readStepItem } from '../store/run/step-read.ts';
import { stepLeaseSeconds } from '../store/run/steps.ts';

/** A step message; `check` and `poll` when it comes to look at the step's job. */
export interface JobStepMessage {
  jobId: string;
  workflowId: string;
  nodeId: string;
  /** The run's team: its messages' group on the fair queue, and whose cap of steps in flight applies. */
  teamId?: string;
  check?: 'poll' | 'look';
  poll?: number;
  /** How many times its team's cap held the step back (functions/app/team-slots.ts). */
  deferred?: number;
  /** The claim whose submit this message guards (`guardSubmit`): set, it runs nothing itself. */
  guard?: number;
}

const count = v.pipe(v.number(), v.integer(), v.minValue(0));
/** A step message as the step executor reads it off its queue (`JobStepMessage`). */
export const StepMessageSchema = v.object({
  jobId: v.string(),
  workflowId: v.string(),
  nodeId: v.string(),
  teamId: v.optional(v.string()), // its run's team; `deferred`: times its cap held it back (app/team-slots.ts)
  deferred: v.optional(count),
  check: v.optional(v.picklist(['poll', 'look'])), // a look at its provider job
  poll: v.optional(count),
  guard: v.optional(count), // the claim whose submit it guards (`guardSubmit`)
});

/** The path of a step's webhook route under the base path (the route table's `ProviderWebhook`). */
export const providerWebhookPath = (provider: string, jobId: string, nodeId: string, token: string) => {
  const values: Record<string, string> = { provider, jobId, nodeId, token };
  return `${basePath}${routeById('ProviderWebhook').path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(values[name] ?? ''))}`;
};

/** How a job's step ends, given by run-step (its settle and failure paths). */
export interface JobStepEnds {
  /**
   * Fails the step (and its run) with `error`, from the claim `attempt`, counted under `reason`;
   * `recorded`: the write that counted the attempt recorded it in the step's history already.
   */
  fail(attempt: number, error: string, reason: FailureReason, recorded?: boolean): Promise<void>;
  /** What run-step knows of the attempt, for the step's history. */
  facts?: JobAttemptFacts;
}

/**
 * What the step's delivery knows of its attempt (functions/domain/step-history.ts): when it started,
 * where it ran, and the counts read with its claim (`providerTries`; `failures`, an unclaimed step's).
 */
export interface JobAttemptFacts {
  startedAt?: string | undefined;
  at?: AttemptWhere | undefined;
  providerTries?: number | undefined;
  failures?: number | undefined;
}

const jobsOf = (deps: Deps): ProviderJobs => {
  const jobs = deps.executors.jobs;
  if (!jobs) throw new Error('This step executor has no asynchronous providers wired');
  return jobs;
};

/** Shortens a provider's message for a step's `error` (it is the provider's words, never a key). */
const providerWords = (message: string) => (message.length > 500 ? `${message.slice(0, 497)}...` : message);

/** What a retry is told of the refusal: a retryable ProviderError, or a call its step's deadline cut (`StepTimeoutError`). */
export interface RetryableRefusal {
  name: string;
  message: string;
  status: number | undefined;
  retryAfterSeconds: number | undefined;
}

/**
 * A busy provider (429, 5xx, a timeout, the network, a call its step's deadline cut): the try is
 * counted and the step's message sent again after a jittered backoff (at least its `Retry-After`);
 * past `maxProviderTries` the step fails with the provider's message. A failed step is charged nothing.
 */
export const retryBusyProvider = async (
  deps: Deps,
  message: JobStepMessage,
  attempt: number,
  error: RetryableRefusal,
  nodeType: string,
  ends: JobStepEnds,
) => {
  // The try's entry in the step's history, in the count's own write: it says the wait its count leads
  // to, known before the count from the tries read with the claim (only this claim adds to them).
  const facts = ends.facts;
  const expected = facts?.providerTries === undefined ? undefined : facts.providerTries + 1;
  const retried = expected !== undefined && expected <= maxProviderTries;
  const planned = retried ? stepRetryDelaySeconds(expected, error.retryAfterSeconds, Math.random()) : undefined;
  const retryClass = error.name === 'StepTimeoutError' ? 'deadline' : 'busy-provider';
  const entry = failedAttempt(
    { startedAt: facts?.startedAt, endedAt: deps.now().toISOString() },
    {
      error: `${nodeType}: ${providerWords(error.message)}`,
      reason: failureReasonOf(error),
      retryClass: expected === undefined || retried ? retryClass : 'none',
      ...(planned !== undefined && { next: retryWait(planned, error.retryAfterSeconds) }),
    },
    facts?.at,
  );
  const tries = await countProviderTry(deps, message.jobId, message.nodeId, attempt, entry);
  if (tries === null) return; // the claim is no longer this delivery's
  if (tries > maxProviderTries) {
    return ends.fail(
      attempt,
      `${nodeType}: ${providerWords(error.message)} (after ${tries} tries)`,
      failureReasonOf(error),
      true,
    );
  }
  const delay =
    tries === expected && planned !== undefined
      ? planned
      : stepRetryDelaySeconds(tries, error.retryAfterSeconds, Math.random());
  logger.info('provider busy; step tried again later', { nodeId: message.nodeId, tries, delay, status: error.status });
  await sendDelayedStepMessage(
    deps,
    { jobId: message.jobId, workflowId: message.workflowId, nodeId: message.nodeId },
    delay,
  );
};

/** The step's own message, without what made this one a look, a guard or a deferral. */
const stepMessageOf = (message: JobStepMessage) => ({
  jobId: message.jobId,
  workflowId: message.workflowId,
  nodeId: message.nodeId,
  ...(message.teamId !== undefined && { teamId: message.teamId }),
});

/**
 * A guard of claim `message.guard`'s submit, come just after its lease: when that claim's worker
 * died between its intent and its job's record, the step's message is sent now (its delivery takes
 * the step over and cancels the job the dead worker may have started), not left to the queue's
 * visibility timeout. Anything else (recorded, given back, ended, taken over) needs nothing. Read
 * once, written never: a duplicate guard at most sends a duplicate message, which the claim absorbs.
 */
export const guardSubmit = async (deps: Deps, message: JobStepMessage & { guard: number }) => {
  const step = await readStepItem(deps, message.jobId, message.nodeId);
  const verdict = guardVerdict(step, message.guard, deps.now());
  if (verdict.kind === 'done') return;
  if (verdict.kind === 'early') return sendDelayedStepMessage(deps, message, verdict.seconds);
  logger.warn('provider job submitted but not recorded: step taken over', {
    nodeId: message.nodeId,
    claim: message.guard,
  });
  await sendDelayedStepMessage(deps, stepMessageOf(message), 0);
};

/**
 * The window a superseded intent's job was created in, at the provider: from its intent (less a
 * margin for the two clocks) to the end of its worker's invocation (the function's timeout).
 */
const createdWindow = (intent: UnrecordedIntent) => {
  const margin = 10_000;
  const at = Date.parse(intent.intendedAt);
  return { from: new Date(at - margin), before: new Date(at + stepsQueue.consumerTimeoutSeconds * 1000 + margin) };
};

/**
 * Finds and cancels, before a new submit, the jobs the superseded intents may have started (a
 * worker that died between its submit and its record): listed at the provider in the intent's
 * window, matched by the token in their webhook URL. A provider that cannot list them, or fails to
 * answer now, is logged: such a job is still found when its webhook comes with the old token.
 */
const cancelOrphans = async (
  provider: JobProvider,
  model: string,
  superseded: readonly UnrecordedIntent[],
  nodeId: string,
) => {
  if (superseded.length === 0) return;
  if (!provider.findByWebhook) {
    logger.warn('provider cannot list jobs: an unrecorded job is adopted or cancelled when it announces itself', {
      nodeId,
      provider: provider.key,
    });
    return;
  }
  for (const intent of superseded) {
    const tokenOf = (url: string) => url.slice(url.lastIndexOf('/') + 1);
    try {
      const found = await provider.findByWebhook(
        {
          model,
          ...createdWindow(intent),
          webhookMatches: (url) => webhookTokenMatches(decodeURIComponent(tokenOf(url)), intent.tokenHash),
        },
        AbortSignal.timeout(20_000),
      );
      for (const ref of found) {
        logger.warn('unrecorded provider job found and cancelled', {
          nodeId,
          provider: provider.key,
          providerJobId: ref.id,
        });
        await cancelQuietly(provider, ref);
      }
    } catch (error) {
      if (!(error instanceof ProviderError)) throw error;
      logger.warn('unrecorded provider jobs could not be listed', { nodeId, provider: provider.key, error });
    }
  }
};

/**
 * Submits a step's job: its intent first (a new webhook token, the unrecorded intents it
 * supersedes), with a guard message due just after the claim's lease; the jobs superseded intents
 * may have started are cancelled; then the submit, then the job's id (which stretches the claim's
 * lease past the deadline), then the first poll. A provider that refuses for now is retried
 * (`retryBusyProvider`); any other refusal fails the step. `previous`: the step's job as the claim found it.
 */
export const submitJob = async (
  deps: Deps,
  message: JobStepMessage,
  attempt: number,
  request: JobRequest,
  credentials: { kind: 'team' | 'stage'; connection: TeamConnection | undefined },
  nodeType: string,
  ends: JobStepEnds,
  previous?: StepItem['providerJob'],
) => {
  const jobs = jobsOf(deps);
  const provider = await jobs.provider(request.provider, credentials.connection);
  if (!provider)
    return ends.fail(attempt, `${nodeType}: provider ${request.provider} is not configured`, 'configuration');
  const token = newWebhookToken();
  const tokenHash = webhookTokenHash(token);
  const now = deps.now();
  const deadlineAt = jobDeadline(nodeType, now).toISOString();
  const superseded = supersededIntents(previous, attempt);
  const intent = {
    provider: request.provider,
    model: request.model,
    credentials: credentials.kind,
    attempt,
    tokenHash,
    deadlineAt,
    intendedAt: now.toISOString(),
    ...(superseded.length > 0 && { superseded }),
  };
  if (!(await recordJobIntent(deps, message.jobId, message.nodeId, intent))) return;
  // Due just after the claim's lease: if this worker dies before the job's record, the step is taken over then.
  await sendDelayedStepMessage(
    deps,
    { ...stepMessageOf(message), guard: attempt },
    guardDelaySeconds(stepLeaseSeconds),
  );
  // Only the same provider and key can see the superseded jobs (a step's config does not change between claims).
  if (previous?.provider === request.provider && previous.credentials === credentials.kind)
    await cancelOrphans(provider, request.model, superseded, message.nodeId);
  const webhookUrl = jobs.publicBaseUrl
    ? `${jobs.publicBaseUrl.replace(/\/+$/, '')}${providerWebhookPath(request.provider, message.jobId, message.nodeId, token)}`
    : undefined;
  let ref: { id: string };
  try {
    ref = await provider.submit({
      model: request.model,
      input: request.input,
      ...(webhookUrl ? { webhookUrl } : {}),
      signal: AbortSignal.timeout(30_000),
    });
  } catch (error) {
    if (error instanceof ProviderError && error.retryable) {
      return retryBusyProvider(deps, message, attempt, error, nodeType, ends);
    }
    if (error instanceof ProviderError)
      return ends.fail(attempt, `${nodeType}: ${providerWords(error.message)}`, failureReasonOf(error));
    throw error;
  }
  const recorded = await recordJobSubmitted(deps, message.jobId, message.nodeId, {
    attempt,
    tokenHash,
    deadlineAt,
    id: ref.id,
  });
  if (!recorded) {
    // The claim was lost between the submit and now (taken over): this job is no one's.
    await cancelQuietly(provider, { id: ref.id, model: request.model });
    return;
  }
  logger.info('provider job submitted', { nodeId: message.nodeId, provider: request.provider, providerJobId: ref.id });
  await schedulePoll(deps, message, 0, deadlineAt);
};

/** The next poll, no later than just past the deadline (where it cancels the job). */
const schedulePoll = async (deps: Deps, message: JobStepMessage, poll: number, deadlineAt: string) => {
  const untilDeadline = Math.ceil((Date.parse(deadlineAt) - deps.now().getTime()) / 1000) + 1;
  const delay = Math.max(1, Math.min(pollDelaySeconds(poll, Math.random()), untilDeadline));
  await sendDelayedStepMessage(
    deps,
    { jobId: message.jobId, workflowId: message.workflowId, nodeId: message.nodeId, check: 'poll', poll },
    delay,
  );
};

/** Asks the provider to stop a job; a failure is logged (the job ends at its provider anyway). */
export const cancelQuietly = async (provider: JobProvider, ref: { id: string; model: string }) => {
  try {
    await provider.cancel(ref, AbortSignal.timeout(10_000));
  } catch (error) {
    logger.warn('provider job could not be cancelled', { provider: provider.key, providerJobId: ref.id, error });
  }
};

/** The adapter a recorded job runs on, with the credentials it was submitted with. */
export const jobProviderOf = async (
  deps: Deps,
  job: NonNullable<StepItem['providerJob']>,
  connection: () => Promise<TeamConnection | undefined>,
): Promise<JobProvider | undefined> =>
  jobsOf(deps).provider(job.provider, job.credentials === 'team' ? await connection() : undefined);

/** What a check decided about a job, for run-step to apply. */
export type JobVerdict =
  | { kind: 'wait' }
  | { kind: 'succeeded'; output: unknown; usage?: JobUsage | undefined; logs?: string | undefined }
  | { kind: 'failed'; error: string; reason: FailureReason; logs?: string | undefined };

/**
 * Looks at a recorded job: its state at the provider (the truth, whatever a webhook said). Running:
 * past its deadline the job is cancelled and the step fails; otherwise a poll schedules the next.
 * A provider that cannot answer now is asked again at the next poll.
 */
export const lookAtJob = async (
  deps: Deps,
  message: JobStepMessage,
  job: NonNullable<StepItem['providerJob']> & { id: string },
  provider: JobProvider,
  nodeType: string,
): Promise<JobVerdict> => {
  const ref = { id: job.id, model: job.model };
  let state: JobState;
  try {
    state = await provider.get(ref, AbortSignal.timeout(20_000));
  } catch (error) {
    if (!(error instanceof ProviderError)) throw error;
    if (!error.retryable)
      return { kind: 'failed', error: `${nodeType}: ${providerWords(error.message)}`, reason: failureReasonOf(error) };
    state = { status: 'running' };
  }
  if (state.status === 'succeeded')
    return { kind: 'succeeded', output: state.output, usage: state.usage, logs: state.logs };
  // The provider ran the job and it failed there (the model refused or broke on the input).
  if (state.status === 'failed')
    return {
      kind: 'failed',
      error: `${nodeType}: ${providerWords(state.message)}`,
      reason: 'provider_4xx',
      logs: state.logs,
    };
  if (state.status === 'canceled')
    return { kind: 'failed', error: `${nodeType}: cancelled at ${job.provider}`, reason: 'provider_unavailable' };
  if (deps.now().toISOString() >= job.deadlineAt) {
    await cancelQuietly(provider, ref);
    return { kind: 'failed', error: `${nodeType}: ${jobTimedOutMessage(job.provider)}`, reason: 'timeout' };
  }
  if (message.check === 'poll') await schedulePoll(deps, message, (message.poll ?? 0) + 1, job.deadlineAt);
  return { kind: 'wait' };
};

/**
 * The finished job's outputs and its measured work, or the step's failure when they cannot be made
 * (a missing file, a wrong type).
 */
export const jobOutputs = async (
  deps: Deps,
  context: StepContext,
  output: unknown,
  usage?: JobUsage,
): Promise<{ outputs: Record<string, unknown>; work?: ModelWork | undefined } | { error: string }> => {
  try {
    return await jobsOf(deps).outcome(context, output, usage);
  } catch (error) {
    if (error instanceof StepFailedError) return { error: error.message };
    throw error;
  }
};
