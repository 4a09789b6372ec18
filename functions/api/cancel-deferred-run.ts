import { cancelDeferredRun } from '../app/deferred-runs.ts';
import { dynamoDbClient } from '../clients/dynamodb.ts';
import { type Deps, productionDeps } from '../deps.ts';
import { keyedHandler } from '../http/keyed-handler.ts';
import { ok } from '../http/response.ts';

/** DELETE /deferred-runs/{id} (our design): a `waiting` deferred run becomes `cancelled`. */
export const makeHandler = (deps: Deps) =>
  keyedHandler(deps, 'CancelDeferredRun', async (event, auth) =>
    ok(
      await cancelDeferredRun(
        deps,
        { teamId: auth.teamId, workflowIds: auth.key.workflowIds },
        event.pathParameters?.id ?? '',
      ),
    ),
  );

export const handler = makeHandler(productionDeps({ ...dynamoDbClient() }));
