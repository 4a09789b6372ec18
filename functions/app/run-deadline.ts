import * as v from 'valibot';
import type { Deps } from '../deps.ts';
import { deadlineAt, deadlineStep } from '../domain/run-deadline.ts';
import { isInProgress, isWaiting } from '../domain/run-lifecycle.ts';
import { logger } from '../observability/logger.ts';
import { readRunItem, sendDeadlineMessage } from '../store/run/index.ts';
import { cancelAtDeadline } from './cancel-run.ts';

/** The deadline's timer as the step executor reads it off the steps queue (functions/store/run/deadline.ts sends it). */
export const DeadlineMessageSchema = v.object({
  kind: v.literal('deadline'),
  jobId: v.string(),
  teamId: v.string(),
  dueAt: v.pipe(v.string(), v.isoTimestamp()),
});
export type DeadlineMessage = v.InferOutput<typeof DeadlineMessageSchema>;

/**
 * The timer of a run starting with `deadlineSeconds`, sent before its start commits (so a run with
 * a deadline never lacks its timer). Its due time is a moment before the run item's `deadlineAt`
 * (which counts from the start's commit, `createdAt`), and the item's time is the one kept: a
 * timer that comes before it is sent on for the rest (at most a second).
 */
export const startDeadlineTimer = async (
  deps: Deps,
  run: { jobId: string; teamId: string },
  deadlineSeconds: number | undefined,
): Promise<void> => {
  if (deadlineSeconds === undefined) return;
  const dueAt = deadlineAt(deps.now(), deadlineSeconds).toISOString();
  await sendDeadlineMessage(deps, { kind: 'deadline', jobId: run.jobId, teamId: run.teamId, dueAt });
};

/**
 * A deadline message arrived (the step executor): not due yet, it is sent on with the rest of the
 * wait; due, its run still in progress ends `cancelled` with `endReason: "deadline"`, by the cancel's
 * path (functions/app/cancel-run.ts); a run that ended, by anything, is left as it is, so a message
 * delivered twice ends the run once. The run item's own `deadlineAt` is the due time once it exists.
 * The message is completed only after the next hop was sent: a failure here is a redelivery.
 */
export const enforceDeadline = async (deps: Deps, message: DeadlineMessage): Promise<void> => {
  const run = await readRunItem(deps, message.jobId);
  if (run && run.deadlineAt === undefined) return;
  const dueAt = new Date(run?.deadlineAt ?? message.dueAt);
  const step = deadlineStep(
    dueAt,
    deps.now(),
    run && { inProgress: isInProgress(run.status) || isWaiting(run.status) },
  );
  if (step.kind === 'wait') {
    await sendDeadlineMessage(deps, { ...message, dueAt: dueAt.toISOString() }, step.delaySeconds);
    return;
  }
  if (step.kind === 'none') return;
  if (await cancelAtDeadline(deps, message.jobId)) {
    logger.info('run cancelled at its deadline', { jobId: message.jobId, deadlineAt: dueAt.toISOString() });
  }
};
