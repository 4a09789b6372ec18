/**
 * GET /runs/{jobId}/steps/{nodeId}: one step of a run, its attempts and its logs, as its item records
 * them (functions/domain/step-history.ts). The run is found first: another team's run, or one of a
 * workflow the key is not limited to, reads as missing; then the step must be one of its workflow's.
 */
import { StepStatus } from '../../platform/run-statuses.ts';
import type { RunStepDetails } from '../../schemas/run-steps.ts';
import type { Deps } from '../deps.ts';
import { toCredits } from '../domain/credits.ts';
import { stepViewStatus } from '../domain/run-lifecycle.ts';
import { shownStepError } from '../domain/run-view-size.ts';
import { stepAttemptsOf } from '../domain/step-history.ts';
import { StepNotFoundError } from '../errors/table.ts';
import { canvasOf } from '../store/canvases.ts';
import { readRunItem, readStepItem } from '../store/run/index.ts';
import { visibleRun } from './read-run.ts';

export const readRunStep = async (
  deps: Deps,
  teamId: string,
  jobId: string,
  nodeId: string,
  keyWorkflowIds: readonly string[],
): Promise<RunStepDetails> => {
  const run = await readRunItem(deps, jobId);
  visibleRun(run, teamId, jobId, keyWorkflowIds);
  const [canvas, step] = await Promise.all([
    canvasOf(deps, run.workflowId, run.workflowVersion),
    readStepItem(deps, jobId, nodeId),
  ]);
  const node = canvas.nodes.find((n) => n.id === nodeId);
  if (!node) throw new StepNotFoundError(jobId, nodeId);
  const status = stepViewStatus(run.status, run.doneSteps.has(nodeId), step);
  return {
    jobId,
    nodeId,
    stepType: node.type,
    status,
    startedAt: step?.startedAt ?? step?.attemptLog?.[0]?.startedAt ?? null,
    endedAt: step?.endedAt ?? null,
    ...(status === StepStatus.failed && { error: shownStepError(step?.error ?? 'Step failed') }),
    // A completed step's charge is the run's once counted; a failed one's with its failure (its job ran to its end).
    chargedCredits: toCredits(
      step && (run.doneSteps.has(nodeId) || step.status === StepStatus.failed) ? step.chargeHundredths : 0,
    ),
    attempts: stepAttemptsOf(step, StepStatus.completed),
    logs: step?.logs ?? {},
  };
};
