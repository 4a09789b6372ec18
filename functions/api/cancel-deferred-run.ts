import { dynamoDbClient } from '../clients/dynamodb.ts';
import { type Deps, productionDeps } from '../deps.ts';
import { keyedHandler } from '../http/keyed-handler.ts';
import { json } from '../http/response.ts';
import { cancelDeferredRun, deferredView } from '../store/deferred-runs.ts';

/** DELETE /deferred-runs/{id} (our design): a `waiting` deferred run becomes `cancelled`. */
export const makeHandler = (deps: Deps) =>
  keyedHandler(deps, 'CancelDeferredRun', async (event, auth) =>
    json(
      200,
      deferredView(await cancelDeferredRun(deps, auth.teamId, event.pathParameters?.id ?? '', auth.key.workflowIds)),
    ),
  );

export const handler = makeHandler(productionDeps({ ...dynamoDbClient() }));
