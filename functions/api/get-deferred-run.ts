import { readDeferredRun } from '../app/deferred-runs.ts';
import { dynamoDbClient } from '../clients/dynamodb.ts';
import { type Deps, productionDeps } from '../deps.ts';
import { keyedHandler } from '../http/keyed-handler.ts';
import { ok } from '../http/response.ts';

/** GET /deferred-runs/{id} (spec 4.6). */
export const makeHandler = (deps: Deps) =>
  keyedHandler(deps, 'GetDeferredRun', async (event, auth) =>
    ok(
      await readDeferredRun(
        deps,
        { teamId: auth.teamId, workflowIds: auth.key.workflowIds },
        event.pathParameters?.id ?? '',
      ),
    ),
  );

export const handler = makeHandler(productionDeps({ ...dynamoDbClient() }));
