import { listDeferredRuns } from '../app/list-runs.ts';
import { dynamoDbClient } from '../clients/dynamodb.ts';
import { type Deps, productionDeps } from '../deps.ts';
import { keyedHandler } from '../http/keyed-handler.ts';
import { ok } from '../http/response.ts';

/** GET /deferred-runs: the team's deferred runs, newest first, a page at a time (our design). */
export const makeHandler = (deps: Deps) =>
  keyedHandler(deps, 'ListDeferredRuns', async (event, auth) =>
    ok(await listDeferredRuns(deps, auth.key, event.queryStringParameters)),
  );

export const handler = makeHandler(productionDeps({ ...dynamoDbClient() }));
