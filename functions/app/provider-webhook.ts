/**
 * POST /provider-webhooks/{provider}/{jobId}/{nodeId}/{token} (our design): a provider announces
 * that a step's job ended. Nothing in it is believed but the job's identity: the delivery must be
 * signed by the provider (its adapter verifies the signature with the provider's published secret
 * or keys, and a timestamp within 5 minutes), the URL's token must be the one the step's current
 * job was submitted with (only its hash is stored), and the job must be that step's. Then the step
 * is sent a one-off look (`check: 'look'`), which reads the job's state from the provider itself
 * and applies it once: a replayed or duplicated delivery finds the step ended and changes nothing.
 *
 * A delivery under the token of the step's current submission whose id was never recorded (a fast
 * job, or a worker that died between the submit and its record) records that id, so the step waits
 * on that job and is not submitted again. A delivery under the token of a submission a newer claim
 * superseded before its id was recorded, announcing a usable end while the step still waits,
 * adopts that job and cancels the newer one: the provider is not paid for the same work twice
 * (fal cannot list requests, so a takeover cannot find such a job before it ends).
 *
 * A delivery only names a job, so it never decides what is cancelled. The one job a verified
 * delivery stops is one the step itself recorded as superseded (`supersededJobs`: a later claim
 * replaced the claim that submitted it) and whose token the URL carries: the job of that id, or,
 * for a submission whose id was never recorded, the job its provider announces under that
 * submission's token. Any other verified delivery (another job, another token, no such run) is
 * answered 2xx and changes nothing: Replicate sends a final webhook again on a 4xx or 5xx.
 */
import * as v from 'valibot';
import { StepStatus } from '../../platform/run-statuses.ts';
import { UuidSchema } from '../../schemas/common.ts';
import { stepKeyPattern } from '../../schemas/workflow-words.ts';
import type { Deps } from '../deps.ts';
import { webhookTokenMatches } from '../domain/provider-jobs.ts';
import { isInProgress } from '../domain/run-lifecycle.ts';
import { ProviderJobUnknownError, ProviderWebhookRefusedError } from '../errors/table.ts';
import type { JobProvider, JobState, ProviderWebhookDelivery, TeamConnection } from '../nodes/providers/types.ts';
import { WebhookRefusedError } from '../nodes/providers/types.ts';
import { logger } from '../observability/logger.ts';
import { getConnections, resolveConnection } from '../store/connections.ts';
import type { StepItem } from '../store/items/runs.ts';
import { readRunItem, readStepItem } from '../store/run/index.ts';
import { adoptSupersededJob, recordJobSubmitted, sendDelayedStepMessage } from '../store/run/provider-jobs.ts';
import { cancelQuietly } from './provider-job.ts';

/** The adapter of a provider on the stage's key, or a team's own (a connection named by the provider). */
export type JobProviderLookup = (
  key: string,
  connection: TeamConnection | undefined,
) => Promise<JobProvider | undefined>;

export interface ProviderWebhookRequest {
  provider: string;
  jobId: string;
  nodeId: string;
  token: string;
  delivery: ProviderWebhookDelivery;
}

type ProviderJob = NonNullable<StepItem['providerJob']>;

/** The step's own submission the URL's token belongs to: its current job, or one it recorded as superseded. */
const submissionOfToken = (
  step: Pick<StepItem, 'providerJob' | 'supersededJobs'> | undefined,
  provider: string,
  token: string,
): { job: ProviderJob; current: boolean } | undefined => {
  const current = step?.providerJob;
  if (current?.provider === provider && webhookTokenMatches(token, current.tokenHash))
    return { job: current, current: true };
  const superseded = step?.supersededJobs?.find(
    (j) => j.provider === provider && webhookTokenMatches(token, j.tokenHash),
  );
  return superseded && { job: superseded, current: false };
};

/**
 * Whether a superseded submission's announced job can take its newer claim's place: its id was
 * never recorded, it came before the claim that superseded it (not a newer job moved aside by an
 * adoption), its end is usable (not failed or cancelled), and the step still waits, on the same
 * provider and key, under a running run.
 */
const adoptable = (
  run: { status: string },
  step: Pick<StepItem, 'status' | 'attempts' | 'providerJob'>,
  orphan: ProviderJob,
  state: JobState,
) => {
  const current = step.providerJob;
  return (
    orphan.id === undefined &&
    isInProgress(run.status) &&
    step.status === StepStatus.processing &&
    current !== undefined &&
    current.attempt === step.attempts &&
    orphan.attempt < current.attempt &&
    current.provider === orphan.provider &&
    current.credentials === orphan.credentials &&
    (state.status === 'succeeded' || state.status === 'running')
  );
};

export const receiveProviderWebhook = async (
  deps: Deps,
  providers: JobProviderLookup,
  request: ProviderWebhookRequest,
): Promise<{ accepted: true }> => {
  const { provider: key, jobId, nodeId, token } = request;
  // A run id that is not a uuid, or a step key no workflow can have, names no step: nothing is read.
  if (!v.is(UuidSchema, jobId) || !stepKeyPattern.test(nodeId))
    throw new ProviderJobUnknownError(key, '(no such step)');
  const run = await readRunItem(deps, jobId);
  const step = run ? await readStepItem(deps, jobId, nodeId) : undefined;
  const submission = submissionOfToken(step, key, token);
  // The signature is checked with the key the job ran on: the team's own, or the stage's.
  let connection: TeamConnection | undefined;
  if (submission?.job.credentials === 'team' && run) {
    const refs = await getConnections(deps, run.teamId);
    connection = await resolveConnection(deps.secrets, key, refs[key]);
  }
  const provider = await providers(key, connection);
  if (!provider) throw new ProviderJobUnknownError(key, '(provider not configured)');
  let announced: { id: string; state: JobState };
  try {
    announced = await provider.verifyWebhook(request.delivery);
  } catch (error) {
    if (error instanceof WebhookRefusedError) throw new ProviderWebhookRefusedError(key, error.message);
    throw error;
  }
  const job = submission?.job;
  const look = (teamId: string, workflowId: string) =>
    sendDelayedStepMessage(deps, { jobId, workflowId, teamId, nodeId, check: 'look' }, 0);
  if (run && step && job && submission?.current && job.id === undefined) {
    // The step's own intent, its id not recorded yet: a job that ended before its worker recorded
    // it, or whose worker died after the submit. Recorded from here, so it is waited on (and the
    // guard of that submit finds it recorded instead of submitting again).
    const recorded = await recordJobSubmitted(deps, jobId, nodeId, { ...job, id: announced.id });
    if (recorded) {
      logger.info('provider job recorded from its webhook', { provider: key, providerJobId: announced.id });
      await look(run.teamId, run.workflowId);
    }
  } else if (run && submission?.current && job?.id === announced.id) {
    if (step?.status === StepStatus.processing || !isInProgress(run.status)) await look(run.teamId, run.workflowId);
  } else if (run && step && job && adoptable(run, step, job, announced.state)) {
    // A submission a newer claim superseded before its id was recorded (its worker died): its job
    // ran anyway and announces a usable end. That work is used; the newer job is cancelled.
    const replaced = step.providerJob;
    if (await adoptSupersededJob(deps, jobId, nodeId, step, job, announced.id)) {
      logger.warn('unrecorded provider job adopted; the newer one cancelled', {
        provider: key,
        providerJobId: announced.id,
        cancelledJobId: replaced?.id,
      });
      if (replaced?.id !== undefined) await cancelQuietly(provider, { id: replaced.id, model: replaced.model });
      await look(run.teamId, run.workflowId);
    }
  } else if (job && !submission?.current && (job.id ?? announced.id) === announced.id) {
    // A job this step replaced with a newer submission: stopped at the provider, never counted.
    logger.warn('provider webhook for a job its step superseded; cancelling it', {
      provider: key,
      providerJobId: announced.id,
    });
    await cancelQuietly(provider, { id: announced.id, model: job.model });
  } else {
    // Genuine, but no submission of this step is this job.
    logger.warn('provider webhook for a job no step waits on; ignored', { provider: key, providerJobId: announced.id });
  }
  return { accepted: true };
};
