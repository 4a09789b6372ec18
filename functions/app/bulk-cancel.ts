import * as v from 'valibot';
import { RunStatus, type StoredRunStatus } from '../../platform/run-statuses.ts';
import type { BulkAction, BulkCancelRequest } from '../../schemas/bulk-actions.ts';
import { UuidSchema } from '../../schemas/common.ts';
import type { Deps } from '../deps.ts';
import {
  bulkCancelPageSize,
  bulkCancelTargetLanes,
  bulkTargetLeaseSeconds,
  wantedStatuses,
} from '../domain/bulk-cancel.ts';
import { keyMayUseWorkflow } from '../domain/key-workflows.ts';
import { retentionExpiry } from '../domain/retention.ts';
import { listedStatus } from '../domain/run-lifecycle.ts';
import { BulkActionNotFoundError, DeferredRunNotFoundError, DeferredRunNotWaitingError } from '../errors/table.ts';
import { logger } from '../observability/logger.ts';
import { batchGet } from '../store/batch.ts';
import {
  advanceBulkPage,
  finishBulkAction,
  type PageCounts,
  putBulkAction,
  readBulkAction,
  sendBulkPageMessage,
  settleTarget,
  takenTargets,
  takeUpTarget,
} from '../store/bulk-actions.ts';
import { getDeferredRun } from '../store/deferred-runs.ts';
import type { BulkActionItem, BulkOutcome } from '../store/items/bulk-actions.ts';
import { DeferredListEntrySchema } from '../store/items/deferred-run-entries.ts';
import { parseItem } from '../store/items/item.ts';
import { deferredRunKey, runKey } from '../store/keys.ts';
import { readRunItem } from '../store/run/index.ts';
import { queryRunList, queryRunTagPage, type RunListPage } from '../store/run-list.ts';
import { cancelForCaller } from './cancel-run.ts';
import { cancelDeferredRun } from './deferred-runs.ts';

/** Where a page starts: its phase (the ids named, the waiting deferred runs, the runs) and its start key. */
const PagePositionSchema = v.object({
  phase: v.picklist(['ids', 'deferred', 'runs']),
  startKey: v.nullable(v.record(v.string(), v.string())),
});
type PagePosition = v.InferOutput<typeof PagePositionSchema>;

/** One page of a bulk cancel, a message of the steps queue (the step executor runs it). */
export const BulkCancelMessageSchema = v.object({
  kind: v.literal('bulkCancel'),
  bulkActionId: v.string(),
  teamId: v.string(),
  /** The page's number: the action's `page` while it is the page to run. */
  page: v.number(),
  ...PagePositionSchema.entries,
});
export type BulkCancelMessage = v.InferOutput<typeof BulkCancelMessageSchema>;

/** Who asks: the key's team, its id, and the workflows it is limited to (empty: all of them). */
export interface BulkCaller {
  teamId: string;
  keyId: string;
  workflowIds: readonly string[];
}

/** A run or a deferred run the action took up; `target` names its marker. */
type Target = { kind: 'run'; jobId: string } | { kind: 'deferred'; deferredJobId: string };
const targetName = (target: Target) =>
  target.kind === 'run' ? `RUN#${target.jobId}` : `DEFERRED#${target.deferredJobId}`;

const view = (item: BulkActionItem): BulkAction => ({
  bulkActionId: item.bulkActionId,
  action: item.action,
  status: item.status,
  matched: item.matched,
  cancelled: item.cancelled,
  skipped: item.skipped,
  failed: item.failed,
  createdAt: item.createdAt,
  finishedAt: item.finishedAt ?? null,
});

/**
 * POST /runs/cancel (our design): the action is written `running`, then its first page's message
 * sent; the step executor cancels a page of runs a message (`runBulkCancelPage`). A run named twice
 * is refused by the body's schema; an id that is no run of the team is counted `skipped`.
 */
export const startBulkCancel = async (
  deps: Deps,
  caller: BulkCaller,
  request: BulkCancelRequest,
): Promise<{ bulkActionId: string }> => {
  const bulkActionId = deps.newId();
  const now = deps.now();
  const { jobIds, filter } = request;
  await putBulkAction(deps, {
    bulkActionId,
    teamId: caller.teamId,
    keyId: caller.keyId,
    action: 'cancel',
    status: 'running',
    ...(jobIds ? { jobIds: jobIds.map((id) => id.toLowerCase()) } : { filter }),
    workflowIds: [...caller.workflowIds],
    matched: 0,
    cancelled: 0,
    skipped: 0,
    failed: 0,
    page: 0,
    createdAt: now.toISOString(),
    ttl: retentionExpiry(now, deps.retentionDays),
  });
  const first: PagePosition = {
    phase: jobIds ? 'ids' : wantedStatuses(filter?.status).includes('queued') ? 'deferred' : 'runs',
    startKey: null,
  };
  await sendBulkPageMessage(deps, caller.teamId, pageMessage(bulkActionId, caller.teamId, 0, first));
  return { bulkActionId };
};

const pageMessage = (bulkActionId: string, teamId: string, page: number, at: PagePosition): BulkCancelMessage => ({
  kind: 'bulkCancel',
  bulkActionId,
  teamId,
  page,
  ...at,
});

/** GET /bulk-actions/{bulkActionId}: another team's reads as missing. */
export const getBulkAction = async (deps: Deps, teamId: string, bulkActionId: string): Promise<BulkAction> => {
  // Not an id this API gives (a key too long for DynamoDB among them): no read, as for any unknown id.
  if (!v.is(UuidSchema, bulkActionId)) throw new BulkActionNotFoundError(bulkActionId);
  const item = await readBulkAction(deps, bulkActionId.toLowerCase());
  if (!item || item.teamId !== teamId) throw new BulkActionNotFoundError(bulkActionId);
  return view(item);
};

/** The workflows a filter's page reads: its `workflowId` (when the key may use it), or the key's, or any. */
const workflowsOf = (action: BulkActionItem): readonly string[] | null | 'none' => {
  const workflowId = action.filter?.workflowId;
  if (workflowId !== undefined) return keyMayUseWorkflow(action.workflowIds, workflowId) ? [workflowId] : 'none';
  return action.workflowIds.length > 0 ? action.workflowIds : null;
};

const BatchAttributeSchema = v.object({ batchId: v.optional(v.string()) });
const DeferredTagsSchema = v.object({
  batchId: v.optional(v.string()),
  request: v.object({ tags: v.optional(v.array(v.string())) }),
});

/** The next page's position after `page` of `phase`, or null when it was the last. */
const after = (phase: PagePosition['phase'], page: RunListPage): PagePosition | null => {
  if (page.lastKey) return { phase, startKey: page.lastKey as Record<string, string> };
  return phase === 'deferred' ? { phase: 'runs', startKey: null } : null;
};

/** A run or deferred run a page read, and whether its status is one the filter names now. */
interface Candidate {
  target: Target;
  wanted: boolean;
}

/**
 * One page of a filter's candidates: a Query of the team's deferred runs or of its runs (the tag's
 * partition with `tag`), those its other fields match kept. The Query does not filter on the
 * status: a page read again must find the runs its first delivery cancelled, to count them.
 * `batchId` is an attribute of the run item, which no index projects: the page's runs are read
 * (one BatchGetItem) and kept when theirs is the filter's; a deferred run's tags are in its
 * request, read the same way.
 */
const filterPage = async (
  deps: Deps,
  action: BulkActionItem,
  at: PagePosition,
): Promise<{ candidates: Candidate[]; next: PagePosition | null }> => {
  const filter = action.filter ?? {};
  const workflowIds = workflowsOf(action);
  if (workflowIds === 'none') return { candidates: [], next: null };
  const statuses: readonly string[] = wantedStatuses(filter.status);
  const query = { teamId: action.teamId, workflowIds, limit: bulkCancelPageSize, startKey: at.startKey, status: null };
  if (at.phase === 'deferred') {
    const page = await queryRunList(deps, { list: 'deferred-runs', ...query });
    let entries = page.entries.map((entry) => parseItem(DeferredListEntrySchema, entry));
    if ((filter.tag !== undefined || filter.batchId !== undefined) && entries.length > 0) {
      const items = await batchGet(
        deps,
        entries.map((entry) => deferredRunKey(entry.deferredJobId)),
        { consistent: false },
      );
      entries = entries.filter((entry) => {
        const key = deferredRunKey(entry.deferredJobId);
        const item = items.get(`${key.PK}|${key.SK}`);
        if (!item) return false;
        const { batchId, request } = v.parse(DeferredTagsSchema, item);
        return (
          (filter.tag === undefined || (request.tags ?? []).includes(filter.tag)) &&
          (filter.batchId === undefined || batchId === filter.batchId)
        );
      });
    }
    return {
      candidates: entries.map((entry) => ({
        target: { kind: 'deferred', deferredJobId: entry.deferredJobId },
        wanted: entry.status === 'waiting',
      })),
      next: after('deferred', page),
    };
  }
  const page =
    filter.tag === undefined
      ? await queryRunList(deps, { list: 'runs', ...query })
      : await queryRunTagPage(deps, { ...query, tag: filter.tag });
  let entries = page.entries.map((entry) => ({
    jobId: String(entry.jobId),
    wanted: statuses.includes(listedStatus(entry.status as StoredRunStatus)),
  }));
  if (filter.batchId !== undefined && entries.length > 0) {
    const items = await batchGet(
      deps,
      entries.map((entry) => runKey(entry.jobId)),
      { attributes: ['PK', 'SK', 'batchId'], consistent: false },
    );
    entries = entries.filter((entry) => {
      const item = items.get(`${runKey(entry.jobId).PK}|${runKey(entry.jobId).SK}`);
      return item !== undefined && v.parse(BatchAttributeSchema, item).batchId === filter.batchId;
    });
  }
  return {
    candidates: entries.map((entry) => ({ target: { kind: 'run', jobId: entry.jobId }, wanted: entry.wanted })),
    next: after('runs', page),
  };
};

/** The page's targets: its candidates of a status the filter names, and those an earlier delivery took up. */
const pageTargets = async (deps: Deps, action: BulkActionItem, candidates: readonly Candidate[]) => {
  const taken = await takenTargets(
    deps,
    action.bulkActionId,
    candidates.map((candidate) => targetName(candidate.target)),
  );
  return candidates
    .filter((candidate) => candidate.wanted || taken.has(targetName(candidate.target)))
    .map((candidate) => candidate.target);
};

/**
 * Whether a target an earlier delivery of this action took up at `takenAt` (and stopped before
 * settling) was ended by a cancel since: that delivery's, as far as anyone can tell. One that had
 * ended before it was taken up is not.
 */
const endedByCancelSince = async (deps: Deps, action: BulkActionItem, target: Target, takenAt: string) => {
  if (target.kind === 'run') {
    const run = await readRunItem(deps, target.jobId);
    const byCancel = run?.status === RunStatus.cancelled || run?.status === RunStatus.stopped;
    return byCancel && (run?.endedAt ?? '') >= takenAt;
  }
  try {
    const deferred = await getDeferredRun(deps, action.teamId, target.deferredJobId);
    return deferred.status === 'cancelled' && (deferred.movedAt ?? '') >= takenAt;
  } catch (error) {
    if (error instanceof DeferredRunNotFoundError) return false;
    throw error;
  }
};

/**
 * The target cancelled by the ordinary rules: POST /runs/{jobId}/cancel's, DELETE /deferred-runs/{id}'s.
 * `resumedFrom`: when an earlier delivery took it up, if one did.
 */
const cancelTarget = async (
  deps: Deps,
  action: BulkActionItem,
  target: Target,
  resumedFrom: string | undefined,
): Promise<BulkOutcome> => {
  const earlier = async () =>
    resumedFrom !== undefined && (await endedByCancelSince(deps, action, target, resumedFrom))
      ? 'cancelled'
      : 'skipped';
  if (target.kind === 'run') {
    return (await cancelForCaller(deps, action.teamId, target.jobId, action.workflowIds)) ? 'cancelled' : earlier();
  }
  try {
    await cancelDeferredRun(deps, { teamId: action.teamId, workflowIds: action.workflowIds }, target.deferredJobId);
    return 'cancelled';
  } catch (error) {
    if (error instanceof DeferredRunNotWaitingError || error instanceof DeferredRunNotFoundError) return earlier();
    throw error;
  }
};

/**
 * One target, settled once: its marker is taken up (`pending`, leased to this delivery), the target
 * cancelled, then the marker settled with the outcome. A marker settled already (its page came
 * again) answers its outcome; one left `pending` by a delivery that stopped (its lease ran out) is
 * cancelled again, and a run that ended by a cancel since it was taken up counts as this action's
 * (that delivery's cancel). One leased to a live delivery makes this one fail: its page comes again
 * later. A cancel that keeps failing counts `failed`.
 */
const settleOne = async (deps: Deps, action: BulkActionItem, target: Target): Promise<BulkOutcome> => {
  const name = targetName(target);
  const until = new Date(deps.now().getTime() + bulkTargetLeaseSeconds * 1000).toISOString();
  const taken = await takeUpTarget(deps, action.bulkActionId, name, action.ttl, until);
  if (taken.taken !== 'new' && taken.taken !== 'resumed') return taken.taken;
  let outcome: BulkOutcome;
  try {
    outcome = await cancelTarget(deps, action, target, taken.taken === 'resumed' ? taken.takenAt : undefined);
  } catch (error) {
    logger.warn('a bulk cancel could not cancel a run', { bulkActionId: action.bulkActionId, target: name, error });
    outcome = 'failed';
  }
  return settleTarget(deps, action.bulkActionId, name, outcome);
};

/**
 * Runs `each` over `items`, `lanes` at a time. After a failure no lane takes another item; it throws
 * once every lane has stopped, so nothing of the page runs on after its delivery failed.
 */
const inLanes = async <T>(items: readonly T[], lanes: number, each: (item: T) => Promise<void>) => {
  let next = 0;
  let failure: { error: unknown } | undefined;
  const lane = async () => {
    while (next < items.length && failure === undefined) {
      const item = items[next++] as T;
      try {
        await each(item);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(lanes, items.length) }, lane));
  if (failure) throw failure.error;
};

/**
 * A page's message (the step executor). The page the action stands at is run: its targets cancelled
 * and settled (each once, however often the page comes), then the page's counts added by the one
 * update that moves the action to the next page (and that page's message sent) or, after the last,
 * makes it `done`. A message of a page the action has
 * left is a duplicate and does nothing, unless it is a redelivery (`receiveCount` over 1) of the page
 * just left: its first delivery may have stopped between moving the action and sending the next
 * message, so it sends that message again (a duplicate of it, if it had been sent, does nothing).
 */
export const runBulkCancelPage = async (deps: Deps, message: BulkCancelMessage, receiveCount: number) => {
  const action = await readBulkAction(deps, message.bulkActionId);
  if (!action || action.status === 'done') return;
  if (action.page !== message.page) {
    if (receiveCount > 1 && action.page === message.page + 1 && action.next !== undefined) {
      const next = v.parse(PagePositionSchema, JSON.parse(action.next));
      await sendBulkPageMessage(
        deps,
        action.teamId,
        pageMessage(action.bulkActionId, action.teamId, action.page, next),
      );
    }
    return;
  }
  const { candidates, next } =
    message.phase === 'ids'
      ? {
          candidates: (action.jobIds ?? []).map(
            (jobId): Candidate => ({ target: { kind: 'run', jobId }, wanted: true }),
          ),
          next: null,
        }
      : await filterPage(deps, action, message);
  const targets = await pageTargets(deps, action, candidates);
  const counts: PageCounts = { matched: targets.length, cancelled: 0, skipped: 0, failed: 0 };
  await inLanes(targets, bulkCancelTargetLanes, async (target) => {
    counts[await settleOne(deps, action, target)] += 1;
  });
  if (next === null) {
    await finishBulkAction(deps, action.bulkActionId, message.page, counts);
    return;
  }
  if (await advanceBulkPage(deps, action.bulkActionId, message.page, counts, JSON.stringify(next))) {
    await sendBulkPageMessage(
      deps,
      action.teamId,
      pageMessage(action.bulkActionId, action.teamId, message.page + 1, next),
    );
  }
};
