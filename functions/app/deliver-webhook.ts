import type { WebhookEvent } from '../../schemas/runs.ts';
import type { Deps } from '../deps.ts';
import {
  maxReplyBytes,
  retryDelaySeconds,
  webhookAttempts,
  webhookHeaders,
  webhookTimeoutMs,
} from '../domain/webhook.ts';
import { type GuardedFetchOptions, guardedFetch } from '../http-client/guarded-fetch.ts';
import { logger } from '../observability/logger.ts';
import { countWebhookAttempt } from '../observability/metrics.ts';
import { redeliverWebhookMessageIn } from '../store/queues.ts';
import { readDeliveryTarget, recordWebhookAttempt } from '../store/webhook-deliveries.ts';
import { readRun } from './read-run.ts';

/**
 * Delivers the run-finished webhook (spec 6): the Run plus `event`, signed, POSTed to the run's
 * callbackUrl through the address guard (no private, loopback, link-local, CGNAT, multicast or
 * metadata address; no redirects; 8 s; the reply read at most 4 KB). A 2xx is success; anything else
 * is retried after 2, 4, 8 and 16 minutes (the message's visibility is moved, since SQS delays stop
 * at 15 minutes), five attempts in all, then the DLQ. Every attempt is logged and recorded.
 */

export interface WebhookOptions {
  fetchOptions: Pick<GuardedFetchOptions, 'allowLoopback' | 'ca' | 'resolve'>;
}

/** One received webhook message: the run and event it names, which attempt this is, and its receipt. */
export interface WebhookDelivery {
  jobId: string;
  event: WebhookEvent;
  /** 1 for the first receive (SQS's ApproximateReceiveCount). */
  attempt: number;
  receiptHandle: string;
}

/** Delivers one message; throws (after moving its visibility) to have SQS retry it. */
export const deliverWebhook = async (deps: Deps, delivery: WebhookDelivery, options: WebhookOptions) => {
  const { jobId, event, attempt } = delivery;
  const target = await readDeliveryTarget(deps, jobId, event);
  if (!target.callbackUrl || target.delivered) return; // nothing to send, or a duplicate message
  const rawBody = JSON.stringify({ ...(await readRun(deps, null, jobId)), event });
  const headers = webhookHeaders({
    jobId,
    event,
    rawBody,
    secret: target.callbackSecret,
    nowSeconds: Math.floor(deps.now().getTime() / 1000),
  });
  const host = new URL(target.callbackUrl).host;
  const started = Date.now();
  let result: string;
  let delivered = false;
  try {
    const response = await guardedFetch(
      target.callbackUrl,
      { method: 'POST', headers, body: rawBody },
      { ...options.fetchOptions, timeoutMs: webhookTimeoutMs, maxBytes: maxReplyBytes, truncate: true },
    );
    delivered = response.status >= 200 && response.status < 300;
    result = `HTTP ${response.status}`;
  } catch (error) {
    result = (error as { code?: string }).code ?? (error as Error).name;
  }
  logger.info('webhook attempt', { jobId, event, attempt, host, result, delivered, ms: Date.now() - started });
  countWebhookAttempt(delivered);
  await recordWebhookAttempt(deps, jobId, event, { delivered, result });
  if (delivered) return;
  const last = attempt >= webhookAttempts;
  if (last) logger.error('webhook failed after every attempt; moving to the DLQ', { jobId, event, host, result });
  await redeliverWebhookMessageIn(deps, delivery.receiptHandle, last ? 0 : retryDelaySeconds(attempt));
  throw new Error(`webhook delivery failed: ${result}`);
};
