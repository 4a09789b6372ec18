import type { Run, RunFile } from '../../schemas/runs.ts';
import type { Deps } from '../deps.ts';
import { RunNotFoundError } from '../domain/errors.ts';
import { fileLinkExpiresAt, fileUrlSeconds } from '../domain/file-link-lifetime.ts';
import { keyMayUseWorkflow } from '../domain/key-workflows.ts';
import { runView } from '../domain/run-view.ts';
import { isStoredFile } from '../nodes/executors/types.ts';
import { canvasOf } from '../store/canvases.ts';
import { isTeamObject, presignTeamFile } from '../store/files.ts';
import { readRunPartition } from '../store/run/index.ts';

/**
 * Replaces every stored file inside a result with the spec's file object and a fresh signed URL.
 * Only the team's own objects are signed: a look-alike file object in user data reads unavailable.
 */
const presignFiles = async (deps: Deps, teamId: string, value: unknown): Promise<unknown> => {
  if (isStoredFile(value)) {
    if (value.availability !== 'ready' || !isTeamObject(teamId, value.key)) {
      const availability = value.availability === 'processing' ? 'processing' : 'unavailable';
      return {
        availability,
        url: null,
        contentType: value.contentType ?? null,
        bytes: null,
        expiresAt: null,
      } satisfies RunFile;
    }
    const url = await presignTeamFile(deps, teamId, value.key, fileUrlSeconds);
    const expiresAt = fileLinkExpiresAt(deps.now()).toISOString();
    return {
      availability: 'ready',
      url,
      contentType: value.contentType,
      bytes: value.bytes,
      expiresAt,
    } satisfies RunFile;
  }
  if (Array.isArray(value)) return Promise.all(value.map((v) => presignFiles(deps, teamId, v)));
  if (value && typeof value === 'object') {
    const entries = await Promise.all(
      Object.entries(value).map(async ([k, v]) => [k, await presignFiles(deps, teamId, v)] as const),
    );
    return Object.fromEntries(entries);
  }
  return value;
};

/**
 * GET /runs/{jobId} (spec 4.5): the run as the team sees it; another team's run, and a run of a
 * workflow the key is not limited to, read exactly like a missing one (`teamId` null: the service
 * itself, e.g. the webhook). Reads the run's partition (run, steps, charges) in one strongly
 * consistent Query.
 */
export const readRun = async (
  deps: Deps,
  teamId: string | null,
  jobId: string,
  keyWorkflowIds: readonly string[] = [],
): Promise<Run> => {
  const { run, steps } = await readRunPartition(deps, jobId);
  if (!run || (teamId !== null && run.teamId !== teamId) || !keyMayUseWorkflow(keyWorkflowIds, run.workflowId)) {
    throw new RunNotFoundError(jobId);
  }
  const canvas = await canvasOf(deps, run.workflowId);
  const view = runView(run, new Map(steps.map((step) => [step.nodeId, step])), canvas);
  const output = await Promise.all(
    view.output.map(async (o) => ({ ...o, result: await presignFiles(deps, run.teamId, o.result) })),
  );
  return { ...view, output };
};
