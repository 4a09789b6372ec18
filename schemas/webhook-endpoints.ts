/**
 * A team's webhook endpoints (our design): every matching event of every run of the team, sent to
 * each endpoint that asks for it, Standard Webhooks signed, retried for a day, with a delivery log per
 * endpoint. POST/GET /webhook-endpoints, GET/PATCH/DELETE /webhook-endpoints/{endpointId}, its
 * rotate-secret and test, its deliveries and their redelivery. Responses use `v.strictObject`.
 */
import * as v from 'valibot';
import { DateTimeSchema, notArray, UuidSchema } from './common.ts';
import { WebhookAttemptSchema } from './deliveries.ts';
import { webhookEndpointMessages } from './error-messages.ts';
import { jsonResponse, type OperationSpec, ref, uuidPath } from './openapi-parts.ts';
import { TagSchema } from './run-tags.ts';
import { runEvents } from './webhook-events.ts';

/** The refusal of an endpoint's URL: one text whatever the reason, so it tells nothing of how we resolve. */
export const endpointUrlInvalidMessage = 'url must be a public https:// URL';

/** Most workflows, tags and events an endpoint's filters name. */
const maxFilterEntries = 50;

const EndpointUrlSchema = v.pipe(
  v.string(endpointUrlInvalidMessage),
  v.maxLength(2048, endpointUrlInvalidMessage),
  v.url(endpointUrlInvalidMessage),
  v.startsWith('https://', endpointUrlInvalidMessage),
  v.description(
    'Where the events are POSTed: https, and no private, loopback, link-local, CGNAT, multicast or metadata ' +
      'address (checked here for an address written in the URL, and at each delivery for what the name resolves ' +
      'to); redirects are not followed.',
  ),
);

const EndpointEventsSchema = v.pipe(
  v.array(v.picklist(runEvents)),
  v.minLength(1, 'choose at least one event'),
  v.maxLength(runEvents.length),
  v.check((events) => new Set(events).size === events.length, 'an event is given at most once'),
  v.metadata({ uniqueItems: true }),
  v.description(
    "The run events the endpoint hears, of every run of the team its filters pass. Step events are a run's own " +
      '(`webhookEvents` with its `callbackUrl`).',
  ),
);

const WorkflowFilterSchema = v.pipe(
  v.array(UuidSchema),
  v.maxLength(maxFilterEntries),
  v.description('Only runs of these workflows; absent or empty: every workflow.'),
);
const TagFilterSchema = v.pipe(
  v.array(TagSchema),
  v.maxLength(maxFilterEntries),
  v.description('Only runs with one of these tags at least; absent or empty: any run.'),
);
const DescriptionSchema = v.pipe(v.string(), v.minLength(1), v.maxLength(500));

/** Body of POST /webhook-endpoints. */
export const CreateEndpointRequestSchema = notArray(
  v.object({
    url: EndpointUrlSchema,
    events: EndpointEventsSchema,
    workflowIds: v.optional(WorkflowFilterSchema),
    tags: v.optional(TagFilterSchema),
    description: v.optional(DescriptionSchema),
  }),
);
export type CreateEndpointRequest = v.InferOutput<typeof CreateEndpointRequestSchema>;

/** Body of PATCH /webhook-endpoints/{endpointId}: the fields to change, at least one. */
export const UpdateEndpointRequestSchema = notArray(
  v.pipe(
    v.object({
      url: v.optional(EndpointUrlSchema),
      events: v.optional(EndpointEventsSchema),
      workflowIds: v.optional(WorkflowFilterSchema),
      tags: v.optional(TagFilterSchema),
      description: v.optional(DescriptionSchema),
      /** `true` stops deliveries; `false` resumes them (and forgets the failures that disabled it). */
      disabled: v.optional(v.boolean()),
    }),
    v.check((body) => Object.keys(body).length > 0, 'give at least one field to change'),
  ),
);
export type UpdateEndpointRequest = v.InferOutput<typeof UpdateEndpointRequestSchema>;

/** An endpoint as read: never its secret. */
export const WebhookEndpointSchema = v.strictObject({
  endpointId: UuidSchema,
  url: v.string(),
  events: v.array(v.picklist(runEvents)),
  workflowIds: v.array(UuidSchema),
  tags: v.array(v.string()),
  description: v.nullable(v.string()),
  disabled: v.boolean(),
  /** Why it is disabled: `requested` (a PATCH) or `failing` (every attempt failed for 5 days); null when enabled. */
  disabledReason: v.nullable(v.picklist(['requested', 'failing'])),
  /** Since when every attempt failed; null while the last attempt was delivered (or none failed). */
  failingSince: v.nullable(DateTimeSchema),
  /** Until when the secret before the last rotation still signs beside the current one; null when none does. */
  previousSecretExpiresAt: v.nullable(DateTimeSchema),
  createdAt: DateTimeSchema,
  updatedAt: DateTimeSchema,
});
export type WebhookEndpoint = v.InferOutput<typeof WebhookEndpointSchema>;

/** 201 of POST /webhook-endpoints, and 200 of its rotate-secret: the endpoint and its secret, shown this once. */
export const WebhookEndpointWithSecretSchema = v.strictObject({
  ...WebhookEndpointSchema.entries,
  /** `whsec_` and the base64 of 32 random bytes: the `standardwebhooks` libraries take it as it is. */
  secret: v.string(),
});
export type WebhookEndpointWithSecret = v.InferOutput<typeof WebhookEndpointWithSecretSchema>;

/** 200 of GET /webhook-endpoints. */
export const WebhookEndpointListSchema = v.strictObject({ endpoints: v.array(WebhookEndpointSchema) });
export type WebhookEndpointList = v.InferOutput<typeof WebhookEndpointListSchema>;

/** The delivery states of an endpoint's delivery. */
export const endpointDeliveryStates = ['pending', 'delivered', 'failed'] as const;

/** One delivery of the endpoint's log. */
export const EndpointDeliverySchema = v.strictObject({
  deliveryId: UuidSchema,
  /** The `webhook-id` of every attempt of it: receivers deduplicate on it. */
  webhookId: v.string(),
  event: v.picklist([...runEvents, 'ping']),
  /** The run it is about; null for a `ping`. */
  jobId: v.nullable(UuidSchema),
  /** The step of a step event; null otherwise. */
  nodeId: v.nullable(v.string()),
  state: v.picklist(endpointDeliveryStates),
  attempts: v.pipe(v.number(), v.integer(), v.minValue(0)),
  nextAttemptAt: v.nullable(DateTimeSchema),
  createdAt: DateTimeSchema,
  /** The latest attempts (5 at most), newest first. */
  deliveries: v.array(WebhookAttemptSchema),
});
export type EndpointDelivery = v.InferOutput<typeof EndpointDeliverySchema>;

/** 200 of GET /webhook-endpoints/{endpointId}/deliveries: newest first. */
export const EndpointDeliveryListSchema = v.strictObject({
  endpointId: UuidSchema,
  deliveries: v.array(EndpointDeliverySchema),
  /** Pass as `cursor` for the next page; null on the last. */
  nextCursor: v.nullable(v.string()),
});
export type EndpointDeliveryList = v.InferOutput<typeof EndpointDeliveryListSchema>;

/** 202 of the test and of a redelivery: one attempt is queued. */
export const EndpointDeliveryQueuedSchema = v.strictObject({
  endpointId: UuidSchema,
  deliveryId: UuidSchema,
  webhookId: v.string(),
  state: v.literal('pending'),
});
export type EndpointDeliveryQueued = v.InferOutput<typeof EndpointDeliveryQueuedSchema>;

/** The body of a `ping`. */
export const PingBodySchema = v.strictObject({
  event: v.literal('ping'),
  endpointId: UuidSchema,
  sentAt: DateTimeSchema,
});

/** 404 of the routes under /webhook-endpoints/{endpointId}: unknown, or another team's (the same answer). */
export const WebhookEndpointNotFoundErrorSchema = v.strictObject({
  error: v.literal(webhookEndpointMessages.notFound),
});
/** 404 of a redelivery naming no delivery of the endpoint. */
export const WebhookDeliveryNotFoundErrorSchema = v.strictObject({
  error: v.literal(webhookEndpointMessages.deliveryNotFound),
});
/** 409 of POST /webhook-endpoints: the team keeps its most endpoints already. */
export const TooManyWebhookEndpointsErrorSchema = v.strictObject({
  error: v.literal(webhookEndpointMessages.tooMany),
  maxEndpoints: v.number(),
});

export const webhookEndpointComponents = {
  CreateWebhookEndpointRequest: CreateEndpointRequestSchema,
  UpdateWebhookEndpointRequest: UpdateEndpointRequestSchema,
  WebhookEndpoint: WebhookEndpointSchema,
  WebhookEndpointWithSecret: WebhookEndpointWithSecretSchema,
  WebhookEndpointList: WebhookEndpointListSchema,
  EndpointDelivery: EndpointDeliverySchema,
  EndpointDeliveryList: EndpointDeliveryListSchema,
  EndpointDeliveryQueued: EndpointDeliveryQueuedSchema,
  WebhookEndpointNotFoundError: WebhookEndpointNotFoundErrorSchema,
  WebhookDeliveryNotFoundError: WebhookDeliveryNotFoundErrorSchema,
  TooManyWebhookEndpointsError: TooManyWebhookEndpointsErrorSchema,
};

const endpointPath = uuidPath('endpointId', 'The `endpointId` returned when the endpoint was created.');
const noEndpoint = "No such endpoint in the key's team.";
const tag = 'Webhook endpoints';

export const webhookEndpointOperations: OperationSpec[] = [
  {
    operationId: 'CreateWebhookEndpoint',
    tag,
    summary: 'Create a webhook endpoint',
    description:
      "Every event it names, of every run of the team its filters pass, is POSTed to `url`, Standard Webhooks signed with the endpoint's secret (answered here once), each delivery with its own `webhook-id`, retried for 27 hours. At most 20 endpoints a team.",
    requestBody: {
      required: true,
      content: { 'application/json': { schema: ref('CreateWebhookEndpointRequest') } },
    },
    responses: {
      201: jsonResponse('The endpoint, with its secret: shown this once.', 'WebhookEndpointWithSecret'),
      500: jsonResponse('Server failure.', 'ServerError'),
    },
    errorWords: {
      400: 'A field is missing or invalid, or `url` is not a public https URL.',
      413: 'The body is over 16 KB.',
      403: 'The key lacks the scope, or is limited to some workflows and the filter names none or another.',
      409: 'The team has 20 endpoints already.',
    },
  },
  {
    operationId: 'ListWebhookEndpoints',
    tag,
    summary: "List the team's webhook endpoints",
    description: 'Every endpoint of the team (20 at most), oldest first; never a secret.',
    responses: { 200: jsonResponse("The team's endpoints.", 'WebhookEndpointList') },
  },
  {
    operationId: 'GetWebhookEndpoint',
    tag,
    summary: 'Get a webhook endpoint',
    description: 'The endpoint, its filters and whether it is disabled (and why); never its secret.',
    parameters: [endpointPath],
    responses: { 200: jsonResponse('The endpoint.', 'WebhookEndpoint') },
    errorWords: { 404: noEndpoint },
  },
  {
    operationId: 'UpdateWebhookEndpoint',
    tag,
    summary: 'Change a webhook endpoint',
    description:
      'Changes the fields given. `disabled: true` stops its deliveries (those due end `failed`); `disabled: false` ' +
      'resumes them for the events that come after, and forgets the failures that disabled it.',
    parameters: [endpointPath],
    requestBody: {
      required: true,
      content: { 'application/json': { schema: ref('UpdateWebhookEndpointRequest') } },
    },
    responses: {
      200: jsonResponse('The endpoint as changed.', 'WebhookEndpoint'),
      500: jsonResponse('Server failure.', 'ServerError'),
    },
    errorWords: {
      404: noEndpoint,
      400: 'No field to change, a field is invalid, or `url` is not a public https URL.',
      413: 'The body is over 16 KB.',
    },
  },
  {
    operationId: 'DeleteWebhookEndpoint',
    tag,
    summary: 'Delete a webhook endpoint',
    description: 'Deletes it: no delivery is attempted after; its delivery log expires with the runs.',
    parameters: [endpointPath],
    responses: { 200: jsonResponse('The endpoint as it was.', 'WebhookEndpoint') },
    errorWords: { 404: noEndpoint },
  },
  {
    operationId: 'RotateWebhookEndpointSecret',
    tag,
    summary: "Rotate a webhook endpoint's secret",
    description:
      'Issues a new secret, answered here once. For 24 hours the secret it replaces signs beside it: each ' +
      '`webhook-signature` carries both signatures, space-separated, so a receiver verifies with either while it ' +
      'changes over.',
    parameters: [endpointPath],
    responses: {
      200: jsonResponse('The endpoint, with its new secret: shown this once.', 'WebhookEndpointWithSecret'),
      500: jsonResponse('Server failure.', 'ServerError'),
    },
    errorWords: { 404: noEndpoint },
  },
  {
    operationId: 'TestWebhookEndpoint',
    tag,
    summary: 'Send a test event to a webhook endpoint',
    description:
      'Queues a signed `ping` (`{"event":"ping","endpointId","sentAt"}`), delivered and logged as any event, ' +
      'without retries.',
    parameters: [endpointPath],
    responses: {
      202: jsonResponse('The ping is queued.', 'EndpointDeliveryQueued'),
      500: jsonResponse('Server failure.', 'ServerError'),
    },
    errorWords: { 404: noEndpoint },
  },
  {
    operationId: 'ListWebhookEndpointDeliveries',
    tag,
    summary: "List a webhook endpoint's deliveries",
    description:
      'The delivery log, newest first, 50 a page: each delivery with its event, its run (and step), its state ' +
      'and its latest attempts (5 at most). Kept as long as the runs they are about.',
    parameters: [
      endpointPath,
      {
        name: 'cursor',
        in: 'query',
        required: false,
        description: 'The `nextCursor` of the page before.',
        schema: v.string(),
      },
    ],
    responses: { 200: jsonResponse('A page of the log.', 'EndpointDeliveryList') },
    errorWords: { 404: noEndpoint, 400: '`cursor` was not issued for this log.' },
  },
  {
    operationId: 'RedeliverWebhookEndpointDelivery',
    tag,
    summary: 'Redeliver one delivery of a webhook endpoint',
    description:
      'Queues one new attempt of the delivery, with its `webhook-id`, numbered after the last. A single attempt: ' +
      'no retries follow it. Refused while the delivery is pending.',
    parameters: [endpointPath, uuidPath('deliveryId', 'The `deliveryId` of the delivery log.')],
    responses: {
      202: jsonResponse('One attempt is queued.', 'EndpointDeliveryQueued'),
      500: jsonResponse('Server failure.', 'ServerError'),
    },
    errorWords: {
      404: "No such endpoint in the key's team, or no such delivery of it.",
      409: 'The delivery is pending: an attempt is due or a redelivery is queued.',
    },
  },
];
