import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { StepStatus } from '../../../platform/run-statuses.ts';
import type { Deps } from '../../deps.ts';
import { runItemExpiry } from '../../domain/retention.ts';
import { itemVersion, type StoredItem } from '../items/item.ts';
import type { StepItem, storedStep } from '../items/runs.ts';
import { stepKey } from '../keys.ts';

/**
 * A step a resume takes over from the run it resumes (functions/app/resume-run.ts): completed,
 * with the original's outputs (their files already copied to the new run's keys), model, licence
 * stamp and start, so its lineage and licence read as they did; charged nothing in the new run.
 */
export interface CarriedStep {
  nodeId: string;
  outputs: Record<string, unknown>;
  original: Pick<StepItem, 'model' | 'licence' | 'startedAt'>;
}

/**
 * Writes the carried-over steps' items under the new run `jobId`, before its start's transaction
 * (which counts them done), so a step that reads from them finds them the moment it is sent. Kept
 * the retention from now, as the run started now will be; a start then refused leaves them to that
 * `ttl`, under a jobId no one was given.
 */
export const putCarriedSteps = async (deps: Deps, jobId: string, from: string, steps: readonly CarriedStep[]) => {
  const now = deps.now();
  const ttl = runItemExpiry(now.toISOString(), now, deps.retentionDays);
  const put = (step: CarriedStep) =>
    deps.ddb.send(
      new PutCommand({
        TableName: deps.tableName,
        Item: {
          ...stepKey(jobId, step.nodeId),
          nodeId: step.nodeId,
          status: StepStatus.completed,
          outputs: step.outputs,
          model: step.original.model ?? null,
          licence: step.original.licence ?? null,
          ...(step.original.startedAt !== undefined ? { startedAt: step.original.startedAt } : {}),
          endedAt: now.toISOString(),
          chargeHundredths: 0,
          carriedFrom: from,
          ttl,
          v: itemVersion,
        } satisfies StoredItem<typeof storedStep>,
      }),
    );
  // Ten at a time: a 500-step workflow's carried steps without a burst on the table.
  for (let i = 0; i < steps.length; i += 10) await Promise.all(steps.slice(i, i + 10).map(put));
};
