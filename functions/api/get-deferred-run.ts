import { dynamoDbClient } from '../clients/dynamodb.ts';
import { type Deps, productionDeps } from '../deps.ts';
import { keyedHandler } from '../http/keyed-handler.ts';
import { json } from '../http/response.ts';
import { deferredView, getDeferredRun } from '../store/deferred-runs.ts';

/** GET /deferred-runs/{id} (spec 4.6). */
export const makeHandler = (deps: Deps) =>
  keyedHandler(deps, 'GetDeferredRun', async (event, auth) =>
    json(
      200,
      deferredView(await getDeferredRun(deps, auth.teamId, event.pathParameters?.id ?? '', auth.key.workflowIds)),
    ),
  );

export const handler = makeHandler(productionDeps({ ...dynamoDbClient() }));
