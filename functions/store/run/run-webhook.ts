import type { EndStatus } from '../../../platform/run-statuses.ts';
import type { Deps } from '../../deps.ts';
import { sendsEvent } from '../../domain/lifecycle-webhooks.ts';
import { webhookEventOfEnd } from '../../domain/webhook.ts';
import { sendWebhookMessage } from '../queues.ts';

/** After a run ended: one delivery job for its webhook, when a callbackUrl was given. */
export const queueWebhook = async (
  deps: Deps,
  run: { jobId: string; callbackUrl?: string | undefined; webhookEvents?: readonly string[] | undefined },
  status: EndStatus,
) => {
  const event = webhookEventOfEnd(status);
  // A run that chose its events is sent its end only when it chose it.
  if (!run.callbackUrl || !sendsEvent(run.webhookEvents, event)) return;
  await sendWebhookMessage(deps, { jobId: run.jobId, event }, 0);
};
