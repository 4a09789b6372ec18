/**
 * The per-team cap on steps in flight, applied to one step delivery (docs/operations.md, "Fair
 * tenants"; rules: functions/domain/team-steps.ts). The delivery takes its step's slot before the
 * step runs and gives it back after, whatever its end (completed, failed, skipped, a run that had
 * ended, a throw SQS redelivers); a worker that dies holding it frees it when its lease runs out.
 * A step whose team is at its cap does not start: its message is sent again, delayed, and this one
 * is done. That spends no attempt of the step (none is counted, nothing is charged) and no receive
 * of the message's redrive count, which a step held back many times would otherwise use up.
 */
import { stepsQueue } from '../../platform/definitions.ts';
import type { Deps } from '../deps.ts';
import { capAfter, deferSeconds, slotKeyOf, slotLease, slotLeaseSeconds } from '../domain/team-steps.ts';
import { logger } from '../observability/logger.ts';
import { sendDelayedStepMessage } from '../store/run/provider-jobs.ts';
import { releaseTeamSlot, takeTeamSlot } from '../store/team-steps.ts';
import type { JobStepMessage } from './provider-job.ts';

const leaseMs = slotLeaseSeconds(stepsQueue.consumerTimeoutSeconds) * 1000;

/**
 * Runs `step` under its team's slot, or, when the team is at its cap, sends the message again after
 * a delay and runs nothing. Without a cap (the stage sets none) or a team (a message sent before
 * messages named their team), the step runs as it comes.
 */
export const withTeamSlot = async (deps: Deps, message: JobStepMessage, step: () => Promise<void>) => {
  const cap = deps.teamStepsInFlight;
  const { teamId } = message;
  if (cap === undefined || teamId === undefined) return step();
  const key = slotKeyOf(message.jobId, message.nodeId);
  const lease = slotLease(new Date(deps.now().getTime() + leaseMs), deps.newId());
  const deferred = message.deferred ?? 0;
  if (!(await takeTeamSlot(deps, teamId, key, lease, capAfter(cap, deferred)))) {
    const delay = deferSeconds(deferred, Math.random());
    logger.info('team at its cap of steps in flight; step offered again later', {
      nodeId: message.nodeId,
      cap,
      deferred,
      delay,
    });
    await sendDelayedStepMessage(deps, { ...message, deferred: deferred + 1 }, delay);
    return;
  }
  try {
    await step();
  } finally {
    // A failed release leaves the lease to run out; it must not turn the step's own end into a throw.
    await releaseTeamSlot(deps, teamId, key, lease).catch((error: unknown) =>
      logger.warn('step slot not given back; its lease frees it', { nodeId: message.nodeId, error: error as Error }),
    );
  }
};
