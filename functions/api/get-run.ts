import { readRunWithLinks } from '../app/read-run.ts';
import { readRunAfterWait } from '../app/run-wait.ts';
import { dynamoDbClient } from '../clients/dynamodb.ts';
import { type Deps, productionDeps } from '../deps.ts';
import { keyedHandler } from '../http/keyed-handler.ts';
import { requestedWait, waitAppliedHeaders } from '../http/prefer-wait.ts';
import { ok } from '../http/response.ts';

/**
 * GET /runs/{jobId} (spec 4.5), `?output_cursor=` for a later page of its outputs. Reading never
 * spends credits, so a key over its cap still reads. The Run carries `links.events`, where to follow it live.
 * With `Prefer: wait=N`, answered when the run ends or N seconds pass, whichever comes first.
 */
export const makeHandler = (deps: Deps) =>
  keyedHandler(deps, 'GetRun', async (event, auth, context) => {
    const jobId = event.pathParameters?.jobId ?? '';
    // `Prefer: wait=N`: answered when the run ends or N seconds pass (functions/app/run-wait.ts).
    const wait = requestedWait(deps, event, context);
    const run = await readRunAfterWait(deps, jobId, wait, () =>
      readRunWithLinks(deps, auth.teamId, jobId, auth.key.workflowIds, event.queryStringParameters?.output_cursor),
    );
    return ok(run, waitAppliedHeaders(wait));
  });

export const handler = makeHandler(productionDeps({ ...dynamoDbClient() }));
