import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import * as v from 'valibot';
import { stepsQueue } from '../../lib/definitions.ts';
import { fileUrlSeconds } from '../app/read-run.ts';
import { type Deps, productionDeps } from '../deps.ts';
import { getNodeSpec } from '../domain/catalogue/index.ts';
import { executorFor } from '../domain/executors/index.ts';
import { type NodeExecutor, StepFailedError } from '../domain/executors/types.ts';
import { stampLicenceModel } from '../domain/licence.ts';
import { type FinishedStep, planStep, predecessors, readySuccessors, successors } from '../domain/run-graph.ts';
import { apiInputTargets, type Canvas } from '../domain/workflow-graph.ts';
import { logger } from '../http/logger.ts';
import { addCreditsCharged, countStepCompleted, metrics } from '../http/metrics.ts';
import { batchGet, itemFor } from '../store/batch.ts';
import { cachedCanvas, rememberCanvas } from '../store/canvas-cache.ts';
import { type ConnectionRef, getConnections, resolveConnection } from '../store/connections.ts';
import { presignTeamFile, putRunFile, readTeamFile } from '../store/files.ts';
import { canvasKey, runKey, stepKey } from '../store/keys.ts';
import { endRun, ledgerStateOf, queueWebhook } from '../store/run-ledger.ts';
import { abandonStep, claimStep, completeStep, failStep, releaseStep, skipStep } from '../store/run-steps.ts';
import { sendStepMessages } from '../store/runs.ts';

/**
 * The step executor: one SQS message per ready step. Claim the step, read the run and the results
 * it needs, run the node, then in ONE transaction complete it and charge it; then release the
 * successors that became ready and, after the last step, end the run and queue its webhook.
 * Every stage is idempotent, so a redelivered or duplicated message never charges twice.
 */

const StepMessageSchema = v.object({ jobId: v.string(), workflowId: v.string(), nodeId: v.string() });
type StepMessage = v.InferOutput<typeof StepMessageSchema>;

const stepState = (item: Record<string, unknown> | undefined): FinishedStep | undefined =>
  item
    ? { status: item.status as FinishedStep['status'], outputs: item.outputs as Record<string, unknown> | undefined }
    : undefined;

/** Reads the run, the canvas (unless cached) and the given steps of the run in one BatchGet. */
const readRun = async (deps: Deps, message: StepMessage, nodeIds: (canvas: Canvas) => string[]) => {
  let canvas = cachedCanvas(message.workflowId);
  const keys = [
    runKey(message.jobId),
    ...(canvas ? nodeIds(canvas).map((n) => stepKey(message.jobId, n)) : [canvasKey(message.workflowId)]),
  ];
  let items = await batchGet(deps, keys);
  if (!canvas) {
    canvas = itemFor(items, canvasKey(message.workflowId))?.canvas as Canvas | undefined;
    if (!canvas) throw new Error(`Canvas of workflow ${message.workflowId} not found`);
    rememberCanvas(message.workflowId, canvas);
    const stepKeys = nodeIds(canvas).map((n) => stepKey(message.jobId, n));
    if (stepKeys.length > 0) items = new Map([...items, ...(await batchGet(deps, stepKeys))]);
  }
  const run = itemFor(items, runKey(message.jobId));
  if (!run) throw new Error(`Run ${message.jobId} not found`);
  const steps = new Map<string, FinishedStep>();
  for (const nodeId of nodeIds(canvas)) {
    const state = stepState(itemFor(items, stepKey(message.jobId, nodeId)));
    if (state) steps.set(nodeId, state);
  }
  return { run, canvas, steps };
};

const isGoing = (run: Record<string, unknown>) => run.status === 'queued' || run.status === 'processing';

/** After a step finished: enqueue successors that became ready; end the run after its last step. */
const releaseSuccessors = async (deps: Deps, message: StepMessage) => {
  const { run, canvas, steps } = await readRun(deps, message, (c) => [
    ...new Set(successors(c, message.nodeId).flatMap((s) => [s, ...predecessors(c, s)])),
  ]);
  if (!isGoing(run)) return;
  // A successor with a step item has had its message already; sending it again would only make a
  // duplicate, and each duplicate of a finished step re-releases its own successors in turn.
  const ready = readySuccessors(canvas, message.nodeId, steps).filter((s) => !steps.has(s));
  if (ready.length > 0) await sendStepMessages(deps, message, ready);
  const finished = ((run.stepsCompleted as number) ?? 0) + ((run.stepsSkipped as number) ?? 0);
  if (finished >= (run.stepsTotal as number)) {
    if (await endRun(deps, ledgerStateOf(run), 'completed')) await queueWebhook(deps, ledgerStateOf(run), 'completed');
  }
};

const endWithFailure = async (deps: Deps, message: StepMessage, attempt: number, error: string) => {
  // The hold may move between read and write (a parallel step charged): re-read and retry.
  for (let i = 0; i < 5; i++) {
    const { run } = await readRun(deps, message, () => []);
    if (!isGoing(run)) return abandonStep(deps, message.jobId, message.nodeId, attempt);
    if (await failStep(deps, ledgerStateOf(run), message.nodeId, attempt, error)) {
      await queueWebhook(deps, ledgerStateOf(run), 'failed');
      return;
    }
  }
  throw new Error(`Could not record the failure of step ${message.nodeId}`);
};

export interface StepExecutorOptions {
  executorFor: (type: Parameters<typeof executorFor>[0]) => NodeExecutor;
  /** Milliseconds a node may run before it is aborted. */
  stepTimeoutMs: number;
}

/** Runs one step message; throws to have SQS redeliver it. */
export const runStep = async (deps: Deps, message: StepMessage, receiveCount: number, options: StepExecutorOptions) => {
  const claim = await claimStep(deps, message.jobId, message.nodeId);
  if (!claim.claimed) {
    // Finished by an earlier delivery that may have crashed before releasing its successors.
    if (claim.status === 'completed' || claim.status === 'skipped') await releaseSuccessors(deps, message);
    return;
  }
  const { run, canvas, steps } = await readRun(deps, message, (c) => predecessors(c, message.nodeId));
  if (!isGoing(run)) return abandonStep(deps, message.jobId, message.nodeId, claim.attempt);
  const node = canvas.nodes.find((n) => n.id === message.nodeId);
  const spec = node ? getNodeSpec(node.type) : undefined;
  if (!node || !spec) throw new Error(`Node ${message.nodeId} is not in the canvas`);
  const ledger = ledgerStateOf(run);
  const plan = planStep(canvas, message.nodeId, steps);
  if (!plan.run) {
    if (await skipStep(deps, ledger, message.nodeId, claim.attempt)) await releaseSuccessors(deps, message);
    return;
  }
  const inputKey = Object.entries(apiInputTargets(canvas)).find(([, target]) => target === node.id)?.[0];
  const runInputs = (run.inputs as Record<string, string> | undefined) ?? {};
  let outcome: Awaited<ReturnType<NodeExecutor>>;
  let connections: Record<string, ConnectionRef> | undefined;
  try {
    outcome = await options.executorFor(node.type)({
      jobId: message.jobId,
      teamId: ledger.teamId,
      node,
      spec,
      mode: run.mode as 'production' | 'draft' | 'preview',
      inputs: plan.inputs,
      runInput: inputKey === undefined ? undefined : runInputs[inputKey],
      storeFile: (file) => putRunFile(deps, { teamId: ledger.teamId, jobId: message.jobId, nodeId: node.id }, file),
      readFile: (file) => readTeamFile(deps, ledger.teamId, file),
      fileUrl: (file) => presignTeamFile(deps, ledger.teamId, file.key, fileUrlSeconds),
      connection: async (key) => {
        connections ??= await getConnections(deps, ledger.teamId);
        return resolveConnection(key, connections[key]);
      },
      signal: AbortSignal.timeout(options.stepTimeoutMs),
    });
  } catch (error) {
    if (error instanceof StepFailedError) return endWithFailure(deps, message, claim.attempt, error.message);
    if (receiveCount >= stepsQueue.maxReceiveCount) {
      // Last delivery before the DLQ: the run fails visibly rather than hanging in `processing`.
      await endWithFailure(deps, message, claim.attempt, `Step could not be executed after ${receiveCount} attempts`);
    } else {
      // SQS redelivers the message: let that delivery take the step, not drop it as a duplicate.
      await releaseStep(deps, message.jobId, message.nodeId, claim.attempt);
    }
    throw error;
  }
  const charge = (run.stepEstimates as Record<string, number> | undefined)?.[node.id] ?? 0;
  const licence = outcome.model
    ? stampLicenceModel({ nodeId: node.id, ...outcome.model, stampedAt: deps.now() })
    : undefined;
  const completion = {
    run: ledger,
    nodeId: node.id,
    attempt: claim.attempt,
    outputs: outcome.outputs,
    model: outcome.model,
    licence,
    chargeHundredths: charge,
  };
  const completedBefore = (run.stepsCompleted as number | undefined) ?? 0;
  const skippedBefore = (run.stepsSkipped as number | undefined) ?? 0;
  // The only step left: complete it and end the run in one transaction (no successor can be waiting).
  if (completedBefore + skippedBefore + 1 === (run.stepsTotal as number)) {
    if (await completeStep(deps, { ...completion, last: { completedBefore, skippedBefore } })) {
      countStepCompleted();
      addCreditsCharged(charge);
      await queueWebhook(deps, ledger, 'completed');
      return;
    }
  }
  // Not the last step, or the run changed since the read: complete it alone (false: the run ended).
  if (!(await completeStep(deps, completion))) return abandonStep(deps, message.jobId, message.nodeId, claim.attempt);
  countStepCompleted();
  addCreditsCharged(charge);
  await releaseSuccessors(deps, message);
};

export const makeHandler =
  (deps: Deps, options: Partial<StepExecutorOptions> = {}) =>
  async (event: SQSEvent): Promise<SQSBatchResponse> => {
    const resolved: StepExecutorOptions = {
      executorFor,
      stepTimeoutMs: (stepsQueue.consumerTimeoutSeconds - 5) * 1000,
      ...options,
    };
    try {
      return await processPartialResponse(
        event,
        async (record: SQSRecord) => {
          let message: StepMessage;
          try {
            message = v.parse(StepMessageSchema, JSON.parse(record.body));
          } catch (error) {
            logger.error('unreadable step message', { messageId: record.messageId });
            throw error;
          }
          logger.appendKeys({ jobId: message.jobId });
          await runStep(deps, message, Number(record.attributes.ApproximateReceiveCount ?? 1), resolved);
        },
        // One processor per invocation: it holds the batch's state.
        new BatchProcessor(EventType.SQS),
      );
    } finally {
      metrics.publishStoredMetrics();
      logger.resetKeys();
    }
  };

export const handler = makeHandler(productionDeps());
