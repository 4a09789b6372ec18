import type { DynamoDBRecord } from 'aws-lambda';
import type { Deps } from '../deps.ts';
import { endpointDeliveryId, endpointHears } from '../domain/webhook-endpoints.ts';
import type { WebhookEndpointItem } from '../store/items/webhook-endpoints.ts';
import { sendEndpointMessage } from '../store/queues.ts';
import { itemChangeOf } from '../store/stream-images.ts';
import { listEndpoints, openEndpointDelivery, runEventChangeOf } from '../store/webhook-endpoints.ts';

/** The team's endpoints, read once per batch of the stream (a team's runs come in runs of changes). */
export type EndpointCache = Map<string, Promise<WebhookEndpointItem[]>>;

/**
 * The team's webhook endpoints' share of one change of the table (the lifecycle webhooks' consumer
 * calls it for every change its mapping passes): a run's start or end opens one delivery for each
 * endpoint of the run's team that hears it (functions/domain/webhook-endpoints.ts `endpointHears`)
 * and queues its first attempt. Opening is once per endpoint and event (the delivery's id is derived
 * from them), so a change handed over again sends nothing new. Returns the deliveries opened.
 */
export const fanOutToEndpoints = async (deps: Deps, record: DynamoDBRecord, cache: EndpointCache): Promise<number> => {
  const change = runEventChangeOf(itemChangeOf(record), deps.now(), deps.retentionDays);
  if (!change) return 0;
  let endpoints = cache.get(change.teamId);
  if (!endpoints) {
    endpoints = listEndpoints(deps, change.teamId);
    cache.set(change.teamId, endpoints);
  }
  const hearing = (await endpoints).filter((endpoint) => endpointHears(endpoint, change));
  let opened = 0;
  for (const endpoint of hearing) {
    const deliveryId = endpointDeliveryId(change.atMs, `${endpoint.endpointId}:${change.jobId}:${change.event}`);
    const fresh = await openEndpointDelivery(deps, {
      deliveryId,
      endpointId: endpoint.endpointId,
      teamId: change.teamId,
      event: change.event,
      jobId: change.jobId,
      createdAt: new Date(change.atMs).toISOString(),
      expiresAt: change.expiresAt,
    });
    if (!fresh) continue;
    await sendEndpointMessage(
      deps,
      { teamId: change.teamId, endpointId: endpoint.endpointId, deliveryId, attempt: 1 },
      0,
    );
    opened += 1;
  }
  return opened;
};
