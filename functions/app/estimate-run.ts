/**
 * POST /workflows/{id}/estimate and POST /agents/{id}/estimate (our design): what a run start with
 * the same body would hold now, and whether it would be refused, without starting anything. The
 * start's own checks answer (functions/app/start-run.ts: `checkStart`, `admitRun`, `refuseIfBusy`,
 * and the storage quota for its file copies), in the start's order; the first refusal is the
 * answer's `refusal`, never thrown. Nothing is held, written, copied or counted against a cap: the
 * checks only read (an upload whose bytes have arrived is settled, as any read of it does).
 *
 * The workflow is resolved first and its 404s stay 404s; a key limited to other workflows is
 * answered its 403 too, since the estimate itself (steps, prices, licence) would tell it what it may
 * not run. With `defer: true` the answer prices the run at the multiplier it would start at (the
 * first hour whose multiplier reaches `maxMultiplier`, as the multipliers are set now), or at
 * `maxMultiplier` (the most a dispatch can price it at) when no hour of its wait does; a deferred
 * start holds nothing now, so its refusal is only what the deferred start would answer now.
 */

import type { RunRequest } from '../../schemas/run-request.ts';
import type { Deps } from '../deps.ts';
import { deferredExpiresAt } from '../domain/deferred-run-lifetime.ts';
import { type OutputLicence, plannedLicence } from '../domain/licence.ts';
import {
  currentMultiplier,
  deferredStartOf,
  type HourMultiplier,
  nextHourMultipliers,
} from '../domain/price-multiplier.ts';
import type { RunEstimate } from '../domain/pricing.ts';
import { ServiceError } from '../errors/define.ts';
import { StorageBusyError, WorkflowNotPermittedError } from '../errors/table.ts';
import type { ApiKeyItem } from '../store/items/api-keys.ts';
import { getPriceSettings } from '../store/price-multiplier.ts';
import { loadAgentWorkflow, loadRunnableWorkflow, type RunnableWorkflow } from '../store/run/workflow-loads.ts';
import { checkRoomForInputs } from './run-inputs.ts';
import { startEstimate, startNowMultiplier } from './start-estimate.ts';
import { admitRun, checkDeferredStart, checkStart, refuseIfBusy } from './start-run.ts';

/** An hour's multiplier and the run's price at it. */
export interface PricedHour extends HourMultiplier {
  totalHundredths: number;
}

/** The estimate of a run start, as the use case answers it (the HTTP edge writes its body). */
export interface RunStartEstimate {
  workflowId: string;
  /** What the start would hold (a deferred one: at the multiplier it would start at). */
  estimate: RunEstimate;
  /** The error the start would answer now; null when it would start (or be deferred). */
  refusal: ServiceError | null;
  licence: OutputLicence | undefined;
  inForce: PricedHour;
  hours: PricedHour[];
  /** Only with `defer: true`: when it would start, null when no hour of its wait reaches its `maxMultiplier`. */
  deferredStart?: HourMultiplier | null;
}

/** Whether a start's error is its refusal (answered in the estimate) rather than the estimate's own failure. */
const isRefusal = (error: unknown): error is ServiceError =>
  error instanceof ServiceError &&
  !(error instanceof WorkflowNotPermittedError) &&
  !(error instanceof StorageBusyError);

/** The refusal a start of `workflow` with `request` would answer now, by the start's own checks; null when none. */
const refusalOf = async (
  deps: Deps,
  key: ApiKeyItem,
  workflow: RunnableWorkflow,
  request: RunRequest,
  input: { estimate: RunEstimate; now: Date },
): Promise<ServiceError | null> => {
  try {
    const uploads = await checkStart(deps, key, workflow, request);
    if (request.defer) {
      await checkDeferredStart(deps, key, workflow);
      return null;
    }
    await admitRun(deps, { key, workflow, request, running: workflow.canvas, ...input });
    // With no refusal, the start's transaction takes the run lock: read here, as it would find it.
    await refuseIfBusy(deps, { workflow, request });
    await checkRoomForInputs(deps, key.teamId, uploads);
    return null;
  } catch (error) {
    if (isRefusal(error)) return error;
    throw error;
  }
};

const estimateFor = async (
  deps: Deps,
  key: ApiKeyItem,
  request: RunRequest,
  resolveWorkflow: () => Promise<RunnableWorkflow>,
): Promise<RunStartEstimate> => {
  const workflow = await resolveWorkflow();
  const now = deps.now();
  const settings = await getPriceSettings(deps);
  const priced = (hour: HourMultiplier): PricedHour => ({
    ...hour,
    totalHundredths: startEstimate(deps, workflow, request, hour.multiplier).totalHundredths,
  });
  const inForce = { startsAt: now, multiplier: currentMultiplier(settings, now) };
  const hours = nextHourMultipliers(settings, now);
  const deferredStart = request.defer
    ? (deferredStartOf(inForce, hours, request.maxMultiplier, deferredExpiresAt(now)) ?? null)
    : undefined;
  const multiplier = request.defer ? (deferredStart?.multiplier ?? request.maxMultiplier) : startNowMultiplier;
  const estimate = startEstimate(deps, workflow, request, multiplier);
  const refusal = await refusalOf(deps, key, workflow, request, { estimate, now });
  return {
    workflowId: workflow.workflowId,
    estimate,
    refusal,
    licence: plannedLicence(workflow.canvas.nodes, deps.providers.modelDefaults, now),
    inForce: priced(inForce),
    hours: hours.map(priced),
    ...(deferredStart !== undefined && { deferredStart }),
  };
};

/** POST /workflows/{id}/estimate: the estimate of a run of the workflow `workflowId`. */
export const estimateWorkflowRun = (deps: Deps, key: ApiKeyItem, request: RunRequest, workflowId: string) =>
  estimateFor(deps, key, request, () => loadRunnableWorkflow(deps, key.teamId, workflowId, request.version));

/** POST /agents/{id}/estimate: the estimate of a run of the agent's active workflow, else its newest. */
export const estimateAgentRun = (deps: Deps, key: ApiKeyItem, request: RunRequest, agentId: string) =>
  estimateFor(deps, key, request, () => loadAgentWorkflow(deps, key.teamId, agentId, request.version));
