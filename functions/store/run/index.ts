/**
 * The run's store, one face: the run item, its step items, its ledger (hold, charges, lock) and the
 * sweep's index of queued runs. Every status condition comes from the lifecycle
 * (functions/domain/run-lifecycle.ts).
 */

export { type CarriedStep, putCarriedSteps } from './carried-steps.ts';
export { type DeadlineTimer, sendDeadlineMessage } from './deadline.ts';
export {
  closeRun,
  endRun,
  type RunLedgerState,
  settleEndedRun,
  settleJustEnded,
} from './ledger.ts';
export {
  assertQueueRoom,
  cancelWaitingRun,
  type QueueOutcome,
  queueRun,
  readLock,
  type Standing,
  standingOf,
  startNextQueued,
} from './queue.ts';
export { countSweepRefusal, type QueuedRun, queuedRunsStartedBefore } from './queued.ts';
export { type RunProgress, readRunProgress, runMarkOf } from './run-mark.ts';
export { queueWebhook } from './run-webhook.ts';
export {
  activeJobOf,
  ExtraConditionFailedError,
  loadAdmissionFacts,
  type NewRun,
  RaceLostError,
  type RunPartition,
  readRunItem,
  readRunPartition,
  runItem,
  type StartItemName,
  sendStepMessages,
  startRefusal,
  startRun,
  startRunItems,
} from './runs.ts';
export { type RunRef, readRunAndSteps, readStepItem, readStepItemsEventually } from './step-read.ts';
export {
  type Attempt,
  abandonStep,
  type ClaimResult,
  type CountResult,
  claimStep,
  countFailedExecution,
  countStep,
  failStep,
  finishStepItem,
  markStepStarted,
  releaseStep,
  retireLateStep,
  type StepCount,
  type StepRun,
  stepLeaseSeconds,
} from './steps.ts';
export {
  loadAgentWorkflow,
  loadRunnableWorkflow,
  loadWorkflowAndSummary,
  type RunnableWorkflow,
} from './workflow-loads.ts';
