import { listDeliveries } from '../app/run-deliveries.ts';
import { dynamoDbClient } from '../clients/dynamodb.ts';
import { type Deps, productionDeps } from '../deps.ts';
import { keyedHandler } from '../http/keyed-handler.ts';
import { ok } from '../http/response.ts';

/** GET /runs/{jobId}/deliveries (our design): the run-finished webhook's attempts and state. */
export const makeHandler = (deps: Deps) =>
  keyedHandler(deps, 'ListDeliveries', async (event, auth) =>
    ok(await listDeliveries(deps, auth, event.pathParameters?.jobId ?? '')),
  );

export const handler = makeHandler(productionDeps({ ...dynamoDbClient() }));
