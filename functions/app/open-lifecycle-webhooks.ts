import type { DynamoDBRecord } from 'aws-lambda';
import type { Deps } from '../deps.ts';
import { logger } from '../observability/logger.ts';
import { lifecycleChangeOf, openLifecycleDelivery, reopenableDelivery } from '../store/lifecycle-webhook-deliveries.ts';
import { sendWebhookMessage } from '../store/queues.ts';
import { itemChangeOf } from '../store/stream-images.ts';
import { type EndpointCache, fanOutToEndpoints } from './endpoint-fanout.ts';
import { handleStreamInOrder } from './stream-batch.ts';

/** What one batch of the table's changes gave. */
export interface OpenedWebhooksReport {
  /** Deliveries opened, each with its first message sent. */
  opened: number;
  /** Events whose delivery was opened and attempted already (a change handed over again): nothing sent. */
  duplicates: number;
  /** Events opened before and never attempted (a consumer died before its send): sent now. */
  resent: number;
  /** Step events past the run's cap: nothing written, nothing sent. */
  capped: number;
  /** Deliveries opened for the team's webhook endpoints (functions/app/endpoint-fanout.ts). */
  endpointDeliveries: number;
  /**
   * Sequence numbers of the changes to hand over again: the first that failed and every change
   * after it (Lambda restarts a stream batch from the lowest one reported).
   */
  failed: string[];
  errors: string[];
}

type Outcome = 'opened' | 'duplicate' | 'resent' | 'capped' | 'none';

/** One change's lifecycle webhook event: its delivery opened (once) and its first message sent. */
const openRecordWebhook = async (deps: Deps, record: DynamoDBRecord): Promise<Outcome> => {
  const change = lifecycleChangeOf(itemChangeOf(record), deps.now(), deps.retentionDays);
  if (!change) return 'none';
  const { jobId, ref } = change;
  const opened = await openLifecycleDelivery(deps, jobId, ref, change.expiresAt);
  if (opened === 'capped') {
    logger.info('step event past the run cap; not sent', { jobId, webhookEvent: ref.event, nodeId: ref.nodeId });
  }
  if (opened !== 'opened' && opened !== 'unsent') return opened;
  try {
    // An unsent one's first message may be out after all: the worker's first attempt is
    // recorded once, so at worst it is POSTed twice, and receivers drop the copy by webhook-id.
    await sendWebhookMessage(deps, { jobId, ...ref }, 0);
  } catch (error) {
    if (opened === 'opened') await reopenableDelivery(deps, jobId, ref);
    throw error;
  }
  return opened === 'opened' ? 'opened' : 'resent';
};

/**
 * The lifecycle webhook events of a batch of the table's changes, in stream order: for
 * each change that gives one (functions/store/lifecycle-webhook-deliveries.ts `lifecycleChangeOf`), opens
 * its delivery (once; a step event only below the run's cap) and sends its first message to the
 * webhooks queue, where the webhook worker delivers it as it delivers a run's end. A failure stops
 * the batch there (`handleStreamInOrder`), so the stream hands that change and the ones after it
 * over again; a delivery whose message could not be sent is taken back first, so the retry opens
 * it anew. A change handed over again whose delivery was opened but never attempted (this function
 * died between its write and its send, and Lambda retried the batch) sends its message again.
 */
export const openLifecycleWebhooks = async (
  deps: Deps,
  records: readonly DynamoDBRecord[],
): Promise<OpenedWebhooksReport> => {
  const endpoints: EndpointCache = new Map();
  let endpointDeliveries = 0;
  const { results, failed, error } = await handleStreamInOrder(records, async (record) => {
    const outcome = await openRecordWebhook(deps, record);
    endpointDeliveries += await fanOutToEndpoints(deps, record, endpoints);
    return outcome;
  });
  const count = (outcome: Outcome) => results.filter((result) => result === outcome).length;
  if (error) logger.warn('lifecycle event not handled; the stream hands it over again', { error });
  return {
    opened: count('opened'),
    duplicates: count('duplicate'),
    resent: count('resent'),
    capped: count('capped'),
    endpointDeliveries,
    failed,
    errors: error ? [error.name || 'Error'] : [],
  };
};
