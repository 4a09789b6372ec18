import type {
  CreateEndpointRequest,
  EndpointDelivery,
  EndpointDeliveryList,
  EndpointDeliveryQueued,
  UpdateEndpointRequest,
  WebhookEndpoint,
  WebhookEndpointList,
  WebhookEndpointWithSecret,
} from '../../schemas/webhook-endpoints.ts';
import { endpointUrlInvalidMessage } from '../../schemas/webhook-endpoints.ts';
import type { Deps } from '../deps.ts';
import { defaultRequestsPerMinute } from '../domain/rate-limit.ts';
import { redeliveryWaitSeconds } from '../domain/redelivery-limits.ts';
import { retentionExpiry } from '../domain/retention.ts';
import { newStandardWebhookSecret } from '../domain/webhook.ts';
import {
  endpointDeliveryId,
  endpointWebhookId,
  isAcceptableEndpointUrl,
  maxEndpointsPerTeam,
  pingEvent,
  secretOverlapMs,
} from '../domain/webhook-endpoints.ts';
import {
  DeliveryPendingError,
  InvalidBodyError,
  InvalidQueryError,
  RateLimitedError,
  TooManyRedeliveriesError,
  TooManyWebhookEndpointsError,
  WebhookDeliveryNotFoundError,
  WebhookEndpointNotFoundError,
  WorkflowNotPermittedError,
} from '../errors/table.ts';
import type { ApiKeyItem } from '../store/items/api-keys.ts';
import type { EndpointDeliveryItem, WebhookEndpointItem } from '../store/items/webhook-endpoints.ts';
import { sendEndpointMessage } from '../store/queues.ts';
import { admitRequest } from '../store/rate-counter.ts';
import {
  deleteEndpoint,
  listEndpointDeliveries,
  listEndpoints,
  markEndpointRedelivery,
  openEndpointDelivery,
  putEndpoint,
  readEndpoint,
  readEndpointDelivery,
  rotateEndpointSecret,
  unmarkEndpointRedelivery,
  updateEndpoint,
} from '../store/webhook-endpoints.ts';

/**
 * A team's webhook endpoints (schemas/webhook-endpoints.ts). A key limited to some workflows sees
 * and changes only the endpoints whose workflow filter lies within its workflows, and creates only
 * such; any other endpoint reads as missing (404), as another team's does.
 */

/** An endpoint's body is a URL and a few filters: 16 KB is far above any. */
export const maxEndpointBodyBytes = 16 * 1024;

interface Caller {
  teamId: string;
  keyId?: string;
  key: Pick<ApiKeyItem, 'workflowIds' | 'rateLimitPerMinute'>;
}

/**
 * A POST the service makes for the caller (a test's ping, a redelivery) counts once more against
 * the key's requests per minute, as a run's redelivery does: the key's outbound bodies stay within
 * its rate.
 */
const admitOutboundPost = async (deps: Deps, caller: Caller) => {
  if (caller.keyId === undefined) return;
  const limit = caller.key.rateLimitPerMinute ?? defaultRequestsPerMinute;
  const admitted = await admitRequest(deps, caller.keyId, deps.now().getTime(), limit);
  if (!admitted.allowed) throw new RateLimitedError(admitted.retryAfterSeconds);
};

const keySees = (caller: Caller, endpoint: Pick<WebhookEndpointItem, 'workflowIds'>): boolean => {
  const limited = caller.key.workflowIds ?? [];
  if (limited.length === 0) return true;
  const filter = endpoint.workflowIds ?? [];
  return filter.length > 0 && filter.every((id) => limited.includes(id));
};

/** The endpoint as the caller may see it, or WebhookEndpointNotFoundError. */
const visibleEndpoint = async (deps: Deps, caller: Caller, endpointId: string): Promise<WebhookEndpointItem> => {
  const endpoint = await readEndpoint(deps, caller.teamId, endpointId);
  if (!endpoint || !keySees(caller, endpoint)) throw new WebhookEndpointNotFoundError(endpointId);
  return endpoint;
};

/** Local development's receivers listen on loopback (`deps.allowLoopback`, ALLOW_PRIVATE_CALLBACKS), as callbacks' do. */
const checkUrl = (deps: Deps, url: string | undefined) => {
  if (url !== undefined && !isAcceptableEndpointUrl(url, { allowLoopback: deps.allowLoopback === true }))
    throw new InvalidBodyError(`url: ${endpointUrlInvalidMessage}`);
};

/** The endpoint as answered: never its secrets. */
export const endpointView = (endpoint: WebhookEndpointItem, now: Date): WebhookEndpoint => {
  const overlapping =
    endpoint.previousSecretUntil !== undefined && Date.parse(endpoint.previousSecretUntil) > now.getTime();
  return {
    endpointId: endpoint.endpointId,
    url: endpoint.url,
    events: endpoint.events as WebhookEndpoint['events'],
    workflowIds: endpoint.workflowIds ?? [],
    tags: endpoint.tags ?? [],
    description: endpoint.description ?? null,
    disabled: endpoint.disabled,
    disabledReason: endpoint.disabled ? (endpoint.disabledReason ?? 'requested') : null,
    failingSince: endpoint.failingSince ?? null,
    previousSecretExpiresAt: overlapping ? (endpoint.previousSecretUntil ?? null) : null,
    createdAt: endpoint.createdAt,
    updatedAt: endpoint.updatedAt,
  };
};

export const createEndpoint = async (
  deps: Deps,
  caller: Caller,
  request: CreateEndpointRequest,
): Promise<WebhookEndpointWithSecret> => {
  checkUrl(deps, request.url);
  const limited = caller.key.workflowIds ?? [];
  if (limited.length > 0) {
    const outside = (request.workflowIds ?? []).find((id) => !limited.includes(id));
    if (outside !== undefined || (request.workflowIds ?? []).length === 0) {
      throw new WorkflowNotPermittedError(outside ?? '(every workflow)');
    }
  }
  const now = deps.now().toISOString();
  const endpoint: WebhookEndpointItem = {
    endpointId: deps.newId(),
    teamId: caller.teamId,
    url: request.url,
    events: [...new Set(request.events)],
    ...(request.workflowIds?.length ? { workflowIds: [...new Set(request.workflowIds)] } : {}),
    ...(request.tags?.length ? { tags: [...new Set(request.tags)] } : {}),
    ...(request.description !== undefined && { description: request.description }),
    secret: newStandardWebhookSecret(),
    disabled: false,
    createdAt: now,
    updatedAt: now,
  };
  if (!(await putEndpoint(deps, endpoint, maxEndpointsPerTeam))) {
    throw new TooManyWebhookEndpointsError(maxEndpointsPerTeam);
  }
  return { ...endpointView(endpoint, deps.now()), secret: endpoint.secret };
};

export const listTeamEndpoints = async (deps: Deps, caller: Caller): Promise<WebhookEndpointList> => {
  const now = deps.now();
  const endpoints = await listEndpoints(deps, caller.teamId);
  return { endpoints: endpoints.filter((e) => keySees(caller, e)).map((e) => endpointView(e, now)) };
};

export const getEndpoint = async (deps: Deps, caller: Caller, endpointId: string): Promise<WebhookEndpoint> =>
  endpointView(await visibleEndpoint(deps, caller, endpointId), deps.now());

export const changeEndpoint = async (
  deps: Deps,
  caller: Caller,
  endpointId: string,
  request: UpdateEndpointRequest,
): Promise<WebhookEndpoint> => {
  checkUrl(deps, request.url);
  await visibleEndpoint(deps, caller, endpointId);
  if (request.workflowIds !== undefined && !keySees(caller, { workflowIds: request.workflowIds })) {
    throw new InvalidBodyError('workflowIds: a key limited to some workflows filters on some of them only');
  }
  const updated = await updateEndpoint(deps, caller.teamId, endpointId, request);
  if (!updated) throw new WebhookEndpointNotFoundError(endpointId);
  return endpointView(updated, deps.now());
};

export const removeEndpoint = async (deps: Deps, caller: Caller, endpointId: string): Promise<WebhookEndpoint> => {
  const endpoint = await visibleEndpoint(deps, caller, endpointId);
  if (!(await deleteEndpoint(deps, endpoint))) throw new WebhookEndpointNotFoundError(endpointId);
  return endpointView(endpoint, deps.now());
};

export const rotateSecret = async (
  deps: Deps,
  caller: Caller,
  endpointId: string,
): Promise<WebhookEndpointWithSecret> => {
  const endpoint = await visibleEndpoint(deps, caller, endpointId);
  const secret = newStandardWebhookSecret();
  const until = new Date(deps.now().getTime() + secretOverlapMs).toISOString();
  const rotated = await rotateEndpointSecret(deps, endpoint, secret, until);
  // Refused: deleted meanwhile, or another rotation got there first (its secret is the one answered to it).
  if (!rotated) throw new WebhookEndpointNotFoundError(endpointId);
  return { ...endpointView(rotated, deps.now()), secret };
};

const queued = (endpointId: string, deliveryId: string): EndpointDeliveryQueued => ({
  endpointId,
  deliveryId,
  webhookId: endpointWebhookId(deliveryId),
  state: 'pending',
});

/** Queues a signed `ping` to the endpoint: one attempt, logged as any delivery. */
export const testEndpoint = async (deps: Deps, caller: Caller, endpointId: string): Promise<EndpointDeliveryQueued> => {
  const endpoint = await visibleEndpoint(deps, caller, endpointId);
  await admitOutboundPost(deps, caller);
  const now = deps.now();
  const deliveryId = endpointDeliveryId(now.getTime(), deps.newId());
  await openEndpointDelivery(deps, {
    deliveryId,
    endpointId,
    teamId: endpoint.teamId,
    event: pingEvent,
    createdAt: now.toISOString(),
    single: true,
    expiresAt: retentionExpiry(now, deps.retentionDays),
  });
  await sendEndpointMessage(deps, { teamId: endpoint.teamId, endpointId, deliveryId, attempt: 1 }, 0);
  return queued(endpointId, deliveryId);
};

/** One delivery as the log shows it (its attempts newest first, each URL as scheme and host). */
export const endpointDeliveryView = (delivery: EndpointDeliveryItem): EndpointDelivery => ({
  deliveryId: delivery.deliveryId,
  webhookId: endpointWebhookId(delivery.deliveryId),
  event: delivery.event as EndpointDelivery['event'],
  jobId: delivery.jobId ?? null,
  nodeId: null,
  state: delivery.state,
  attempts: delivery.attempts,
  nextAttemptAt: delivery.nextAttemptAt ?? null,
  createdAt: delivery.createdAt,
  deliveries: [...delivery.attemptLog].reverse().map((entry) => ({
    attempt: entry.attempt,
    at: entry.at,
    url: `https://${entry.host}`,
    ...(entry.statusCode !== undefined && { statusCode: entry.statusCode }),
    ...(entry.error !== undefined && { error: entry.error }),
    durationMs: entry.durationMs,
    ...(entry.nextAttemptAt !== undefined && { nextAttemptAt: entry.nextAttemptAt }),
  })),
});

/** Deliveries a page of the log holds. */
export const endpointDeliveriesPage = 50;

const uuidPattern = /^[\da-f]{8}-[\da-f]{4}-[\da-f]{4}-[\da-f]{4}-[\da-f]{12}$/;

export const listDeliveriesOfEndpoint = async (
  deps: Deps,
  caller: Caller,
  endpointId: string,
  cursor: string | undefined,
): Promise<EndpointDeliveryList> => {
  // The cursor is the last deliveryId of the page before: it names nothing outside this endpoint's log.
  if (cursor !== undefined && !uuidPattern.test(cursor)) {
    throw new InvalidQueryError('cursor: the nextCursor of the page before');
  }
  await visibleEndpoint(deps, caller, endpointId);
  const { deliveries, more } = await listEndpointDeliveries(deps, endpointId, {
    limit: endpointDeliveriesPage,
    before: cursor,
  });
  const last = deliveries.at(-1);
  return {
    endpointId,
    deliveries: deliveries.map(endpointDeliveryView),
    nextCursor: more && last ? last.deliveryId : null,
  };
};

/**
 * Queues one more attempt of a delivery (no retry schedule follows it), once a minute at most per
 * delivery; refused while it is pending.
 */
export const redeliverEndpointDelivery = async (
  deps: Deps,
  caller: Caller,
  endpointId: string,
  deliveryId: string,
): Promise<EndpointDeliveryQueued> => {
  const endpoint = await visibleEndpoint(deps, caller, endpointId);
  const delivery = await readEndpointDelivery(deps, endpointId, deliveryId);
  if (!delivery) throw new WebhookDeliveryNotFoundError(deliveryId);
  if (delivery.state === 'pending') throw new DeliveryPendingError(deliveryId, delivery.nextAttemptAt ?? null);
  const wait = redeliveryWaitSeconds(delivery.lastRedeliveryAt, deps.now());
  if (wait > 0) throw new TooManyRedeliveriesError(wait);
  await admitOutboundPost(deps, caller);
  if (!(await markEndpointRedelivery(deps, delivery))) throw new DeliveryPendingError(deliveryId, null);
  try {
    await sendEndpointMessage(
      deps,
      { teamId: endpoint.teamId, endpointId, deliveryId, attempt: delivery.attempts + 1 },
      0,
    );
  } catch (error) {
    await unmarkEndpointRedelivery(deps, { ...delivery, state: delivery.state });
    throw error;
  }
  return queued(endpointId, deliveryId);
};
