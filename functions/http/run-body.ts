/**
 * The bodies of the run starts (POST /workflows/{id}/run, /agents/{id}/run, a batch's items, a
 * resume), read as a start reads them. Apart from functions/http/body.ts, which every function with
 * a JSON body imports, so only the run starts build the run request's schemas.
 */
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import type * as v from 'valibot';
import { BatchEnvelopeSchema, BatchItemTargetSchema, batchMessages } from '../../schemas/batch-request.ts';
import { messages } from '../../schemas/error-messages.ts';
import {
  type ResumeRunRequest,
  ResumeRunRequestSchema,
  type RunRequest,
  RunRequestSchema,
} from '../../schemas/run-request.ts';
import { webhookEventsProblem } from '../../schemas/webhook-events.ts';
import { callbackSecretProblem } from '../../schemas/webhook-secret.ts';
import { CallbackUrlInvalidError, InvalidBodyError, PayloadTooLargeError } from '../errors/table.ts';
import { parseWith, readJsonBody } from './body.ts';

/** Largest accepted run-start body. */
const maxRunBodyBytes = 64 * 1024;

/**
 * `webhookEvents` or `generateCallbackSecret` without a `callbackUrl`, or a secret both given and
 * asked for: a 400 naming the field, as its schema's issues are.
 */
const withWebhookTarget = <
  TRequest extends Parameters<typeof webhookEventsProblem>[0] & Parameters<typeof callbackSecretProblem>[0],
>(
  request: TRequest,
): TRequest => {
  const problem = webhookEventsProblem(request);
  if (problem) throw new InvalidBodyError(`webhookEvents: ${problem}`);
  const secretProblem = callbackSecretProblem(request);
  if (secretProblem) throw new InvalidBodyError(`${secretProblem.field}: ${secretProblem.message}`);
  return request;
};

/**
 * `startBy` bounds the wait of a deferred run or of a run queued behind another: without
 * `defer: true` or `onConflict: "queue"` it would bound nothing, so it is a 400 naming the field.
 */
const withStartByWhereItCounts = (request: RunRequest): RunRequest => {
  if (request.startBy !== undefined && !request.defer && request.onConflict !== 'queue') {
    throw new InvalidBodyError('startBy: needs `defer: true` or `onConflict: "queue"`');
  }
  return request;
};

/**
 * A run start's parsed JSON, read as a start reads it: CallbackUrlInvalidError for callbackUrl (spec
 * 422), InvalidBodyError for any other field. Also each item of a batch (`parseBatchItem`).
 */
export const parseRunBody = (body: unknown): RunRequest =>
  withStartByWhereItCounts(
    withWebhookTarget(
      parseWith(RunRequestSchema, body, { [messages.callbackUrlInvalid]: () => new CallbackUrlInvalidError() }),
    ),
  );

/** The run-start body of a request. */
export const parseRunRequest = (event: APIGatewayProxyEventV2): RunRequest =>
  parseRunBody(readJsonBody(event, { maxBytes: maxRunBodyBytes, emptyAs: {} }));

/**
 * Largest batch body (POST /runs/batch): 100 items of a few KiB each fit; a Lambda request is at
 * most 6 MB, and each item is still held to a single start's 64 KiB (`parseBatchItem`).
 */
const maxBatchBodyBytes = 1024 * 1024;

/** The batch's envelope: `runs`, 1 to 100 items, each left for `parseBatchItem`. */
export const parseBatchRequest = (event: APIGatewayProxyEventV2): unknown[] =>
  parseWith(BatchEnvelopeSchema, readJsonBody(event, { maxBytes: maxBatchBodyBytes })).runs;

/** What a batch item names besides its run start's body: the workflow or agent, and its own Idempotency-Key. */
export type BatchItemTarget = v.InferOutput<typeof BatchItemTargetSchema>;

/**
 * One item of a batch, read as its single start reads its body (the same 413, 400s and 422), with
 * its target (exactly one of `workflowId` and `agentId`) and its optional `idempotencyKey`.
 */
export const parseBatchItem = (item: unknown): { target: BatchItemTarget; request: RunRequest } => {
  if (Buffer.byteLength(JSON.stringify(item)) > maxRunBodyBytes) throw new PayloadTooLargeError(maxRunBodyBytes);
  // Not an object: refused as a start refuses such a body.
  if (item === null || typeof item !== 'object' || Array.isArray(item))
    return { target: {}, request: parseRunBody(item) };
  const { workflowId, agentId, idempotencyKey, ...body } = item as Record<string, unknown>;
  // The rest is exactly a run start's body, read by its own rules, first (as a start reads its body before its path).
  const request = parseRunBody(body);
  const target = parseWith(BatchItemTargetSchema, { workflowId, agentId, idempotencyKey });
  if ((target.workflowId === undefined) === (target.agentId === undefined)) {
    throw new InvalidBodyError(`workflowId: ${batchMessages.target}`);
  }
  return { target, request };
};

/** The resume body (POST /runs/{jobId}/resume): the run start's fields it takes, read as a run start reads them. */
export const parseResumeRequest = (event: APIGatewayProxyEventV2): ResumeRunRequest =>
  withWebhookTarget(
    parseWith(ResumeRunRequestSchema, readJsonBody(event, { maxBytes: maxRunBodyBytes, emptyAs: {} }), {
      [messages.callbackUrlInvalid]: () => new CallbackUrlInvalidError(),
    }),
  );
