import { createHash } from 'node:crypto';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import * as v from 'valibot';
import { messages } from '../../schemas/errors.ts';
import { idempotencyKeyHeader, type RunRequest, RunRequestSchema } from '../../schemas/runs.ts';
import type { Deps } from '../deps.ts';
import { toCredits } from '../domain/credits.ts';
import {
  BadRequestError,
  ForbiddenError,
  PaymentRequiredError,
  ServiceUnavailableError,
  UnprocessableError,
} from '../domain/errors.ts';
import { admitRun, estimateRun, refusalBody, spendMonth } from '../domain/run-pricing.ts';
import { apiInputKeys, rootNodeIds, validateCanvas } from '../domain/workflow-graph.ts';
import type { AuthContext } from '../http/authenticate.ts';
import { issuePath, readJsonBody } from '../http/body.ts';
import { logger } from '../http/logger.ts';
import { type HttpResult, json } from '../http/response.ts';
import { findIdempotentAnswer } from '../store/idempotency.ts';
import {
  IdempotencyRaceError,
  loadAdmissionFacts,
  RaceLostError,
  type RunnableWorkflow,
  sendStepMessages,
  startRun,
} from '../store/runs.ts';

/** Largest accepted run-start body. */
export const maxRunBodyBytes = 64 * 1024;

/** An Idempotency-Key answer is remembered this long (as payment APIs do). */
const idempotencyWindowSeconds = 24 * 3600;

/** Seconds a caller should wait before retrying when the monthly cap could not be read. */
const capRetryAfterSeconds = 5;

/** The run-start body: 422 for callbackUrl (spec), 400 for any other malformed field. */
export const parseRunRequest = (event: APIGatewayProxyEventV2): RunRequest => {
  const body = readJsonBody(event, { maxBytes: maxRunBodyBytes, emptyAs: {} });
  const result = v.safeParse(RunRequestSchema, body);
  if (result.success) return result.output;
  const [issue] = result.issues;
  if (issue.message === messages.callbackUrlInvalid) throw new UnprocessableError({ error: issue.message });
  const path = issuePath(issue);
  throw new BadRequestError(messages.invalidBody(path ? `${path}: ${issue.message}` : issue.message));
};

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/**
 * Starts a run of a workflow the caller may run (spec 4.3/4.4): validate, estimate, check (per-step
 * limit, project hard cap, key monthly cap, balance), then one transaction, then the root steps to
 * SQS. `resolveWorkflow` finds the workflow (directly, or an agent's) and throws the 404s.
 */
export const startRunFor = async (
  deps: Deps,
  auth: AuthContext,
  event: APIGatewayProxyEventV2,
  resolveWorkflow: () => Promise<RunnableWorkflow>,
): Promise<HttpResult> => {
  const request = parseRunRequest(event);
  const idempotencyKey = event.headers[idempotencyKeyHeader.toLowerCase()];
  const requestHash = sha256(
    `${event.routeKey}\n${JSON.stringify(event.pathParameters ?? {})}\n${JSON.stringify(request)}`,
  );
  if (idempotencyKey !== undefined) {
    const previous = await findIdempotentAnswer(deps, auth.keyId, sha256(idempotencyKey));
    if (previous) {
      if (previous.requestHash !== requestHash) throw new UnprocessableError({ error: messages.idempotencyKeyReused });
      return json(previous.response.status, previous.response.body);
    }
  }
  const workflow = await resolveWorkflow();
  if (auth.key.workflowIds.length > 0 && !auth.key.workflowIds.includes(workflow.workflowId)) {
    throw new ForbiddenError(messages.workflowNotPermitted);
  }
  const issues = validateCanvas(workflow.canvas);
  if (issues.length > 0) throw new UnprocessableError({ success: false, errors: issues });
  const validKeys = apiInputKeys(workflow.canvas);
  const unknownKeys = Object.keys(request.inputs ?? {}).filter((k) => !validKeys.includes(k));
  if (unknownKeys.length > 0)
    throw new UnprocessableError({ error: messages.unknownInputKeys(unknownKeys), validKeys });

  const jobId = deps.newId();
  const estimate = estimateRun(workflow.canvas, request.mode);
  const now = deps.now();
  const month = spendMonth(now);
  const monthlyCap = auth.key.monthlyCapHundredths;
  const response = {
    status: 200,
    body: {
      jobId,
      workflowId: workflow.workflowId,
      status: 'queued',
      estimatedCredits: toCredits(estimate.totalHundredths),
      stepsCount: workflow.canvas.nodes.length,
    },
  };
  for (let attempt = 0; ; attempt++) {
    let facts: Awaited<ReturnType<typeof loadAdmissionFacts>>;
    try {
      facts = await loadAdmissionFacts(deps, {
        teamId: auth.teamId,
        projectId: workflow.projectId,
        keyId: auth.keyId,
        month,
        monthlyCap,
      });
    } catch (error) {
      // A capped key is never started unmetered: refuse with 503 rather than guess its spend.
      if (monthlyCap !== null) {
        logger.warn('monthly cap could not be checked', { error: error as Error });
        throw new ServiceUnavailableError(messages.monthlyCapUnverifiable, capRetryAfterSeconds);
      }
      throw error;
    }
    const refusal = admitRun(estimate, facts);
    if (refusal) throw new PaymentRequiredError(refusalBody(refusal, now));
    try {
      await startRun(deps, {
        jobId,
        teamId: auth.teamId,
        keyId: auth.keyId,
        workflow,
        mode: request.mode,
        inputs: request.inputs ?? {},
        callbackUrl: request.callbackUrl ?? null,
        callbackSecret: request.callbackSecret ?? null,
        estimate,
        month,
        monthlyCap,
        hardCap: facts.hardCap,
        idempotency:
          idempotencyKey === undefined
            ? null
            : {
                keyHash: sha256(idempotencyKey),
                requestHash,
                response,
                expiresAt: Math.floor(now.getTime() / 1000) + idempotencyWindowSeconds,
              },
        deferredJobId: null,
      });
      break;
    } catch (error) {
      if (error instanceof RaceLostError && attempt < 3) continue;
      if (error instanceof IdempotencyRaceError && idempotencyKey !== undefined) {
        const previous = await findIdempotentAnswer(deps, auth.keyId, sha256(idempotencyKey));
        if (previous?.requestHash === requestHash) return json(previous.response.status, previous.response.body);
        throw new UnprocessableError({ error: messages.idempotencyKeyReused });
      }
      throw error;
    }
  }
  try {
    await sendStepMessages(deps, { jobId, workflowId: workflow.workflowId }, rootNodeIds(workflow.canvas));
  } catch (error) {
    // The run is committed; the dispatcher's sweep re-sends the root steps of runs left queued.
    logger.error('root steps not sent; the sweep will retry', { jobId, error: error as Error });
  }
  return json(response.status, response.body);
};
