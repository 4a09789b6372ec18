import type { RunEstimateView } from '../../schemas/estimates.ts';
import type { RunRequest } from '../../schemas/run-request.ts';
import type { RunStartEstimate } from '../app/estimate-run.ts';
import type { Deps } from '../deps.ts';
import { toCredits } from '../domain/credits.ts';
import type { ApiKeyItem } from '../store/items/api-keys.ts';
import { answerOfError } from './error-map.ts';
import { keyedHandler } from './keyed-handler.ts';
import { ok } from './response.ts';
import { parseRunRequest } from './run-body.ts';

const priced = (hour: RunStartEstimate['inForce']) => ({
  startsAt: hour.startsAt.toISOString(),
  multiplier: hour.multiplier,
  estimatedCredits: toCredits(hour.totalHundredths),
});

/** The answer's body: amounts in credits, the refusal as the start would answer it. */
export const runEstimateBody = (answer: RunStartEstimate): RunEstimateView => {
  const refusal = answer.refusal && answerOfError(answer.refusal);
  if (answer.refusal && !refusal) throw answer.refusal;
  return {
    workflowId: answer.workflowId,
    estimatedCredits: toCredits(answer.estimate.totalHundredths),
    steps: answer.estimate.steps.map((s) => ({
      nodeId: s.nodeId,
      type: s.type,
      estimatedCredits: toCredits(s.hundredths),
    })),
    refusal: refusal ? { status: refusal.status, body: refusal.body as Record<string, unknown> } : null,
    licence: answer.licence ?? null,
    multipliers: { inForce: priced(answer.inForce), hours: answer.hours.map(priced) },
    ...(answer.deferredStart !== undefined && {
      deferredStart: answer.deferredStart && {
        startsAt: answer.deferredStart.startsAt.toISOString(),
        multiplier: answer.deferredStart.multiplier,
      },
    }),
  };
};

/** Both estimates differ only in how the path's id names the workflow, which `estimate` resolves. */
export const runEstimateHandler = (
  deps: Deps,
  route: 'EstimateWorkflowRun' | 'EstimateAgentRun',
  estimate: (deps: Deps, key: ApiKeyItem, request: RunRequest, id: string) => Promise<RunStartEstimate>,
) =>
  keyedHandler(deps, route, async (event, auth) =>
    ok(runEstimateBody(await estimate(deps, auth.key, parseRunRequest(event), event.pathParameters?.id ?? ''))),
  );
