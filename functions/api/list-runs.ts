import { listRuns } from '../app/list-runs.ts';
import { dynamoDbClient } from '../clients/dynamodb.ts';
import { type Deps, productionDeps } from '../deps.ts';
import { keyedHandler } from '../http/keyed-handler.ts';
import { ok } from '../http/response.ts';

/** GET /runs: the team's runs, newest first, a page at a time (our design). */
export const makeHandler = (deps: Deps) =>
  keyedHandler(deps, 'ListRuns', async (event, auth) =>
    ok(await listRuns(deps, auth.key, event.queryStringParameters)),
  );

export const handler = makeHandler(productionDeps({ ...dynamoDbClient() }));
