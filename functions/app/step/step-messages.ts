/** A step's message, what it sends of its run's steps, and the options a worker runs it with. */
import type { Deps } from '../../deps.ts';
import type { RunItem } from '../../store/items/runs.ts';
import { sendStepMessages } from '../../store/run/index.ts';
import type { JobStepMessage } from '../provider-job.ts';

/**
 * A step message: the step `nodeId` of run `jobId` of workflow `workflowId` is ready; or, with
 * `check`, its provider's job is due a look (functions/app/provider-job.ts).
 */
export type StepMessage = JobStepMessage;

/**
 * The messages of steps that follow `message`'s, in its run's team's group; a message from before
 * messages named their team gets it from its run's read (`ofTeam`).
 */
export const sendSteps = (deps: Deps, message: StepMessage, nodeIds: readonly string[]) =>
  sendStepMessages(deps, { jobId: message.jobId, workflowId: message.workflowId, teamId: message.teamId }, nodeIds);

export const ofTeam = (message: StepMessage, run: RunItem): StepMessage => ({ ...message, teamId: run.teamId });

/**
 * The own message of step `nodeId` of `message`'s run, in its team's group: never a look, a guard
 * or a deferral (a `check` would make a chain's next step a look at a job it does not have).
 */
export const stepMessage = (message: StepMessage, nodeId: string): StepMessage => ({
  jobId: message.jobId,
  workflowId: message.workflowId,
  nodeId,
  ...(message.teamId !== undefined && { teamId: message.teamId }),
});

/** How a step runs; the worker sets them from its queue's definition and its invocation. */
export interface RunStepOptions {
  /** Milliseconds a node may run before it is aborted. */
  stepTimeoutMs: number;
  /**
   * Milliseconds left in the invocation (its Lambda context), when the worker knows them: a chain's
   * next step may then run in the same invocation. Unset: every step goes through the queue.
   */
  remainingMs?: () => number;
  /** Set on a step run in its predecessor's invocation: a node that throws goes to the queue uncounted. */
  inline?: boolean;
}

/** What a worker's invocation knows of its time: its Lambda context. */
export interface TimeLeft {
  getRemainingTimeInMillis(): number;
}

/**
 * `options` for a step of an invocation given `context`: the time left counts down from the
 * context's at this call. Without a context (a test driving the handler by hand) no step runs inline.
 */
export const withTimeLeft = (options: RunStepOptions, context?: TimeLeft): RunStepOptions => {
  if (!context || options.remainingMs) return options;
  const deadline = Date.now() + context.getRemainingTimeInMillis();
  return { ...options, remainingMs: () => deadline - Date.now() };
};
