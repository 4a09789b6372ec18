import * as v from 'valibot';
import { UuidSchema } from '../../schemas/common.ts';
import type { ListDeferredRunsResponse } from '../../schemas/deferred-runs.ts';
import { runLabels, runTagLimits, TagSchema, tagCharacters } from '../../schemas/run-tags.ts';
import { deferredRunStatuses, listedRunStatuses, listPageLimits } from '../../schemas/run-words.ts';
import type { ListRunsResponse, RunSummary } from '../../schemas/runs.ts';
import type { Deps } from '../deps.ts';
import { toCredits } from '../domain/credits.ts';
import { type ListCursorScope, openCursor, signCursor } from '../domain/cursor.ts';
import { keyMayUseWorkflow } from '../domain/key-workflows.ts';
import { listedStatus } from '../domain/run-lifecycle.ts';
import { InvalidQueryError } from '../errors/table.ts';
import { deferredView } from '../store/deferred-view.ts';
import { DeferredListEntrySchema } from '../store/items/deferred-run-entries.ts';
import { parseItem } from '../store/items/item.ts';
import { RunListEntrySchema } from '../store/items/runs.ts';
import {
  cursorSigningSecret,
  queryRunList,
  queryRunTagPage,
  type RunListPage,
  type RunListQuery,
} from '../store/run-list.ts';

/** The query string of GET /runs and GET /deferred-runs, as API Gateway passes it (absent when empty). */
export type ListQueryString = Record<string, string | undefined> | undefined;

/** Who lists: the key's team, and the workflows the key is limited to (empty: all of them). */
export interface Lister {
  teamId: string;
  workflowIds: readonly string[];
}

interface ListParams {
  workflowId: string | null;
  status: string | null;
  limit: number;
  cursor: string | null;
  /** GET /runs only: the runs started with this tag. */
  tag: string | null;
  /** GET /runs only: the runs started by this batch (POST /runs/batch). */
  batchId: string | null;
}

/** A list's `limit`, checked (InvalidQueryError), or the default: every paged list takes it so. */
export const pageLimit = (limit: string | undefined): number => {
  if (limit !== undefined && (!/^[1-9][0-9]{0,2}$/.test(limit) || Number(limit) > listPageLimits.max)) {
    throw new InvalidQueryError(`limit must be a whole number from 1 to ${listPageLimits.max}`);
  }
  return limit === undefined ? listPageLimits.default : Number(limit);
};

/** The parameters, checked: InvalidQueryError names the one at fault and what it takes. */
const listParams = (query: ListQueryString, statuses: readonly string[], takesTag: boolean): ListParams => {
  const { workflowId, status, limit, cursor } = query ?? {};
  // The deferred runs' list ignores `tag`, as it does any parameter it does not take.
  const tag = takesTag ? (query?.tag ?? null) : null;
  if (tag !== null && !v.is(TagSchema, tag)) {
    throw new InvalidQueryError(`tag must be 1 to ${runTagLimits.tagLength} characters: ${tagCharacters}`);
  }
  const batchId = takesTag ? (query?.batchId?.toLowerCase() ?? null) : null;
  if (batchId !== null && !v.is(UuidSchema, batchId)) throw new InvalidQueryError('batchId must be a uuid');
  // Each is a list of its own (its own partition): one at a time.
  if (batchId !== null && tag !== null) throw new InvalidQueryError('batchId and tag cannot be combined');
  // Ids are written in lower case; one spelling, so a cursor's filters compare equal.
  const workflow = workflowId === undefined ? null : workflowId.toLowerCase();
  if (workflow !== null && !v.is(UuidSchema, workflow)) throw new InvalidQueryError('workflowId must be a uuid');
  if (status !== undefined && !statuses.includes(status)) {
    throw new InvalidQueryError(`status must be one of ${statuses.join(', ')}`);
  }
  const size = pageLimit(limit);
  return { workflowId: workflow, status: status ?? null, limit: size, cursor: cursor ?? null, tag, batchId };
};

/** The read of one page, given its checked filters: the list's index, or (runs only) a tag's items. */
type PageRead = (
  filters: Omit<RunListQuery, 'list'> & { tag: string | null; batchId: string | null },
) => Promise<RunListPage>;

/**
 * One page of the team's runs or deferred runs, newest first: the entries the page's one Query
 * kept, and the cursor of the next page (null on the last). A key limited to workflows sees only
 * theirs (the Query filters on them); asked for another workflow, it gets an empty last page.
 * `read` is passed in, so the deferred runs' list (and its bundle) never holds the tag's read.
 */
const listPage = async (
  deps: Deps,
  lister: Lister,
  list: ListCursorScope['list'],
  query: ListQueryString,
  statuses: readonly string[],
  read: PageRead,
) => {
  const params = listParams(query, statuses, list === 'runs');
  const scope: ListCursorScope = {
    list,
    teamId: lister.teamId,
    workflowId: params.workflowId,
    status: params.status,
    runTag: params.tag,
    batchId: params.batchId,
  };
  const secret = await cursorSigningSecret(deps);
  const startKey = params.cursor === null ? null : openCursor(secret, scope, params.cursor);
  const limited = lister.workflowIds.length > 0;
  if (params.workflowId !== null && !keyMayUseWorkflow(lister.workflowIds, params.workflowId)) {
    return { entries: [], nextCursor: null };
  }
  const workflowIds = params.workflowId !== null ? [params.workflowId] : limited ? lister.workflowIds : null;
  const page = await read({
    teamId: lister.teamId,
    workflowIds,
    status: params.status,
    limit: params.limit,
    startKey,
    tag: params.tag,
    batchId: params.batchId,
  });
  return { entries: page.entries, nextCursor: page.lastKey ? signCursor(secret, scope, page.lastKey) : null };
};

/** A run's summary from its list entry: amounts in credits, the charge once it ended. */
const runSummary = (item: Record<string, unknown>): RunSummary => {
  const entry = parseItem(RunListEntrySchema, item);
  return {
    jobId: entry.jobId,
    workflowId: entry.workflowId,
    status: listedStatus(entry.status),
    mode: entry.mode,
    createdAt: entry.createdAt,
    endedAt: entry.endedAt ?? null,
    estimatedCredits: toCredits(entry.estimateHundredths),
    chargedCredits: entry.finalChargedHundredths === undefined ? null : toCredits(entry.finalChargedHundredths),
    deferredJobId: entry.deferredJobId ?? null,
    ...runLabels(entry),
    ...(entry.resumedFrom !== undefined && { resumedFrom: entry.resumedFrom }),
  };
};

/** GET /runs: the team's runs, newest first, as summaries. */
export const listRuns = async (deps: Deps, lister: Lister, query: ListQueryString): Promise<ListRunsResponse> => {
  const page = await listPage(deps, lister, 'runs', query, listedRunStatuses, ({ tag, batchId, ...filters }) =>
    tag !== null
      ? queryRunTagPage(deps, { ...filters, tag })
      : batchId !== null
        ? queryRunTagPage(deps, { ...filters, batchId })
        : queryRunList(deps, { list: 'runs', ...filters }),
  );
  return { runs: page.entries.map(runSummary), nextCursor: page.nextCursor };
};

/** GET /deferred-runs: the team's deferred runs, newest first, each as GET /deferred-runs/{id} answers it. */
export const listDeferredRuns = async (
  deps: Deps,
  lister: Lister,
  query: ListQueryString,
): Promise<ListDeferredRunsResponse> => {
  const page = await listPage(
    deps,
    lister,
    'deferred-runs',
    query,
    deferredRunStatuses,
    ({ tag: _t, batchId: _b, ...filters }) => queryRunList(deps, { list: 'deferred-runs', ...filters }),
  );
  return {
    deferredRuns: page.entries.map((item) => deferredView(parseItem(DeferredListEntrySchema, item))),
    nextCursor: page.nextCursor,
  };
};
