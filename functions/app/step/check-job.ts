import { StepStatus } from '../../../platform/run-statuses.ts';
import type { Deps } from '../../deps.ts';
import { stampLicenceModel } from '../../domain/licence.ts';
import { listedModelPrice, stepCharge } from '../../domain/pricing.ts';
import { isInProgress, isUnsettled } from '../../domain/run-lifecycle.ts';
import { completedAttempt, completedEntry, stepLogs } from '../../domain/step-history.ts';
import { abandonStep, finishStepItem, readRunAndSteps, settleEndedRun } from '../../store/run/index.ts';
import { cancelQuietly, jobOutputs, jobProviderOf, lookAtJob } from '../provider-job.ts';
import { endWithFailure } from './fail-step.ts';
import { settleStep } from './settle-step.ts';
import { nodeOf, stepContext } from './step-context.ts';
import { ofTeam, type StepMessage } from './step-messages.ts';

/**
 * A look at a step's job at its provider (a poll, or its webhook's news): nothing when the step no
 * longer waits on that job; cancelled at the provider when the run has ended; else the provider's
 * state applied once, through the same end as any model step (its count, its charge, its successors).
 * Returns the chain's next step's message when it is to run in this invocation.
 */
export const checkJob = async (deps: Deps, look: StepMessage): Promise<StepMessage | undefined> => {
  // Past the look, the step ends as any step does: by its own message, whose successors are steps, not looks.
  const asRead: StepMessage = { jobId: look.jobId, workflowId: look.workflowId, nodeId: look.nodeId };
  const read = await readRunAndSteps(deps, asRead, () => [asRead.nodeId]);
  if (!read) return;
  const { run, canvas } = read;
  const message = ofTeam(asRead, run);
  const step = read.stepItem(message.nodeId);
  const job = step?.providerJob;
  if (step?.status !== StepStatus.processing || job?.id === undefined || step.attempts !== job.attempt) return;
  const recorded = { ...job, id: job.id };
  const { node, spec } = nodeOf(canvas, message.nodeId);
  // What the step's history says of the job's attempt (functions/domain/step-history.ts).
  const at = { provider: job.provider, model: job.model, providerJobId: job.id };
  const startedAt = job.submittedAt ?? job.intendedAt;
  const context = stepContext(deps, run, node, spec, { inputs: {}, runInput: undefined, timeoutMs: 120_000 });
  const provider = await jobProviderOf(
    deps,
    recorded,
    () => context.connection?.(job.provider) ?? Promise.resolve(undefined),
  );
  if (!provider)
    return endWithFailure(
      deps,
      message,
      job.attempt,
      `${node.type}: provider ${job.provider} is not configured`,
      'configuration',
      0,
      { startedAt, at },
    );
  if (!isInProgress(run.status)) {
    // The run ended (cancelled, or another step failed): the job is stopped and never counted.
    await cancelQuietly(provider, recorded);
    await abandonStep(deps, run, message.nodeId, job.attempt);
    // The step's claim was what held the ended run: settling reads its claims again, once.
    if (isUnsettled(run)) await settleEndedRun(deps, message.jobId);
    return;
  }
  const verdict = await lookAtJob(deps, look, recorded, provider, node.type);
  if (verdict.kind === 'wait') return;
  const logs = stepLogs({ provider: verdict.logs });
  if (verdict.kind === 'failed')
    return endWithFailure(deps, message, job.attempt, verdict.error, verdict.reason, 0, { startedAt, at, logs });
  const made = await jobOutputs(deps, context, verdict.output, verdict.usage);
  const model = { provider: job.provider, model: job.model };
  const listed = listedModelPrice(node, spec, deps.providers);
  // Measured from what the provider made and reports, as a synchronous step's work is; an unusable
  // answer has no measure, so it is charged its price.
  const work = 'error' in made ? undefined : made.work;
  const chargeHundredths = stepCharge(run, { nodeId: node.id, spec, work, listed }, StepStatus.completed);
  // The provider's output could not be made into the step's (a missing file, a wrong type): the job
  // ran to its end and the stage pays for it, so the step fails charged its price, never free.
  if ('error' in made)
    return endWithFailure(deps, message, job.attempt, made.error, 'code', chargeHundredths, { startedAt, at, logs });
  const licence = stampLicenceModel({ nodeId: node.id, ...model, stampedAt: deps.now() });
  const attempt = completedEntry(step.attemptLog, () =>
    completedAttempt({ startedAt, endedAt: deps.now().toISOString() }, chargeHundredths, at),
  );
  const end = { status: StepStatus.completed, outputs: made.outputs, model, licence, chargeHundredths, attempt, logs };
  // False: a duplicate look (a webhook and a poll together) finished it first; that one counts it.
  if (!(await finishStepItem(deps, run, node.id, job.attempt, end))) return;
  return settleStep(deps, message, run, { status: StepStatus.completed, chargeHundredths, model }, canvas);
};
