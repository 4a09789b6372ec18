import { basePath } from '../../platform/routes.ts';
import { StepStatus } from '../../platform/run-statuses.ts';
import type { StepWebhookBody } from '../../schemas/lifecycle-webhooks.ts';
import type { WebhookBody } from '../../schemas/runs.ts';
import type { Deps } from '../deps.ts';
import { type DeliveryRef, isStepEvent } from '../domain/lifecycle-webhooks.ts';
import { resultOf } from '../domain/run-view.ts';
import { shownStepError } from '../domain/run-view-size.ts';
import { linkFiles, readRunAndItems, readRunForWebhook } from './read-run.ts';

/** Where the whole Run is read (GET /runs/{jobId}), when the stage knows its public address. */
const runUrl = (deps: Deps, jobId: string): string | undefined =>
  deps.publicBaseUrl && `${deps.publicBaseUrl.replace(/\/+$/, '')}${basePath}/runs/${jobId}`;

/**
 * The body of one webhook delivery: a run event's is the Run plus `event`, the end
 * webhook's as it always was. A step event's is the run's status and what identifies it, `step`
 * (its id, type, status, error or result, and when it ended) and `links.run`, not the Run's steps
 * or page of outputs: a run sends up to 50 step events, each would carry them again. The run is
 * read when the attempt is made, as the end webhook's is: a retry shows its status as it then
 * stands, while `step` never changes (a step's end is written once).
 */
export const webhookBodyOf = async (
  deps: Deps,
  jobId: string,
  ref: DeliveryRef,
): Promise<WebhookBody | StepWebhookBody> => {
  const { event, nodeId } = ref;
  if (!isStepEvent(event) || nodeId === undefined) {
    return { ...(await readRunForWebhook(deps, jobId)), event } as WebhookBody;
  }
  const { view, run, steps } = await readRunAndItems(deps, null, jobId);
  const item = steps.find((s) => s.nodeId === nodeId);
  const shown = view.steps.find((s) => s.node_id === nodeId);
  const completed = event === 'step.completed';
  const link = runUrl(deps, jobId);
  return {
    event,
    jobId: view.jobId,
    status: view.status,
    ...(view.progress !== undefined && { progress: view.progress }),
    ...(view.metadata !== undefined && { metadata: view.metadata }),
    ...(view.tags !== undefined && { tags: view.tags }),
    ...(view.resumedFrom !== undefined && { resumedFrom: view.resumedFrom }),
    step: {
      node_id: nodeId,
      // Every node of the canvas is in the view: the fallback is never shown.
      step_type: shown?.step_type ?? '',
      status: completed ? StepStatus.completed : StepStatus.failed,
      ...(completed
        ? { result: await linkFiles(deps, run.teamId, resultOf(item?.outputs ?? {})) }
        : { error: shown?.error ?? shownStepError(item?.error ?? 'Step failed') }),
      ended_at: item?.endedAt ?? deps.now().toISOString(),
    },
    ...(link !== undefined && { links: { run: link } }),
  };
};
