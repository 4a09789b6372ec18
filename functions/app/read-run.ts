import { basePath } from '../../platform/routes.ts';
import { runLabels } from '../../schemas/run-tags.ts';
import type { Run, RunFile, RunOutput, RunResult } from '../../schemas/runs.ts';
import type { Deps } from '../deps.ts';
import { openCursor, type RunOutputCursorScope, signCursor } from '../domain/cursor.ts';
import { keyMayUseWorkflow } from '../domain/key-workflows.ts';
import { isWaiting } from '../domain/run-lifecycle.ts';
import { outputsFrom, runView } from '../domain/run-view.ts';
import { outputPage } from '../domain/run-view-size.ts';
import { InvalidCursorError, InvalidQueryError, RunNotFoundError } from '../errors/table.ts';
import { isStoredFile } from '../nodes/executors/types.ts';
import { canvasOf } from '../store/canvases.ts';
import { isTeamObject } from '../store/files.ts';
import type { RunItem, StepItem } from '../store/items/runs.ts';
import { readRunPartition, standingOf } from '../store/run/index.ts';
import { cursorSigningSecret } from '../store/run-list.ts';
import { fileLinkFor } from './file-links.ts';

/**
 * Replaces every stored file inside a result with the spec's file object and a fresh link of ours
 * (functions/app/file-links.ts). Only the team's own objects are linked: a look-alike file object
 * in user data reads unavailable.
 */
export const linkFiles = async (deps: Deps, teamId: string, value: unknown): Promise<RunResult> => {
  if (isStoredFile(value)) {
    if (value.availability !== 'ready' || !isTeamObject(teamId, value.key)) {
      const availability = value.availability === 'processing' ? 'processing' : 'unavailable';
      return {
        availability,
        url: null,
        contentType: value.contentType ?? null,
        bytes: null,
        expiresAt: null,
        aiMark: null,
      } satisfies RunFile;
    }
    const { url, expiresAt } = await fileLinkFor(deps, teamId, value.key);
    return {
      availability: 'ready',
      url,
      contentType: value.contentType,
      bytes: value.bytes,
      expiresAt,
      aiMark: value.aiMark ?? null,
    } satisfies RunFile;
  }
  if (Array.isArray(value)) return Promise.all(value.map((v) => linkFiles(deps, teamId, v)));
  if (value && typeof value === 'object') {
    const entries = await Promise.all(
      Object.entries(value).map(async ([k, v]) => [k, await linkFiles(deps, teamId, v)] as const),
    );
    return Object.fromEntries(entries);
  }
  // What is left of stored JSON: a string, number, boolean or null.
  return value as RunResult;
};

/** One output with its files linked, as GET /runs/{jobId} shows it (the run stream's `output`). */
export const linkedOutput = async (deps: Deps, teamId: string, output: RunOutput): Promise<RunOutput> => ({
  ...output,
  result: await linkFiles(deps, teamId, output.result),
});

/** The InvalidQueryError of an `output_cursor` this run did not give. */
const badOutputCursor = () => new InvalidQueryError('output_cursor must be an output_next of this run, unchanged');

/**
 * GET /runs/{jobId} (spec 4.5): the run as the team sees it; another team's run, and a run of a
 * workflow the key is not limited to, read exactly like a missing one (`teamId` null: the service
 * itself, e.g. the webhook). Reads the run's partition (run, steps, charges) in one strongly
 * consistent Query.
 *
 * Its `output` is one page (functions/domain/run-view-size.ts): the first, or the one
 * `outputCursor` (an `output_next` of this run) starts; `output_next` names the next when outputs
 * remain. The cursor is bound to the run's team, not the reader's, so the webhook's (read by the
 * service) works for the team's keys. The run is found first: another team's run stays a 404.
 */
export const readRun = async (
  deps: Deps,
  teamId: string | null,
  jobId: string,
  keyWorkflowIds: readonly string[] = [],
  outputCursor?: string,
): Promise<Run> => (await readRunAndItems(deps, teamId, jobId, keyWorkflowIds, outputCursor)).view;

/**
 * The Run as a webhook body carries it: as Get a run answers it, less `workflowVersion` (a body
 * keeps the fields it always had; a receiver reads the version from the Run).
 */
export const readRunForWebhook = async (deps: Deps, jobId: string): Promise<Omit<Run, 'workflowVersion'>> => {
  const { workflowVersion: _version, ...run } = await readRun(deps, null, jobId);
  return run;
};

/**
 * The run item, when `teamId`'s key may read it: another team's run, and one of a workflow the key
 * is not limited to, read as missing (`teamId` null: the service itself).
 */
export function visibleRun(
  run: RunItem | undefined,
  teamId: string | null,
  jobId: string,
  keyWorkflowIds: readonly string[],
): asserts run is RunItem {
  if (!run || (teamId !== null && run.teamId !== teamId) || !keyMayUseWorkflow(keyWorkflowIds, run.workflowId)) {
    throw new RunNotFoundError(jobId);
  }
}

/**
 * The run's partition in one strongly consistent Query and its view (every output, unlinked):
 * another team's run, and one of a workflow the key is not limited to, read as missing (`teamId`
 * null: the service itself). GET /runs/{jobId} and the run stream read a run this way.
 */
const readRunView = async (
  deps: Deps,
  teamId: string | null,
  jobId: string,
  keyWorkflowIds: readonly string[] = [],
) => {
  const { run, steps } = await readRunPartition(deps, jobId);
  visibleRun(run, teamId, jobId, keyWorkflowIds);
  const canvas = await canvasOf(deps, run.workflowId, run.workflowVersion);
  return { run, steps, canvas, view: runView(run, new Map(steps.map((step) => [step.nodeId, step])), canvas) };
};

/**
 * `readRun`, with the run and step items it was made from (a step event's body reads a step's own)
 * and `whole`, the view before its page (every output, unlinked: the run event stream's last look).
 */
export const readRunAndItems = async (
  deps: Deps,
  teamId: string | null,
  jobId: string,
  keyWorkflowIds: readonly string[] = [],
  outputCursor?: string,
): Promise<{ view: Run; whole: Run; run: RunItem; steps: StepItem[] }> => {
  const { run, steps, canvas, view } = await readRunView(deps, teamId, jobId, keyWorkflowIds);
  const scope: RunOutputCursorScope = { list: 'run-output', teamId: run.teamId, jobId: run.jobId };
  let candidates = view.output;
  if (outputCursor !== undefined) {
    let start: string | undefined;
    try {
      start = openCursor(await cursorSigningSecret(deps), scope, outputCursor).node;
    } catch (error) {
      if (error instanceof InvalidCursorError) throw badOutputCursor();
      throw error;
    }
    const from = start === undefined ? undefined : outputsFrom(canvas, view.output, start);
    if (!from) throw badOutputCursor();
    candidates = from;
  }
  const linked = await Promise.all(
    candidates.map(async (o) => ({ ...o, result: await linkFiles(deps, run.teamId, o.result) })),
  );
  const page = outputPage(linked);
  const next = page.rest === null ? undefined : linked[page.rest]?.node_id;
  const shown: Run = {
    ...view,
    output: page.output,
    ...(next === undefined ? {} : { output_next: signCursor(await cursorSigningSecret(deps), scope, { node: next }) }),
    // The start's own metadata and tags, after the contract's fields; absent when none.
    ...runLabels(run),
    // Ours: the run a resume started from.
    ...(run.resumedFrom !== undefined && { resumedFrom: run.resumedFrom }),
    // Ours: the batch that started it (POST /runs/batch).
    ...(run.batchId !== undefined && { batchId: run.batchId }),
    // Ours: why it ended, when its status alone does not say (its deadline).
    ...(run.endReason !== undefined && { endReason: run.endReason }),
    // Ours: the workflow version it runs.
    workflowVersion: run.workflowVersion,
    // Ours: where a run queued behind another stands while it waits.
    ...(isWaiting(run.status) && (await waitingFields(deps, run))),
  };
  return { view: shown, whole: view, run, steps };
};

/** A waiting run's `queuePosition` and `queuedBehind` (the latter absent between two runs, for the first). */
const waitingFields = async (deps: Deps, run: RunItem) => {
  const { queuePosition, queuedBehind } = await standingOf(deps, run);
  return { queuePosition, ...(queuedBehind !== undefined && { queuedBehind }) };
};

/** Where the run's stream is reached (`links.events`, GET /runs/{jobId}/events), when the stage knows its address. */
export const runStreamUrl = (deps: Deps, jobId: string): string | undefined => {
  const base = deps.runEventsBaseUrl ?? (deps.publicBaseUrl ? `${deps.publicBaseUrl}${basePath}` : undefined);
  return base && `${base}/runs/${jobId}/events`;
};

/** A Run with its link to where it is followed live, when the stage knows the address. */
export const withStreamLink = (deps: Deps, run: Run): Run => {
  const events = runStreamUrl(deps, run.jobId);
  return events ? { ...run, links: { events } } : run;
};

/** GET /runs/{jobId} with the run's links: `readRun`, and where to follow it live. */
export const readRunWithLinks = async (...args: Parameters<typeof readRun>): Promise<Run> =>
  withStreamLink(args[0], await readRun(...args));
