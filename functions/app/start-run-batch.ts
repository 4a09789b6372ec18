import { createHash } from 'node:crypto';
import pMap from 'p-map';
import { routeKeyOf } from '../../platform/edge.ts';
import { type RouteId, routeById } from '../../platform/routes.ts';
import type { RunRequest } from '../../schemas/run-request.ts';
import type { Deps } from '../deps.ts';
import {
  idempotencyKeyHash,
  type RequestTarget,
  rememberedUntil,
  replayOf,
  requestFingerprint,
} from '../domain/idempotency-key.ts';
import { findIdempotentAnswer, rememberAnswer } from '../store/idempotency.ts';
import type { ApiKeyItem } from '../store/items/api-keys.ts';
import { type RunStart, type RunStartAnswer, startAgentRun, startWorkflowRun } from './start-run.ts';

/**
 * Items started at once. Every accepted item's transaction writes the team's balance item, and
 * DynamoDB refuses a transaction on an item another one is writing (TransactionConflict, retried
 * with backoff): past a handful, more width buys retries, not speed. Five starts of ~50 ms each end
 * a batch of 100 in about a second, far inside the route's 10 s.
 */
export const batchConcurrency = 5;

/** An item as the edge read it: its target and run start, or the error reading it met (that item's answer). */
export type BatchItem =
  | {
      target: { workflowId?: string | undefined; agentId?: string | undefined; idempotencyKey?: string | undefined };
      request: RunRequest;
    }
  | { refused: unknown };

/** What one item came to: its single start's answer, or the error its single start would have answered. */
export type ItemOutcome = { answer: RunStartAnswer } | { error: unknown };

/** One item's answer as the caller reads it: the status and body its single start would have answered. */
export interface ItemResult {
  index: number;
  status: number;
  body: unknown;
}

export interface BatchAnswer {
  batchId: string;
  results: ItemResult[];
}

/** Where a batch is sent: its fingerprint's target, and the single starts' targets its items stand for. */
const targetOf = (route: RouteId, id?: string): RequestTarget => ({
  routeKey: routeKeyOf(routeById(route)),
  pathParameters: id === undefined ? undefined : { id },
});

/**
 * The batch id a batch with an Idempotency-Key gets: derived from the key (a uuid's shape), so a
 * retry after a batch cut off midway gives its items the same `batchId` as the runs already started.
 */
const batchIdFor = (keyId: string, keyHash: string): string => {
  const hex = createHash('sha256').update(`batch\n${keyId}\n${keyHash}`).digest('hex');
  const variant = ((Number.parseInt(hex.slice(16, 17), 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
};

/**
 * One item: its single start (functions/app/start-run.ts), with the batch's id. Without a key of its
 * own, an item of a batch that has one is keyed `<batch key>#<index>`: a retry of a batch cut off
 * before its answer was remembered starts no item twice.
 */
const startItem = async (
  deps: Deps,
  key: ApiKeyItem,
  item: BatchItem,
  where: { index: number; batchId: string; batchKey: string | undefined },
): Promise<ItemOutcome> => {
  if ('refused' in item) return { error: item.refused };
  const { workflowId, agentId, idempotencyKey } = item.target;
  const own = idempotencyKey ?? (where.batchKey === undefined ? undefined : `${where.batchKey}#${where.index}`);
  try {
    if (workflowId !== undefined) {
      const start: RunStart = {
        request: item.request,
        idempotencyKey: own,
        target: targetOf('RunWorkflow', workflowId),
        batchId: where.batchId,
      };
      return { answer: await startWorkflowRun(deps, key, start, workflowId) };
    }
    const id = agentId ?? '';
    const start: RunStart = {
      request: item.request,
      idempotencyKey: own,
      target: targetOf('RunAgent', id),
      batchId: where.batchId,
    };
    return { answer: await startAgentRun(deps, key, start, id) };
  } catch (error) {
    return { error };
  }
};

/**
 * POST /runs/batch: each item started as its single start, a few at a time (`batchConcurrency`), its
 * answer in its place; one item's refusal stops none. `answerItem` is the HTTP edge's: the status and
 * body a single start answers. An Idempotency-Key on the batch replays the whole answer (the
 * Idempotency-Key rule, functions/domain/idempotency-key.ts, over the batch's body), remembered once
 * every item is done.
 */
export const startRunBatch = async (
  deps: Deps,
  key: ApiKeyItem,
  batch: { items: BatchItem[]; idempotencyKey: string | undefined; body: unknown },
  answerItem: (outcome: ItemOutcome) => Promise<Omit<ItemResult, 'index'>>,
): Promise<BatchAnswer> => {
  const keyHash = batch.idempotencyKey === undefined ? null : idempotencyKeyHash(batch.idempotencyKey);
  const requestHash = requestFingerprint(targetOf('StartRunBatch'), batch.body);
  const remembered = async (): Promise<BatchAnswer | undefined> => {
    const previous = keyHash ? await findIdempotentAnswer(deps, key.keyId, keyHash) : undefined;
    const answer = previous && { requestHash: previous.requestHash, answer: previous.response.body as BatchAnswer };
    return replayOf(answer, requestHash);
  };
  const earlier = await remembered();
  if (earlier) return earlier;
  const batchId = keyHash ? batchIdFor(key.keyId, keyHash) : deps.newId();
  const where = { batchId, batchKey: batch.idempotencyKey };
  const results = await pMap(
    batch.items,
    async (item, index) => ({ index, ...(await answerItem(await startItem(deps, key, item, { ...where, index }))) }),
    { concurrency: batchConcurrency },
  );
  const answer: BatchAnswer = { batchId, results };
  if (keyHash === null) return answer;
  const record = {
    keyHash,
    requestHash,
    response: { body: answer },
    expiresAt: rememberedUntil(deps.now(), deps.retentionDays),
  };
  if (await rememberAnswer(deps, key.keyId, record)) return answer;
  // The same batch, sent twice at once, was remembered first: both answer as it did (their items were the same starts).
  return (await remembered()) ?? answer;
};
