/**
 * POST /provider-webhooks/{provider}/{jobId}/{nodeId}/{token} (our design): a provider announces
 * that a step's job ended. Nothing in it is believed but the job's identity: the delivery must be
 * signed by the provider (its adapter verifies the signature with the provider's published secret
 * or keys, and a timestamp within 5 minutes), the URL's token must be the one the step's current
 * job was submitted with (only its hash is stored), and the job must be that step's. Then the step
 * is sent a one-off look (`check: 'look'`), which reads the job's state from the provider itself
 * and applies it once: a replayed or duplicated delivery finds the step ended and changes nothing.
 *
 * A verified job no step waits on (a stale token: its submitting worker died before recording it,
 * and its step was submitted again) is cancelled at the provider and refused: it is never counted.
 */
import * as v from 'valibot';
import { UuidSchema } from '../../schemas/common.ts';
import { stepKeyPattern } from '../../schemas/workflows.ts';
import type { Deps } from '../deps.ts';
import { webhookTokenMatches } from '../domain/provider-jobs.ts';
import { isInProgress, StepStatus } from '../domain/run-lifecycle.ts';
import { ProviderJobUnknownError, ProviderWebhookRefusedError } from '../errors/table.ts';
import type { JobProvider, ProviderWebhookDelivery, TeamConnection } from '../nodes/providers/types.ts';
import { WebhookRefusedError } from '../nodes/providers/types.ts';
import { logger } from '../observability/logger.ts';
import { getConnections, resolveConnection } from '../store/connections.ts';
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

export const receiveProviderWebhook = async (
  deps: Deps,
  providers: JobProviderLookup,
  request: ProviderWebhookRequest,
): Promise<{ accepted: true }> => {
  const { provider: key, jobId, nodeId, token } = request;
  const unknown = (providerJobId: string) => new ProviderJobUnknownError(key, providerJobId);
  // A run id that is not a uuid, or a step key no workflow can have, names no step: nothing is read.
  if (!v.is(UuidSchema, jobId) || !stepKeyPattern.test(nodeId)) throw unknown('(no such step)');
  const run = await readRunItem(deps, jobId);
  const step = run ? await readStepItem(deps, jobId, nodeId) : undefined;
  const job = step?.providerJob;
  // The signature is checked with the key the job ran on: the team's own, or the stage's.
  let connection: TeamConnection | undefined;
  if (job?.credentials === 'team' && run) {
    const refs = await getConnections(deps, run.teamId);
    connection = await resolveConnection(deps.secrets, key, refs[key]);
  }
  const provider = await providers(key, connection);
  if (!provider) throw unknown('(provider not configured)');
  let announced: { id: string };
  try {
    announced = await provider.verifyWebhook(request.delivery);
  } catch (error) {
    if (error instanceof WebhookRefusedError) throw new ProviderWebhookRefusedError(key, error.message);
    throw error;
  }
  const ours =
    run !== undefined &&
    job !== undefined &&
    job.provider === key &&
    job.id === announced.id &&
    webhookTokenMatches(token, job.tokenHash);
  if (!ours) {
    // Genuine (signed by the provider), but no step waits on it: stop it, never count it.
    logger.warn('provider webhook for a job no step waits on; cancelling it', {
      provider: key,
      providerJobId: announced.id,
    });
    await cancelQuietly(provider, { id: announced.id, model: job?.model ?? '' });
    throw unknown(announced.id);
  }
  if (step?.status === StepStatus.processing || !isInProgress(run.status)) {
    await sendDelayedStepMessage(
      deps,
      { jobId, workflowId: run.workflowId, teamId: run.teamId, nodeId, check: 'look' },
      0,
    );
  }
  return { accepted: true };
};
