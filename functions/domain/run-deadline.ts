import { delaySecondsUntil } from './webhook.ts';

/**
 * A run's deadline (`deadlineSeconds` on a run start or a resume): a run still in progress when it
 * comes ends `cancelled` with `endReason: "deadline"`, by the cancel's own path (its rules for
 * finished and in-flight steps). The deadline counts from the run's start; a deferred run's from its
 * dispatch (the moment it becomes a run), never from its deferral: its wait is bounded by `startBy`.
 *
 * Its timer is one message on the steps queue, delayed until the deadline. SQS delays a message at
 * most 15 minutes, so a deadline further away is a chain: the message carries its due time, and one
 * that arrives early is sent on with the rest of the wait (at most 96 hops for the longest deadline).
 * The message is sent before the run's start commits, so no run with a deadline is ever without its
 * timer; one that arrives before the run's item exists (the start still committing) waits a little
 * and looks again, and one whose run never came (its start refused) is dropped.
 */

/**
 * How long after its due time a deadline message still waits for its run's item to appear: a start
 * commits within a second or two of sending it; a start refused after the send never does.
 */
export const missingRunGraceSeconds = 60;

/** How long a deadline message whose run does not exist yet waits before it looks again. */
export const missingRunRetrySeconds = 5;

/** When a run started at `start` with `deadlineSeconds` must have ended. */
export const deadlineAt = (start: Date, deadlineSeconds: number): Date =>
  new Date(start.getTime() + deadlineSeconds * 1000);

/** The delay of a timer message due at `dueAt`, sent at `now`: the whole wait, up to SQS's limit (never early). */
export const timerDelaySeconds = (dueAt: Date, now: Date): number => delaySecondsUntil(dueAt.getTime(), now.getTime());

/** What a deadline message does when it arrives. */
export type DeadlineStep =
  /** Not due yet (or its run not written yet): sent on, delayed this long. */
  | { kind: 'wait'; delaySeconds: number }
  /** Due, and its run in progress: the run ends `cancelled` at its deadline. */
  | { kind: 'end' }
  /** Nothing to do: its run has ended, or never came. */
  | { kind: 'none' };

/**
 * What a deadline message due at `dueAt` does at `now`, given its run as read (`undefined`: no run
 * item; `inProgress` its status). Pure, so redelivery is answered the same way: a run that ended,
 * by its deadline or anything else, is left as it is.
 */
export const deadlineStep = (dueAt: Date, now: Date, run: { inProgress: boolean } | undefined): DeadlineStep => {
  if (run && !run.inProgress) return { kind: 'none' };
  if (now.getTime() < dueAt.getTime()) return { kind: 'wait', delaySeconds: timerDelaySeconds(dueAt, now) };
  if (run) return { kind: 'end' };
  const waitedSeconds = (now.getTime() - dueAt.getTime()) / 1000;
  return waitedSeconds < missingRunGraceSeconds
    ? { kind: 'wait', delaySeconds: missingRunRetrySeconds }
    : { kind: 'none' };
};
