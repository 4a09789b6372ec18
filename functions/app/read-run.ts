import type { Run, RunFile } from '../../schemas/runs.ts';
import type { Deps } from '../deps.ts';
import { RunNotFoundError } from '../domain/errors.ts';
import { keyMayUseWorkflow } from '../domain/key-workflows.ts';
import { runView } from '../domain/run-view.ts';
import { isStoredFile } from '../nodes/executors/types.ts';
import { canvasOf } from '../store/canvases.ts';
import { isTeamObject } from '../store/files.ts';
import { readRunPartition } from '../store/run/index.ts';
import { fileLinkFor } from './file-links.ts';

/**
 * Replaces every stored file inside a result with the spec's file object and a fresh link of ours
 * (functions/app/file-links.ts). Only the team's own objects are linked: a look-alike file object
 * in user data reads unavailable.
 */
const linkFiles = async (deps: Deps, teamId: string, value: unknown): Promise<unknown> => {
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
    const { url, expiresAt } = await fileLinkFor(deps, teamId, value.key);
    return {
      availability: 'ready',
      url,
      contentType: value.contentType,
      bytes: value.bytes,
      expiresAt,
    } satisfies RunFile;
  }
  if (Array.isArray(value)) return Promise.all(value.map((v) => linkFiles(deps, teamId, v)));
  if (value && typeof value === 'object') {
    const entries = await Promise.all(
      Object.entries(value).map(async ([k, v]) => [k, await linkFiles(deps, teamId, v)] as const),
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
    view.output.map(async (o) => ({ ...o, result: await linkFiles(deps, run.teamId, o.result) })),
  );
  // Ours (issue 26): the run a resume started from, after the contract's fields.
  return { ...view, output, ...(run.resumedFrom !== undefined && { resumedFrom: run.resumedFrom }) };
};
