/**
 * What every smoke check shares: the client, where its workflows go, its deadline, and the few
 * steps each check repeats (find or create its workflow, run it to its end, read what it cost).
 */
import { createHash } from 'node:crypto';
import type { CreateWorkflowRequest, Run, RunRequest, WorkflowRunClient } from '../client.ts';
import { ConflictError } from '../errors.ts';
import type { SmokeCause } from './causes.ts';
import { smokeGlb, smokePng } from './fixtures.ts';

export type CheckStatus = 'pass' | 'skip' | 'fail';

/** One line of the smoke run's report. */
export interface CheckResult {
  name: string;
  status: CheckStatus;
  /** What was seen: the provider and model that ran, the bytes that came back, or why it failed. */
  detail: string;
  /** For a failure: what it names as the cause. */
  cause?: SmokeCause;
  /** Credits the check's runs were charged (0 for a check that starts none). */
  credits: number;
  ms: number;
  /** The run the check started, to look up. */
  jobId?: string;
  /** For a model check that ran on a real provider: which, and its model. */
  ranOn?: { provider: string; model: string };
}

/** A check's outcome, before the report adds its name and time. */
export type CheckOutcome = Omit<CheckResult, 'name' | 'ms'>;

/** A failure with its cause, thrown from inside a check and reported as its line. */
export class CheckFailure extends Error {
  override readonly cause: SmokeCause;
  readonly credits: number;
  readonly jobId: string | undefined;
  constructor(cause: SmokeCause, message: string, options: { credits?: number; jobId?: string } = {}) {
    super(message);
    this.name = 'CheckFailure';
    this.cause = cause;
    this.credits = options.credits ?? 0;
    this.jobId = options.jobId;
  }
}

export interface SmokeContext {
  client: WorkflowRunClient;
  /** The HTTP client for what is not the API (storage, file links). */
  fetch: (url: string, init?: RequestInit) => Promise<Response>;
  /** Aborted at the check's own deadline. */
  signal: AbortSignal;
  /** Where the check's workflow is created or found. */
  workflowFor(check: string, steps: CreateWorkflowRequest['steps']): Promise<string>;
  /** The file of `kind` uploaded once for the whole smoke run (its fileId). */
  uploaded(kind: 'image' | 'mesh'): Promise<string>;
  webhook: { url: string; secret: string } | undefined;
  /** Where run event streams are served, when not at the Run's `links.events`. */
  streamBaseUrl: string | undefined;
}

/** A started run followed to its end, and what it was charged. */
export interface EndedRun {
  run: Run;
  credits: number;
}

/** Where the smoke run's workflows go: an agent of the team, or a project (a new agent is made once). */
export type WorkflowHome = { agentId: string } | { projectId: string };

/**
 * Finds each check's workflow by its name, or creates it: the name carries a digest of the steps,
 * so a later smoke run of the same version reuses the workflows the first made, and a changed check
 * makes a new one.
 */
export const workflowStore = (client: WorkflowRunClient, home: WorkflowHome, signal?: AbortSignal) => {
  let existing: Promise<Map<string, string>> | undefined;
  let agentId = 'agentId' in home ? home.agentId : undefined;
  return async (check: string, steps: CreateWorkflowRequest['steps']): Promise<string> => {
    const digest = createHash('sha256').update(JSON.stringify(steps)).digest('hex').slice(0, 12);
    const name = `smoke ${check} ${digest}`;
    existing ??= client.listWorkflows({ signal }).then((list) => new Map(list.map((w) => [w.name, w.id])));
    const found = (await existing).get(name);
    if (found) return found;
    const body = agentId
      ? { name, steps, agentId }
      : { name, steps, projectId: (home as { projectId: string }).projectId, agentName: 'smoke' };
    const created = await client.createWorkflow(body as CreateWorkflowRequest, { signal });
    agentId ??= created.agentId;
    (await existing).set(name, created.workflowId);
    return created.workflowId;
  };
};

/** Uploads each smoke file once, on first use. */
export const uploadStore = (client: WorkflowRunClient, signal?: AbortSignal) => {
  const files = new Map<string, Promise<string>>();
  return (kind: 'image' | 'mesh'): Promise<string> => {
    let file = files.get(kind);
    if (!file) {
      file = client
        .uploadFile(kind === 'image' ? smokePng : smokeGlb, {
          contentType: kind === 'image' ? 'image/png' : 'model/gltf-binary',
          name: kind === 'image' ? 'smoke.png' : 'smoke.glb',
          ...(signal ? { signal } : {}),
        })
        .then((f) => f.fileId);
      files.set(kind, file);
    }
    return file;
  };
};

/** Credits the run was charged, from its summary (GET /runs); its estimate while the summary has none. */
export const chargedCredits = async (
  ctx: SmokeContext,
  workflowId: string,
  jobId: string,
  estimate: number,
): Promise<number> => {
  for await (const summary of ctx.client.runs({ workflowId, limit: 20 }, { signal: ctx.signal })) {
    if (summary.jobId === jobId) return summary.chargedCredits ?? estimate;
  }
  return estimate;
};

/**
 * Starts a run of the workflow and follows it to its end. A smoke run of an earlier invocation still
 * in progress (409) is waited for first. At the check's deadline the run is cancelled, so nothing
 * more is spent, and the check fails with `timeout`.
 */
export const runToEnd = async (
  ctx: SmokeContext,
  workflowId: string,
  body: RunRequest & { defer?: false } = {},
): Promise<EndedRun> => {
  const { client, signal } = ctx;
  const start = () => client.runWorkflow(workflowId, body, { signal });
  let started: Awaited<ReturnType<typeof start>>;
  try {
    started = await start();
  } catch (error) {
    if (!(error instanceof ConflictError) || !error.activeJobId) throw error;
    await client.waitForRun(error.activeJobId, { signal, intervalMs: 2_000 });
    started = await start();
  }
  let run: Run;
  try {
    run = await client.waitForRun(started.jobId, { signal, intervalMs: 1_000, maxIntervalMs: 5_000 });
  } catch (error) {
    if (signal.aborted) await client.cancelRun(started.jobId).catch(() => undefined);
    throw error;
  }
  return { run, credits: await chargedCredits(ctx, workflowId, started.jobId, started.estimatedCredits) };
};

/** The failed step's error, or the run's status when no step says why. */
export const failureText = (run: Run): string => {
  const step = run.steps.find((s) => s.status === 'failed');
  return step ? `${step.node_id}: ${step.error ?? 'failed'}` : `run ${run.status}`;
};

/** Fails the check unless the run completed: the failed step's error names the cause. */
export const expectCompleted = async (ended: EndedRun, classify: (text: string) => SmokeCause): Promise<EndedRun> => {
  if (ended.run.status === 'completed') return ended;
  const text = failureText(ended.run);
  throw new CheckFailure(classify(text), text, { credits: ended.credits, jobId: ended.run.jobId });
};
