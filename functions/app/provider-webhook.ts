/**
 * POST /provider-webhooks/{provider}/{jobId}/{nodeId}/{token} (our design): a provider announces
 * that a step's job ended. Nothing in it is believed but the job's identity: the delivery must be
 * signed by the provider (its adapter verifies the signature with the provider's published secret
 * or keys, and a timestamp within 5 minutes), the URL's token must be the one the step's current
 * job was submitted with (only its hash is stored), and the job must be that step's. Then the step
 * is sent a one-off look (`check: 'look'`), which reads the job's state from the provider itself
 * and applies it once: a replayed or duplicated delivery finds the step ended and changes nothing.
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
import { stepKeyPattern } from '../../schemas/workflows.ts';
import type { Deps } from '../deps.ts';
import { webhookTokenMatches } from '../domain/provider-jobs.ts';
import { isInProgress } from '../domain/run-lifecycle.ts';
import { ProviderJobUnknownError, ProviderWebhookRefusedError } from '../errors/table.ts';
import type { JobProvider, ProviderWebhookDelivery, TeamConnection } from '../nodes/providers/types.ts';
import { WebhookRefusedError } from '../nodes/providers/types.ts';
import { logger } from '../observability/logger.ts';
import { getConnections, resolveConnection } from '../store/connections.ts';
import type { StepItem } from '../store/items.ts';
import { readRunItem, readStepItem } from '../store/run/index.ts';
import { sendDelayedStepMessage } from '../store/run/provider-jobs.ts';
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
  let announced: { id: string };
  try {
    announced = await provider.verifyWebhook(request.delivery);
  } catch (error) {
    if (error instanceof WebhookRefusedError) throw new ProviderWebhookRefusedError(key, error.message);
    throw error;
  }
  const job = submission?.job;
  if (run && submission?.current && job?.id === announced.id) {
    if (step?.status === StepStatus.processing || !isInProgress(run.status)) {
      await sendDelayedStepMessage(
        deps,
        { jobId, workflowId: run.workflowId, teamId: run.teamId, nodeId, check: 'look' },
        0,
      );
    }
  } else if (job && !submission?.current && (job.id ?? announced.id) === announced.id) {
    // A job this step replaced with a newer submission: stopped at the provider, never counted.
    logger.warn('provider webhook for a job its step superseded; cancelling it', {
      provider: key,
      providerJobId: announced.id,
    });
    await cancelQuietly(provider, { id: announced.id, model: job.model });
  } else {
    // Genuine, but no submission of this step is this job (or the current one's id is not recorded yet).
    logger.warn('provider webhook for a job no step waits on; ignored', { provider: key, providerJobId: announced.id });
  }
  return { accepted: true };
};
