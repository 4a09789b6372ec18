import type { DeferredRun } from '../../schemas/deferred-runs.ts';
import type { Deps } from '../deps.ts';
import { keyMayUseWorkflow } from '../domain/key-workflows.ts';
import { DeferredRunNotFoundError, DeferredRunNotWaitingError } from '../errors/table.ts';
import { cancelWaitingDeferredRun, getDeferredRun } from '../store/deferred-runs.ts';
import { deferredView } from '../store/deferred-view.ts';
import type { DeferredRunItem } from '../store/items/deferred-runs.ts';
import type { Lister } from './list-runs.ts';

/** A deferred run of the caller's team; one of a workflow the key is not limited to reads as missing, as in the list. */
const visibleDeferredRun = async (deps: Deps, caller: Lister, deferredJobId: string): Promise<DeferredRunItem> => {
  const record = await getDeferredRun(deps, caller.teamId, deferredJobId);
  if (!keyMayUseWorkflow(caller.workflowIds, record.workflowId)) throw new DeferredRunNotFoundError(deferredJobId);
  return record;
};

/** GET /deferred-runs/{id} (spec 4.6). */
export const readDeferredRun = async (deps: Deps, caller: Lister, deferredJobId: string): Promise<DeferredRun> =>
  deferredView(await visibleDeferredRun(deps, caller, deferredJobId));

/**
 * DELETE /deferred-runs/{id} (our design): a `waiting` deferred run becomes `cancelled`; one that
 * left `waiting` (even while this cancel ran) is a 409. Its lifetime is functions/domain/deferred-run-lifetime.ts.
 */
export const cancelDeferredRun = async (deps: Deps, caller: Lister, deferredJobId: string): Promise<DeferredRun> => {
  const record = await visibleDeferredRun(deps, caller, deferredJobId);
  if (record.status !== 'waiting') throw new DeferredRunNotWaitingError(deferredJobId);
  const cancelled = await cancelWaitingDeferredRun(deps, deferredJobId);
  if (!cancelled) throw new DeferredRunNotWaitingError(deferredJobId);
  return deferredView(cancelled);
};
