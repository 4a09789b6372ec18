import { readRunStep } from '../app/read-run-step.ts';
import { dynamoDbClient } from '../clients/dynamodb.ts';
import { type Deps, productionDeps } from '../deps.ts';
import { keyedHandler } from '../http/keyed-handler.ts';
import { ok } from '../http/response.ts';

/** GET /runs/{jobId}/steps/{nodeId} (our design): one step's attempts and logs. */
export const makeHandler = (deps: Deps) =>
  keyedHandler(deps, 'GetRunStep', async (event, auth) =>
    ok(
      await readRunStep(
        deps,
        auth.teamId,
        event.pathParameters?.jobId ?? '',
        event.pathParameters?.nodeId ?? '',
        auth.key.workflowIds,
      ),
    ),
  );

export const handler = makeHandler(productionDeps({ ...dynamoDbClient() }));
